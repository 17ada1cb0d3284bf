//! The file appender on a real filesystem that runs out of room: a small tmpfs, filled with a
//! filler file, then given its room back. Lines that cannot be written are counted as
//! dropped, never cut in half; rotation and compression carry on once there is room; a log
//! directory removed while running is created again.
//!
//! Mounting needs root (CI runs as root); elsewhere the tmpfs tests say they were skipped and
//! why, and pass.

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use ferrowizard_config::Size;
use ferrowizard_logging::config::{AppenderCommon, AppenderFactory, FileAppenderFactory};
use ferrowizard_logging::{AppenderStats, Logging, LoggingFactory};
use tracing::Dispatch;

#[path = "support/tmpfs.rs"]
mod tmpfs;
use tmpfs::{Tmpfs, fill};

/// Bytes in a line, its newline included: not a divisor of the page size, so that lines
/// straddle the pages a full filesystem refuses.
const LINE_LEN: usize = 97;

/// Line `n`, without its newline.
fn line(n: u64) -> String {
    format!("line {n:06} {}", "x".repeat(LINE_LEN - 13))
}

/// Whether `text` is a whole line as [`line`] writes it.
fn is_line(text: &str) -> bool {
    text.len() == LINE_LEN - 1
        && text.starts_with("line ")
        && text[5..11].bytes().all(|b| b.is_ascii_digit())
        && text[11..].starts_with(' ')
        && text[12..].bytes().all(|b| b == b'x')
}

/// The line numbers in every file of `dir` but `filler` (gzipped archives unzipped). Fails
/// on a file that does not end with a newline or holds anything but whole lines, and on a
/// `.tmp` file left by compression.
fn line_numbers(dir: &Path) -> Vec<u64> {
    let mut numbers = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!name.ends_with(".tmp"), "compression left {name}");
        if name == "filler" {
            continue;
        }
        let mut text = String::new();
        if name.ends_with(".gz") {
            flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
                .read_to_string(&mut text)
                .unwrap_or_else(|e| panic!("{name} is not a whole gzip file: {e}"));
            assert!(!text.is_empty(), "{name} is empty");
        } else {
            text = std::fs::read_to_string(&path).unwrap();
        }
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "{name} ends in a partial line: {:?}",
            &text[text.len().saturating_sub(200)..]
        );
        for l in text.lines() {
            assert!(is_line(l), "{name} holds a torn line: {l:?}");
            numbers.push(l[5..11].parse().unwrap());
        }
    }
    numbers.sort_unstable();
    numbers
}

/// A lossless file appender writing bare messages to `dir/app.log`, rotated every
/// `max_lines` lines into `pattern` (in `dir`), keeping every archive (the pattern has a
/// date, so that its index counts up instead of shifting a fixed window).
fn appender(dir: &Path, pattern: &str, max_lines: u64, immediate_flush: bool) -> AppenderFactory {
    AppenderFactory::File(FileAppenderFactory {
        current_log_filename: Some(dir.join("app.log").display().to_string()),
        archive: true,
        archived_log_filename_pattern: Some(dir.join(pattern).display().to_string()),
        max_file_size: Some(Size::bytes(LINE_LEN as u64 * max_lines)),
        archived_file_count: 0,
        immediate_flush,
        common: AppenderCommon {
            log_format: Some("%m%n".into()),
            discarding_threshold: 0,
            ..Default::default()
        },
        ..Default::default()
    })
}

fn start(appender: AppenderFactory) -> (Logging, Dispatch) {
    let factory = LoggingFactory {
        appenders: vec![appender],
        ..Default::default()
    };
    let (logging, subscriber) = factory.build("disk-faults").expect("build");
    (logging, Dispatch::new(subscriber))
}

/// Logs lines `range`, a flush every 50 so that each group is a write of its own.
fn log(logging: &Logging, dispatch: &Dispatch, range: std::ops::Range<u64>) {
    tracing::dispatcher::with_default(dispatch, || {
        for n in range {
            tracing::info!("{}", line(n));
            if n % 50 == 49 {
                assert!(logging.flush(Duration::from_secs(30)), "flush timed out");
            }
        }
    });
    assert!(logging.flush(Duration::from_secs(30)), "flush timed out");
}

