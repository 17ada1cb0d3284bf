//! A recorded request's span: what the observe stage keeps of a sampled request, for the
//! export thread to write.

use std::net::IpAddr;
use std::time::SystemTime;

use http::{HeaderValue, Method};

/// A recorded request's span, as the export thread writes it.
#[derive(Debug)]
pub(super) struct Record {
    pub(super) trace_id: [u8; 16],
    pub(super) span_id: [u8; 8],
    /// The caller's span, when the request came with one.
    pub(super) parent: Option<[u8; 8]>,
    /// The caller's `tracestate`, as propagated.
    pub(super) state: Option<HeaderValue>,
    pub(super) start: SystemTime,
    pub(super) end: SystemTime,
    pub(super) method: Method,
    /// `network.protocol.version`.
    pub(super) version: &'static str,
    pub(super) client: Option<IpAddr>,
    /// `None` when the request ended before its response (the client went away).
    pub(super) status: Option<u16>,
    /// The path, the query, the request ID and the route, one after another.
    pub(super) text: String,
    pub(super) path: u32,
    pub(super) query: Option<u32>,
    pub(super) request_id: Option<u32>,
    pub(super) route: Option<u32>,
}

impl Record {
    /// The text's parts: path, query, request ID, route.
    pub(super) fn parts(&self) -> (&str, Option<&str>, Option<&str>, Option<&str>) {
        let mut rest = self.text.as_str();
        let mut take = |len: u32| {
            let (part, tail) = rest.split_at((len as usize).min(rest.len()));
            rest = tail;
            part
        };
        let path = take(self.path);
        let query = self.query.map(&mut take);
        let request_id = self.request_id.map(&mut take);
        let route = self.route.map(&mut take);
        (path, query, request_id, route)
    }

    #[cfg(test)]
    pub(super) fn route(&self) -> Option<&str> {
        self.parts().3
    }

    #[cfg(test)]
    pub(super) fn request_id(&self) -> Option<&str> {
        self.parts().2
    }

    /// Sets the route (the last part of the text).
    pub(super) fn set_route(&mut self, route: &str) {
        if let Some(old) = self.route.take() {
            self.text.truncate(self.text.len() - old as usize);
        }
        self.text.push_str(route);
        self.route = Some(route.len() as u32);
    }
}
