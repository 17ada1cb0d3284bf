//! A file, optionally rotated.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use super::rolling::{RollingPolicy, clean_up};
use crate::record::now;

/// Writes batches to a file, rotating it as its policy says.
pub struct FileSink {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    size: u64,
    buffer_size: usize,
    immediate_flush: bool,
    rolling: Option<Rolling>,
    compressor: Option<JoinHandle<()>>,
}

struct Rolling {
    policy: RollingPolicy,
    /// The period the current file belongs to.
    period: String,
    /// When the current period started (a time inside it), for naming its archives.
    period_time: i128,
    /// The next index to try within the period.
    next_index: u32,
}

impl FileSink {
    /// Opens (creating directories as needed) `path` for appending.
    pub fn open(
        path: impl Into<PathBuf>,
        buffer_size: usize,
        immediate_flush: bool,
        rolling: Option<RollingPolicy>,
    ) -> std::io::Result<FileSink> {
        let path = path.into();
        let mut sink = FileSink {
            path,
            file: None,
            size: 0,
            buffer_size: buffer_size.max(512),
            immediate_flush,
            rolling: None,
            compressor: None,
        };
        sink.reopen()?;
        if let Some(mut policy) = rolling {
            // A file left by an earlier run belongs to the period it was last written in.
            let started = std::fs::metadata(&sink.path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or_else(now, |d| d.as_nanos() as i128);
            let period = policy.pattern.period(started);
            sink.rolling = Some(Rolling {
                policy,
                period,
                period_time: started,
                next_index: 0,
            });
        }
        Ok(sink)
    }

    fn reopen(&mut self) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.size = file.metadata().map(|m| m.len()).unwrap_or(0);
        self.file = Some(BufWriter::with_capacity(self.buffer_size, file));
        Ok(())
    }

    /// Rotates first if the batch of `len` bytes belongs in a new file.
    fn maybe_roll(&mut self, len: usize) -> std::io::Result<()> {
        let Some(r) = &mut self.rolling else {
            return Ok(());
        };
        let t = now();
        if r.policy.pattern.has_date() {
            let period = r.policy.pattern.period(t);
            if period != r.period {
                let old = r.period_time;
                r.period = period;
                r.period_time = t;
                let index = r.next_index;
                r.next_index = 0;
                return self.roll(old, index);
            }
        }
        let too_big = r.policy.max_file_size.is_some_and(|max| {
            self.size > 0 && (self.size as usize).saturating_add(len) as u64 > max
        });
        if too_big {
            let (time, index) = (r.period_time, r.next_index);
            return self.roll(time, index);
        }
        Ok(())
    }

    /// Moves the current file to its archive name and starts a new one.
    fn roll(&mut self, period_time: i128, mut index: u32) -> std::io::Result<()> {
        if let Some(mut f) = self.file.take() {
            f.flush()?;
        }
        if let Some(c) = self.compressor.take() {
            let _ = c.join();
        }
        let Some(r) = &mut self.rolling else {
            return Ok(());
        };
        let pattern = &mut r.policy.pattern;
        let target = if pattern.has_date() || !pattern.has_index() {
            // Time-based (with an index within the period): the first free name.
            loop {
                let name = pattern.name(period_time, index);
                index += 1;
                if !name.exists() && !tmp_name(&name).exists() || !pattern.has_index() {
                    break name;
                }
            }
        } else {
            // A fixed window: app.1.log is the newest; older ones move up by one.
            let count = r.policy.archived_file_count.max(1) as u32;
            let _ = std::fs::remove_file(pattern.name(period_time, count));
            for i in (1..count).rev() {
                let from = pattern.name(period_time, i);
                if from.exists() {
                    std::fs::rename(&from, pattern.name(period_time, i + 1))?;
                }
            }
            pattern.name(period_time, 1)
        };
        r.next_index = index;
        if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let gzip = pattern.gzip;
        let mut policy = r.policy.clone();
        let moved = if gzip {
            tmp_name(&target)
        } else {
            target.clone()
        };
        std::fs::rename(&self.path, &moved)?;
        self.reopen()?;
        if gzip {
            // Compression can take a while: the writer carries on with the new file.
            self.compressor = std::thread::Builder::new()
                .name("ferrowizard-log-compress".into())
                .spawn(move || {
                    if let Err(e) = compress(&moved, &target) {
                        eprintln!(
                            "ferrowizard-logging: cannot compress {}: {e}",
                            moved.display()
                        );
                    }
                    clean_up(&mut policy);
                })
                .ok();
        } else {
            clean_up(&mut policy);
        }
        Ok(())
    }
}

fn tmp_name(target: &Path) -> PathBuf {
    let mut s = target.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

fn compress(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut input = File::open(from)?;
    let output = File::create(to)?;
    // The fastest level: log lines repeat so much that it still shrinks a file about a
    // hundredfold, for a fraction of the default level's CPU (BENCHMARKS.md, "Server under
    // load"), and archiving shares the machine with the service it logs.
    let mut encoder =
        flate2::write::GzEncoder::new(BufWriter::new(output), flate2::Compression::fast());
    std::io::copy(&mut input, &mut encoder)?;
    encoder.finish()?.flush()?;
    std::fs::remove_file(from)
}

impl FileSink {
    /// Writes `bytes` (whole lines) to the current file.
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let result = match &mut self.file {
            Some(f) => f.write_all(bytes).and_then(|()| {
                if self.immediate_flush {
                    f.flush()
                } else {
                    Ok(())
                }
            }),
            None => Ok(()),
        };
        match result {
            Ok(()) => {
                self.size += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Start afresh on the next batch: the file may have been removed, the disk
                // may have room again. Bytes still in the buffer are discarded with it.
                if let Some(f) = self.file.take() {
                    let _ = f.into_parts();
                }
                Err(e)
            }
        }
    }

    fn max_file_size(&self) -> Option<u64> {
        self.rolling.as_ref().and_then(|r| r.policy.max_file_size)
    }
}

impl super::Sink for FileSink {
    fn write(&mut self, batch: &[u8], line_ends: &[usize]) -> std::io::Result<()> {
        if self.file.is_none() {
            self.reopen()?;
        }
        let Some(max) = self.max_file_size() else {
            self.maybe_roll(batch.len())?;
            return self.append(batch);
        };
        // Size-based rotation splits the batch at line ends, so that no file grows past
        // maxFileSize (unless one line alone is larger).
        let mut start = 0;
        while start < batch.len() {
            self.maybe_roll(0)?;
            let room = max.saturating_sub(self.size);
            let end = line_ends
                .iter()
                .copied()
                .filter(|&e| e > start)
                .take_while(|&e| (e - start) as u64 <= room)
                .last();
            let end = match end {
                Some(e) => e,
                None if self.size > 0 => {
                    // The next line does not fit: start a new file for it.
                    self.maybe_roll(usize::MAX)?;
                    continue;
                }
                None => line_ends
                    .iter()
                    .copied()
                    .find(|&e| e > start)
                    .unwrap_or(batch.len()),
            };
            self.append(&batch[start..end])?;
            start = end;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.file {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }

    fn describe(&self) -> String {
        format!("file {}", self.path.display())
    }
}

impl Drop for FileSink {
    fn drop(&mut self) {
        if let Some(c) = self.compressor.take() {
            let _ = c.join();
        }
    }
}
