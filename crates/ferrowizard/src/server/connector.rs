//! A connector: a listening socket, its connections, and their timeouts.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// The service every connection of a connector runs: the gate in front of the router, as a
/// concrete type (not boxed), so that a request's future lives inline in hyper's per-connection
/// slot instead of in an allocation of its own.
pub type HttpService = super::gate::Gate<axum::Router>;

/// A connector's connection settings.
#[derive(Clone, Debug)]
pub struct ConnectionSettings {
    /// Close a connection idle for this long.
    pub idle_timeout: Duration,
    /// A request head must arrive within this time.
    pub header_read_timeout: Duration,
    /// Larger request heads get 431.
    pub max_header_size: usize,
    /// `useServerHeader`: every response carries [`SERVER_HEADER`] (unless its handler set
    /// one).
    pub server_header: bool,
    /// `useDateHeader`: every response carries a `Date` header.
    pub date_header: bool,
    /// `useForwardedHeaders` (with `trustedProxies`): whose proxy headers name the client.
    pub(crate) forwarded: Option<Arc<super::forwarded::Trust>>,
}

/// The `Server` header's value when `useServerHeader` is on, as Jetty sends `Jetty(9.4.x)`.
pub const SERVER_HEADER: &str = concat!("ferrowizard/", env!("CARGO_PKG_VERSION"));

/// Binds `addr` with the connector's socket options.
pub fn bind(addr: SocketAddr, backlog: u32, reuse_address: bool) -> io::Result<TcpListener> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket.set_reuse_address(reuse_address)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(backlog.min(i32::MAX as u32) as i32)?;
    TcpListener::from_std(socket.into())
}

/// Counts a connector's live connections: shutdown waits for them, a gauge shows them.
#[derive(Clone, Debug, Default)]
pub struct Connections(Arc<AtomicUsize>);

impl Connections {
    /// Connections still open.
    pub fn open(&self) -> usize {
        self.0.load(Relaxed)
    }

    /// Counts one more connection until the returned guard drops.
    fn opened(&self) -> OpenConnection {
        self.0.fetch_add(1, Relaxed);
        OpenConnection(self.clone())
    }
}

/// One live connection (counted from accept to close, TLS handshake included).
struct OpenConnection(Connections);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        (self.0).0.fetch_sub(1, Relaxed);
    }
}

/// Accepts connections until `shutdown` turns true.
pub async fn accept_loop(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    service: HttpService,
    settings: ConnectionSettings,
    mut shutdown: watch::Receiver<bool>,
    connections: Connections,
) {
    let local = listener.local_addr().ok();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.changed() => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: say so, breathe, carry on.
                tracing::warn!(target: "ferrowizard::server::connector", error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        tracing::debug!(target: "ferrowizard::server::connection", %peer, local = ?local, "connection accepted");
        let _ = stream.set_nodelay(true);
        let task = Connection {
            tls: tls.is_some(),
            service: service.clone(),
            settings: settings.clone(),
            shutdown: shutdown.clone(),
            peer,
            _open: connections.opened(),
        };
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => task.serve(stream).await,
                Some(acceptor) => {
                    let handshake = tokio::time::timeout(
                        task.settings.header_read_timeout,
                        acceptor.accept(stream),
                    )
                    .await;
                    match handshake {
                        Ok(Ok(tls)) => task.serve(tls).await,
                        Ok(Err(e)) => {
                            tracing::debug!(target: "ferrowizard::server::connection", %peer, error = %e, "TLS handshake failed")
                        }
                        Err(_) => {
                            tracing::debug!(target: "ferrowizard::server::connection", %peer, "TLS handshake timed out")
                        }
                    }
                }
            }
        });
    }
    tracing::debug!(target: "ferrowizard::server::connector", local = ?local, "stopped accepting");
}

struct Connection {
    /// Over TLS: requests carry `forwarded::Tls`, so that `Client` says `https`.
    tls: bool,
    service: HttpService,
    settings: ConnectionSettings,
    shutdown: watch::Receiver<bool>,
    peer: SocketAddr,
    _open: OpenConnection,
}

