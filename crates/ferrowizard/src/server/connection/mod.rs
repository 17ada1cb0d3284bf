//! Stage 2, **connection**: hyper reads a connection's requests, each handed to the
//! connector's [`Pipeline`] with what the connection knows of it (the peer's address as axum's
//! `ConnectInfo`, the client a trusted proxy names, TLS) and the connection's part of the
//! response ([`Respond`]); the connection's one timer closes it when idle
//! (`idleTimeout`), when a head is slow to arrive (`headerReadTimeout`), or at shutdown.

pub(crate) mod accept;
pub(crate) mod activity;
pub(crate) mod forwarded;
pub(crate) mod pressure;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use http::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;

use crate::server::connection::activity::{Activity, InFlight, Watched};
use crate::server::pipeline::Pipeline;
use crate::server::pipeline::respond::Respond;

/// The service every connection of a connector runs: the pipeline in front of the router, as
/// a concrete type (not boxed), so that a request's future lives inline in hyper's
/// per-connection slot instead of in an allocation of its own.
pub(crate) type HttpService = Pipeline<axum::Router>;

/// A connector's connection settings.
#[derive(Clone, Debug)]
pub(crate) struct ConnectionSettings {
    /// Close a connection idle for this long.
    pub idle_timeout: Duration,
    /// A request head must arrive within this time.
    pub header_read_timeout: Duration,
    /// Larger request heads get 431.
    pub max_header_size: usize,
    /// `useServerHeader`: every response carries [`crate::server::pipeline::respond::SERVER_HEADER`] (unless its handler set
    /// one).
    pub server_header: bool,
    /// `useDateHeader`: every response carries a `Date` header.
    pub date_header: bool,
    /// `useForwardedHeaders` (with `trustedProxies`): whose proxy headers name the client.
    pub(crate) forwarded: Option<Arc<crate::server::connection::forwarded::Trust>>,
}

/// One accepted connection, to be served.
pub(crate) struct Connection {
    /// Over TLS: requests carry `forwarded::Tls`, so that `Client` says `https`.
    tls: bool,
    service: HttpService,
    settings: ConnectionSettings,
    shutdown: watch::Receiver<bool>,
    peer: SocketAddr,
}

impl Connection {
    /// A connection from `peer` (over TLS when `tls`), to serve with `service` until it closes
    /// or `shutdown` turns true.
    pub(crate) fn new(
        tls: bool,
        service: HttpService,
        settings: ConnectionSettings,
        shutdown: watch::Receiver<bool>,
        peer: SocketAddr,
    ) -> Connection {
        Connection {
            tls,
            service,
            settings,
            shutdown,
            peer,
        }
    }

    /// `headerReadTimeout`: also the TLS handshake's.
    pub(crate) fn header_read_timeout(&self) -> Duration {
        self.settings.header_read_timeout
    }

