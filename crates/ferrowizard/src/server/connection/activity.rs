//! What a connection's timer looks at ([`Activity`]), kept by the connection's stream
//! ([`Watched`]) and by each request until it is answered ([`InFlight`]); the accept stage
//! reads it too, to find the idle connections to close under pressure.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What the connection's timer looks at: whether bytes moved (idle timeout), and whether a
/// request head began arriving that has not been handed to the service yet (header read
/// timeout, against slowloris).
///
/// Counts, not times: the stream bumps a count on every read and write, and the timer, which
/// looks four times per timeout, notes when a count last changed. A count costs less than a
/// read of even the kernel's coarse clock on every read and write (BENCHMARKS.md, "Server overhead"); timeouts counted in seconds are then noticed up to a quarter late.
/// Only the connection's task touches these, through the stream and the service it polls.
#[derive(Debug)]
pub(crate) struct Activity {
    /// The DEBUG events' `peer`, rendered once per connection: every event of a request
    /// then copies text instead of running the formatting machinery (the chatty
    /// configurations log three of them per request).
    peer: Box<str>,
    opened: coarsetime::Instant,
    /// Reads and writes that moved bytes.
    pub(in crate::server) moves: AtomicU64,
    /// Request heads begun.
    pub(in crate::server) heads: AtomicU64,
    /// A head has begun arriving and is not complete yet.
    pub(in crate::server) head_pending: AtomicBool,
    /// Requests handed to the service and not answered yet (their heads are complete).
    in_flight: AtomicUsize,
    /// An HTTP/2 connection: frames flow between requests, so there is no head to time.
    http2: AtomicBool,
    /// What the connection's timer saw last: the `moves` count, and since when (ms since
    /// open) that count had not changed. Written once per check, read under pressure.
    pub(in crate::server) seen_moves: AtomicU64,
    pub(in crate::server) quiet_since: AtomicU64,
    /// Asked to close if idle, by the accept stage under pressure (once: `nudged`).
    pub(in crate::server) nudge: tokio::sync::Notify,
    pub(in crate::server) nudged: AtomicBool,
}

impl Activity {
    /// A connection from `peer`, opened now.
    pub(crate) fn new(peer: SocketAddr) -> Self {
        Activity {
            peer: peer.to_string().into(),
            opened: coarsetime::Instant::now_without_cache_update(),
            moves: AtomicU64::new(0),
            heads: AtomicU64::new(0),
            head_pending: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            http2: AtomicBool::new(false),
            seen_moves: AtomicU64::new(0),
            quiet_since: AtomicU64::new(0),
            nudge: tokio::sync::Notify::new(),
            nudged: AtomicBool::new(false),
        }
    }

    /// Whether the connection waits for a request: none in flight, no head begun.
    pub(crate) fn is_idle(&self) -> bool {
        self.in_flight.load(Relaxed) == 0 && !self.head_pending.load(Relaxed)
    }

    /// How long (ms) the connection has been idle, as far as its timer knows: `None` when it
    /// is not idle, `Some(0)` when it is but moved bytes since its timer last looked.
    pub(crate) fn idle_for(&self) -> Option<u64> {
        if !self.is_idle() {
            return None;
        }
        if self.moves.load(Relaxed) != self.seen_moves.load(Relaxed) {
            return Some(0);
        }
        Some(self.now().saturating_sub(self.quiet_since.load(Relaxed)))
    }

    /// Milliseconds since the connection opened, from the kernel's coarse clock (a few ms of
    /// resolution; `now_without_cache_update`: the crate's `now` also writes a process-wide
    /// "recent" time, a cache line every worker would share).
    pub(crate) fn now(&self) -> u64 {
        coarsetime::Instant::now_without_cache_update()
            .duration_since(self.opened)
            .as_millis()
    }

    /// The peer's address, as the DEBUG events name it.
    pub(crate) fn peer(&self) -> &str {
        &self.peer
    }
}

/// A request whose head is complete, until it is answered.
pub(crate) struct InFlight(Arc<Activity>);

impl InFlight {
    /// The request whose head the connection of `activity` has just handed on (`http2`: over
    /// HTTP/2).
    pub(crate) fn new(activity: &Arc<Activity>, http2: bool) -> InFlight {
        if http2 {
            activity.http2.store(true, Relaxed);
        }
        InFlight::count(activity, 1);
        activity.head_pending.store(false, Relaxed);
        InFlight(activity.clone())
    }

    /// The connection's activity.
    pub(crate) fn activity(&self) -> &Activity {
        &self.0
    }

    /// Adds `n` to the requests in flight. HTTP/1 answers every request in the connection's
    /// own polls, so only its task counts: a plain read and write (a locked addition is a
    /// full barrier). HTTP/2 answers in the streams' tasks: atomic additions.
    /// (An HTTP/2 connection says so before its first request: the preface, or the version.)
    fn count(activity: &Activity, n: isize) {
        let a = &activity.in_flight;
        if activity.http2.load(Relaxed) {
            a.fetch_add(n as usize, Relaxed);
        } else {
            a.store(a.load(Relaxed).wrapping_add_signed(n), Relaxed);
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        InFlight::count(&self.0, -1);
    }
}

/// An IO stream that records its [`Activity`].
pub(crate) struct Watched<T> {
    inner: T,
    activity: Arc<Activity>,
    /// No bytes read yet: the first ones tell HTTP/2 with prior knowledge (h2c) by its preface.
    first_read: bool,
}

/// How an HTTP/2 connection begins (RFC 9113 §3.4); the rest of the preface follows.
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0";

impl<T> Watched<T> {
    /// `inner`, recording in `activity`.
    pub(crate) fn new(inner: T, activity: Arc<Activity>) -> Watched<T> {
        Watched {
            inner,
            activity,
            first_read: true,
        }
    }

    /// Counts a read or write that moved bytes; a read with no request in flight begins a
    /// head, unless one is pending already. (Loads and stores, not read-modify-writes: only
    /// the connection's task writes these.)
    #[inline]
    fn touch(&self, read: bool) {
        let a = &*self.activity;
        a.moves
            .store(a.moves.load(Relaxed).wrapping_add(1), Relaxed);
        if read
            && !a.head_pending.load(Relaxed)
            && a.in_flight.load(Relaxed) == 0
            && !a.http2.load(Relaxed)
        {
            a.heads
                .store(a.heads.load(Relaxed).wrapping_add(1), Relaxed);
            a.head_pending.store(true, Relaxed);
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            if self.first_read {
                self.first_read = false;
                let read = &buf.filled()[before..];
                let n = read.len().min(HTTP2_PREFACE.len());
                if read[..n] == HTTP2_PREFACE[..n] {
                    self.activity.http2.store(true, Relaxed);
                }
            }
            self.touch(true);
        }
        poll
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            self.touch(false);
        }
        poll
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(poll, Poll::Ready(Ok(n)) if n > 0) {
            self.touch(false);
        }
        poll
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
