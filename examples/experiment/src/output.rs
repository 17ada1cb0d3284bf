//! What the services wrote: every file in a run's folder is counted (lines and bytes), then
//! kept or deleted as `--keep-logs` says, and the whole is summed up for the summary.
//!
//! The services write to files, as the report's did (its console went to a file), so the
//! logging under test costs what it costs on a server; the files are counted once the
//! service has exited, and deleted unless kept, so that a run's disk use is one run's output
//! rather than every round's.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Lines and bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Lines (in a gzipped archive, once decompressed).
    pub lines: u64,
    /// Bytes on disk.
    pub bytes: u64,
}

impl std::ops::AddAssign for Written {
    fn add_assign(&mut self, other: Written) {
        self.lines += other.lines;
        self.bytes += other.bytes;
    }
}

impl std::iter::Sum for Written {
    fn sum<I: Iterator<Item = Written>>(iter: I) -> Written {
        let mut total = Written::default();
        for w in iter {
            total += w;
        }
        total
    }
}

/// One file a service wrote: its name within the run's folder, and what it holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileCount {
    /// Its path relative to the run's folder (`stdout`, `requests.log`).
    pub name: String,
    /// Its lines and bytes.
    pub written: Written,
}

/// Every file under `folder`: its lines (a `.gz` archive's decompressed) and its size.
pub fn count(folder: &Path) -> std::io::Result<Vec<FileCount>> {
    let mut files = Vec::new();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                folders.push(path);
                continue;
            }
            let bytes = entry.metadata()?.len();
            let file = std::fs::File::open(&path)?;
            let lines = if path.extension().is_some_and(|e| e == "gz") {
                lines(flate2::read::GzDecoder::new(file))
            } else {
                lines(file)
            }
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            let name = path
                .strip_prefix(folder)
                .unwrap_or(&path)
                .display()
                .to_string();
            files.push(FileCount {
                name,
                written: Written { lines, bytes },
            });
        }
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// The newlines `reader` yields, read a block at a time (a service's stdout may be larger
/// than memory would comfortably hold).
fn lines(mut reader: impl Read) -> std::io::Result<u64> {
    let mut buffer = vec![0u8; 256 * 1024];
    let mut lines = 0u64;
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => return Ok(lines),
            Ok(n) => lines += buffer[..n].iter().filter(|b| **b == b'\n').count() as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// `--keep-logs`: which runs' output stays on disk once counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum KeepLogs {
    /// Count each run's output, then delete it.
    None,
    /// Keep the last round's output (one run of each config), delete the others'.
    Last,
    /// Keep every round's output.
    All,
}

impl KeepLogs {
    /// Whether round `round` of `rounds` is kept.
    pub fn keeps(self, round: u32, rounds: u32) -> bool {
        match self {
            KeepLogs::None => false,
            KeepLogs::Last => round == rounds,
            KeepLogs::All => true,
        }
    }

    /// As spelled on the command line.
    pub fn name(self) -> &'static str {
        match self {
            KeepLogs::None => "none",
            KeepLogs::Last => "last",
            KeepLogs::All => "all",
        }
    }
}

/// What became of every run's output: written, kept, deleted.
#[derive(Debug, Default)]
pub struct Ledger {
    /// All output, over every run.
    pub written: Written,
    /// The output kept because `--keep-logs` asked.
    pub kept: Written,
    /// The output kept because its run failed (for diagnosis).
    pub failed: Written,
    /// The folders kept because `--keep-logs` asked.
    pub kept_folders: Vec<PathBuf>,
    /// The folders kept because their run failed.
    pub failed_folders: Vec<PathBuf>,
}

impl Ledger {
    /// Notes a run's `written` output in `folder`, and keeps it (when `keep` says so, or
    /// the run `failed`) or deletes it. Returns what became of it, for the console.
    pub fn settle(
        &mut self,
        folder: &Path,
        written: Written,
        keep: bool,
        failed: bool,
    ) -> std::io::Result<Fate> {
        self.written += written;
        if failed {
            self.failed += written;
            self.failed_folders.push(folder.to_path_buf());
            return Ok(Fate::KeptFailed);
        }
        if keep {
            self.kept += written;
            self.kept_folders.push(folder.to_path_buf());
            return Ok(Fate::Kept);
        }
        std::fs::remove_dir_all(folder)?;
        // The round's folder goes too once its last run's is gone.
        if let Some(round) = folder.parent() {
            let _ = std::fs::remove_dir(round);
        }
        Ok(Fate::Deleted)
    }

    /// The bytes counted and deleted.
    pub fn deleted(&self) -> u64 {
        self.written.bytes - self.kept.bytes - self.failed.bytes
    }

    /// A paragraph for the summary: how much the services wrote, what was kept and where,
    /// and how much was deleted.
    pub fn paragraph(&self, keep: KeepLogs) -> String {
        let mut text = format!(
            "**Service output.** The services wrote {} lines ({}) to stdout, stderr and their log files in all. ",
            thousands(self.written.lines),
            size(self.written.bytes)
        );
        match keep {
            KeepLogs::None => text.push_str(&format!(
                "Each run's output was counted, then deleted ({} in all; `--keep-logs none`, the default); \
                 `--keep-logs last` keeps the last round's, `--keep-logs all` every round's.",
                size(self.deleted())
            )),
            KeepLogs::Last | KeepLogs::All => {
                let rounds = listed(&unique_parents(&self.kept_folders));
                text.push_str(&format!(
                    "Kept (`--keep-logs {}`): {} in {}; {} of other rounds' output was counted, then deleted.",
                    keep.name(),
                    size(self.kept.bytes),
                    if rounds.is_empty() { "no folder".to_owned() } else { rounds },
                    size(self.deleted())
                ));
            }
        }
        if !self.failed_folders.is_empty() {
            text.push_str(&format!(
                " Kept for diagnosis, as their runs failed: {} in {}.",
                size(self.failed.bytes),
                listed(&self.failed_folders)
            ));
        }
        text
    }
}

