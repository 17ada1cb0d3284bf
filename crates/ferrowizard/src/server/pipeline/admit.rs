//! Stage 3, **admit**: a request is checked against `allowedMethods` (405) and
//! `maxRequestBodySize` (413), then admitted under `maxThreads` and `maxQueuedRequests`, or
//! answered 503 at once when both are full ([`Overload`]).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, SeqCst};
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::task::{Context, Poll};

use axum::body::Body;
use http::{Method, Request, Response, StatusCode};
use http_body::Body as _;
use tokio::sync::Notify;

use crate::errors::generated;

/// A connector's admission rules.
#[derive(Clone, Debug)]
pub(crate) struct Admission {
    overload: Arc<Overload>,
    /// `allowedMethods`.
    allowed: Box<[Method]>,
    /// `maxRequestBodySize`, bytes.
    max_body: u64,
}

/// Where an admitted request is: running, or waiting for a running slot. Given back with
/// [`Admission::leave`] once the request is answered or dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub(crate) enum Place {
    /// It holds a running slot.
    Running,
    /// It waits for one ([`Admission::slot`]).
    Queued,
}

impl Admission {
    /// The rules of a connector whose admission counts are `overload`.
    pub(crate) fn new(overload: Arc<Overload>, allowed: &[String], max_body: u64) -> Admission {
        Admission {
            overload,
            allowed: methods(allowed),
            max_body,
        }
    }

    /// Admits `req`, or answers it: 405 for a method `allowedMethods` leaves out, 413 for a
    /// declared length over `maxRequestBodySize`, 503 when the server is full. A body of
    /// unknown length (chunked) is limited as it is read instead.
    #[inline]
    pub(crate) fn admit(&self, req: &mut Request<Body>) -> Result<Place, Refusal> {
        if !self.allowed.contains(req.method()) {
            return Err(Refusal::Method);
        }
        match req.body().size_hint().upper() {
            Some(n) if n > self.max_body => return Err(Refusal::TooLarge),
            // Longer than axum's own limit, and allowed: the handler may read it all.
            Some(n) if n > AXUM_BODY_LIMIT => lift_axums_body_limit(req.extensions_mut()),
            Some(_) => {}
            None => {
                let limit = usize::try_from(self.max_body).unwrap_or(usize::MAX);
                let body = std::mem::take(req.body_mut());
                *req.body_mut() = Body::new(http_body_util::Limited::new(body, limit));
                if self.max_body > AXUM_BODY_LIMIT {
                    lift_axums_body_limit(req.extensions_mut());
                }
            }
        }
        match self.overload.admit() {
            Some(true) => Ok(Place::Running),
            Some(false) => Ok(Place::Queued),
            None => {
                self.overload.rejected.fetch_add(1, Relaxed);
                tracing::debug!(target: "ferrowizard::server::overload", uri = %req.uri(), "server full: 503");
                Err(Refusal::Full)
            }
        }
    }

    /// An admitted request is done (answered, or dropped).
    #[inline]
    pub(crate) fn leave(&self, place: Place) {
        self.overload.leave(place == Place::Running);
    }

    /// For a [`Place::Queued`] request: waits for a running slot, which the request then
    /// holds until the returned [`Slot`] is dropped.
    pub(crate) fn slot(&self) -> impl Future<Output = Slot> + Send + 'static {
        let overload = self.overload.clone();
        async move {
            overload.wait_to_run().await;
            Slot(overload)
        }
    }
}

/// Why a request was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Its method is not in `allowedMethods`: 405.
    Method,
    /// Its declared length is over `maxRequestBodySize`: 413.
    TooLarge,
    /// `maxThreads` run and `maxQueuedRequests` wait already: 503.
    Full,
}

