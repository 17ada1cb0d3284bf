//! `ferrowizard::testing::TestService`: an application started in the test's process, on free
//! ports, requested over real sockets, stopped in order when dropped.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use ferrowizard::config::FrameworkConfiguration;
use ferrowizard::health::Health;
use ferrowizard::testing::{TestError, TestService};
use ferrowizard::{Application, Config, Environment, Managed, RunError};

/// ferrowizard's sections only.
#[derive(Clone, Debug, Config)]
pub struct TestConfig {
    /// `server`, `logging`, `metrics`, `admin`, `health` and `opentelemetry`.
    #[config(framework)]
    pub framework: FrameworkConfiguration,
}

/// Counts starts and stops; refuses to start when `refuse`.
#[derive(Default)]
struct Resource {
    starts: AtomicUsize,
    stops: AtomicUsize,
    refuse: bool,
}

impl Managed for Resource {
    async fn start(&self) -> Result<(), RunError> {
        if self.refuse {
            return Err("the database is down".into());
        }
        self.starts.fetch_add(1, SeqCst);
        Ok(())
    }

    async fn stop(&self) -> Result<(), RunError> {
        self.stops.fetch_add(1, SeqCst);
        Ok(())
    }
}

struct App(Arc<Resource>);

impl Application for App {
    type Config = TestConfig;

    fn name(&self) -> &str {
        "testapp"
    }

    async fn run(&self, _: &TestConfig, env: &mut Environment) -> Result<(), RunError> {
        let resource = self.0.clone();
        env.route(
            "/started",
            ferrowizard::axum::routing::get(move || {
                let starts = resource.starts.load(SeqCst);
                async move { format!("{starts}\n") }
            }),
        )
        .manage(self.0.clone())
        .health_check("always", || async { Health::healthy() });
        Ok(())
    }
}

/// The body of `GET url` (`http://host:port/path`), and its status.
fn get(url: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Catches: ports from the YAML used as written (two tests would clash), a URL without the
/// simple server's context paths, the managed resource started after the ports open (the
/// first request would see 0) or not stopped on drop.
#[test]
fn an_application_serves_on_free_ports_and_stops_in_order_when_dropped() {
    let servers = [
        // Fixed ports in the file: moved to free ones.
        "server:\n  applicationConnectors: [{type: http, port: 8080}]\n  adminConnectors: [{type: http, port: 8081}]\n",
        "server:\n  type: simple\n  connector: {type: http, port: 8080}\n",
    ];
    for server in servers {
        let resource = Arc::new(Resource::default());
        let yaml = format!("{server}logging: {{appenders: []}}\n");
        let service = TestService::start(App(resource.clone()), &yaml).unwrap();
        assert_eq!(
            get(&format!("{}/started", service.application_url())),
            (200, "1\n".to_owned()),
            "{server}"
        );
        let (status, body) = get(&format!("{}/healthcheck", service.admin_url()));
        assert_eq!(status, 200, "{server}: {body}");
        assert!(body.contains("\"always\""), "{body}");
        assert_eq!(resource.stops.load(SeqCst), 0);
        drop(service);
        assert_eq!(resource.stops.load(SeqCst), 1, "{server}");
    }
}

/// Catches: a configuration error or a failed start swallowed (a test would hang or run
/// against nothing).
#[test]
fn a_bad_configuration_or_a_failed_start_is_an_error() {
    let resource = Arc::new(Resource::default());
    match TestService::start(App(resource), "server: {maxThreds: 4}\n") {
        Err(TestError::Config(report)) => assert!(report.contains("maxThreads"), "{report}"),
        other => panic!("{other:?}"),
    }
    let refusing = Arc::new(Resource {
        refuse: true,
        ..Resource::default()
    });
    match TestService::start(App(refusing), "logging: {appenders: []}\n") {
        Err(TestError::Start(line)) => assert_eq!(
            line,
            "cannot start: Resource did not start: the database is down"
        ),
        other => panic!("{other:?}"),
    }
}
