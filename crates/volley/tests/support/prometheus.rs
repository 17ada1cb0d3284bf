//! A real Prometheus for tests: Debian's `prometheus` binary scraping one target every
//! second, and its HTTP API's instant queries. Shared with examples/realtime's tests (by
//! `#[path]`), which scrape the service's admin endpoint.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running Prometheus, killed when dropped.
pub struct Prometheus {
    child: Child,
    /// Where its HTTP API listens.
    pub addr: SocketAddr,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Checks that Debian's `prometheus` is installed (`.ci/run` installs it), and fails the
/// calling test saying how to install it when it is not: a test that passed without its
/// Prometheus would have checked nothing.
pub fn require_installed() {
    let found = Command::new("prometheus")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "this test needs Debian's `prometheus` on the PATH: `apt-get install prometheus` \
         (`.ci/run` installs it when missing) and run it again"
    );
}

/// A free port of 127.0.0.1 (free when asked: bind it soon).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Prometheus {
    /// Starts Prometheus in `dir`, scraping `target` at `path` every second as job `job`.
    pub fn scraping(dir: &Path, job: &str, target: SocketAddr, path: &str) -> Prometheus {
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
                 scrape_configs:\n  - job_name: {job}\n    metrics_path: {path}\n    \
                 static_configs: [{{targets: ['{target}']}}]\n"
            ),
        )
        .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts");
        Prometheus { child, addr }
    }

    /// The first sample of an instant query, if any.
    pub fn query(&self, query: &str) -> Option<f64> {
        let encoded: String = query
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let mut stream = std::net::TcpStream::connect(self.addr).ok()?;
        std::io::Write::write_all(
            &mut stream,
            format!(
                "GET /api/v1/query?query={encoded} HTTP/1.0\r\nHost: {}\r\n\r\n",
                self.addr
            )
            .as_bytes(),
        )
        .ok()?;
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stream, &mut text).ok()?;
        let json: serde_json::Value = serde_json::from_str(text.split_once("\r\n\r\n")?.1).ok()?;
        json["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }

    /// Asks `query` every half second until it gives `want` (or 30 s pass); the last answer.
    pub fn wait_for(&self, query: &str, want: f64) -> Option<f64> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let got = self.query(query);
            if got == Some(want) || Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}
