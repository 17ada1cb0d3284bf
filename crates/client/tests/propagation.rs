//! A call made while a request is handled carries the request on: a ferrowizard service (in
//! this process, on real sockets) calls another service through the client, which receives
//! the request's ID under the header the first one reads, and a `traceparent` in the same
//! trace.

mod support;

use ferrowizard::axum::extract::State;
use ferrowizard::axum::routing::get;
use ferrowizard::config::FrameworkConfiguration;
use ferrowizard::testing::TestService;
use ferrowizard::{Application, Config, Environment, RunError};
use ferrowizard_client::{ClientError, HttpClient, HttpClientConfiguration};

/// The caller's configuration: ferrowizard's sections and its client of the upstream.
#[derive(Clone, Debug, Config)]
pub struct FrontConfig {
    /// `server`, `logging`...
    #[config(framework)]
    pub framework: FrameworkConfiguration,
    /// The upstream service.
    pub upstream: HttpClientConfiguration,
    /// Where the upstream listens.
    pub upstream_url: String,
}

struct Front;

async fn relay(State((client, url)): State<(HttpClient, String)>) -> Result<String, ClientError> {
    client.get(&url).await?.into_body().text().await
}

impl Application for Front {
    type Config = FrontConfig;

    fn name(&self) -> &str {
        "front"
    }

    async fn run(&self, config: &FrontConfig, env: &mut Environment) -> Result<(), RunError> {
        let client = config.upstream.build("upstream", env)?;
        env.routes(
            ferrowizard::axum::Router::new()
                .route("/relay", get(relay))
                .with_state((client, config.upstream_url.clone())),
        );
        Ok(())
    }
}

fn front(upstream: &support::Upstream, server: &str) -> TestService {
    let yaml = format!(
        "{server}logging: {{appenders: []}}\nupstreamUrl: {}\n",
        upstream.url("/")
    );
    TestService::start(Front, &yaml).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_request_id_and_the_trace_go_on_to_the_service_called() {
    let upstream = support::start().await;
    let service = front(
        &upstream,
        "server:\n  requestId: {enabled: true, headerName: X-Correlation-Id}\n  traceContext: {enabled: true}\n",
    );
    // The caller of the front: its own ID and trace.
    let (caller, _env) = support::client("");
    let request = http::Request::get(format!("{}/relay", service.application_url()))
        .header("X-Correlation-Id", "order-42")
        .header(
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .header("tracestate", "congo=t61")
        .body(bytes::Bytes::new())
        .unwrap();
    let response = caller.send(request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.into_body().text().await.unwrap(), "ok");

    let seen = upstream.last_headers();
    assert_eq!(seen["x-correlation-id"], "order-42", "{seen:?}");
    let traceparent = seen["traceparent"].to_str().unwrap();
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(
        parts[1], "4bf92f3577b34da6a3ce929d0e0e4736",
        "the same trace"
    );
    assert_ne!(
        parts[2], "00f067aa0ba902b7",
        "the front's span is the parent"
    );
    assert_eq!(parts[3], "01");
    assert_eq!(seen["tracestate"], "congo=t61");
    assert_eq!(seen["user-agent"], "front (upstream)");
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_is_added_when_the_server_follows_neither() {
    let upstream = support::start().await;
    let service = front(&upstream, "");
    assert_eq!(service.get("/relay").await.unwrap().text(), "ok");
    let seen = upstream.last_headers();
    assert!(seen.get("x-request-id").is_none(), "{seen:?}");
    assert!(seen.get("traceparent").is_none(), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_generated_request_id_goes_on_under_the_default_header() {
    let upstream = support::start().await;
    let service = front(&upstream, "server:\n  requestId: {enabled: true}\n");
    let response = service.get("/relay").await.unwrap();
    let id = response.header("x-request-id").unwrap().to_owned();
    let seen = upstream.last_headers();
    assert_eq!(seen["x-request-id"], id.as_str());
}
