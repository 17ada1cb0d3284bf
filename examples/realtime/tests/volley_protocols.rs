//! volley against the real `realtime` binary over HTTPS (a test certificate), HTTP/2 by ALPN
//! and HTTP/2 with prior knowledge (h2c): the protocol each request arrived with is read from
//! the service's request log, the connections from volley's own count.

mod common;

use std::path::Path;

use common::{InProcess, start_in_process_file, write_config};

/// A self-signed certificate for `localhost`, as `cert.pem` and `key.pem` in `dir`.
fn certificate(dir: &Path) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(dir.join("cert.pem"), cert.cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), cert.signing_key.serialize_pem()).unwrap();
}

/// `realtime`, in this process, on one application connector (`connector`, a YAML flow mapping), its request
/// log in `DIR/requests.log`.
fn serve(dir: &Path, connector: &str) -> InProcess {
    start_in_process_file(&write_config(
        dir,
        &format!(
            "server:\n  applicationConnectors: [{connector}]\n  \
             adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
             requestLog:\n    appenders: [{{type: file, currentLogFilename: DIR/requests.log, \
             archive: false, immediateFlush: true}}]\nlogging:\n  level: WARN\n  appenders: []\n"
        ),
    ))
}

fn https(dir: &Path) -> InProcess {
    certificate(dir);
    serve(
        dir,
        "{type: https, port: 0, bindHost: 127.0.0.1, certPath: DIR/cert.pem, keyPath: DIR/key.pem}",
    )
}

/// Runs `users` users of one request each against `base_url` with these `http:` settings
/// (a YAML flow mapping), in this process; what volley measured.
fn volley(dir: &Path, base_url: &str, http: &str, users: u32) -> volley::stats::Stats {
    let yaml = format!(
        "baseUrl: {base_url}\nhttp: {http}\nmaxDuration: 30s\nscenarios:\n  - name: s\n    \
         injection: [{{atOnceUsers: {users}}}]\n    steps:\n      - request: {{name: quote, \
         path: /realtime/quotes/ACME, json: {{pointer: /symbol, equals: ACME}}}}\n      \
         - request: {{name: again, path: /realtime/quotes/ACME}}\n"
    );
    let simulation = volley::scenario::load_str("test.yaml", &yaml).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let run = volley::engine::prepare(&simulation, dir).unwrap();
        assert!(
            volley::engine::execute(run.clone(), &simulation).await,
            "cut at maxDuration"
        );
        run.snapshot()
    })
}

/// The request log's lines, once it holds `n`.
fn request_log(dir: &Path, n: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(dir.join("requests.log")).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        if lines.len() >= n || std::time::Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn protocols(lines: &[String]) -> Vec<&str> {
    let mut found: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.split('"').nth(1)?.rsplit(' ').next())
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

fn errors(stats: &volley::stats::Stats) -> Vec<(String, u64)> {
    stats.errors.iter().map(|(e, n)| (e.clone(), *n)).collect()
}

/// HTTPS with the test certificate trusted by `caFile`: every request OK, one TCP connect
/// and one TLS handshake per user (each user its own connection), both counted apart.
#[test]
fn https_with_a_ca_file_speaks_http1_and_times_each_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let service = https(dir.path());
    let url = format!("https://localhost:{}", service.app.port());
    let stats = volley(dir.path(), &url, "{tls: {caFile: cert.pem}}", 5);
    assert_eq!(errors(&stats), []);
    assert_eq!((stats.global.requests, stats.global.oks), (10, 10));
    assert_eq!(stats.connect.len(), 5, "a connection per user");
    assert_eq!(stats.tls_handshake.len(), 5, "a handshake per connection");
    assert!(stats.tls_handshake.min() > 0);
    assert_eq!(protocols(&request_log(dir.path(), 10)), ["HTTP/1.1"]);
}

