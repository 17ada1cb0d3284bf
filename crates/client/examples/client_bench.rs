//! The service of `bench/client.sh`, on plain axum: a handler that calls another service
//! (`/quote` of an upstream on 127.0.0.1) and returns its body, twice: `/client` through
//! ferrowizard-client's `HttpClient` (connections kept), and `/bare` through a bare hyper-util
//! pooled client (with `TCP_NODELAY`, as the client and reqwest set it), the same call without
//! the client's timeouts, leases, metrics, span and propagation. `upstream` serves the quote.
//!
//!   cargo run --release -p ferrowizard-client --example client_bench -- upstream 8096
//!   cargo run --release -p ferrowizard-client --example client_bench -- front 8095 8096

use bytes::Bytes;
use ferrowizard::axum::Router;
use ferrowizard::axum::extract::State;
use ferrowizard::axum::http::StatusCode;
use ferrowizard::axum::routing::get;
use ferrowizard_client::{HttpClient, HttpClientConfiguration};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

type Bare = Client<HttpConnector, Full<Bytes>>;

#[derive(Clone)]
struct Front {
    client: HttpClient,
    bare: Bare,
    url: String,
}

async fn through_client(State(front): State<Front>) -> Result<Bytes, StatusCode> {
    let response = front
        .client
        .get(&front.url)
        .await
        .map_err(|_| StatusCode::BAD_GATEWAY)?;
    response
        .into_body()
        .bytes()
        .await
        .map_err(|_| StatusCode::BAD_GATEWAY)
}

async fn through_bare(State(front): State<Front>) -> Result<Bytes, StatusCode> {
    let request = http::Request::get(&front.url)
        .body(Full::new(Bytes::new()))
        .map_err(|_| StatusCode::INTERNAL_SERVER_ERROR)?;
    let response = front
        .bare
        .request(request)
        .await
        .map_err(|_| StatusCode::BAD_GATEWAY)?;
    Ok(response
        .into_body()
        .collect()
        .await
        .map_err(|_| StatusCode::BAD_GATEWAY)?
        .to_bytes())
}

#[tokio::main]
async fn main() -> Result<(), ferrowizard::RunError> {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args.get(2).map_or(Ok(8095), |p| p.parse())?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on {}", listener.local_addr()?);
    match args.get(1).map(String::as_str) {
        Some("upstream") => {
            let quote = Router::new().route("/quote", get(|| async { "ACME 101.25\n" }));
            ferrowizard::axum::serve(listener, quote).await?;
        }
        Some("front") => {
            let upstream: u16 = args.get(3).map_or(Ok(8096), |p| p.parse())?;
            let section: HttpClientConfiguration = ferrowizard::config::loader(&[])
                .load_str("client.yaml", "keepAlive: 30s\ntimeout: 5s\n")?;
            let mut environment = ferrowizard::Environment::named("front");
            let client = section.build("upstream", &mut environment)?;
            // TCP_NODELAY as the client sets it (and reqwest does): the two differ only in
            // what the client adds.
            let mut connector = HttpConnector::new();
            connector.set_nodelay(true);
            let bare = Client::builder(TokioExecutor::new()).build(connector);
            let front = Front {
                client,
                bare,
                url: format!("http://127.0.0.1:{upstream}/quote"),
            };
            let routes = Router::new()
                .route("/client", get(through_client))
                .route("/bare", get(through_bare))
                .with_state(front);
            ferrowizard::axum::serve(listener, routes).await?;
        }
        _ => return Err("client_bench upstream PORT | front PORT UPSTREAM_PORT".into()),
    }
    Ok(())
}
