//! Rotation by time (`%d{...}`), by size (`%i` with `maxFileSize`), or both.
//!
//! Written here rather than taken from `file-rotate` or `logroller`: DropWizard users write
//! logback archive patterns (`logs/app-%d{yyyy-MM-dd}-%i.log.gz`), which neither crate
//! reads, and rotation must run inside our writer thread between two batches: that is what
//! makes "no line lost, none duplicated" hold without any locking.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use jiff::tz::TimeZone;

use crate::layout::time::DateFormat;

#[derive(Clone, Debug)]
enum Part {
    Text(String),
    Date(Box<DateFormat>),
    Index,
}

/// A parsed `archivedLogFilenamePattern`.
#[derive(Clone, Debug)]
pub struct ArchivePattern {
    parts: Vec<Part>,
    /// The archive is gzipped (the pattern ends in `.gz`).
    pub gzip: bool,
}

impl ArchivePattern {
    /// Parses a pattern; `%d` dates use `zone`.
    pub fn new(pattern: &str, zone: &TimeZone) -> Result<ArchivePattern, String> {
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut rest = pattern;
        while let Some(i) = rest.find('%') {
            text.push_str(&rest[..i]);
            let after = &rest[i + 1..];
            if let Some(r) = after.strip_prefix('%') {
                text.push('%');
                rest = r;
                continue;
            }
            if !text.is_empty() {
                parts.push(Part::Text(std::mem::take(&mut text)));
            }
            if let Some(r) = after.strip_prefix('i') {
                parts.push(Part::Index);
                rest = r;
            } else if let Some(r) = after.strip_prefix('d') {
                let (format, r) = match r.strip_prefix('{') {
                    Some(inner) => {
                        let end = inner
                            .find('}')
                            .ok_or_else(|| format!("unclosed %d{{ in {pattern:?}"))?;
                        (
                            inner[..end].split(',').next().unwrap_or("").trim(),
                            &inner[end + 1..],
                        )
                    }
                    None => ("yyyy-MM-dd", r),
                };
                parts.push(Part::Date(Box::new(DateFormat::new(format, zone.clone())?)));
                rest = r;
            } else {
                return Err(format!(
                    "unknown %-token in archive pattern {pattern:?} (use %d, %d{{...}}, %i or %%)"
                ));
            }
        }
        text.push_str(rest);
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        Ok(ArchivePattern {
            gzip: pattern.ends_with(".gz"),
            parts,
        })
    }

    /// Whether rotation is time-based.
    pub fn has_date(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Date(_)))
    }

    /// Whether the pattern has an index.
    pub fn has_index(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Index))
    }

    /// The period a time belongs to: the text of every date part.
    pub fn period(&mut self, nanos: i128) -> String {
        let mut key = Vec::new();
        for part in &mut self.parts {
            if let Part::Date(d) = part {
                d.write(nanos, &mut key);
                key.push(b'|');
            }
        }
        String::from_utf8_lossy(&key).into_owned()
    }

    /// The archive name for the period containing `nanos` and `index`.
    pub fn name(&mut self, nanos: i128, index: u32) -> PathBuf {
        let mut out = Vec::new();
        for part in &mut self.parts {
            match part {
                Part::Text(t) => out.extend_from_slice(t.as_bytes()),
                Part::Date(d) => d.write(nanos, &mut out),
                Part::Index => out.extend_from_slice(index.to_string().as_bytes()),
            }
        }
        PathBuf::from(String::from_utf8_lossy(&out).into_owned())
    }

    /// Whether a file name (without directory) is one of this pattern's archives.
    pub fn matches(&self, file_name: &str) -> bool {
        let mut parts: Vec<Part> = self.parts.clone();
        // Only the file-name part of the pattern is matched.
        if let Some(Part::Text(t)) = parts.first_mut()
            && let Some(i) = t.rfind('/')
        {
            *t = t[i + 1..].to_owned();
        }
        match_parts(&parts, file_name)
    }

    /// The directory archives go to.
    pub fn dir(&mut self) -> PathBuf {
        let sample = self.name(0, 0);
        sample
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }
}

fn match_parts(parts: &[Part], s: &str) -> bool {
    match parts.split_first() {
        None => s.is_empty(),
        Some((Part::Text(t), rest)) => s
            .strip_prefix(t.as_str())
            .is_some_and(|r| match_parts(rest, r)),
        Some((Part::Index, rest)) => {
            let digits = s.bytes().take_while(u8::is_ascii_digit).count();
            (1..=digits).any(|n| match_parts(rest, &s[n..]))
        }
        Some((Part::Date(_), rest)) => s
            .char_indices()
            .skip(1)
            .map(|(i, _)| i)
            .chain([s.len()])
            .any(|i| match_parts(rest, &s[i..])),
    }
}

