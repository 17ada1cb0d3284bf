//! The orders binary on a real PostgreSQL that stops during a volley run and starts again:
//! requests answer 503 within maxWaitForConnection, the health check turns unhealthy, the log
//! says why at most once a second, and the service recovers by itself with no connection
//! leaked. The timeline is printed (`--nocapture`).

#[path = "../../../crates/db/tests/support/postgres.rs"]
mod postgres;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Service {
    child: Child,
    app: String,
    admin: String,
}

impl Drop for Service {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

fn serve(config: &Path) -> Service {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("orders"))
        .arg("server")
        .arg(config)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let (mut app, mut admin) = (String::new(), String::new());
    while app.is_empty() || admin.is_empty() {
        let line = lines.next().expect("the service's addresses").unwrap();
        let url = line.rsplit(' ').next().unwrap_or_default().to_owned();
        if line.contains("application listening") {
            app = url;
        } else if line.contains("admin listening") {
            admin = url;
        }
    }
    std::thread::spawn(move || lines.for_each(drop));
    Service { child, app, admin }
}

/// `GET url` (`http://HOST:PORT/PATH`) over a connection of its own, bounded to 5 s: the
/// status (0: no answer), the body, and how long it took.
fn fetch(url: &str) -> (u16, String, Duration) {
    use std::io::{Read, Write};
    let t = Instant::now();
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let answer = (|| -> std::io::Result<String> {
        let mut s = std::net::TcpStream::connect(host)?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )?;
        let mut text = String::new();
        s.read_to_string(&mut text)?;
        Ok(text)
    })()
    .unwrap_or_default();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body, t.elapsed())
}

fn get(url: &str) -> (u16, Duration) {
    let (status, _, took) = fetch(url);
    (status, took)
}

fn healthy(admin: &str) -> bool {
    get(&format!("{admin}/healthcheck")).0 == 200
}

#[test]
fn a_database_stopped_under_load_answers_503_fast_and_is_recovered_from() {
    let mut pg = postgres::Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
             adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  requestLog: {{appenders: []}}\n\
             logging:\n  level: INFO\n  appenders: [{{type: file, currentLogFilename: {}, archive: false}}]\n\
             database:\n  url: {}\n  password: {}\n  maxSize: 8\n  minSize: 2\n  initialSize: 2\n  \
             maxWaitForConnection: 1s\n  validationQueryTimeout: 400ms\n  migrations: {}\n\
             health:\n  healthChecks:\n    - {{name: orders, critical: true, schedule: \
             {{checkInterval: 500ms, downtimeInterval: 500ms, failureAttempts: 1, successAttempts: 1}}}}\n",
            log.display(),
            pg.url("orders"),
            postgres::PASSWORD,
            Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").display()
        ),
    )
    .unwrap();
    let migrate = Command::new(assert_cmd::cargo::cargo_bin("orders"))
        .args(["db", "migrate"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        migrate.status.success(),
        "{}",
        String::from_utf8_lossy(&migrate.stderr)
    );
    let service = serve(&config);

    // Load through the whole story: 12 s of shoppers.
    let scenario =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("load/orders.yaml"))
            .unwrap()
            .replace("http://127.0.0.1:8090", &service.app)
            .replace("during: 20s", "during: 12s");
    let load_dir = dir.path().to_owned();
    let load = std::thread::spawn(move || {
        let simulation = volley::scenario::load_str("orders.yaml", &scenario).unwrap();
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let run = volley::engine::prepare(&simulation, &load_dir).unwrap();
            volley::engine::execute(run.clone(), &simulation).await;
            run.snapshot()
        })
    });

    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    assert!(healthy(&service.admin));
    pg.stop();
    let stopped = t0.elapsed();

    // The first request after the stop answers 503 within maxWaitForConnection (1 s).
    let (status, first_took) = get(&format!("{}/orders/x", service.app));
    assert_eq!(status, 503);
    assert!(first_took < Duration::from_millis(2500), "{first_took:?}");
    let first_503 = t0.elapsed();
    // The scheduled check turns the service not ready (`/health-check`, 503), and the admin
    // side's check unhealthy.
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(&format!("{}/health-check", service.app)).0 != 503 {
        assert!(Instant::now() < deadline, "still ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    let unready = t0.elapsed();
    assert!(!healthy(&service.admin));
    // Every request answers 503 within maxWaitForConnection, with nothing hanging.
    let mut slowest = first_took;
    for _ in 0..4 {
        let (status, took) = get(&format!("{}/orders/x", service.app));
        assert_eq!(status, 503);
        slowest = slowest.max(took);
    }
    assert!(slowest < Duration::from_millis(2500), "{slowest:?}");
    std::thread::sleep(Duration::from_secs(2));

    pg.resume();
    let started = t0.elapsed();
    let deadline = Instant::now() + Duration::from_secs(15);
    while get(&format!("{}/orders/x", service.app)).0 != 404 {
        assert!(Instant::now() < deadline, "not recovered");
        std::thread::sleep(Duration::from_millis(50));
    }
    let recovered = t0.elapsed();
    while get(&format!("{}/health-check", service.app)).0 != 200 || !healthy(&service.admin) {
        assert!(Instant::now() < deadline, "not ready again");
        std::thread::sleep(Duration::from_millis(50));
    }
    let ready = t0.elapsed();
    let stats = load.join().unwrap();

    // No connection leaked: every connection comes back (the idle checks borrow them for a
    // moment), and the pool is within its bounds.
    let gauge = |state: &str| -> f64 {
        let (_, metrics, _) = fetch(&format!("{}/metrics/prometheus", service.admin));
        let key = format!("ferrowizard_db_connections{{database=\"orders\",state=\"{state}\"}} ");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&key))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{key} in {metrics}"))
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while gauge("active") != 0.0 {
        assert!(
            Instant::now() < deadline,
            "connections still held: {}",
            gauge("active")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let size = gauge("size");
    assert!((2.0..=8.0).contains(&size), "{size}");

    // The log: at most one line a second says why, with the count; one says it is back, once
    // calls have succeeded for a second.
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap();
        if text.contains("database orders is available again after") {
            break text;
        }
        assert!(Instant::now() < deadline, "no recovery line:\n{text}");
        get(&format!("{}/accounts/x", service.app));
        std::thread::sleep(Duration::from_millis(200));
    };
    let outage: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("is unavailable ("))
        .collect();
    let down = (recovered - stopped).as_secs_f64();
    assert!(!outage.is_empty(), "{text}");
    assert!(
        outage.len() as f64 <= down + 2.0,
        "{} lines in {down:.1} s:\n{text}",
        outage.len()
    );
    assert!(
        outage[0].contains("calls failed since the last line"),
        "{}",
        outage[0]
    );

    let s = |d: Duration| d.as_secs_f64();
    eprintln!(
        "timeline: stopped at {:.2}s; first 503 at {:.2}s (answered in {:.0} ms; slowest of 5: \
         {:.0} ms); not ready and unhealthy at {:.2}s; started at {:.2}s; first request served at \
         {:.2}s ({:.2}s after the start); ready again at {:.2}s; {} outage lines over {down:.1}s; \
         volley: {} requests, {} KO; pool size after: {size}",
        s(stopped),
        s(first_503),
        s(first_took) * 1000.0,
        s(slowest) * 1000.0,
        s(unready),
        s(started),
        s(recovered),
        s(recovered - started),
        s(ready),
        outage.len(),
        stats.global.requests,
        stats.global.kos,
    );
    assert!(stats.global.oks > 0);
}
