//! Each logger of the curve's server, lossless, writes exactly the lines it emitted: 3 a
//! request for 20 requests, every one in the file once the server stopped on SIGTERM; bare
//! writes none. The real binary, real sockets, real files.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

fn run(logger: &str, lossless: bool) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lines.log");
    let mut command = Command::new(env!("CARGO_BIN_EXE_logcurve"));
    command
        .args(["--logger", logger, "--lines", "3", "--file"])
        .arg(&file)
        .stdout(Stdio::piped());
    if lossless {
        command.arg("--lossless");
    }
    let mut child = command.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    for _ in 0..20 {
        let mut s = TcpStream::connect(&addr).unwrap();
        write!(
            s,
            "GET /work HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        assert!(answer.ends_with("ok"), "{answer}");
    }
    nix_kill(child.id());
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    (rest, std::fs::read_to_string(&file).unwrap_or_default())
}

fn nix_kill(pid: u32) {
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

/// Catches: a logger set up to write nothing (or to stdout), lines left in a queue at exit,
/// the emitted count taken wrong (the script's drops would be wrong), `--lossless` ignored.
#[test]
fn every_lossless_logger_writes_what_it_emitted() {
    for (logger, lossless) in [
        ("ferrowizard", true),
        ("fmt", false),
        ("non-blocking", true),
        ("log4rs", false),
        ("slog", true),
        ("fern", false),
    ] {
        let (said, text) = run(logger, lossless);
        assert!(
            said.contains("emitted 60 lines for 20 requests"),
            "{logger}: {said}"
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 60, "{logger}");
        assert!(
            lines.iter().all(|l| l.contains("handled a step")),
            "{logger}: {text}"
        );
    }
    let (said, text) = run("bare", false);
    assert!(said.contains("emitted 0 lines for 20 requests"), "{said}");
    assert!(text.is_empty());
}

/// `--lossless` on a logger with one mode (which never drops) is refused, saying why.
#[test]
fn lossless_on_a_blocking_logger_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_logcurve"))
        .args(["--logger", "fmt", "--lossless", "--file", "/dev/null"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has one mode, which never drops"), "{err}");
}
