//! `logging.type: external`: an application that installs its own `tracing` subscriber keeps
//! it; ferrowizard installs none, and its own events reach the application's subscriber.
//! One test in this file: it installs the process's global subscriber and raises SIGTERM.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::routing::get;
use ferrowizard::config::FrameworkConfiguration;
use ferrowizard::{Application, Environment};

struct Hello;

impl Application for Hello {
    type Config = FrameworkConfiguration;
    fn name(&self) -> &str {
        "hello"
    }
    async fn run(
        &self,
        _: &FrameworkConfiguration,
        env: &mut Environment,
    ) -> Result<(), ferrowizard::RunError> {
        env.route(
            "/hello",
            get(|| async {
                tracing::info!(target: "hello", "said hello");
                "hello"
            }),
        );
        Ok(())
    }
}

/// The application's own log: every event's target and message, as its writer got them.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn the_applications_own_subscriber_stays_in_place() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let (port, admin) = (free_port(), free_port());
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "logging:\n  type: external\nserver:\n  applicationConnectors: [{{type: http, port: {port}, bindHost: 127.0.0.1}}]\n  \
             adminConnectors: [{{type: http, port: {admin}, bindHost: 127.0.0.1}}]\n  requestLog: {{appenders: []}}\n"
        ),
    )
    .unwrap();
    let service = std::thread::spawn(move || {
        ferrowizard::run_from(
            Hello,
            ["hello".into(), "server".into(), config.into_os_string()],
        )
    });
    // ferrowizard's own INFO event, written by the application's subscriber.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !captured.text().contains("started hello") {
        assert!(
            Instant::now() < deadline,
            "never started:\n{}",
            captured.text()
        );
        assert!(!service.is_finished(), "exited:\n{}", captured.text());
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    assert!(response.ends_with("hello"), "{response}");

    nix::sys::signal::raise(nix::sys::signal::Signal::SIGTERM).unwrap();
    let code = service.join().unwrap();
    assert_eq!(code, std::process::ExitCode::SUCCESS);
    let text = captured.text();
    assert!(text.contains("hello: said hello"), "{text}");
    assert!(text.contains("shutting down"), "{text}");
}
