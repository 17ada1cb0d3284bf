//! Logging in and pricing an order, in this process, against a quotes service in this test:
//! good and bad credentials, good and bad tokens, a symbol the quotes service does not know,
//! and the quotes service down.

use std::path::Path;

use bytes::Bytes;
use ferrowizard::axum::{self, Json, extract::Path as UrlPath, http::StatusCode, routing::get};
use ferrowizard::testing::TestService;
use ferrowizard_client::HttpClient;
use orders::Orders;
use serde_json::{Value, json};

/// A quotes service: ACME at 101.5, nothing else.
async fn quotes() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route(
        "/realtime/quotes/{symbol}",
        get(|UrlPath(symbol): UrlPath<String>| async move {
            match symbol.as_str() {
                "ACME" => Ok(Json(json!({"symbol": "ACME", "price": 101.5}))),
                _ => Err(StatusCode::NOT_FOUND),
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn service(dir: &Path, quotes_url: &str) -> TestService {
    let migrations = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let yaml = format!(
        "logging: {{level: WARN, appenders: []}}\ndatabase:\n  url: sqlite:{}\n  migrations: {}\n\
         users: {{ada: ada-password}}\n\
         jwt:\n  keys: [{{algorithm: HS256, secret: a-test-secret-of-at-least-32-bytes!!}}]\n  \
         audience: [orders]\n\
         quotes: {{timeout: 2s, connectionTimeout: 200ms}}\nquotesUrl: {quotes_url}\n",
        dir.join("o.db").display(),
        migrations.display()
    );
    let config = dir.join("config.yaml");
    std::fs::write(&config, &yaml).unwrap();
    // On a thread of its own: the command starts a runtime, and the test's is running here.
    let path = config.to_str().unwrap().to_owned();
    let code = std::thread::spawn(move || {
        ferrowizard::run_from(Orders, ["orders", "db", "migrate", path.as_str()])
    })
    .join()
    .unwrap();
    assert_eq!(code, std::process::ExitCode::SUCCESS);
    TestService::start(Orders, &yaml).unwrap()
}

fn client() -> HttpClient {
    let mut env = ferrowizard::Environment::named("test");
    ferrowizard::config::loader(&[])
        .load_str::<ferrowizard_client::HttpClientConfiguration>("c.yaml", "timeout: 5s\n")
        .unwrap()
        .build("orders", &mut env)
        .unwrap()
}

/// A caller of the service under test.
struct Caller {
    client: HttpClient,
    base: String,
}

impl Caller {
    fn of(service: &TestService) -> Caller {
        Caller {
            client: client(),
            base: service.application_url().to_owned(),
        }
    }

    /// `method path` with `authorization`; (status, `WWW-Authenticate`, body).
    async fn call(
        &self,
        method: &str,
        path: &str,
        authorization: Option<&str>,
        body: &str,
    ) -> (u16, Option<String>, Value) {
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("Content-Type", "application/json");
        if let Some(a) = authorization {
            request = request.header("Authorization", a);
        }
        let response = self
            .client
            .send(request.body(Bytes::from(body.to_owned())).unwrap())
            .await
            .unwrap();
        let status = response.status().as_u16();
        let challenge = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_owned());
        let text = response.into_body().text().await.unwrap();
        (
            status,
            challenge,
            serde_json::from_str(&text).unwrap_or(Value::Null),
        )
    }

    /// Ada's token, as `Bearer TOKEN`.
    async fn log_in(&self) -> String {
        let (status, _, login) = self.call("POST", "/login", Some(ADA), "").await;
        assert_eq!(status, 200, "{login}");
        assert_eq!(login["expiresIn"], 900);
        format!("Bearer {}", login["token"].as_str().unwrap())
    }

    /// The price path of a new order of `quantity` `item`s.
    async fn order(&self, item: &str, quantity: u32) -> String {
        let (_, _, account) = self
            .call("POST", "/accounts", None, r#"{"name":"Ada"}"#)
            .await;
        let path = format!("/accounts/{}/orders", account["id"].as_str().unwrap());
        let body = json!({"item": item, "quantity": quantity}).to_string();
        let (_, _, order) = self.call("POST", &path, None, &body).await;
        format!("/orders/{}/price", order["id"].as_str().unwrap())
    }
}

const ADA: &str = "Basic YWRhOmFkYS1wYXNzd29yZA==";

/// Catches: a wrong password or a forged token let in, a token not accepted, an order priced
/// wrong, an unknown symbol or a quotes service that is down answered 500 or left hanging.
#[tokio::test(flavor = "multi_thread")]
async fn a_user_logs_in_and_prices_an_order_with_a_quote() {
    let dir = tempfile::tempdir().unwrap();
    let quotes_url = quotes().await;
    let service = service(dir.path(), &quotes_url);
    let caller = Caller::of(&service);

    let (status, challenge, _) = caller
        .call("POST", "/login", Some("Basic YWRhOndyb25n"), "")
        .await;
    assert_eq!(status, 401);
    assert_eq!(challenge.as_deref(), Some("Basic realm=\"orders\""));
    let bearer = caller.log_in().await;
    let acme = caller.order("ACME", 4).await;
    let widget = caller.order("WIDGET", 1).await;

    let (status, challenge, _) = caller.call("GET", &acme, None, "").await;
    assert_eq!(
        (status, challenge.as_deref()),
        (401, Some("Bearer realm=\"orders\""))
    );
    let forged = format!("{bearer}x");
    assert_eq!(caller.call("GET", &acme, Some(&forged), "").await.0, 401);
    assert_eq!(
        caller.call("GET", &acme, Some(ADA), "").await.0,
        401,
        "a password is not a token"
    );

    let (status, _, price) = caller.call("GET", &acme, Some(&bearer), "").await;
    assert_eq!(status, 200, "{price}");
    assert_eq!(price["price"], 101.5);
    assert_eq!(price["total"], 406.0);
    assert_eq!(price["order"]["item"], "ACME");

    let (status, _, error) = caller.call("GET", &widget, Some(&bearer), "").await;
    assert_eq!(
        (status, error["message"].as_str()),
        (404, Some("no quote for WIDGET"))
    );
    let (status, _, _) = caller
        .call("GET", "/orders/none/price", Some(&bearer), "")
        .await;
    assert_eq!(status, 404);
}

/// Catches: a quotes service that is down answered 500, or a call that hangs.
#[tokio::test(flavor = "multi_thread")]
async fn a_quotes_service_that_is_down_is_a_503() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let dir = tempfile::tempdir().unwrap();
    let service = service(dir.path(), &url);
    let caller = Caller::of(&service);
    let bearer = caller.log_in().await;
    let priced = caller.order("ACME", 1).await;
    let (status, _, error) = caller.call("GET", &priced, Some(&bearer), "").await;
    assert_eq!(status, 503, "{error}");
    assert_eq!(error["code"], 503);
}
