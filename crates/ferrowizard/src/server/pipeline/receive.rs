//! The pipeline's first stage, **receive**: when a request arrived, and what the later stages
//! need from its headers (the request log's `Referer` and `User-Agent`, whether the client
//! names an encoding, whether it takes errors as JSON), read in one pass before the request
//! is handed on.

use std::time::Instant;

use http::{HeaderValue, Request, header};

use crate::server::request_log::RequestLog;
use crate::server::request_log::entry::Entry;

/// A request as received.
pub(crate) struct Received {
    /// When the pipeline took it: every timer and the request-log line count from here.
    pub(crate) started: Instant,
    /// What its request-log line needs (`None`: no request log, or an excluded path).
    pub(crate) entry: Option<Entry>,
    /// Whether it names any encoding (read only when `compressing`): compression is then
    /// tower-http's to decide.
    pub(crate) accepts_encoding: bool,
    /// Whether its `Accept` header asks for JSON: the server's own errors are then answered
    /// in DropWizard's JSON shape (see [`crate::errors`]).
    pub(crate) json_errors: bool,
}

/// Receives `req` for a connector with `request_log`, whose responses may be compressed when
/// `compressing`.
#[inline]
pub(crate) fn receive<B>(
    req: &Request<B>,
    request_log: Option<&RequestLog>,
    compressing: bool,
) -> Received {
    let started = Instant::now();
    let heads = Heads::of(req.headers(), request_log.is_some(), compressing);
    Received {
        started,
        entry: request_log.and_then(|l| l.entry(req, started, heads.referer, heads.user_agent)),
        accepts_encoding: heads.accept_encoding,
        json_errors: heads
            .accept
            .is_some_and(|accept| crate::errors::prefers_json(accept.as_bytes())),
    }
}

/// The request headers read on arrival: found in one pass over the map (a request carries a
/// handful of headers; each lookup by name hashes the name and probes the table).
struct Heads<'a> {
    /// For the request-log line.
    referer: Option<&'a HeaderValue>,
    user_agent: Option<&'a HeaderValue>,
    /// Whether the client named any encoding.
    accept_encoding: bool,
    /// The first `Accept` value: how the server's own errors are answered.
    accept: Option<&'a HeaderValue>,
}

impl<'a> Heads<'a> {
    /// The first `Accept` value; the first `Referer` and `User-Agent` values when `logged`,
    /// whether `Accept-Encoding` is present when `compressing`. (Without either, one lookup
    /// of `Accept` rather than a pass.)
    fn of(headers: &'a http::HeaderMap, logged: bool, compressing: bool) -> Heads<'a> {
        let mut heads = Heads {
            referer: None,
            user_agent: None,
            accept_encoding: false,
            accept: None,
        };
        if !logged && !compressing {
            heads.accept = headers.get(header::ACCEPT);
            return heads;
        }
        for (name, value) in headers {
            if *name == header::REFERER {
                heads.referer.get_or_insert(value);
            } else if *name == header::USER_AGENT {
                heads.user_agent.get_or_insert(value);
            } else if *name == header::ACCEPT_ENCODING {
                heads.accept_encoding = true;
            } else if *name == header::ACCEPT {
                heads.accept.get_or_insert(value);
            }
        }
        heads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pass_finds_the_first_values_and_any_encoding() {
        let mut headers = http::HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("example.com"));
        headers.append(header::USER_AGENT, HeaderValue::from_static("first"));
        headers.append(header::USER_AGENT, HeaderValue::from_static("second"));
        headers.insert(header::REFERER, HeaderValue::from_static("http://r/"));
        headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        headers.append(header::ACCEPT, HeaderValue::from_static("application/json"));
        headers.append(header::ACCEPT, HeaderValue::from_static("text/plain"));
        let heads = Heads::of(&headers, true, true);
        // What `HeaderMap::get` gives: the first value.
        assert_eq!(heads.user_agent, headers.get(header::USER_AGENT));
        assert_eq!(heads.referer, headers.get(header::REFERER));
        assert!(heads.accept_encoding);
        assert_eq!(heads.accept.unwrap(), "application/json");

        headers.remove(header::ACCEPT_ENCODING);
        headers.remove(header::REFERER);
        let heads = Heads::of(&headers, true, true);
        assert_eq!((heads.referer, heads.accept_encoding), (None, false));
        assert_eq!(heads.user_agent.unwrap(), "first");

        // Neither a request log nor compression: only `Accept` read.
        let heads = Heads::of(&headers, false, false);
        assert!(heads.user_agent.is_none());
        assert_eq!(heads.accept.unwrap(), "application/json");
    }
}