impl Refusal {
    /// The answer to the request: a short text, which respond turns into DropWizard's JSON
    /// shape for a client that accepts JSON.
    pub(crate) fn response(self) -> Response<Body> {
        match self {
            Refusal::Method => generated(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n"),
            Refusal::TooLarge => generated(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large\n"),
            Refusal::Full => generated(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: the server is at capacity\n",
            ),
        }
    }
}

fn methods(names: &[String]) -> Box<[Method]> {
    names
        .iter()
        .filter_map(|m| Method::from_bytes(m.as_bytes()).ok())
        .collect()
}

/// A running slot taken after a wait in the queue, freed when dropped.
pub(crate) struct Slot(Arc<Overload>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.release_run();
    }
}

/// `maxThreads` requests run at once; up to `maxQueuedRequests` more wait for a slot; any
/// beyond that get 503 at once (and are counted), rather than queuing until they time out:
/// a request that waits out its timeout fails anyway, only later (as the DropWizard service
/// of the 2014 DropWizard logging report lost requests under load).
///
/// Atomics rather than `tokio::sync::Semaphore`: a semaphore takes its waiters' mutex on
/// every release, i.e. twice per request on a lock every worker shares. Here both counts
/// (requests admitted, and running) share one word, so that a request that runs at once is
/// one compare-and-swap on arrival and one subtraction when done: the line every worker
/// shares moves twice per request, not four times. Only a request that must wait for a slot
/// touches the `Notify`.
#[derive(Debug)]
pub struct Overload {
    max_running: u64,
    max_admitted: u64,
    /// Admitted requests in the high 32 bits, running ones in the low 32.
    counts: AtomicU64,
    waiting: AtomicUsize,
    slot_freed: Notify,
    pub(crate) rejected: AtomicU64,
}

const ADMITTED: u64 = 1 << 32;
const RUNNING: u64 = 1;

fn admitted(counts: u64) -> u64 {
    counts >> 32
}

fn running(counts: u64) -> u64 {
    counts & 0xFFFF_FFFF
}

impl Overload {
    /// At most `max_running` at once, `max_queued` more waiting.
    pub fn new(max_running: usize, max_queued: usize) -> Arc<Overload> {
        // Each count has 32 bits: far more than any server's requests in flight.
        let most = u64::from(u32::MAX) / 2;
        let limit = |n: usize| u64::try_from(n).unwrap_or(u64::MAX).min(most);
        let max_running = limit(max_running).max(1);
        Arc::new(Overload {
            max_running,
            max_admitted: max_running.saturating_add(limit(max_queued)).min(most),
            counts: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
            slot_freed: Notify::new(),
            rejected: AtomicU64::new(0),
        })
    }

    /// Admits a request if the server is not full, with a running slot if one is free and no
    /// request is waiting for one: `None` (full: 503), `Some(true)` (admitted and running),
    /// `Some(false)` (admitted, to wait for a slot). Undo with [`Overload::leave`].
    ///
    /// A newcomer does not take a free slot while requests are waiting: it queues behind them
    /// (Jetty's queue is first in, first out; waiters are woken oldest first). Otherwise, at
    /// saturation, a slot freed would go to whoever arrived just then, and a waiting request
    /// could wait until its client gave up. (Among the waiters, one that has not parked yet
    /// may still take a slot before an older one wakes: first in, first out nearly, not
    /// exactly.)
    pub(crate) fn admit(&self) -> Option<bool> {
        let mut runs = false;
        self.counts
            .fetch_update(AcqRel, Acquire, |c| {
                if admitted(c) >= self.max_admitted {
                    return None;
                }
                // Admitted but not running: waiting.
                runs = running(c) < self.max_running && admitted(c) == running(c);
                Some(c + ADMITTED + if runs { RUNNING } else { 0 })
            })
            .ok()
            .map(|_| runs)
    }

    /// Takes a running slot for an admitted request if one is free now.
    pub(crate) fn try_run(&self) -> bool {
        self.counts
            .fetch_update(AcqRel, Acquire, |c| {
                (running(c) < self.max_running).then_some(c + RUNNING)
            })
            .is_ok()
    }

    /// An admitted request is done; `running` if it had a slot.
    pub(crate) fn leave(&self, running: bool) {
        self.counts
            .fetch_sub(ADMITTED + if running { RUNNING } else { 0 }, SeqCst);
        if running {
            self.announce_slot();
        }
    }

    /// Frees a running slot (and wakes a request waiting for one).
    pub(crate) fn release_run(&self) {
        self.counts.fetch_sub(RUNNING, SeqCst);
        self.announce_slot();
    }