impl Connection {
    async fn serve<T: AsyncRead + AsyncWrite + Unpin + Send + 'static>(self, io: T) {
        let started = Instant::now();
        let peer = self.peer;
        let activity = Arc::new(Activity::new(peer));
        let io = TokioIo::new(Watched {
            inner: io,
            activity: activity.clone(),
            first_read: true,
        });
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
            extensions.insert(super::forwarded::Tls);
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
                    req.extensions_mut().insert(super::forwarded::Tls);
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
                peer = &*head_activity.peer,
                method = req.method().as_str(),
                uri = req.uri().path_and_query().map_or(req.uri().path(), |p| p.as_str()),
                version = super::request_log::version(req.version()),
                "request received"
            );
            let request = req.map(Body::new);
            // The gate's future is hyper's: no future wrapped around it (each wrapper is
            // another copy of the whole request state on its way into hyper).
            service.borrow_mut().call_ready(
                request,
                Answer {
                    in_flight,
                    server_header,
                },
            )
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
                () = &mut check => {
                    let now = activity.now();
                    let moves = activity.moves.load(Relaxed);
                    if moves != quiet.0 {
                        quiet = (moves, now);
                    }
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
/// (BENCHMARKS.md, "Server under load"). A clone of this one keeps its size.
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

/// axum's extractors that buffer a body (`Bytes`, `String`, `Json`...) stop at 2 MiB unless a
/// request carries `DefaultBodyLimit`'s mark; the gate enforces `maxRequestBodySize` itself.
pub(crate) const AXUM_BODY_LIMIT: u64 = 2 * 1024 * 1024;

/// Marks `extensions` so that axum's extractors leave the body's length to the gate (see
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

/// What the connection's timer looks at: whether bytes moved (idle timeout), and whether a
/// request head began arriving that has not been handed to the service yet (header read
/// timeout, against slowloris).
///
/// Counts, not times: the stream bumps a count on every read and write, and the timer, which
/// looks four times per timeout, notes when a count last changed. A count costs less than a
/// read of even the kernel's coarse clock on every read and write (BENCHMARKS.md, "Server
/// under load"); timeouts counted in seconds are then noticed up to a quarter late.
/// Only the connection's task touches these, through the stream and the service it polls.
#[derive(Debug)]
struct Activity {
    /// The DEBUG events' `peer`, rendered once per connection: every event of a request
    /// then copies text instead of running the formatting machinery (the chatty
    /// configurations log three of them per request).
    peer: Box<str>,
    opened: coarsetime::Instant,
    /// Reads and writes that moved bytes.
    moves: AtomicU64,
    /// Request heads begun.
    heads: AtomicU64,
    /// A head has begun arriving and is not complete yet.
    head_pending: std::sync::atomic::AtomicBool,
    /// Requests handed to the service and not answered yet (their heads are complete).
    in_flight: AtomicUsize,
    /// An HTTP/2 connection: frames flow between requests, so there is no head to time.
    http2: std::sync::atomic::AtomicBool,
}

impl Activity {
    fn new(peer: SocketAddr) -> Self {
        Activity {
            peer: peer.to_string().into(),
            opened: coarsetime::Instant::now_without_cache_update(),
            moves: AtomicU64::new(0),
            heads: AtomicU64::new(0),
            head_pending: std::sync::atomic::AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
            http2: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Milliseconds since the connection opened, from the kernel's coarse clock (a few ms of
    /// resolution; `now_without_cache_update`: the crate's `now` also writes a process-wide
    /// "recent" time, a cache line every worker would share).
    fn now(&self) -> u64 {
        coarsetime::Instant::now_without_cache_update()
            .duration_since(self.opened)
            .as_millis()
    }
}

/// A request whose head is complete, until it is answered.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn new(activity: &Arc<Activity>, http2: bool) -> InFlight {
        if http2 {
            activity.http2.store(true, Relaxed);
        }
        InFlight::count(activity, 1);
        activity.head_pending.store(false, Relaxed);
        InFlight(activity.clone())
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

/// What a connection does with each response its gate hands back (`Gate::call_ready`): the
/// `response written` DEBUG event, and the request's end as far as the connection's timeouts
/// are concerned. Dropped unused when the client goes away first.
pub(crate) struct Answer {
    in_flight: InFlight,
    /// `useServerHeader`.
    server_header: bool,
}

impl Answer {
    pub(crate) fn answered(self, response: &mut Response<Body>) {
        if self.server_header {
            response
                .headers_mut()
                .entry(http::header::SERVER)
                .or_insert(http::HeaderValue::from_static(SERVER_HEADER));
        }
        tracing::debug!(target: "ferrowizard::server::response", peer = &*self.in_flight.0.peer, status = response.status().as_u16(), "response written");
        if http_body::Body::size_hint(response.body())
            .exact()
            .is_none()
        {
            // A streamed body: in flight until its last byte, so that a client's next
            // (pipelined) request meanwhile is not timed as a slow head. (Else the request
            // is answered: `in_flight` is dropped with `self`.)
            let body = std::mem::take(response.body_mut());
            *response.body_mut() = Body::new(Answering {
                body,
                _in_flight: self.in_flight,
            });
        }
    }
}

/// A streamed response body, holding its request in flight until it ends.
struct Answering {
    body: Body,
    _in_flight: InFlight,
}

impl http_body::Body for Answering {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// An IO stream that records its [`Activity`].
struct Watched<T> {
    inner: T,
    activity: Arc<Activity>,
    /// No bytes read yet: the first ones tell HTTP/2 with prior knowledge (h2c) by its preface.
    first_read: bool,
}

/// How an HTTP/2 connection begins (RFC 9113 §3.4); the rest of the preface follows.
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0";

impl<T> Watched<T> {
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

/// Reads a PEM certificate chain and key into a TLS acceptor (ALPN h2 and http/1.1).
pub fn tls_acceptor(
    cert_path: &str,
    key_path: &str,
    tls13_only: bool,
    tls12_only: bool,
) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
        .and_then(|it| it.collect::<Result<_, _>>())
        .map_err(|e| format!("cannot read certificate {cert_path}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("no certificate in {cert_path}"));
    }
    let key = PrivateKeyDer::from_pem_file(key_path)
        .map_err(|e| format!("cannot read private key {key_path}: {e}"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let versions: &[&rustls::SupportedProtocolVersion] = if tls13_only {
        &[&rustls::version::TLS13]
    } else if tls12_only {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS12, &rustls::version::TLS13]
    };
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| format!("TLS versions: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            format!("certificate {cert_path} and key {key_path} do not fit together: {e}")
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::AtomicBool;
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

/// The listening socket on real sockets: what `acceptQueueSize` and `reuseAddress` set.
#[cfg(test)]
mod bind_tests {
    use std::io::Read;
    use std::net::TcpStream;

    use super::*;

    /// Connections to `addr` that complete their handshake within a short wait, of `tries`
    /// started while nothing accepts them.
    fn handshakes(addr: SocketAddr, tries: usize) -> usize {
        let mut open = Vec::new();
        for _ in 0..tries {
            if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
                open.push(s);
            }
        }
        open.len()
    }

    /// `acceptQueueSize` is the listen backlog: with nothing accepting, the kernel completes the
    /// handshake of backlog + 1 connections and leaves the rest waiting.
    ///
    /// Catches: the backlog not passed to `listen` (the default 1024 would take all 12).
    #[tokio::test]
    async fn accept_queue_size_is_the_listen_backlog() {
        for backlog in [2u32, 5] {
            let listener = bind("127.0.0.1:0".parse().unwrap(), backlog, true).unwrap();
            let addr = listener.local_addr().unwrap();
            let done = tokio::task::spawn_blocking(move || handshakes(addr, 12))
                .await
                .unwrap();
            assert_eq!(done, backlog as usize + 1, "backlog {backlog}");
            drop(listener);
        }
    }

    /// `reuseAddress`: a port whose connection the server closed first is in TIME_WAIT; binding
    /// it again needs `SO_REUSEADDR`.
    ///
    /// Catches: the option not set (the restart fails), or set regardless (the refusal passes).
    #[tokio::test]
    async fn reuse_address_lets_a_restart_bind_a_port_in_time_wait() {
        for reuse in [true, false] {
            let listener = bind("127.0.0.1:0".parse().unwrap(), 16, reuse).unwrap();
            let addr = listener.local_addr().unwrap();
            let client = std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).unwrap();
                let mut buf = [0; 1];
                // Waits for the server's close, then closes too.
                let _ = s.read(&mut buf);
            });
            let (stream, _) = listener.accept().await.unwrap();
            // The server closes first: its side of the connection goes to TIME_WAIT.
            drop(stream);
            client.join().unwrap();
            drop(listener);
            let again = bind(addr, 16, reuse);
            assert_eq!(again.is_ok(), reuse, "reuseAddress {reuse}: {again:?}");
        }
    }
}