/// The archives in `dir` holding a line numbered `from` or above.
fn archives_with_lines_from(dir: &Path, from: u64) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("app-") && !name.ends_with(".tmp")
        })
        .filter(|p| {
            let mut text = String::new();
            if p.extension().is_some_and(|x| x == "gz") {
                let _ = flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap())
                    .read_to_string(&mut text);
            } else {
                text = std::fs::read_to_string(p).unwrap_or_default();
            }
            text.lines()
                .filter_map(|l| l.get(5..11)?.parse::<u64>().ok())
                .any(|n| n >= from)
        })
        .count()
}

/// Whether a file in `dir` is an archive waiting for compression.
fn waiting_for_compression(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .any(|e| e.unwrap().file_name().to_string_lossy().ends_with(".tmp"))
}

/// The shared run: `before` lines, then the filesystem is filled, lines up to 1200 are
/// logged, the filler goes, and lines up to 2000 are logged.
fn fill_and_recover(pattern: &str, immediate_flush: bool, before: u64) {
    let Some(tmpfs) = Tmpfs::mount("size=256k") else {
        return;
    };
    let dir = tmpfs.path();
    // 100 lines a file, 2.4 pages.
    let (logging, dispatch) = start(appender(dir, pattern, 100, immediate_flush));
    log(&logging, &dispatch, 0..before);
    let filler = fill(dir);
    log(&logging, &dispatch, before..1200);
    let full: AppenderStats = logging.stats().remove(0);
    assert!(full.write_errors > 0, "no write failed on a full disk");
    assert!(full.total().dropped > 0, "{:?}", full.total());
    if pattern.ends_with(".gz") {
        assert!(
            waiting_for_compression(dir),
            "the file rotated while full is not waiting for compression"
        );
    }

    std::fs::remove_file(filler).unwrap();
    log(&logging, &dispatch, 1200..2000);
    let stats = logging.shutdown(Duration::from_secs(30)).remove(0);
    let total = stats.total();
    assert_eq!(total.emitted, 2000, "{total:?}");
    assert_eq!(total.emitted, total.written + total.dropped, "{total:?}");

    // Every line counted as written is in a file, whole, once; none counted dropped is.
    let numbers = line_numbers(dir);
    assert_eq!(numbers.len() as u64, total.written, "{total:?}");
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "a line is doubled");
    assert!(numbers.contains(&1999), "the last line is missing");
    // Rotation resumed: the lines after the filler went are in archives (800 lines, 100 a
    // file).
    assert!(
        archives_with_lines_from(dir, 1200) >= 6,
        "rotation did not resume"
    );
}

/// 230 lines before the filler: the current file's last page still has room for twelve
/// lines and part of the thirteenth, which the full disk cuts off.
#[test]
fn a_full_disk_drops_whole_lines_counted_and_rotation_resumes() {
    fill_and_recover("app-%d{yyyy}-%i.log", true, 230);
}

/// With `immediate_flush: false` the lines a write error catches in the buffer were already
/// counted as written: they are kept and written once there is room, not thrown away.
#[test]
fn lines_held_in_the_buffer_are_written_once_there_is_room() {
    fill_and_recover("app-%d{yyyy}-%i.log", false, 230);
}

/// 300 lines before the filler: the current file is full, so the first line after it
/// rotates the file on the full disk, and its compression fails. That leaves no partial
/// archive behind, and the file waiting for it is compressed once there is room.
#[test]
fn compression_that_fails_for_lack_of_room_is_done_again_later() {
    fill_and_recover("app-%d{yyyy}-%i.log.gz", true, 300);
}

#[test]
fn a_log_directory_removed_while_running_is_created_again() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let (logging, dispatch) = start(appender(&logs, "app-%d{yyyy}-%i.log", 1000, true));
    log(&logging, &dispatch, 0..10);
    std::fs::remove_dir_all(&logs).unwrap();
    // The writer checks its file now and then: keep logging until it has come back.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut n = 10;
    let back = loop {
        log(&logging, &dispatch, n..n + 1);
        n += 1;
        let text = std::fs::read_to_string(logs.join("app.log")).unwrap_or_default();
        if !text.is_empty() {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "{} was not created again",
            logs.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    log(&logging, &dispatch, n..n + 10);
    let stats = logging.shutdown(Duration::from_secs(30)).remove(0);
    let total = stats.total();
    assert_eq!(total.emitted, total.written + total.dropped, "{total:?}");
    assert!(back.lines().all(is_line), "{back}");
    let numbers = line_numbers(&logs);
    assert!(numbers.contains(&(n + 9)), "{numbers:?}");
}
