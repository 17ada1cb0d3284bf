//! A file, optionally rotated.
//!
//! A write that fails (a full disk, an I/O error) leaves no part of its batch behind: the file
//! is cut back to where the batch began, so that the lines written once there is room again
//! start on a line of their own, and the lines counted as lost are the ones missing. Lines held
//! in the buffer (`immediateFlush: false`) were counted as written when the writer handed them
//! over: a failure keeps them for the next try. Every `CHECK_INTERVAL` the writer checks that
//! the path still names its file, and opens it again (creating its directory) if it was
//! removed.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::rolling::{RollingPolicy, clean_up, compress_waiting, tmp_name};
use crate::record::now;

/// How often the writer checks that its path still names the file it writes: a file (or a
/// log directory) removed while open takes every later line with it unnoticed, as writes to
/// it still succeed.
const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Writes batches to a file, rotating it as its policy says.
pub struct FileSink {
    path: PathBuf,
    file: Option<OpenFile>,
    /// Where the current file's last whole batch ends on disk.
    end: u64,
    /// Where the batch being written begins in the file (bytes on disk, then in `buffer`):
    /// a write that fails is undone back to here.
    batch_start: u64,
    /// Whole batches not yet written (`immediateFlush: false`); they follow `end`.
    buffer: Vec<u8>,
    buffer_size: usize,
    immediate_flush: bool,
    rolling: Option<Rolling>,
    compressor: Option<JoinHandle<()>>,
    /// When the path was last checked to still name the open file.
    checked: Instant,
}

struct OpenFile {
    file: File,
    /// The file's device and inode, to notice that the path names another file (or none).
    id: (u64, u64),
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
            end: 0,
            batch_start: 0,
            buffer: Vec::new(),
            buffer_size: buffer_size.max(512),
            immediate_flush,
            rolling: None,
            compressor: None,
            checked: Instant::now(),
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

