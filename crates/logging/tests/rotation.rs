//! Size-based rotation into gzipped archives, with `archivedFileCount` and `totalSizeCap`
//! together: which archives survive, by name, what each holds, and the size they add up to.
//!
//! Every line is exactly [`LINE_LEN`] bytes and `maxFileSize` is [`LINES_PER_FILE`] lines,
//! so each file holds exactly that many lines and every rotation happens at a known line:
//! the archive names and contents are predicted exactly, with no clock involved (the `%d`
//! part is the year, which a test run does not cross).

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use ferrowizard_config::Size;
use ferrowizard_logging::LoggingFactory;
use ferrowizard_logging::config::{AppenderFactory, FileAppenderFactory};
use tracing::Dispatch;

/// Bytes in a line, its newline included.
const LINE_LEN: usize = 100;
/// Lines in a full file: `maxFileSize` is this many lines.
const LINES_PER_FILE: usize = 40;
/// Lines logged: seven full files rotate into archives 0 to 6 (logback's `%i` of
/// `SizeAndTimeBasedFNATP` starts at 0), and the current file keeps the last 15 lines.
const LINES: usize = 7 * LINES_PER_FILE + 15;
/// Archives the run rotates into.
const ROTATIONS: usize = LINES / LINES_PER_FILE;

/// Line `n` without its newline: its number, then 92 characters that differ from line to
/// line with no pattern (a 64-letter alphabet, from a xorshift seeded by `n`). Nearly
/// incompressible, so that every archive compresses to about the same size whatever the
/// gzip level, and a `totalSizeCap` between two and three archives keeps exactly two.
fn line(n: usize) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut state = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut text = format!("{n:06} ");
    while text.len() < LINE_LEN - 1 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        text.push(ALPHABET[(state >> 58) as usize] as char);
    }
    text
}

/// The lines `range` as they are in a file, newlines included.
fn lines(range: std::ops::Range<usize>) -> String {
    range.map(|n| line(n) + "\n").collect()
}

/// What archive `i` holds: the `i`th full file.
fn archive_content(i: usize) -> String {
    lines(i * LINES_PER_FILE..(i + 1) * LINES_PER_FILE)
}

/// What the current file holds at the end.
fn current_content() -> String {
    lines(ROTATIONS * LINES_PER_FILE..LINES)
}