    /// Serves the connection's requests over `io` until it closes, keeping `activity` (made
    /// at accept, where the pressure stage reads it).
    pub(crate) async fn serve<T: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
        self,
        io: T,
        activity: Arc<Activity>,
    ) {
        let started = Instant::now();
        let peer = self.peer;
        let io = TokioIo::new(Watched::new(io, activity.clone()));
        let head_activity = activity.clone();
        // The connection's own instance of the service, called in place: nothing is cloned per
        // request (a clone of the boxed stack is an allocation and a reference count per
        // layer). A `RefCell`, not a lock: hyper calls its service from the connection's task
        // alone, one call at a time (HTTP/2's streams run in tasks of their own, but only
        // their futures do), so a borrow never meets another, and a lock's two atomic
        // operations a request would buy nothing.
        let service = std::cell::RefCell::new(self.service.clone());
        let tls = self.tls;
        let mut extensions = connection_extensions(peer);
        if tls {
            extensions.insert(crate::server::connection::forwarded::Tls);
        }
        let forwarded = self.settings.forwarded.clone();
        let server_header = self.settings.server_header;
        let hyper_service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
            let in_flight = InFlight::new(&head_activity, req.version() == http::Version::HTTP_2);
            // axum's own form, so that handlers can extract `ConnectInfo<SocketAddr>`.
            if req.extensions().is_empty() {
                *req.extensions_mut() = extensions.clone();
            } else {
                req.extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                if tls {
                    req.extensions_mut()
                        .insert(crate::server::connection::forwarded::Tls);
                }
            }
            if let Some(trust) = &forwarded
                && let Some((client, found)) = trust.resolve(peer, req.headers())
            {
                req.extensions_mut()
                    .insert(axum::extract::ConnectInfo(client));
                req.extensions_mut().insert(found);
            }
            tracing::debug!(
                target: "ferrowizard::server::request",
                peer = head_activity.peer(),
                method = req.method().as_str(),
                uri = req.uri().path_and_query().map_or(req.uri().path(), |p| p.as_str()),
                version = crate::server::request_log::entry::version(req.version()),
                "request received"
            );
            let request = req.map(Body::new);
            // The pipeline's future is hyper's: no future wrapped around it (each wrapper is
            // another copy of the whole request state on its way into hyper).
            service
                .borrow_mut()
                .call_ready(request, Respond::new(in_flight, server_header))
        });
        let mut builder = auto::Builder::new(TokioExecutor::new());
        // No `header_read_timeout` here: hyper arms a timer for it on every request (a timer
        // wheel entry and an allocation); the connection's one timer below checks the same
        // deadline (see `Activity`).
        builder
            .http1()
            .max_buf_size(self.settings.max_header_size.max(8192))
            .keep_alive(true)
            .auto_date_header(self.settings.date_header);
        builder
            .http2()
            .max_header_list_size(u32::try_from(self.settings.max_header_size).unwrap_or(u32::MAX))
            .timer(TokioTimer::new())
            .auto_date_header(self.settings.date_header);
        let conn = builder.serve_connection_with_upgrades(io, hyper_service);
        tokio::pin!(conn);
        // Both futures are made once and polled by reference: re-creating them on every
        // wake-up of the connection would register with the shared shutdown channel and the
        // timer wheel on every request.
        let idle = millis(self.settings.idle_timeout);
        let head = millis(self.settings.header_read_timeout);
        // The timer looks at the activity four times per timeout: a timeout is noticed at
        // most a quarter late, never early.
        let period = Duration::from_millis((idle.min(head) / 4).max(1));
        let mut shutdown = self.shutdown.clone();
        let stop = OnWake::new(async move {
            let _ = shutdown.wait_for(|stop| *stop).await;
        });
        tokio::pin!(stop);
        let check = OnWake::new(tokio::time::sleep(period));
        tokio::pin!(check);
        // Under pressure the accept stage asks idle connections to close, the longest idle
        // first (`crate::server::connection::pressure`). Closed gracefully: a request that began meanwhile is
        // answered first.
        let nudged = activity.clone();
        let nudge = OnWake::new(async move { nudged.nudge.notified().await });
        tokio::pin!(nudge);
        // What the checks saw: the bytes moved, and since when (ms) that count is unchanged.
        let mut quiet = (activity.moves.load(Relaxed), activity.now());
        // The pending head last seen, and since when.
        let mut pending: Option<(u64, u64)> = None;
        // Once closing (shutdown, or idle), the connection is dropped if still open after
        // idleTimeout without a byte moved (idle; a shutdown is bounded by
        // `shutdownGracePeriod` instead): a request being answered may finish, but only
        // while bytes keep moving.
        let mut closing = Closing::Open;
        loop {
            tokio::select! {
                // In order, the connection first: no random start drawn on every wake-up.
                biased;
                result = conn.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(target: "ferrowizard::server::connection", %peer, error = %e, "connection error");
                    }
                    break;
                }
                () = &mut stop, if closing == Closing::Open => {
                    closing = Closing::Shutdown;
                    conn.as_mut().graceful_shutdown();
                }
                () = &mut nudge, if closing == Closing::Open => {
                    tracing::debug!(target: "ferrowizard::server::connection", %peer, "closed under pressure");
                    closing = Closing::Idle;
                    quiet.1 = activity.now();
                    conn.as_mut().graceful_shutdown();
                }
                () = &mut check => {
                    let now = activity.now();
                    let moves = activity.moves.load(Relaxed);
                    if moves != quiet.0 {
                        quiet = (moves, now);
                        activity.quiet_since.store(now, Relaxed);
                    }
                    activity.seen_moves.store(moves, Relaxed);
                    let silent = now.saturating_sub(quiet.1);
                    match closing {
                        Closing::Idle if silent >= idle => {
                            // Silent for twice idleTimeout: a client that stopped reading or
                            // sending, or a handler that never answers.
                            tracing::debug!(target: "ferrowizard::server::connection", %peer, "still idle after closing");
                            break;
                        }
                        Closing::Idle | Closing::Shutdown => {}
                        Closing::Open if silent >= idle => {
                            tracing::debug!(target: "ferrowizard::server::connection", %peer, "idle timeout");
                            closing = Closing::Idle;
                            quiet.1 = now;
                            conn.as_mut().graceful_shutdown();
                        }
                        Closing::Open => {
                            if activity.head_pending.load(Relaxed) {
                                let heads = activity.heads.load(Relaxed);
                                let since = match pending {
                                    Some((seen, since)) if seen == heads => since,
                                    _ => {
                                        pending = Some((heads, now));
                                        now
                                    }
                                };
                                if now.saturating_sub(since) >= head {
                                    // A request head still incomplete after headerReadTimeout
                                    // (slowloris): the connection is dropped, not drained.
                                    tracing::debug!(target: "ferrowizard::server::connection", %peer, "header read timeout");
                                    break;
                                }
                            } else {
                                pending = None;
                            }
                        }
                    }
                    check.as_mut().inner().reset(tokio::time::Instant::now() + period);
                }
            }
        }
        tracing::debug!(target: "ferrowizard::server::connection", %peer, duration_ms = started.elapsed().as_millis() as u64, "connection closed");
    }
}