/// When to rotate and what to keep.
#[derive(Clone, Debug)]
pub struct RollingPolicy {
    /// Archive names.
    pub pattern: ArchivePattern,
    /// Rotate when the file would grow past this many bytes.
    pub max_file_size: Option<u64>,
    /// Archives kept; 0 keeps all.
    pub archived_file_count: usize,
    /// Oldest archives are deleted past this total size.
    pub total_size_cap: Option<u64>,
}

/// The archives of `pattern` in its directory, newest first.
pub(crate) fn archives(pattern: &mut ArchivePattern) -> Vec<(PathBuf, u64, SystemTime)> {
    let dir = pattern.dir();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found: Vec<(PathBuf, u64, SystemTime)> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            // An archive still waiting for compression (`NAME.tmp`) counts as one.
            e.file_name()
                .to_str()
                .is_some_and(|n| pattern.matches(n.strip_suffix(".tmp").unwrap_or(n)))
        })
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            Some((e.path(), meta.len(), meta.modified().ok()?))
        })
        .collect();
    found.sort_by(|a, b| {
        b.2.cmp(&a.2)
            .then_with(|| natural(&b.0).cmp(&natural(&a.0)))
    });
    found
}

/// Orders `app-2.log` before `app-10.log`.
fn natural(p: &Path) -> (usize, String) {
    let s = p.to_string_lossy().into_owned();
    (s.len(), s)
}

/// Deletes archives beyond the count and size limits.
pub(crate) fn clean_up(policy: &mut RollingPolicy) {
    let mut total = 0u64;
    for (i, (path, size, _)) in archives(&mut policy.pattern).into_iter().enumerate() {
        total += size;
        let over_count = policy.archived_file_count > 0 && i >= policy.archived_file_count;
        let over_size = policy.total_size_cap.is_some_and(|cap| total > cap);
        if over_count || over_size {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The name an archive has while it waits for compression: `NAME.tmp`.
pub(crate) fn tmp_name(target: &Path) -> PathBuf {
    let mut s = target.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// Compresses every archive of `pattern` waiting as `NAME.tmp` into `NAME`: the one just
/// rotated, and any an earlier try could not compress (a full disk) or an earlier run left.
/// A try that fails leaves no partial archive: its file waits for the next rotation.
pub(crate) fn compress_waiting(pattern: &mut ArchivePattern) {
    for (path, _, _) in archives(pattern) {
        let Some(target) = path
            .to_str()
            .and_then(|p| p.strip_suffix(".tmp"))
            .map(PathBuf::from)
        else {
            continue;
        };
        if let Err(e) = compress(&path, &target) {
            let _ = std::fs::remove_file(&target);
            eprintln!(
                "ferrowizard-logging: cannot compress {}: {e}; trying again at the next rotation",
                path.display()
            );
            // Whatever failed (most often room) fails the others too.
            return;
        }
    }
}

fn compress(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut input = std::fs::File::open(from)?;
    let output = std::fs::File::create(to)?;
    // The fastest level: log lines repeat so much that it still shrinks a file about a
    // hundredfold, for a fraction of the default level's CPU (BENCHMARKS.md, "Logging hot path"), and archiving shares the machine with the service it logs.
    let mut encoder =
        flate2::write::GzEncoder::new(std::io::BufWriter::new(output), flate2::Compression::fast());
    std::io::copy(&mut input, &mut encoder)?;
    encoder.finish()?.flush()?;
    std::fs::remove_file(from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_matches() {
        let mut p =
            ArchivePattern::new("logs/app-%d{yyyy-MM-dd}-%i.log.gz", &TimeZone::UTC).unwrap();
        assert!(p.gzip && p.has_date() && p.has_index());
        assert_eq!(
            p.name(1_392_044_642_619_000_000, 3),
            PathBuf::from("logs/app-2014-02-10-3.log.gz")
        );
        assert_eq!(p.dir(), PathBuf::from("logs"));
        assert!(p.matches("app-2014-02-10-3.log.gz"));
        assert!(p.matches("app-2014-02-10-12.log.gz"));
        assert!(!p.matches("app.log"));
        assert!(!p.matches("app-2014-02-10-x.log.gz"));
        let p = ArchivePattern::new("app.%i.log", &TimeZone::UTC).unwrap();
        assert!(p.matches("app.1.log") && !p.matches("app.log") && !p.has_date());
        assert!(ArchivePattern::new("app-%x.log", &TimeZone::UTC).is_err());
    }
}
