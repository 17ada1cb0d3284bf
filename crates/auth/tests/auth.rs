//! Authentication on a real service in this process, spoken to over real sockets with raw
//! requests (so that any bytes can be sent): schemes chained, roles, the optional mode, bad
//! input, and the request log's user.

use std::io::{Read, Write};

use ferrowizard::axum::Router;
use ferrowizard::axum::routing::get;
use ferrowizard::config::FrameworkConfiguration;
use ferrowizard::testing::TestService;
use ferrowizard::{Application, Config, Environment, RunError};
use ferrowizard_auth::{
    Auth, AuthError, Authentication, BasicCredentials, BearerToken, Principal, require_role,
    secrets_equal,
};

#[derive(Clone, Debug)]
struct User {
    name: String,
    admin: bool,
}

impl Principal for User {
    fn name(&self) -> &str {
        &self.name
    }

    fn has_role(&self, role: &str) -> bool {
        role == "admin" && self.admin
    }
}

/// `ada:pw` and `root:pw` (an admin); the bearer token `t0ken` (a service); the user `broken`
/// makes the authenticator fail.
fn authentication() -> Authentication<User> {
    Authentication::new()
        .basic("orders", |c: BasicCredentials| async move {
            if c.username == "broken" {
                return Err(AuthError::new("user store unreachable"));
            }
            let known = matches!(c.username.as_str(), "ada" | "root");
            Ok((known && secrets_equal(&c.password, "pw")).then(|| User {
                admin: c.username == "root",
                name: c.username,
            }))
        })
        .bearer("orders", |t: BearerToken| async move {
            Ok(secrets_equal(t.as_str(), "t0ken").then(|| User {
                name: "service".into(),
                admin: false,
            }))
        })
}

#[derive(Clone, Debug, Config)]
struct TestConfig {
    #[config(framework)]
    framework: FrameworkConfiguration,
}

struct App;

impl Application for App {
    type Config = TestConfig;

    fn name(&self) -> &str {
        "auth-test"
    }

    async fn run(&self, _: &TestConfig, env: &mut Environment) -> Result<(), RunError> {
        let me = Router::new()
            .route("/me", get(|Auth(u): Auth<User>| async move { u.name }))
            .layer(authentication());
        let admin = Router::new()
            .route(
                "/admin",
                get(|Auth(u): Auth<User>| async move { format!("admin {}", u.name) }),
            )
            .layer(require_role::<User>("admin"))
            .layer(authentication());
        let hi = Router::new()
            .route(
                "/hi",
                get(|u: Option<Auth<User>>| async move {
                    u.map_or("hello, stranger".to_owned(), |Auth(u)| {
                        format!("hello, {}", u.name)
                    })
                }),
            )
            .layer(authentication().optional());
        let unguarded = Router::new().route(
            "/unguarded",
            get(|Auth(u): Auth<User>| async move { u.name }),
        );
        env.routes(me).routes(admin).routes(hi).routes(unguarded);
        Ok(())
    }
}

struct Answer {
    status: u16,
    head: String,
    body: String,
}