/// A file appender writing bare messages to `current`, rotated into `pattern` (a file name
/// in the same directory) every [`LINES_PER_FILE`] lines; lossless.
fn appender(dir: &Path, pattern: &str) -> FileAppenderFactory {
    FileAppenderFactory {
        current_log_filename: Some(dir.join("app.log").display().to_string()),
        archive: true,
        archived_log_filename_pattern: Some(dir.join(pattern).display().to_string()),
        max_file_size: Some(Size::bytes((LINE_LEN * LINES_PER_FILE) as u64)),
        common: ferrowizard_logging::config::AppenderCommon {
            log_format: Some("%m%n".into()),
            discarding_threshold: 0,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Logs [`LINES`] lines through `appender` and shuts it down, every line written.
fn run(appender: FileAppenderFactory) {
    let factory = LoggingFactory {
        appenders: vec![AppenderFactory::File(appender)],
        ..Default::default()
    };
    let (logging, subscriber) = factory.build("rotation-test").expect("build");
    let dispatch = Dispatch::new(subscriber);
    tracing::dispatcher::with_default(&dispatch, || {
        for n in 0..LINES {
            tracing::info!("{}", line(n));
        }
    });
    // Shutting down joins the writer thread, and with it the last archive's compression and
    // clean-up.
    let stats = logging.shutdown(Duration::from_secs(30));
    let total = stats[0].total();
    assert_eq!(
        (total.emitted, total.written, total.dropped),
        (LINES as u64, LINES as u64, 0),
        "{:?}",
        stats[0]
    );
}

/// The file names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read the log directory")
        .map(|e| {
            e.expect("a directory entry")
                .file_name()
                .into_string()
                .expect("a UTF-8 name")
        })
        .collect();
    names.sort();
    names
}

/// The text of the gzip file at `path`, which must be one whole gzip member and nothing more.
fn gunzip(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read an archive");
    assert_eq!(
        bytes.get(..2),
        Some(&[0x1f, 0x8b][..]),
        "{} is not gzip",
        path.display()
    );
    let mut decoder = flate2::read::GzDecoder::new(&bytes[..]);
    let mut text = String::new();
    decoder
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{} does not decompress: {e}", path.display()));
    assert!(
        decoder.into_inner().is_empty(),
        "{} has bytes after its gzip member",
        path.display()
    );
    text
}

/// The size of `text` gzipped at the fastest level, the level archives are written at (the
/// cap is set from it; the test does not depend on the level, see [`line`]).
fn gzip_len(text: &str) -> u64 {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(text.as_bytes()).expect("gzip");
    encoder.finish().expect("gzip").len() as u64
}

/// The year now in UTC, the `%d{yyyy}` of the archive names.
fn year() -> i16 {
    jiff::Timestamp::now()
        .to_zoned_datetime(jiff::tz::TimeZone::UTC)
        .year()
}

/// Checks that `dir` holds exactly the archives `kept` (the archive index and its name,
/// oldest first) and the current file, that every archive is gzip holding its full file,
/// and that together they hold the last lines logged, each once and in order.
fn assert_kept(dir: &Path, kept: &[(usize, String)]) {
    let mut expected: Vec<String> = kept.iter().map(|(_, name)| name.clone()).collect();
    expected.push("app.log".into());
    expected.sort();
    assert_eq!(names(dir), expected);
    let mut all = String::new();
    for (i, name) in kept {
        let text = gunzip(&dir.join(name));
        assert_eq!(text, archive_content(*i), "{name} holds the wrong lines");
        all.push_str(&text);
    }
    let current = std::fs::read_to_string(dir.join("app.log")).expect("read the current file");
    assert_eq!(current, current_content(), "app.log holds the wrong lines");
    all.push_str(&current);
    let first = kept.first().map_or(ROTATIONS, |(i, _)| *i) * LINES_PER_FILE;
    assert_eq!(
        all,
        lines(first..LINES),
        "a line is lost, doubled or out of order"
    );
}

/// Size and time (`%d{yyyy}-%i`), gzipped, `archivedFileCount: 3` under a `totalSizeCap`
/// that all seven archives would fit: the three newest archives survive by name
/// (`app-YEAR-4.log.gz` to `-6`), the four oldest are deleted, each survivor is one gzip
/// member holding exactly its 40 lines, and with the current file they hold lines 160 to
/// 294, each once.
///
/// Catches the mutation `i >= policy.archived_file_count` to `i > policy.archived_file_count`
/// in `clean_up` (sink/rolling.rs), which keeps a fourth archive, `app-YEAR-3.log.gz`; and
/// `b.2.cmp(&a.2)` to `a.2.cmp(&b.2)` in `archives`, which keeps the three oldest instead.
#[test]
fn gzip_archives_beyond_the_count_are_deleted_oldest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let year = year();
    let mut a = appender(dir.path(), "app-%d{yyyy}-%i.log.gz");
    a.archived_file_count = 3;
    a.total_size_cap = Some(Size::mebibytes(1));
    run(a);
    let kept: Vec<(usize, String)> = (4..ROTATIONS)
        .map(|i| (i, format!("app-{year}-{i}.log.gz")))
        .collect();
    assert_kept(dir.path(), &kept);
}

/// Size and time (`%d{yyyy}-%i`), gzipped, a `totalSizeCap` of two and a half archives
/// under an `archivedFileCount: 5` that would keep five: the cap binds and deletes the
/// oldest first, so the two newest archives survive by name (`app-YEAR-5.log.gz` and `-6`),
/// each holding exactly its lines, and their sizes add up to no more than the cap. The
/// archives each compress to between a third and a half of the cap, so that two fit and
/// three do not, whichever two.
///
/// Catches the mutation `total > cap` to `size > cap` in `clean_up` (sink/rolling.rs),
/// which compares each archive alone with the cap and keeps five archives.
#[test]
fn gzip_archives_beyond_the_size_cap_are_deleted_oldest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let year = year();
    let cap = gzip_len(&archive_content(0)) * 5 / 2;
    let mut a = appender(dir.path(), "app-%d{yyyy}-%i.log.gz");
    a.archived_file_count = 5;
    a.total_size_cap = Some(Size::bytes(cap));
    run(a);
    let kept: Vec<(usize, String)> = (5..ROTATIONS)
        .map(|i| (i, format!("app-{year}-{i}.log.gz")))
        .collect();
    assert_kept(dir.path(), &kept);
    let sizes: Vec<u64> = kept
        .iter()
        .map(|(_, name)| {
            std::fs::metadata(dir.path().join(name))
                .expect("an archive's size")
                .len()
        })
        .collect();
    for (size, (_, name)) in sizes.iter().zip(&kept) {
        assert!(
            *size > cap / 3 && *size <= cap / 2,
            "{name} is {size} bytes, not between a third and a half of the cap ({cap})"
        );
    }
    assert!(
        sizes.iter().sum::<u64>() <= cap,
        "archives of {sizes:?} bytes exceed the cap of {cap}"
    );
}

/// A fixed window (`app.%i.log.gz`, no date), gzipped, `archivedFileCount: 3`: `app.1` is
/// the newest archive and older ones move up by one, so after seven rotations `app.1`,
/// `app.2` and `app.3` hold the sixth, fifth and fourth full files (archives 6, 5 and 4 in
/// rotation order), each one gzip member, and no `.tmp` file is left behind.
///
/// Catches the mutation `for i in (1..count).rev()` to `for i in 1..count` in `roll`
/// (sink/file.rs), which moves `app.1` to `app.2` and then on to `app.3`, overwriting it.
#[test]
fn a_gzipped_fixed_window_shifts_archives_and_keeps_the_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut a = appender(dir.path(), "app.%i.log.gz");
    a.archived_file_count = 3;
    run(a);
    let kept: Vec<(usize, String)> = (4..ROTATIONS)
        .map(|i| (i, format!("app.{}.log.gz", ROTATIONS - i)))
        .collect();
    assert_kept(dir.path(), &kept);
}
