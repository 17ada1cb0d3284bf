//! What a `ws:` or `sse:` step is given (the target) and what it says it did.

use tokio::time::Instant;

use crate::transport::Opened;

/// What a `ws:` or `sse:` step did.
pub struct Acted {
    /// When it began.
    pub started: Instant,
    /// Whether it is timed (a send without an await is not), and why it failed if it did.
    pub timed: bool,
    /// Why it failed (a failed step is always recorded).
    pub error: Option<String>,
    /// The connection it opened, if it opened one.
    pub opened: Option<Opened>,
}

impl Acted {
    pub(super) fn new(started: Instant, timed: bool) -> Acted {
        Acted {
            started,
            timed,
            error: None,
            opened: None,
        }
    }

    pub(super) fn failed(mut self, error: String) -> Acted {
        self.error = Some(error);
        self
    }
}

/// How to reach the target: the request headers of every step (`http.headers`), the path
/// of `baseUrl` before each step's, and how long a close may take.
pub struct Target<'a> {
    /// The target's address and TLS.
    pub transport: &'a crate::transport::Transport,
    /// `http.headers`.
    pub headers: &'a http::HeaderMap,
    /// `baseUrl`'s path, before each step's.
    pub base_path: &'a str,
    /// `http.requestTimeout`: how long a connect, a send or a close may take.
    pub timeout: std::time::Duration,
}

impl Target<'_> {
    /// The connect request's headers: `http.headers`, then the step's (`${...}` filled in).
    pub(super) fn headers(
        &self,
        extra: &std::collections::BTreeMap<String, String>,
        session: &crate::session::Session,
    ) -> Result<http::HeaderMap, String> {
        let mut headers = self.headers.clone();
        for (k, v) in extra {
            let name = http::HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| format!("header {k:?}: {e}"))?;
            let value = http::HeaderValue::from_str(&crate::template::interpolate(v, session)?)
                .map_err(|e| format!("header {k:?}: {e}"))?;
            headers.insert(name, value);
        }
        Ok(headers)
    }

    /// The request target of `path` (`${...}` filled in), after `baseUrl`'s path.
    pub(super) fn path(
        &self,
        path: &str,
        session: &crate::session::Session,
    ) -> Result<String, String> {
        Ok(format!(
            "{}{}",
            self.base_path,
            crate::template::interpolate(path, session)?
        ))
    }
}

impl Target<'_> {
    /// A byte stream to the target, or why not.
    pub(super) async fn stream(
        &self,
    ) -> Result<(crate::transport::Stream, Opened), (String, Option<Opened>)> {
        self.transport.stream().await.map_err(|f| (f.message, None))
    }
}