/// `GET path` with the raw header lines `headers` (each ending in CRLF).
fn send(service: &TestService, path: &str, headers: &[u8]) -> Answer {
    let host = service
        .application_url()
        .trim_start_matches("http://")
        .to_owned();
    let mut conn = std::net::TcpStream::connect(&host).unwrap();
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut request =
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n").into_bytes();
    request.extend_from_slice(headers);
    request.extend_from_slice(b"\r\n");
    conn.write_all(&request).unwrap();
    let mut raw = Vec::new();
    let _ = conn.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Answer {
        status: head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

fn basic(user: &str, password: &str) -> Vec<u8> {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Authorization: Basic {encoded}\r\n").into_bytes()
}

fn start(dir: &std::path::Path) -> TestService {
    let yaml = format!(
        "server:\n  requestLog:\n    appenders: [{{type: file, currentLogFilename: {}, archive: false, immediateFlush: true}}]\n\
         logging: {{level: WARN, appenders: []}}\n",
        dir.join("requests.log").display()
    );
    TestService::start(App, &yaml).unwrap()
}

/// Catches: a scheme not tried, the chain stopping at the first scheme, a 401 without its
/// challenges or DropWizard's JSON, a principal lost on the way to the handler.
#[test]
fn basic_and_bearer_are_tried_in_order_and_refusals_are_challenged() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(dir.path());
    let ok = send(&service, "/me", &basic("ada", "pw"));
    assert_eq!((ok.status, ok.body.as_str()), (200, "ada"));
    let ok = send(&service, "/me", b"Authorization: Bearer t0ken\r\n");
    assert_eq!((ok.status, ok.body.as_str()), (200, "service"));
    for headers in [
        &b""[..],
        &basic("ada", "wrong"),
        b"Authorization: Bearer nope\r\n",
    ] {
        let refused = send(&service, "/me", headers);
        assert_eq!(refused.status, 401);
        assert!(
            refused
                .head
                .contains("www-authenticate: Basic realm=\"orders\""),
            "{}",
            refused.head
        );
        assert!(
            refused
                .head
                .contains("www-authenticate: Bearer realm=\"orders\""),
            "{}",
            refused.head
        );
        assert_eq!(
            refused.body,
            r#"{"code":401,"message":"Credentials are required to access this resource."}"#
        );
    }
}

/// Catches: a bad header answered 500 or accepted. The statuses are printed (`--nocapture`).
#[test]
fn bad_credentials_get_401_never_500() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(dir.path());
    let huge = format!("Authorization: Bearer {}\r\n", "a".repeat(6_000));
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("no header", b"".to_vec(), 401),
        (
            "bad base64",
            b"Authorization: Basic !!!not-base64\r\n".to_vec(),
            401,
        ),
        ("no colon", b"Authorization: Basic YWRh\r\n".to_vec(), 401),
        (
            "not UTF-8 inside base64",
            b"Authorization: Basic /w==\r\n".to_vec(),
            401,
        ),
        ("scheme alone", b"Authorization: Basic\r\n".to_vec(), 401),
        ("empty bearer", b"Authorization: Bearer \r\n".to_vec(), 401),
        (
            "unknown scheme",
            b"Authorization: Digest username=\"ada\"\r\n".to_vec(),
            401,
        ),
        (
            "bytes that are not text",
            b"Authorization: Basic \xff\xfe\r\n".to_vec(),
            401,
        ),
        ("a 6,000-byte token", huge.into_bytes(), 401),
        (
            "two headers, the first bad",
            [&b"Authorization: Basic x\r\n"[..], &basic("ada", "pw")].concat(),
            401,
        ),
        (
            "lower-case scheme",
            b"Authorization: basic YWRhOnB3\r\n".to_vec(),
            200,
        ),
        ("failing authenticator", basic("broken", "pw"), 500),
    ];
    for (what, headers, expected) in cases {
        let answer = send(&service, "/me", &headers);
        println!("{what}: {}", answer.status);
        assert_eq!(answer.status, expected, "{what}: {}", answer.head);
    }
}

/// Catches: a role not checked, a missing role answered other than DropWizard's 403.
#[test]
fn roles_guard_a_router_with_403() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(dir.path());
    let ok = send(&service, "/admin", &basic("root", "pw"));
    assert_eq!((ok.status, ok.body.as_str()), (200, "admin root"));
    let forbidden = send(&service, "/admin", &basic("ada", "pw"));
    assert_eq!(forbidden.status, 403);
    assert_eq!(
        forbidden.body,
        r#"{"code":403,"message":"User not authorized."}"#
    );
    assert!(!forbidden.head.contains("www-authenticate"));
    assert_eq!(send(&service, "/admin", b"").status, 401);
}

/// Catches: the optional mode refusing a caller without credentials, or admitting bad ones;
/// `Auth` on a route no authentication wraps answered other than 500.
#[test]
fn optional_authentication_and_an_unwrapped_route() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(dir.path());
    assert_eq!(send(&service, "/hi", b"").body, "hello, stranger");
    assert_eq!(
        send(&service, "/hi", &basic("ada", "pw")).body,
        "hello, ada"
    );
    assert_eq!(send(&service, "/hi", &basic("ada", "bad")).status, 401);
    let unwrapped = send(&service, "/unguarded", &basic("ada", "pw"));
    assert_eq!(unwrapped.status, 500);
    assert!(
        unwrapped.body.contains("no Authentication wraps it"),
        "{}",
        unwrapped.body
    );
}

/// Catches: the request log without the user (`%u`), or with a credential.
#[test]
fn the_request_log_shows_the_user_and_never_the_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(dir.path());
    send(&service, "/me", &basic("ada", "pw"));
    send(&service, "/me", &basic("ada", "wrong-pw"));
    send(&service, "/me", b"Authorization: Bearer t0ken\r\n");
    let path = dir.path().join("requests.log");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let log = loop {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.lines().count() >= 3 || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 3, "{log}");
    assert!(lines[0].starts_with("127.0.0.1 - ada ["), "{}", lines[0]);
    assert!(lines[1].starts_with("127.0.0.1 - - ["), "{}", lines[1]);
    assert!(
        lines[2].starts_with("127.0.0.1 - service ["),
        "{}",
        lines[2]
    );
    for secret in ["pw", "t0ken", "YWRh"] {
        assert!(!log.contains(secret), "{secret} in {log}");
    }
}
