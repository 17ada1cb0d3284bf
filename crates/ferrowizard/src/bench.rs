//! Hooks for the criterion benches in `benches/`: the parts of the request path they measure
//! in process, without sockets. Built only with the `bench` feature
//! (`cargo bench -p ferrowizard --features bench`); not part of the API, and free to change.

use std::convert::Infallible;
use std::net::SocketAddr;

use axum::body::Body;
use ferrowizard_metrics::MetricRegistry;
use http::{Request, Response};
use tower::Service;

use crate::config::ServerFactory;
use crate::server::{Routes, StartError};

/// An application connector's service as [`Server::start`](crate::server::Server::start)
/// builds it from `server` (its request log started, its metrics in `metrics`), serving
/// `app`: to be called in place of a connection.
pub fn service(
    server: &ServerFactory,
    app: Routes,
    metrics: &MetricRegistry,
) -> Result<
    impl Service<Request<Body>, Response = Response<Body>, Error = Infallible> + use<>,
    StartError,
> {
    crate::server::bench_service(server, app, metrics)
}

/// The extensions the connector gives every request of a connection from `peer`: a table
/// with room for what axum adds as it routes, cloned into each request.
pub fn connection_extensions(peer: SocketAddr) -> http::Extensions {
    crate::server::connection::connection_extensions(peer)
}
