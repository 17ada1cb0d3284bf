//! What the tests of the real `realtime` binary share: starting it, and a small HTTP/1.1
//! client on a plain socket (the server's own framing is under test, so no client library
//! smooths it over).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `realtime server`, killed when dropped.
pub struct Service {
    pub child: Child,
    pub app: SocketAddr,
    pub admin: SocketAddr,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `realtime server` with `config` and reads the bound addresses it prints.
pub fn start(config: &Path) -> Service {
    start_with(config, &[], &[])
}

/// [`start`] with environment variables set for the child.
pub fn start_with_env(config: &Path, env: &[(&str, &str)]) -> Service {
    start_with(config, &[], env)
}

/// [`start`] with more arguments (`--set k=v`) and environment variables for the child.
/// Lines the service prints before its addresses (a console appender's) are skipped.
pub fn start_with(config: &Path, args: &[&str], env: &[(&str, &str)]) -> Service {
    start_roles(config, args, env, true)
}

/// [`start`] for `server.type: simple`: one connector, `admin` is `app`.
pub fn start_simple(config: &Path) -> Service {
    start_roles(config, &[], &[], false)
}

/// [`start`] with the open-file limit (`RLIMIT_NOFILE`) at `limit`.
pub fn start_with_open_files(config: &Path, limit: u64) -> Service {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(env!("CARGO_BIN_EXE_realtime"));
    // SAFETY: between fork and exec, only `setrlimit` (async-signal-safe) runs.
    unsafe {
        command.pre_exec(move || {
            use nix::sys::resource::{Resource, setrlimit};
            setrlimit(Resource::RLIMIT_NOFILE, limit, limit).map_err(std::io::Error::from)
        });
    }
    spawn(command, config, &[], &[], true)
}

/// [`start`] with the child's stderr written to the file `stderr`, for tests of what the
/// service reports there.
pub fn start_with_stderr(config: &Path, stderr: &Path) -> Service {
    let mut command = Command::new(env!("CARGO_BIN_EXE_realtime"));
    command.stderr(std::fs::File::create(stderr).expect("the stderr file"));
    spawn(command, config, &[], &[], true)
}

fn start_roles(config: &Path, args: &[&str], env: &[(&str, &str)], admin: bool) -> Service {
    spawn(
        Command::new(env!("CARGO_BIN_EXE_realtime")),
        config,
        args,
        env,
        admin,
    )
}

fn spawn(
    mut command: Command,
    config: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    admin: bool,
) -> Service {
    let mut child = command
        .arg("server")
        .arg(config)
        .args(args)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn realtime");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut find = |role: &str| -> SocketAddr {
        let said = format!("{role} listening on ");
        let line = lines
            .by_ref()
            .map(|l| l.expect("utf-8"))
            .find(|l| l.contains(&said))
            .unwrap_or_else(|| panic!("realtime never said {said:?}"));
        let addr = line
            .rsplit("://")
            .next()
            .unwrap_or_default()
            .replace("0.0.0.0", "127.0.0.1");
        addr.parse()
            .unwrap_or_else(|_| panic!("an address in {line}"))
    };
    let app = find("application");
    let admin = if admin { find("admin") } else { app };
    // Keep draining stdout so the child never blocks on it.
    std::thread::spawn(move || for _ in lines.by_ref() {});
    Service { child, app, admin }
}

pub fn sigterm(child: &Child) {
    signal(child, "TERM");
}

/// Writes `body` as `config.yaml` in `dir`, with `DIR` replaced by the directory.
pub fn write_config(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("config.yaml");
    std::fs::write(&path, body.replace("DIR", &dir.display().to_string())).unwrap();
    path
}

pub fn connect(addr: SocketAddr) -> BufReader<TcpStream> {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    BufReader::new(s)
}

/// A response: status, headers (names in lower case) and body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The body's length in bytes as sent (de-chunked, still compressed if it was).
    pub length: usize,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request on a kept-alive connection.