    /// Opens the path afresh (creating its directory), appending after what it holds.
    fn reopen(&mut self) -> std::io::Result<()> {
        self.file = None;
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                let message = format!("cannot create its directory {}: {e}", dir.display());
                std::io::Error::new(e.kind(), message)
            })?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let meta = file.metadata()?;
        self.end = meta.len();
        self.batch_start = self.size();
        self.file = Some(OpenFile {
            file,
            id: (meta.dev(), meta.ino()),
        });
        self.checked = Instant::now();
        Ok(())
    }

    /// The current file's size once the buffer is written.
    fn size(&self) -> u64 {
        self.end + self.buffer.len() as u64
    }

    /// Rotates first if the batch of `len` bytes belongs in a new file.
    fn maybe_roll(&mut self, len: usize) -> std::io::Result<()> {
        let size = self.size();
        let Some(r) = &mut self.rolling else {
            return Ok(());
        };
        let t = now();
        if r.policy.pattern.has_date() {
            let period = r.policy.pattern.period(t);
            if period != r.period {
                let (old, index) = (r.period_time, r.next_index);
                // The new period begins once the old one's file is archived: a rotation that
                // fails (no room for the buffer) is tried again by the next batch.
                self.roll(old, index)?;
                if let Some(r) = &mut self.rolling {
                    r.period = period;
                    r.period_time = t;
                    r.next_index = 0;
                }
                return Ok(());
            }
        }
        let too_big = r
            .policy
            .max_file_size
            .is_some_and(|max| size > 0 && (size as usize).saturating_add(len) as u64 > max);
        if too_big {
            let (time, index) = (r.period_time, r.next_index);
            return self.roll(time, index);
        }
        Ok(())
    }

    /// Moves the current file to its archive name and starts a new one.
    fn roll(&mut self, period_time: i128, mut index: u32) -> std::io::Result<()> {
        // Lines waiting in the buffer belong to this file: without room for them, the
        // rotation waits for the next batch.
        self.write_buffer()?;
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
            // A fixed window: app.1.log is the newest; older ones move up by one, those
            // still waiting for compression (`.tmp`) too.
            let count = r.policy.archived_file_count.max(1) as u32;
            let oldest = pattern.name(period_time, count);
            let _ = std::fs::remove_file(tmp_name(&oldest));
            let _ = std::fs::remove_file(oldest);
            for i in (1..count).rev() {
                let (from, to) = (
                    pattern.name(period_time, i),
                    pattern.name(period_time, i + 1),
                );
                for (from, to) in [(tmp_name(&from), tmp_name(&to)), (from, to)] {
                    if from.exists() {
                        std::fs::rename(&from, to)?;
                    }
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
        let moved = if gzip { tmp_name(&target) } else { target };
        if let Err(e) = std::fs::rename(&self.path, &moved) {
            if self.path.exists() {
                return Err(e);
            }
            // Removed, and its lines with it: there is nothing to archive.
            self.say_removed();
            return self.reopen();
        }
        self.reopen()?;
        if gzip {
            // Compression can take a while: the writer carries on with the new file.
            self.compressor = std::thread::Builder::new()
                .name("ferrowizard-log-compress".into())
                .spawn(move || {
                    compress_waiting(&mut policy.pattern);
                    clean_up(&mut policy);
                })
                .ok();
        } else {
            clean_up(&mut policy);
        }
        Ok(())
    }
}

impl FileSink {
    /// Adds `bytes` (whole lines of the batch) to the current file: written now, or held in
    /// the buffer (`immediateFlush: false`) until it is full.
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.immediate_flush {
            return self.write_out(bytes);
        }
        if self.buffer.len() + bytes.len() > self.buffer_size {
            self.write_buffer()?;
        }
        if bytes.len() >= self.buffer_size {
            self.write_out(bytes)
        } else {
            self.buffer.extend_from_slice(bytes);
            Ok(())
        }
    }

    /// Writes the buffer out; on failure it keeps every byte for the next try.
    fn write_buffer(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let buffer = std::mem::take(&mut self.buffer);
        let written = self.write_out(&buffer);
        self.buffer = buffer;
        if written.is_ok() {
            self.buffer.clear();
        }
        written
    }

    /// Writes `bytes` at the end of the file; `end` moves past them once they all are there.
    fn write_out(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let Some(open) = &mut self.file else {
            return Err(std::io::Error::other("the file is not open"));
        };
        open.file.write_all(bytes)?;
        self.end += bytes.len() as u64;
        Ok(())
    }

    /// Runs `write` as one batch: if it fails, whatever it did to the file is undone.
    fn attempt(
        &mut self,
        write: impl FnOnce(&mut Self) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        self.batch_start = self.size();
        let result = write(self);
        if result.is_err() {
            self.undo();
        }
        result
    }

    /// Puts the file back as it was before the batch that failed: its bytes that reached the
    /// disk (ending, on a full one, in part of a line) are cut off, and the lines of earlier
    /// batches still in the buffer stay there. (Lines of the batch that a rotation in its
    /// middle already moved into an archive stay there, though counted as lost with the
    /// rest.) The file is closed, to be opened afresh by the next write: the disk may have
    /// room again, the directory may be gone.
    fn undo(&mut self) {
        let kept = self.end.min(self.batch_start);
        self.buffer
            .truncate(usize::try_from(self.batch_start - kept).unwrap_or(usize::MAX));
        self.end = kept;
        self.batch_start = self.size();
        let Some(open) = self.file.take() else {
            return;
        };
        let longer = open.file.metadata().is_ok_and(|m| m.len() > kept);
        if longer && let Err(e) = open.file.set_len(kept) {
            eprintln!(
                "ferrowizard-logging: cannot cut {} back to its last whole line: {e}",
                self.path.display()
            );
        }
    }

    /// Every [`CHECK_INTERVAL`], whether the path still names the open file; if not (the file
    /// or its directory was removed, or another file put in its place), it is closed, to be
    /// opened again by the write that follows.
    fn check_path(&mut self) {
        if self.checked.elapsed() < CHECK_INTERVAL {
            return;
        }
        self.checked = Instant::now();
        let Some(open) = &self.file else {
            return;
        };
        match std::fs::metadata(&self.path) {
            Ok(m) if (m.dev(), m.ino()) == open.id => {
                // Cut short by another program (logrotate's copytruncate): the next lines
                // land at its new end, and an undo must not cut beyond it.
                self.end = self.end.min(m.len());
            }
            Ok(_) => {
                eprintln!(
                    "ferrowizard-logging: {} names another file than the one being written (moved away?); writing to that one",
                    self.path.display()
                );
                self.file = None;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.say_removed();
                self.file = None;
            }
            Err(_) => {}
        }
    }

    fn say_removed(&self) {
        eprintln!(
            "ferrowizard-logging: {} was removed while being written (and with it the lines of the last second at most); creating it again",
            self.path.display()
        );
    }

    /// Writes the batch, split at line ends where size-based rotation needs it.
    fn write_lines(&mut self, batch: &[u8], line_ends: &[usize]) -> std::io::Result<()> {
        let Some(max) = self.max_file_size() else {
            self.maybe_roll(batch.len())?;
            return self.append(batch);
        };
        // Size-based rotation splits the batch at line ends, so that no file grows past
        // maxFileSize (unless one line alone is larger).
        let mut start = 0;
        while start < batch.len() {
            self.maybe_roll(0)?;
            let room = max.saturating_sub(self.size());
            let end = line_ends
                .iter()
                .copied()
                .filter(|&e| e > start)
                .take_while(|&e| (e - start) as u64 <= room)
                .last();
            let end = match end {
                Some(e) => e,
                None if self.size() > 0 => {
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

    fn max_file_size(&self) -> Option<u64> {
        self.rolling.as_ref().and_then(|r| r.policy.max_file_size)
    }
}

impl super::Sink for FileSink {
    fn write(&mut self, batch: &[u8], line_ends: &[usize]) -> std::io::Result<()> {
        self.check_path();
        if self.file.is_none() {
            self.reopen()?;
        }
        self.attempt(|sink| sink.write_lines(batch, line_ends))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        if self.file.is_none() {
            self.reopen()?;
        }
        self.attempt(Self::write_buffer)
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
        if !self.buffer.is_empty() {
            // The writer's last flush failed: these lines were counted as written.
            eprintln!(
                "ferrowizard-logging: {}: {} bytes of lines counted as written could not be written at exit",
                self.path.display(),
                self.buffer.len()
            );
        }
    }
}
