//! The hello service in the test's own process (`ferrowizard::testing`): its route, its health
//! check and its task, over real sockets.

use std::io::{Read, Write};
use std::net::TcpStream;

use ferrowizard::testing::TestService;

/// `METHOD url` with an empty body: the status and the body.
fn request(method: &str, url: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (out[9..12].parse().unwrap(), body)
}

/// Catches: the greetings not loaded before the first request, the health check not
/// registered, or the reload task not reading the file again.
#[test]
fn greets_reports_healthy_and_reloads_its_greetings() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("greetings.txt");
    std::fs::write(&file, "Bonjour\n").unwrap();
    let yaml = format!(
        "server: {{requestLog: {{appenders: []}}}}\nlogging: {{appenders: []}}\nhello: {{greetingsFile: {}}}\n",
        file.display()
    );
    let service = TestService::start(hello::Hello, &yaml).unwrap();
    let app = service.application_url();
    assert_eq!(request("GET", &format!("{app}/hello/Ada")), (200, "Bonjour, Ada!\n".into()));
    let (status, health) = request("GET", &format!("{}/healthcheck", service.admin_url()));
    assert_eq!(status, 200, "{health}");
    assert!(health.contains(r#""greetings":{"healthy":true,"message":"1 greetings""#), "{health}");

    std::fs::write(&file, "Hola\nBonjour\n").unwrap();
    let reload = request("POST", &format!("{}/tasks/reload", service.admin_url()));
    assert_eq!(reload, (200, "reloaded\n".into()));
    assert_eq!(request("GET", &format!("{app}/hello/world")), (200, "Hola, world!\n".into()));
}