pub fn request(
    stream: &mut BufReader<TcpStream>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Response> {
    let mut head =
        format!("{method} {path} HTTP/1.1\r\nHost: test\r\nUser-Agent: realtime-test\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.get_mut().write_all(head.as_bytes())?;
    stream.get_mut().write_all(body)?;
    let mut status_line = String::new();
    if stream.read_line(&mut status_line)? == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "closed",
        ));
    }
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(status_line.clone()))?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        stream.read_line(&mut line)?;
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if find("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        loop {
            let mut size = String::new();
            stream.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim(), 16).map_err(std::io::Error::other)?;
            let mut chunk = vec![0; n + 2];
            stream.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        let length: usize = find("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        body.resize(length, 0);
        stream.read_exact(&mut body)?;
    }
    Ok(Response {
        status,
        headers,
        length: body.len(),
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// A GET on a kept-alive connection; returns the status.
pub fn get(stream: &mut BufReader<TcpStream>, path: &str) -> std::io::Result<u16> {
    request(stream, "GET", path, &[], b"").map(|r| r.status)
}

/// Sends raw bytes on a new connection and returns whatever comes back until the server
/// closes it or 5 s pass. Write errors are ignored: a server that refuses a request early
/// (431, 400) may close before the client has sent it all, and its answer is what counts.
pub fn raw(addr: SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(request);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The status code of a raw response (0 when there is none).
pub fn status_of(response: &str) -> u16 {
    response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Sends `signal` (`TERM`, `INT`) to `child`.
pub fn signal(child: &Child, signal: &str) {
    use nix::sys::signal::Signal;
    let signal = match signal {
        "TERM" => Signal::SIGTERM,
        "INT" => Signal::SIGINT,
        other => panic!("no signal {other}"),
    };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal)
        .expect("send a signal");
}

/// Waits up to 30 s for `child` to exit (after a signal); kills it and fails the test if it
/// does not.
pub fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("realtime did not exit within 30 s of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `realtime server CONFIG` expecting it to fail at startup: its exit status and
/// stderr. Killed (and the test failed) if it is still running after 20 s.
pub fn fail_to_start(config: &Path) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_realtime"))
        .arg("server")
        .arg(config)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn realtime");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("realtime server started with {}", config.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    (status, stderr)
}

/// `realtime` started in the test's own process (`ferrowizard::testing`), from `yaml` (whose
/// connectors are moved to free loopback ports); stopped when dropped. For tests that need no
/// process of their own (no signals, no installed logging).
pub struct InProcess {
    pub service: ferrowizard::testing::TestService,
    pub app: SocketAddr,
    pub admin: SocketAddr,
}

pub fn start_in_process(yaml: &str) -> InProcess {
    let service = ferrowizard::testing::TestService::start(realtime::app::Realtime, yaml)
        .unwrap_or_else(|e| panic!("realtime did not start: {e}"));
    let addr = |url: &str| -> SocketAddr {
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .expect("an http or https URL");
        rest[..rest.find('/').unwrap_or(rest.len())]
            .parse()
            .expect("an address")
    };
    let (app, admin) = (addr(service.application_url()), addr(service.admin_url()));
    InProcess {
        service,
        app,
        admin,
    }
}

/// [`start_in_process`] with the configuration file `config`.
pub fn start_in_process_file(config: &Path) -> InProcess {
    start_in_process(&std::fs::read_to_string(config).expect("the config file"))
}

/// A running service, in a process of its own or in the test's.
pub trait Serving {
    /// The application connector's address.
    fn app(&self) -> SocketAddr;
    /// The admin connector's address.
    fn admin(&self) -> SocketAddr;
    /// Stops the service as SIGTERM does: drained, every request-log line written.
    fn shut_down(self);
}

impl Serving for Service {
    fn app(&self) -> SocketAddr {
        self.app
    }
    fn admin(&self) -> SocketAddr {
        self.admin
    }
    fn shut_down(mut self) {
        sigterm(&self.child);
        assert!(wait_exit(&mut self.child).success());
    }
}

impl Serving for InProcess {
    fn app(&self) -> SocketAddr {
        self.app
    }
    fn admin(&self) -> SocketAddr {
        self.admin
    }
    fn shut_down(self) {
        drop(self.service);
    }
}

#[allow(unused_imports)] // Only the disk-fault tests use them.
pub use tmpfs::{Tmpfs, fill};

#[path = "../../../../crates/logging/tests/support/tmpfs.rs"]
mod tmpfs;
