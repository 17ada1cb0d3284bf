//! A request-log appender's `logFormat`, logback-access's pattern language, on real sockets:
//! DropWizard's default pattern written out gives the default line, byte for byte; each word
//! writes what it names; `%X{requestId}`/`%X{traceId}` write the request's ids; mistakes stop
//! the server's start with the appender and the position named.

mod common;

use std::time::Duration;

use axum::Router;
use axum::routing::get;
use ferrowizard::config::{FrameworkConfiguration, ServerFactory, load_str};
use ferrowizard::metrics::MetricRegistry;
use ferrowizard::server::{Routes, Server};

fn routes() -> Routes {
    Routes::new()
        .route(
            "/echo/{x}",
            get(|| async {
                (
                    [("x-trace", "t-1"), ("content-type", "text/plain")],
                    "twelve bytes",
                )
            }),
        )
        .route("/empty", get(|| async { http::StatusCode::NO_CONTENT }))
}

fn appender(path: &std::path::Path, format: Option<&str>) -> String {
    let format = format
        .map(|f| format!(", logFormat: '{}'", f.replace('\'', "''")))
        .unwrap_or_default();
    format!(
        "{{type: file, currentLogFilename: {}, archive: false{format}}}",
        path.display()
    )
}

async fn lines(path: &std::path::Path, count: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        if lines.len() >= count || std::time::Instant::now() > deadline {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Catches: a word writing another's value or nothing, the default pattern and the default
/// line drifting apart, `%b`/`%B` confused, `%q` without its `?`, headers not kept for the
/// line, the ids missing, the final `%n` doubling the line separator, padding ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_format_writes_logback_access_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let default = dir.path().join("default.log");
    let written = dir.path().join("written.log");
    let words = dir.path().join("words.log");
    let dropwizard =
        r#"%h %l %u [%t{dd/MMM/yyyy:HH:mm:ss Z}] "%r" %s %b "%i{Referer}" "%i{User-Agent}" %D%n"#;
    let every = "%a|%m|%U|%q|%H|%s|%B|%b|%i{X-Custom}|%i{X-Missing}|%o{X-Trace}|%o{Content-Type}|\
                 %X{requestId}|%X{traceId}|%X{spanId}|[%-5m]|[%5s]|[%.3U]|%requestMethod %statusCode";
    let (server, addr) = common::start(
        &format!(
            "requestId: {{enabled: true}}\ntraceContext: {{enabled: true}}\n\
             requestLog: {{appenders: [{}, {}, {}]}}",
            appender(&default, None),
            appender(&written, Some(dropwizard)),
            appender(&words, Some(every)),
        ),
        routes(),
    )
    .await;
    let (headers, _) = common::get(
        addr,
        "/echo/1?a=b&c",
        "Referer: http://ref/\r\nUser-Agent: agent/1.0\r\nX-Custom: custom-value\r\n\
         X-Request-Id: req-1\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n",
    )
    .await;
    common::get(addr, "/empty", "").await;
    assert_eq!(common::header(&headers, "x-request-id"), Some("req-1"));

    let default = lines(&default, 2).await;
    let written = lines(&written, 2).await;
    let words = lines(&words, 2).await;
    drop(server);
    // The default pattern, written out, is the default line (the time in the same second
    // and the milliseconds taken aside, they are the same request's).
    let cut = |l: &str| l.rsplit_once(' ').unwrap().0.to_owned();
    assert_eq!(
        written.len(),
        2,
        "one line each, no empty line: {written:?}"
    );
    assert_eq!(
        cut(&written[0]),
        cut(&default[0]),
        "{written:?} {default:?}"
    );
    assert!(written[0].starts_with("127.0.0.1 - - ["), "{written:?}");
    assert!(
        written[0].contains(r#""GET /echo/1?a=b&c HTTP/1.1" 200 12 "http://ref/" "agent/1.0" "#),
        "{written:?}"
    );
    assert!(
        written[1].contains(r#""GET /empty HTTP/1.1" 204 - "-" "-" "#),
        "{written:?}"
    );

    let fields: Vec<&str> = words[0].split('|').collect();
    assert_eq!(
        fields[..13],
        [
            "127.0.0.1",
            "GET",
            "/echo/1",
            "?a=b&c",
            "HTTP/1.1",
            "200",
            "12",
            "12",
            "custom-value",
            "-",
            "t-1",
            "text/plain",
            "req-1",
        ],
        "{words:?}"
    );
    assert_eq!(fields[13], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert!(
        fields[14].len() == 16 && fields[14] != "00f067aa0ba902b7",
        "{words:?}"
    );
    assert_eq!(
        fields[15..],
        ["[GET  ]", "[  200]", "[o/1]", "GET 200"],
        "{words:?}"
    );
    let empty: Vec<&str> = words[1].split('|').collect();
    assert_eq!(empty[3], "", "no query, no '?'");
    assert_eq!(
        (empty[6], empty[7]),
        ("0", "-"),
        "%B and %b of an empty body"
    );
}

async fn start_error(format: &str, layout: &str) -> String {
    let yaml = format!(
        "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
         adminConnectors: []\n  requestLog:\n    appenders:\n      - {{type: console}}\n      \
         - {{type: console, logFormat: '{format}'{layout}}}\n"
    );
    let config: FrameworkConfiguration = match load_str("config.yaml", &yaml, &[]) {
        Ok(config) => config,
        Err(report) => return report.to_string(),
    };
    let factory: &ServerFactory = ferrowizard::config::Configuration::server(&config);
    match Server::start(
        factory,
        routes(),
        Router::new(),
        &MetricRegistry::new(),
        "t",
    )
    .await
    {
        Ok(_) => panic!("{format} started"),
        Err(e) => format!("at start: {e}"),
    }
}

/// Catches: a mistake in a pattern written as a literal into every line, found only at start
/// (`check` must see it), or the appender not named.
#[tokio::test]
async fn mistakes_in_log_format_name_the_appender_and_the_place() {
    let e = start_error("%h %statsCode", "").await;
    assert!(!e.starts_with("at start"), "{e}");
    assert!(e.contains("server.requestLog.appenders"), "{e}");
    assert!(e.contains("[1].logFormat"), "{e}");
    assert!(e.contains("at character 4"), "{e}");
    assert!(e.contains("did you mean %statusCode?"), "{e}");
    let e = start_error("%X{user}", "").await;
    assert!(e.contains("requestId") && e.contains("traceId"), "{e}");
    let e = start_error("%i", "").await;
    assert!(e.contains("%i needs a header name"), "{e}");
    let e = start_error("%h", ", layout: {type: access-json}").await;
    assert!(e.contains("keep one"), "{e}");
}