/// A WebSocket (`wss://`) and an event stream over HTTPS, with `version: 2` asked for: each
/// opens a connection of its own offering HTTP/1.1 alone by ALPN (an upgrade needs it),
/// trusted by `caFile`; the round trip and the events awaited are OK, and every connection's
/// handshake is timed.
///
/// Catches: a socket opened over the HTTP/2 connector's ALPN (the upgrade fails), TLS
/// skipped for `wss`, the streams' connections left out of the connection counts.
#[test]
fn websocket_and_event_stream_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let service = https(dir.path());
    let yaml = format!(
        "baseUrl: https://localhost:{}\nhttp: {{version: 2, tls: {{caFile: cert.pem}}}}\nmaxDuration: 30s\n\
         scenarios:\n  - name: s\n    injection: [{{atOnceUsers: 3}}]\n    steps:\n      \
         - ws: {{name: connect, connect: /realtime/stream}}\n      \
         - ws: {{name: quote, send: ACME, await: {{check: {{json: {{pointer: /symbol, equals: ACME}}}}}}}}\n      \
         - ws: {{name: close, close: true}}\n      \
         - sse: {{name: events, connect: /realtime/quotes/ACME/events, await: {{messages: 2}}}}\n",
        service.app.port()
    );
    let simulation = volley::scenario::load_str("test.yaml", &yaml).unwrap();
    let stats = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let run = volley::engine::prepare(&simulation, dir.path()).unwrap();
        assert!(volley::engine::execute(run.clone(), &simulation).await);
        run.snapshot()
    });
    assert_eq!(errors(&stats), []);
    for name in ["connect", "quote", "close", "events"] {
        assert_eq!(stats.by_name[name].oks, 3, "{name}");
    }
    assert_eq!(
        stats.connect.len(),
        6,
        "a connection per socket and per stream"
    );
    assert_eq!(stats.tls_handshake.len(), 6);
    assert_eq!(protocols(&request_log(dir.path(), 6)), ["HTTP/1.1"]);
}

/// Without `caFile`, the test certificate is nobody the system trusts: every request is KO,
/// saying why. `insecure: true` accepts it.
#[test]
fn an_untrusted_certificate_is_ko_unless_insecure() {
    let dir = tempfile::tempdir().unwrap();
    let service = https(dir.path());
    let url = format!("https://localhost:{}", service.app.port());
    let refused = volley(dir.path(), &url, "{}", 2);
    let said = errors(&refused);
    assert_eq!(refused.global.kos, 4, "{said:?}");
    assert!(
        said.iter()
            .all(|(e, _)| e.starts_with("TLS handshake failed: invalid peer certificate")),
        "{said:?}"
    );
    assert_eq!(refused.tls_handshake.len(), 0, "no handshake finished");
    let accepted = volley(dir.path(), &url, "{tls: {insecure: true}}", 2);
    assert_eq!(errors(&accepted), []);
    assert_eq!(accepted.global.oks, 4);
}

/// `version: 2` over TLS: HTTP/2 by ALPN. Shared, every user multiplexes on one connection,
/// unless `keepAlive: false` asks for a connection per request.
#[test]
fn http2_by_alpn_and_one_shared_connection() {
    let dir = tempfile::tempdir().unwrap();
    let service = https(dir.path());
    let url = format!("https://localhost:{}", service.app.port());
    let own = volley(dir.path(), &url, "{version: 2, tls: {caFile: cert.pem}}", 4);
    assert_eq!(errors(&own), []);
    assert_eq!(own.global.oks, 8);
    assert_eq!(own.connect.len(), 4, "a connection per user");
    let shared = volley(
        dir.path(),
        &url,
        "{version: 2, shareConnections: true, tls: {caFile: cert.pem}}",
        20,
    );
    assert_eq!(errors(&shared), []);
    assert_eq!(shared.global.oks, 40);
    assert_eq!(shared.connect.len(), 1, "one connection for every user");
    // keepAlive: false holds for HTTP/2 too: a connection a request, shared or not.
    let closing = volley(
        dir.path(),
        &url,
        "{version: 2, shareConnections: true, keepAlive: false, tls: {caFile: cert.pem}}",
        3,
    );
    assert_eq!(errors(&closing), []);
    assert_eq!(closing.connect.len(), 6, "a connection per request");
    assert_eq!(protocols(&request_log(dir.path(), 54)), ["HTTP/2.0"]);
}

/// `version: 2` over plain TCP: HTTP/2 with prior knowledge (h2c); and HTTP/1.1 shared
/// connections are fewer than the users.
#[test]
fn h2c_by_prior_knowledge_and_a_shared_http1_pool() {
    let dir = tempfile::tempdir().unwrap();
    let service = serve(dir.path(), "{type: http, port: 0, bindHost: 127.0.0.1}");
    let url = format!("http://127.0.0.1:{}", service.app.port());
    let two = volley(dir.path(), &url, "{version: 2}", 3);
    assert_eq!(errors(&two), []);
    assert_eq!(two.global.oks, 6);
    assert_eq!(two.tls_handshake.len(), 0, "no TLS on http://");
    assert_eq!(protocols(&request_log(dir.path(), 6)), ["HTTP/2.0"]);
    let pooled = volley(
        dir.path(),
        &url,
        "{shareConnections: true, maxConnections: 2}",
        30,
    );
    assert_eq!(errors(&pooled), []);
    assert_eq!(pooled.global.oks, 60);
    assert!(
        (1..=2).contains(&pooled.connect.len()),
        "{} connections",
        pooled.connect.len()
    );
    let lines = request_log(dir.path(), 66);
    assert_eq!(protocols(&lines[6..]), ["HTTP/1.1"]);
}
