//! `admin.auth` on the `type: simple` server, on a real socket: one connector serves the
//! application under `applicationContextPath` and the admin interface under
//! `adminContextPath`; every admin path wants the credentials, no application path does. And
//! the same for the default server's admin connector under an `adminContextPath`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use axum::routing::get;
use ferrowizard::admin::Admin;
use ferrowizard::config::{AdminAuth, AdminFactory, Secret, ServerFactory};
use ferrowizard::config::{
    ConnectorCommon, ConnectorFactory, DefaultServerFactory, HttpConnectorFactory,
    SimpleServerFactory,
};
use ferrowizard::health::{Health, HealthChecks};
use ferrowizard::metrics::MetricRegistry;
use ferrowizard::server::{Routes, Server};
use ferrowizard::{TaskParams, Tasks};

/// One answer: status, head (lower-cased header lines) and body.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        let prefix = format!("{}:", name.to_ascii_lowercase());
        self.head.lines().find_map(|line| {
            line.to_ascii_lowercase()
                .starts_with(&prefix)
                .then(|| line[prefix.len()..].trim())
        })
    }
}

/// Sends one request on a connection of its own (`Connection: close`), with `authorization`
/// when given; reads the whole answer (at most 5 s).
fn ask(addr: SocketAddr, method: &str, path: &str, authorization: Option<&str>) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let auth = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    s.write_all(
        format!(
            "{method} {path} HTTP/1.1\r\nHost: t\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no answer to {method} {path}: {text:?}"));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status for {method} {path}: {head}"));
    Answer {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

/// A `type: simple` server on 127.0.0.1, a free port, the default context paths
/// (`/application`, `/admin`), no request log; the admin side behind `auth`, with a healthy
/// check and a task (so that each admin path has a 200 to give), the application with two
/// routes (one named like an admin path).
async fn start(auth: AdminAuth) -> (Server, SocketAddr) {
    let mut f = SimpleServerFactory {
        connector: ConnectorFactory::Http(local()),
        ..Default::default()
    };
    f.common.request_log.appenders = Vec::new();
    assert_eq!(
        (
            f.application_context_path.as_str(),
            f.admin_context_path.as_str()
        ),
        ("/application", "/admin")
    );
    let server = start_server(ServerFactory::Simple(f), auth).await;
    let bound = server.bound();
    assert_eq!(bound.len(), 1, "the simple server has one connector");
    assert!(bound[0].addr.ip().is_loopback());
    let addr = bound[0].addr;
    (server, addr)
}

/// An HTTP connector on a free port of 127.0.0.1.
fn local() -> HttpConnectorFactory {
    HttpConnectorFactory {
        common: ConnectorCommon {
            port: 0,
            bind_host: Some("127.0.0.1".into()),
            ..Default::default()
        },
    }
}

/// `server` serving the test's application and its admin interface behind `auth`.
async fn start_server(server: ServerFactory, auth: AdminAuth) -> Server {
    let config = AdminFactory {
        auth: Some(auth),
        ..Default::default()
    };
    let fine = || async { Health::healthy_with("fine") };
    let echo = |params: TaskParams| async move {
        Ok(format!("done {}\n", params.get("what").unwrap_or("-")))
    };
    let admin = Admin {
        config,
        health_checks: {
            let mut checks = HealthChecks::default();
            checks.add("db", fine);
            checks
        },
        tasks: {
            let mut tasks = Tasks::default();
            tasks.add("echo", echo);
            tasks
        },
        metrics: MetricRegistry::new(),
        logging: None,
        runtime: tokio::runtime::Handle::current(),
    };
    let app = Routes::new()
        .route("/hello", get(|| async { "hello\n" }))
        .route("/ping", get(|| async { "application ping\n" }));
    Server::start(&server, app, admin.router(), &MetricRegistry::new(), "test")
        .await
        .unwrap()
}

/// Every admin endpoint of the simple server, and what it answers with the right
/// credentials. Admin paths no route matches are in [`UNKNOWN_ADMIN_PATHS`].
const ADMIN_PATHS: [(&str, &str, u16); 9] = [
    ("GET", "/admin/ping", 200),
    ("GET", "/admin/healthcheck", 200),
    ("GET", "/admin/metrics", 200),
    ("GET", "/admin/metrics/prometheus", 200),
    ("GET", "/admin/threads", 200),
    ("GET", "/admin/tasks", 200),
    ("POST", "/admin/tasks/echo?what=it", 200),
    // A task that does not exist (the `/tasks/{name}` route answers 404 itself), and an
    // endpoint asked with a method it does not take: guarded all the same.
    ("POST", "/admin/tasks/no-such-task", 404),
    ("DELETE", "/admin/ping", 405),
];

/// Admin paths that no admin route matches: on the simple server they are guarded like the
/// rest (a 404 to an anonymous client tells what exists), as on the default server with
/// `adminContextPath: /` (`examples/realtime/tests/admin.rs`).
const UNKNOWN_ADMIN_PATHS: [&str; 4] = [
    "/admin/no-such-page",
    "/admin/ping/deeper",
    "/admin",
    "/admin/",
];

/// The default server with `adminContextPath: /admin`: on the admin connector, unknown paths
/// under the prefix want the credentials as the known ones do.
/// Catches: the admin router nested with axum's `nest` on the default server too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_server_guards_unknown_admin_paths_under_its_context_path() {
    let mut f = DefaultServerFactory {
        application_connectors: vec![ConnectorFactory::Http(local())],
        admin_connectors: vec![ConnectorFactory::Http(local())],
        admin_context_path: "/admin".into(),
        ..Default::default()
    };
    f.common.request_log.appenders = Vec::new();
    let server = start_server(
        ServerFactory::Default(f),
        AdminAuth::Bearer(Secret("s3cret-token".into())),
    )
    .await;
    let admin = server
        .bound()
        .iter()
        .find(|b| b.role == "admin")
        .unwrap()
        .addr;
    tokio::task::spawn_blocking(move || {
        let right = Some("Bearer s3cret-token");
        assert_eq!(ask(admin, "GET", "/admin/ping", right).status, 200);
        assert_eq!(ask(admin, "GET", "/admin/ping", None).status, 401);
        for path in UNKNOWN_ADMIN_PATHS {
            assert_eq!(
                ask(admin, "GET", path, None).status,
                401,
                "anonymous {path}"
            );
            assert_eq!(ask(admin, "GET", path, right).status, 404, "{path}");
        }
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// Checks that the application's paths want nothing, whatever `Authorization` they carry;
/// then every admin path anonymous, with each of `wrong`, and with `right`.
fn check(addr: SocketAddr, scheme: &str, right: &str, wrong: &[&str]) {
    // The application is not the admin's: no credentials asked for, any ignored.
    for authorization in [None, Some(wrong[0]), Some(right)] {
        let hello = ask(addr, "GET", "/application/hello", authorization);
        assert_eq!(
            (hello.status, hello.body.as_str()),
            (200, "hello\n"),
            "{authorization:?}"
        );
        assert!(hello.header("www-authenticate").is_none());
        // An application route named like an admin one is the application's.
        let ping = ask(addr, "GET", "/application/ping", authorization);
        assert_eq!(
            (ping.status, ping.body.as_str()),
            (200, "application ping\n"),
            "{authorization:?}"
        );
        // Unknown paths outside the admin context path: 404, not a challenge.
        for path in ["/application/nowhere", "/elsewhere", "/"] {
            let unknown = ask(addr, "GET", path, authorization);
            assert_eq!(unknown.status, 404, "{path} with {authorization:?}");
            assert!(
                unknown.header("www-authenticate").is_none(),
                "{path}: {}",
                unknown.head
            );
        }
    }
    for (method, path, expected) in ADMIN_PATHS {
        let anonymous = ask(addr, method, path, None);
        assert_eq!(anonymous.status, 401, "anonymous {method} {path}");
        assert_eq!(
            anonymous.header("www-authenticate"),
            Some(format!("{scheme} realm=\"ferrowizard admin\"").as_str()),
            "{method} {path}: {}",
            anonymous.head
        );
        assert_eq!(anonymous.body, "credentials required\n", "{method} {path}");
        for w in wrong {
            let refused = ask(addr, method, path, Some(w));
            assert_eq!(refused.status, 401, "{method} {path} with {w:?}");
            assert!(refused.header("www-authenticate").is_some());
        }
        let admitted = ask(addr, method, path, Some(right));
        assert_eq!(
            admitted.status, expected,
            "{method} {path} with the right credentials: {}",
            admitted.body
        );
        assert!(admitted.header("www-authenticate").is_none());
    }
    // What the admitted requests got is the admin side's own answers.
    assert_eq!(ask(addr, "GET", "/admin/ping", Some(right)).body, "pong\n");
    let health: serde_json::Value =
        serde_json::from_str(&ask(addr, "GET", "/admin/healthcheck", Some(right)).body).unwrap();
    assert_eq!(health["db"]["healthy"], true, "{health}");
    assert_eq!(
        ask(addr, "POST", "/admin/tasks/echo?what=it", Some(right)).body,
        "done it\n"
    );
}

/// Bearer auth guards every admin endpoint of the simple server (ping, healthcheck,
/// metrics, threads, tasks, an unknown task, a wrong method) and no application path.
///
/// Mutations caught (each verified by hand):
/// - `admin/auth.rs`, `Guard::admits`: `bool::from(given.ct_eq(&self.expected))` -> `true`
///   (every request admitted): the anonymous admin requests get 200, not 401.
/// - `server/mod.rs`, `Server::start`, the simple server:
///   `let admin = routes::layered(prefixed(admin_router, &f.admin_context_path));` ->
///   `prefixed(admin_router, "/")` (the admin router beside the application instead of under
///   `/admin`): its guarded fallback takes the application's unknown paths, and
///   `/application/nowhere` answers 401 to an anonymous client instead of 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_server_bearer_auth_guards_every_admin_path_and_no_application_path() {
    let (server, addr) = start(AdminAuth::Bearer(Secret("s3cret-token".into()))).await;
    tokio::task::spawn_blocking(move || {
        check(
            addr,
            "Bearer",
            "Bearer s3cret-token",
            &[
                "Bearer s3cret-tokem",
                "Bearer s3cret-token2",
                "Bearer  s3cret-token",
                "Bearer s3cret-toke",
                "Bearer ",
                "s3cret-token",
                // The token as basic credentials (base64("s3cret-token")).
                "Basic czNjcmV0LXRva2Vu",
            ],
        )
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// Basic auth on the simple server: the same guard, with `base64(username:password)`.
///
/// Mutation caught (verified by hand): `admin/auth.rs`, `Guard::new`:
/// `.encode(format!("{}:{}", b.username, b.password.0))` ->
/// `.encode(format!("{}{}", b.username, b.password.0))`: `base64("opspa:ss")` is admitted
/// and the right credentials are refused. (The two mutations named on the bearer test fail
/// this one too.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_server_basic_auth_guards_every_admin_path_and_no_application_path() {
    let auth = AdminAuth::Basic(ferrowizard::config::BasicCredentials {
        username: "ops".into(),
        password: Secret("pa:ss".into()),
    });
    let (server, addr) = start(auth).await;
    tokio::task::spawn_blocking(move || {
        check(
            addr,
            "Basic",
            // base64("ops:pa:ss")
            "Basic b3BzOnBhOnNz",
            &[
                // base64("ops:pass"), base64("ops:pa:s"), base64("opspa:ss")
                "Basic b3BzOnBhc3M=",
                "Basic b3BzOnBhOnM=",
                "Basic b3BzcGE6c3M=",
                "Bearer b3BzOnBhOnNz",
                "Basic ",
            ],
        )
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// Unknown admin paths on the simple server answer 401 to anonymous clients and wrong
/// credentials, and 404 only to the right ones.
///
/// Catches: the admin router nested with axum's `nest`, which hands unmatched paths under the
/// prefix to the outer router's fallback, outside `admin.auth` (a 404 to anyone tells what
/// exists).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_server_guards_unknown_admin_paths() {
    let (server, addr) = start(AdminAuth::Bearer(Secret("s3cret-token".into()))).await;
    tokio::task::spawn_blocking(move || {
        for path in UNKNOWN_ADMIN_PATHS {
            assert_eq!(ask(addr, "GET", path, None).status, 401, "anonymous {path}");
            let wrong = ask(addr, "GET", path, Some("Bearer s3cret-tokem"));
            assert_eq!(wrong.status, 401, "{path} with a wrong token");
            let right = ask(addr, "GET", path, Some("Bearer s3cret-token"));
            assert_eq!(right.status, 404, "{path} with the right token");
        }
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// On the simple server with the application at the root, an application route under the
/// admin context path is a start error naming the path, not a panic; a route beside it is
/// served.
///
/// Catches: axum's panic on merging the two routers reaching the caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_application_route_under_the_admin_path_is_a_start_error() {
    let start = |template: &'static str| async move {
        let mut f = SimpleServerFactory {
            connector: ConnectorFactory::Http(local()),
            application_context_path: "/".into(),
            ..Default::default()
        };
        f.common.request_log.appenders = Vec::new();
        let app = Routes::new().route(template, get(|| async { "mine\n" }));
        let admin = axum::Router::new().route("/ping", get(|| async { "pong\n" }));
        Server::start(
            &ServerFactory::Simple(f),
            app,
            admin,
            &MetricRegistry::new(),
            "test",
        )
        .await
    };
    for template in ["/admin", "/admin/", "/admin/{id}", "/admin/{*rest}"] {
        let error = start(template)
            .await
            .err()
            .unwrap_or_else(|| panic!("{template} started"));
        let text = error.to_string();
        assert!(
            text.starts_with(
                "server.adminContextPath \"/admin\": the application has a route there"
            ) && text.contains("give the admin interface another adminContextPath"),
            "{template}: {text}"
        );
    }
    let server = start("/administration").await.unwrap();
    server.shutdown().await;
}
