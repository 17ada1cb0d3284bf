//! What the server adds to a request, in process and on one thread: a request for a JSON route
//! through axum's router alone, and through the connector's service as `Server::start` builds
//! it (the gate: request metrics, admission, route timer, and with `production` the request
//! log's line formatted into its file appender's queue). No sockets and no second thread
//! competing: steadier than the load run of `bench/server.sh`, though it leaves out what load
//! adds (cache lines the workers share, the writer thread's CPU).
//!
//! `cargo bench -p ferrowizard --features bench --bench request_path`.

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::net::SocketAddr;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path};
use axum::routing::get;
use criterion::{Criterion, criterion_group, criterion_main};
use ferrowizard::bench::connection_extensions;
use ferrowizard::config::ServerFactory;
use ferrowizard::metrics::MetricRegistry;
use ferrowizard::server::Routes;
use http::{Request, Response, header};
use tower::Service;

async fn quote(Path(symbol): Path<String>) -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({ "symbol": symbol, "price": 101.25, "volume": 1200 }))
}

const ROUTE: &str = "/realtime/quotes/{symbol}";

fn request() -> Request<Body> {
    Request::get("/realtime/quotes/ACME")
        .header(header::HOST, "127.0.0.1:8080")
        .header(header::USER_AGENT, "wrk")
        .body(Body::empty())
        .expect("a valid request")
}

/// Calls `service` and polls its future once: every future here is ready at once.
fn serve<S>(service: &mut S, req: Request<Body>) -> Response<Body>
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>,
{
    let mut cx = Context::from_waker(Waker::noop());
    assert!(service.poll_ready(&mut cx).is_ready());
    match pin!(service.call(req)).poll(&mut cx) {
        Poll::Ready(Ok(response)) => response,
        Poll::Ready(Err(never)) => match never {},
        Poll::Pending => panic!("a future here waits for nothing"),
    }
}

fn server(yaml: &str) -> ServerFactory {
    ferrowizard_config::Loader::new()
        .load_str("server", yaml)
        .expect("a valid server section")
}

fn request_path(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let quiet = server("type: default\nrequestLog:\n  appenders: []\n");
    let production = server(&format!(
        "type: default\nrequestLog:\n  appenders:\n    - type: file\n      currentLogFilename: {}/requests.log\n      archivedLogFilenamePattern: {}/requests-%d-%i.log.gz\n      maxFileSize: 50MiB\n",
        dir.path().display(),
        dir.path().display()
    ));
    let peer: SocketAddr = ([127, 0, 0, 1], 40000).into();
    let extensions = connection_extensions(peer);
    let known = || Routes::new().route(ROUTE, get(quote));
    let merged = || Routes::from(Router::new().route(ROUTE, get(quote)));
    let service = |factory: &ServerFactory, routes: Routes| {
        ferrowizard::bench::service(factory, routes, &MetricRegistry::new()).expect("a service")
    };

    let mut group = c.benchmark_group("request_path");
    let mut router = Router::new().route(ROUTE, get(quote));
    // Each iteration builds its request (the same cost in every case) and drops the
    // response, as a connection does: batching them instead would have the allocator work
    // on patterns no server sees.
    group.bench_function("axum_router", |b| {
        b.iter(|| black_box(serve(&mut router, request())))
    });
    for (name, factory, routes) in [
        ("gate_quiet", &quiet, known()),
        ("gate_quiet_merged_router", &quiet, merged()),
        ("gate_production", &production, known()),
    ] {
        let mut gate = service(factory, routes);
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut req = request();
                // As the connector does for every request.
                *req.extensions_mut() = extensions.clone();
                black_box(serve(&mut gate, req))
            })
        });
    }
    group.finish();

    // The connection's extensions: `ConnectInfo` inserted into a request's empty extensions
    // and then axum's three (the table grows on the fourth), against a clone of a table with
    // room for all four.
    #[derive(Clone)]
    struct Axum<const N: usize>(#[allow(dead_code)] u64);
    let mut group = c.benchmark_group("extensions");
    group.bench_function("insert", |b| {
        b.iter(|| {
            let mut e = http::Extensions::new();
            e.insert(ConnectInfo(peer));
            e.insert(Axum::<1>(1));
            e.insert(Axum::<2>(2));
            e.insert(Axum::<3>(3));
            black_box(e)
        })
    });
    group.bench_function("connection_template", |b| {
        b.iter(|| {
            let mut e = extensions.clone();
            e.insert(Axum::<1>(1));
            e.insert(Axum::<2>(2));
            e.insert(Axum::<3>(3));
            black_box(e)
        })
    });
    group.finish();
}

criterion_group!(benches, request_path);
criterion_main!(benches);