/// A future polled only after its own waker fired (and on its first poll).
///
/// The connection's task selects over hyper's connection, the server's shutdown and the
/// connection's timer, and `select!` polls every branch each time the task wakes: for the
/// connection that is twice a request (its bytes arrive, its answer is ready). Polling the
/// shutdown channel there would register the task with a waiter list under a mutex every
/// connection of the server shares, and the timer with the timer wheel: cache lines the
/// workers would fight over on every request. Wrapped, those two are asked again only when
/// they have something to say.
struct OnWake<F> {
    inner: Pin<Box<F>>,
    signal: Arc<Signal>,
    /// The task waker `signal` holds, while no wake-up has taken it: registering again on
    /// every poll would cost two atomic exchanges a poll for nothing.
    registered: Option<std::task::Waker>,
}

/// The wrapped future's waker: notes the wake-up, then wakes the task.
#[derive(Default)]
struct Signal {
    woken: std::sync::atomic::AtomicBool,
    task: atomic_waker::AtomicWaker,
}

impl std::task::Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, std::sync::atomic::Ordering::Release);
        self.task.wake();
    }
}

impl<F: Future> OnWake<F> {
    fn new(inner: F) -> OnWake<F> {
        let signal = Arc::new(Signal::default());
        // Polled on first use.
        signal.woken.store(true, Relaxed);
        OnWake {
            inner: Box::pin(inner),
            signal,
            registered: None,
        }
    }

    /// The future itself, to change it (a timer reset): it is polled on the next poll.
    fn inner(self: Pin<&mut Self>) -> Pin<&mut F> {
        let this = self.get_mut();
        this.signal.woken.store(true, Relaxed);
        this.inner.as_mut()
    }
}

impl<F: Future> Future for OnWake<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        use std::sync::atomic::Ordering::Acquire;
        let this = self.get_mut();
        // Registered before the flag is read, so that a wake-up in between is not lost. A
        // wake-up sets the flag before it takes the registered waker: while the flag is
        // clear, the waker registered last is still there.
        if !this
            .registered
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            this.signal.task.register(cx.waker());
            this.registered = Some(cx.waker().clone());
        }
        if !this.signal.woken.load(Acquire) {
            return Poll::Pending;
        }
        this.signal.woken.store(false, Relaxed);
        // The wake-up took the waker (or is about to): register afresh before polling, so
        // that whatever the inner future registers reaches this task.
        this.signal.task.register(cx.waker());
        let waker = std::task::Waker::from(this.signal.clone());
        this.inner.as_mut().poll(&mut Context::from_waker(&waker))
    }
}

