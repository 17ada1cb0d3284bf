//! `volley run --prometheus ADDR` scraped by a real Prometheus (Debian's `prometheus`, which
//! `.ci/run` installs): the target is up, and a query for the request counter gives the
//! requests the run sent.

mod support;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::Response;

/// A process killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Asks Prometheus' HTTP API for `query`; the first sample's value, if any.
fn query(prometheus: SocketAddr, query: &str) -> Option<f64> {
    let mut stream = std::net::TcpStream::connect(prometheus).ok()?;
    let path = format!("/api/v1/query?query={}", percent_encode(query));
    std::io::Write::write_all(
        &mut stream,
        format!("GET {path} HTTP/1.0\r\nHost: {prometheus}\r\n\r\n").as_bytes(),
    )
    .ok()?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut stream, &mut text).ok()?;
    let body = text.split_once("\r\n\r\n")?.1;
    let json: serde_json::Value = serde_json::from_str(body).ok()?;
    json["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn start_prometheus(dir: &Path, target: SocketAddr) -> Option<(Killed, SocketAddr)> {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
             scrape_configs:\n  - job_name: volley\n    static_configs: [{{targets: ['{target}']}}]\n"
        ),
    )
    .unwrap();
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={listen}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    Some((Killed(child), listen))
}

/// Catches: the endpoint missing or not in Prometheus' format (the scrape fails: `up` is 0),
/// counters that lag or miscount (the query differs from results.json's count), a name or
/// label that Prometheus refuses.
#[test]
fn a_real_prometheus_scrapes_the_running_test() {
    let Ok(version) = Command::new("prometheus").arg("--version").output() else {
        // CI installs it (.ci/run); elsewhere, say why nothing ran.
        eprintln!("skipped: Debian's `prometheus` is not installed (apt-get install prometheus)");
        return;
    };
    assert!(version.status.success());
    let target = support::serve(|_| async { Response::new(Full::new(Bytes::from("ok"))) });
    let dir = tempfile::tempdir().unwrap();
    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let (_prometheus, prometheus) = start_prometheus(dir.path(), metrics).unwrap();
    // 60 users send 3 requests each in the first second, then stay 6 s (a pause), so that
    // Prometheus scrapes the final counts several times while the run is still going.
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(
        &scenario,
        format!(
            "baseUrl: http://{target}\nscenarios:\n  - name: live\n    injection: [{{rampUsers: 60, during: 1s}}]\n    steps:\n      \
             - repeat: {{times: 3, steps: [{{request: {{name: quote, path: /quote}}}}]}}\n      \
             - pause: 6s\n"
        ),
    )
    .unwrap();
    let mut volley = Killed(
        Command::new(env!("CARGO_BIN_EXE_volley"))
            .arg("run")
            .arg(&scenario)
            .arg("--out")
            .arg(dir.path().join("out"))
            .arg("--prometheus")
            .arg(metrics.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stdout = volley.0.stdout.take().unwrap();
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .collect();
    let status = volley.0.wait().unwrap();
    assert!(status.success(), "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l == &format!("Prometheus metrics: http://{metrics}/metrics")),
        "{lines:#?}"
    );
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out/results.json")).unwrap())
            .unwrap();
    let sent = results["global"]["total"]["count"].as_f64().unwrap();
    assert_eq!(sent, 180.0);
    // What Prometheus stored while the run went on (its series go stale once the target is
    // gone, hence max_over_time over the last minute).
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut up, mut counted) = (None, None);
    while Instant::now() < deadline {
        up = query(prometheus, r#"max_over_time(up{job="volley"}[1m])"#);
        counted = query(
            prometheus,
            r#"sum(max_over_time(volley_requests_total{job="volley"}[1m]))"#,
        );
        if up == Some(1.0) && counted == Some(sent) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(up, Some(1.0), "Prometheus never scraped volley");
    assert_eq!(counted, Some(sent), "the request counter Prometheus stored");
    let users = query(
        prometheus,
        r#"max_over_time(volley_users_started_total{scenario="live"}[1m])"#,
    );
    assert_eq!(users, Some(60.0));
    let p99 = query(
        prometheus,
        r#"max_over_time(volley_response_time_seconds{request="quote",quantile="0.99"}[1m])"#,
    );
    assert!(p99.is_some_and(|v| v > 0.0 && v < 5.0), "{p99:?}");
}

/// A port already taken is exit 1 naming it, before any request is sent.
#[test]
fn a_taken_prometheus_address_is_an_error_before_the_run() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(
        &scenario,
        "baseUrl: http://127.0.0.1:1\nscenarios:\n  - name: s\n    injection: [{atOnceUsers: 1}]\n    steps: [{request: {name: r, path: /}}]\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_volley"))
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(dir.path().join("out"))
        .arg("--prometheus")
        .arg(addr.to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("--prometheus {addr}")) && err.contains("in use"),
        "{err}"
    );
    assert!(!dir.path().join("out/results.json").exists());
}