    fn announce_slot(&self) {
        if self.waiting.load(SeqCst) > 0 {
            self.slot_freed.notify_one();
        }
    }

    /// Waits for a running slot for an admitted request.
    pub(crate) async fn wait_to_run(&self) {
        while !self.try_run() {
            let notified = self.slot_freed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // Counted as waiting before the second look, so that a slot freed in between
            // is announced to us.
            let waiting = Waiting::new(&self.waiting);
            // Against `announce_slot`'s subtraction-then-look: without a full fence a failed
            // look here (a plain load) could miss a slot whose release missed our count.
            std::sync::atomic::fence(SeqCst);
            if self.try_run() {
                return;
            }
            notified.await;
            drop(waiting);
        }
    }

    /// Requests admitted and not done yet, running or waiting for a slot: the requests being
    /// handled (the `ferrowizard.requests.active` gauge).
    pub(crate) fn admitted(&self) -> u64 {
        admitted(self.counts.load(Relaxed))
    }

    /// Requests answered 503 because the server was full.
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Relaxed)
    }
}

/// Counts a waiter while it lives (also when its request is dropped while waiting).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, SeqCst);
        Waiting(counter)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

/// axum's extractors that buffer a body (`Bytes`, `String`, `Json`...) stop at 2 MiB unless a
/// request carries `DefaultBodyLimit`'s mark; admission enforces `maxRequestBodySize` itself.
pub(crate) const AXUM_BODY_LIMIT: u64 = 2 * 1024 * 1024;

/// Marks `extensions` so that axum's extractors leave the body's length to admission (see
/// [`AXUM_BODY_LIMIT`]): for a request whose body may be longer than that.
///
/// axum's mark is a private type that only its `DefaultBodyLimit` layer inserts; a layer on
/// the router would wrap every route (a boxed service per request), so the layer runs once,
/// on a request of nothing, and each marked request gets a copy of what it inserted.
pub(crate) fn lift_axums_body_limit(extensions: &mut http::Extensions) {
    static MARK: std::sync::LazyLock<http::Extensions> = std::sync::LazyLock::new(axums_mark);
    extensions.extend(MARK.clone());
}

fn axums_mark() -> http::Extensions {
    use tower::{Layer, Service};
    let request = http::Request::new(());
    let mut marked = axum::extract::DefaultBodyLimit::disable().layer(tower::service_fn(
        |request: http::Request<()>| {
            std::future::ready(Ok::<_, std::convert::Infallible>(
                request.into_parts().0.extensions,
            ))
        },
    ));
    let call = marked.call(request);
    let mut call = std::pin::pin!(call);
    // The inner service answers at once: one poll completes the call.
    match call
        .as_mut()
        .poll(&mut Context::from_waker(std::task::Waker::noop()))
    {
        Poll::Ready(Ok(extensions)) => extensions,
        Poll::Ready(Err(never)) => match never {},
        Poll::Pending => unreachable!("a ready service's future is ready"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_newcomer_does_not_take_a_slot_ahead_of_a_waiting_request() {
        let o = Overload::new(1, 10);
        assert_eq!(o.admit(), Some(true), "a free slot: runs");
        assert_eq!(o.admit(), Some(false), "no slot: waits");
        // The running request ends; before the waiting one takes the slot, another arrives.
        o.leave(true);
        assert_eq!(
            o.admit(),
            Some(false),
            "the newcomer queues behind the waiting request"
        );
        assert!(o.try_run(), "the waiting request takes the slot");
        assert!(!o.try_run(), "one slot only");
        o.leave(true);
        assert!(o.try_run(), "then the newcomer");
        o.leave(true);
        assert_eq!(
            o.admit(),
            Some(true),
            "nobody waits: a newcomer runs at once"
        );
    }

    #[test]
    fn beyond_running_and_queued_requests_are_refused() {
        let o = Overload::new(2, 1);
        assert_eq!(o.admit(), Some(true));
        assert_eq!(o.admit(), Some(true));
        assert_eq!(o.admit(), Some(false));
        assert_eq!(o.admit(), None);
        o.leave(false);
        assert_eq!(o.admit(), Some(false));
    }
}
