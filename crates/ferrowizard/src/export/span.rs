//! What the observe stage tells the export of a request, and what the export makes of it: the
//! same with or without the `otlp` feature.

// Without the `otlp` feature only the refusal and `NoExport` are made.
#![cfg_attr(not(feature = "otlp"), allow(dead_code))]

use std::net::IpAddr;

use http::Method;

/// What a request's span says of it, as the observe stage found it.
pub(crate) struct ServerSpan<'a> {
    pub(crate) method: &'a Method,
    pub(crate) route: Option<&'a str>,
    pub(crate) path: &'a str,
    pub(crate) query: Option<&'a str>,
    /// `network.protocol.version`.
    pub(crate) version: &'static str,
    pub(crate) client: Option<IpAddr>,
    pub(crate) request_id: Option<&'a str>,
}

/// What the export makes of a request handled with trace context (`S`: its open span).
pub(crate) enum Recording<S> {
    /// No export is installed.
    NoExport,
    /// The export does not record the request.
    Dropped,
    /// The request's span.
    Span(S),
}