/// Paths in backticks, separated by commas.
fn listed(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| format!("`{}`", p.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The distinct parents (round folders) of `folders`, in order.
fn unique_parents(folders: &[PathBuf]) -> Vec<PathBuf> {
    let mut parents: Vec<PathBuf> = Vec::new();
    for f in folders {
        let p = f.parent().unwrap_or(f).to_path_buf();
        if !parents.contains(&p) {
            parents.push(p);
        }
    }
    parents
}

/// What [`Ledger::settle`] did with a run's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Kept, as `--keep-logs` asked.
    Kept,
    /// Kept because the run failed.
    KeptFailed,
    /// Counted and deleted.
    Deleted,
}

/// `bytes` in decimal units: `532 B`, `12.4 kB`, `502.3 MB`, `1.62 GB`.
pub fn size(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..1_000 => format!("{bytes} B"),
        1_000..1_000_000 => format!("{:.1} kB", b / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", b / 1e6),
        _ => format!("{:.2} GB", b / 1e9),
    }
}

/// `n` with thousands separated by commas, as the report's figures are written.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines are counted in plain files and, decompressed, in gzipped archives; bytes are
    /// the sizes on disk.
    ///
    /// Catches: an archive counted compressed (its lines lost), a folder not descended.
    #[test]
    fn counts_plain_and_gzipped_files() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("stdout"), "a\nb\nc\n").unwrap();
        let gz = std::fs::File::create(dir.path().join("app-1.log.gz")).unwrap();
        let mut enc = flate2::write::GzEncoder::new(gz, flate2::Compression::default());
        enc.write_all("x\n".repeat(1000).as_bytes()).unwrap();
        enc.finish().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/more.log"), "1\n2\n").unwrap();
        let files = count(dir.path()).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["app-1.log.gz", "stdout", "sub/more.log"]);
        assert_eq!(files[0].written.lines, 1000);
        assert!(
            files[0].written.bytes < 1000,
            "the size on disk, compressed"
        );
        assert_eq!(files[1].written, Written { lines: 3, bytes: 6 });
        let total: Written = files.iter().map(|f| f.written).sum();
        assert_eq!(total.lines, 1005);
    }

    /// `none` keeps no round, `last` only the last, `all` every one; a failed run is kept
    /// whatever the choice, and said apart.
    ///
    /// Catches: `last` keeping the first round, a deleted run counted as kept.
    #[test]
    fn keep_logs_chooses_the_rounds_kept() {
        let keeps = |k: KeepLogs| (1..=3).map(|r| k.keeps(r, 3)).collect::<Vec<_>>();
        assert_eq!(keeps(KeepLogs::None), [false, false, false]);
        assert_eq!(keeps(KeepLogs::Last), [false, false, true]);
        assert_eq!(keeps(KeepLogs::All), [true, true, true]);

        let dir = tempfile::tempdir().unwrap();
        let run = |round: u32, name: &str| {
            let f = dir.path().join(format!("round-{round}/{name}"));
            std::fs::create_dir_all(&f).unwrap();
            std::fs::write(f.join("stdout"), "line\n").unwrap();
            f
        };
        let w = Written { lines: 1, bytes: 5 };
        let mut ledger = Ledger::default();
        let (r1, r2, bad) = (run(1, "before"), run(2, "before"), run(2, "after"));
        assert_eq!(ledger.settle(&r1, w, false, false).unwrap(), Fate::Deleted);
        assert_eq!(ledger.settle(&r2, w, true, false).unwrap(), Fate::Kept);
        assert_eq!(
            ledger.settle(&bad, w, false, true).unwrap(),
            Fate::KeptFailed
        );
        assert!(
            !dir.path().join("round-1").exists(),
            "an emptied round goes"
        );
        assert!(r2.join("stdout").exists() && bad.join("stdout").exists());
        assert_eq!(
            ledger.written,
            Written {
                lines: 3,
                bytes: 15
            }
        );
        assert_eq!(
            (ledger.kept.bytes, ledger.failed.bytes, ledger.deleted()),
            (5, 5, 5)
        );
        let text = ledger.paragraph(KeepLogs::Last);
        assert!(text.contains("3 lines (15 B)"), "{text}");
        assert!(text.contains("round-2`"), "{text}");
        assert!(text.contains("Kept for diagnosis"), "{text}");
    }

    #[test]
    fn sizes_and_thousands_read_as_written() {
        assert_eq!(size(532), "532 B");
        assert_eq!(size(12_400), "12.4 kB");
        assert_eq!(size(502_300_000), "502.3 MB");
        assert_eq!(size(1_620_000_000), "1.62 GB");
        assert_eq!(thousands(25_873), "25,873");
        assert_eq!(thousands(113_011), "113,011");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
