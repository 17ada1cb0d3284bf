//! The hello service as its users run it: the binary, real sockets, real signals.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_hello");

/// A config on free loopback ports whose greetings are in `greetings` (a path).
fn config(dir: &std::path::Path, greetings: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("hello.yaml");
    let yaml = format!(
        "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
         adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  requestLog: {{appenders: []}}\n\
         logging: {{appenders: []}}\nhello:\n  greetingsFile: {}\n",
        greetings.display()
    );
    std::fs::write(&path, yaml).unwrap();
    path
}

fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// Catches: the managed greetings not loaded before the port opens (the first request would
/// say "Hello"), the layer missing, the resource not stopped after the last request, or a
/// shutdown that kills its clean-up halfway.
#[test]
fn serves_greetings_and_stops_the_resource_after_the_last_request() {
    let dir = tempfile::tempdir().unwrap();
    let greetings = dir.path().join("greetings.txt");
    std::fs::write(&greetings, "Bonjour\nHola\n").unwrap();
    let mut child = Command::new(BIN)
        .args([
            "server".as_ref(),
            config(dir.path(), &greetings).as_os_str(),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("the service printed its address")
            .unwrap();
        if let Some(addr) = line.strip_prefix("hello: application listening on http://") {
            break addr.to_owned();
        }
    };
    let response = get(&addr, "/hello/Ada");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with("Bonjour, Ada!\n"), "{response}");
    assert!(
        response.contains("access-control-allow-origin: *"),
        "{response}"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(child.wait().unwrap().success());
    let stopped = rest
        .iter()
        .position(|l| l == "greetings: stopped after the last request");
    let last = rest
        .iter()
        .position(|l| l.starts_with("hello: stopped (SIGTERM"));
    assert!(stopped.is_some() && stopped < last, "{rest:#?}");
}

/// Catches: a failed managed start that still opens the ports, exits 0, or says nothing.
#[test]
fn a_resource_that_cannot_start_stops_the_service_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere.txt");
    let out = Command::new(BIN)
        .args(["server".as_ref(), config(dir.path(), &missing).as_os_str()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim(),
        format!(
            "hello: cannot start: Greetings did not start: {}: No such file or directory (os error 2)",
            missing.display()
        )
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
}

/// Catches: an application's command missing from `--help`, its configuration not loaded,
/// or its failure exiting 0.
#[test]
fn the_applications_own_command_runs_with_its_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let greetings = dir.path().join("greetings.txt");
    std::fs::write(&greetings, "Bonjour\n\nHola\n").unwrap();
    let help = Command::new(BIN).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("greetings  Print the greetings the configuration loads"),
        "{help}"
    );
    assert!(help.contains("server") && help.contains("check"), "{help}");

    let out = Command::new(BIN)
        .args([
            "greetings".as_ref(),
            config(dir.path(), &greetings).as_os_str(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Bonjour\nHola\n");

    // `--set` as `server` has it, and the command's own error: exit 1, one line.
    let out = Command::new(BIN)
        .args([
            "greetings".as_ref(),
            config(dir.path(), &greetings).as_os_str(),
        ])
        .args(["--set", "hello.greetingsFile=/nowhere/greetings.txt"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "hello: greetings: /nowhere/greetings.txt: No such file or directory (os error 2)"
    );

    // A configuration that does not validate is reported as `check` reports it.
    let out = Command::new(BIN)
        .args([
            "greetings".as_ref(),
            config(dir.path(), &greetings).as_os_str(),
        ])
        .args(["--set", "hello.greetingsFile="])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("greetingsFile"),
        "{out:?}"
    );
}