/// The extensions every request of the connection starts with: `ConnectInfo`, in a table
/// with room for what axum adds as it routes (the original URI, the matched path, the path
/// parameters).
///
/// Why: inserted into a request's empty extensions, `ConnectInfo` gets a table sized for three
/// entries, and axum's third insertion then has it reallocated and rehashed, on every request
/// (BENCHMARKS.md, "Server overhead"). A clone of this one keeps its size.
/// `benches/request_path.rs` measures it through [`crate::bench::connection_extensions`].
pub(crate) fn connection_extensions(peer: SocketAddr) -> http::Extensions {
    #[derive(Clone)]
    struct Room<const N: usize>;
    let mut extensions = http::Extensions::new();
    extensions.insert(axum::extract::ConnectInfo(peer));
    extensions.insert(Room::<1>);
    extensions.insert(Room::<2>);
    extensions.insert(Room::<3>);
    extensions.remove::<Room<1>>();
    extensions.remove::<Room<2>>();
    extensions.remove::<Room<3>>();
    extensions
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Whether, and why, a connection is closing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Closing {
    Open,
    /// The server is shutting down.
    Shutdown,
    /// It was idle for idleTimeout.
    Idle,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicBool;
    use std::sync::atomic::AtomicUsize;
    use std::task::{Wake, Waker};

    /// A future that counts its polls, keeps the waker it was given, and is ready when told.
    #[derive(Clone, Default)]
    struct Probe {
        polls: Arc<AtomicUsize>,
        waker: Arc<Mutex<Option<Waker>>>,
        ready: Arc<AtomicBool>,
    }

    impl Future for Probe {
        type Output = ();

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.polls.fetch_add(1, Relaxed);
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            if self.ready.load(Relaxed) {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }
    }

    impl Probe {
        fn wake(&self) {
            if let Some(w) = self.waker.lock().unwrap().take() {
                w.wake();
            }
        }
    }

    #[derive(Default)]
    struct Task(AtomicUsize);

    impl Wake for Task {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Relaxed);
        }
    }

    #[test]
    fn on_wake_polls_its_future_only_after_the_future_asked_to_be() {
        let probe = Probe::default();
        let task = Arc::new(Task::default());
        let waker = Waker::from(task.clone());
        let mut cx = Context::from_waker(&waker);
        let mut f = Box::pin(OnWake::new(probe.clone()));
        let polls = || probe.polls.load(Relaxed);

        // Polled on the first poll, not on the next ones (the task woke for something else).
        assert!(f.as_mut().poll(&mut cx).is_pending());
        assert_eq!(polls(), 1);
        assert!(f.as_mut().poll(&mut cx).is_pending());
        assert!(f.as_mut().poll(&mut cx).is_pending());
        assert_eq!(polls(), 1);

        // Its own waker fired: the task is woken, and the future polled once.
        probe.wake();
        assert_eq!(task.0.load(Relaxed), 1);
        assert!(f.as_mut().poll(&mut cx).is_pending());
        assert_eq!(polls(), 2);
        assert!(f.as_mut().poll(&mut cx).is_pending());
        assert_eq!(polls(), 2);

        // Changed through `inner` (a timer reset): polled again.
        f.as_mut().inner().ready.store(false, Relaxed);
        assert!(f.as_mut().poll(&mut cx).is_pending());
        assert_eq!(polls(), 3);

        // A wake-up after every poll still reaches the task, and readiness gets through.
        probe.ready.store(true, Relaxed);
        probe.wake();
        assert_eq!(task.0.load(Relaxed), 2);
        assert!(f.as_mut().poll(&mut cx).is_ready());
        assert_eq!(polls(), 4);
    }
}
