//! Connections to the target: TCP, then TLS for an `https://` target (rustls), then HTTP/1.1
//! or HTTP/2 (`http.version`: by ALPN over TLS, by prior knowledge over plain TCP), each
//! connection's connect and TLS handshake times measured apart from any response's; and the
//! pool users share under `http.shareConnections`.
//!
//! `http.maxConnections` is a permit per open connection, held with its socket and given
//! back once the socket is closed, so no more sockets are ever open.

use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::scenario::{HttpSettings, HttpVersion, TlsSettings};

/// What a request goes out on: one HTTP/1.1 connection, or a handle to an HTTP/2 connection
/// (cheap to clone; every clone multiplexes on the same connection). Either is driven by a
/// task of its own.
pub enum Sender {
    /// HTTP/1.1: one request at a time.
    One(http1::SendRequest<Full<Bytes>>),
    /// HTTP/2.
    Two(http2::SendRequest<Full<Bytes>>),
}

impl Sender {
    /// Whether the connection is gone.
    pub fn is_closed(&self) -> bool {
        match self {
            Sender::One(s) => s.is_closed(),
            Sender::Two(s) => s.is_closed(),
        }
    }

    /// Whether requests go out as HTTP/2 (which wants the scheme and authority in the
    /// request's URI rather than a `Host` header).
    pub fn is_http2(&self) -> bool {
        matches!(self, Sender::Two(_))
    }

    /// Waits until the connection can take a request; an error means it is closed.
    pub async fn ready(&mut self) -> Result<(), hyper::Error> {
        match self {
            Sender::One(s) => s.ready().await,
            Sender::Two(s) => s.ready().await,
        }
    }

    /// Sends `request` and reads its whole response: status and headers, and the body.
    pub async fn exchange(
        &mut self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<(http::response::Parts, Bytes), hyper::Error> {
        async fn whole(
            response: Result<http::Response<Incoming>, hyper::Error>,
        ) -> Result<(http::response::Parts, Bytes), hyper::Error> {
            let (parts, body) = response?.into_parts();
            Ok((parts, body.collect().await?.to_bytes()))
        }
        match self {
            Sender::One(s) => whole(s.send_request(request).await).await,
            // Boxed: an HTTP/2 exchange's state would otherwise widen every HTTP/1.1 one.
            Sender::Two(s) => {
                let sent = s.send_request(request);
                Box::pin(async move { whole(sent.await).await }).await
            }
        }
    }
}

/// How long opening a connection took: the TCP connect, and the TLS handshake after it
/// (`None` for a plain `http://` target).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Opened {
    /// From the connect call to the socket connected (not counting a wait for a
    /// `maxConnections` permit).
    pub connect: Duration,
    /// From the socket connected to the TLS handshake done.
    pub handshake: Option<Duration>,
}

/// Why a connection could not be opened: the KO message (Gatling's words where Gatling has
/// them: "Connection refused", "Connection timeout after N ms"; volley's for TLS).
#[derive(Debug, PartialEq)]
pub struct Failure {
    /// The KO message.
    pub message: String,
    /// The process ran out of file descriptors (`EMFILE`).
    pub out_of_files: bool,
}

impl Failure {
    fn new(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            out_of_files: false,
        }
    }
}

/// A sender for one request, and how long opening its connection took when it was opened
/// for this request.
pub struct Checkout {
    /// Where the request goes.
    pub sender: Sender,
    /// `Some` when a connection was opened for it.
    pub opened: Option<Opened>,
}

/// The target's address and how to speak to it, built once per run from `baseUrl` and
/// `http:`.
pub struct Transport {
    /// `host:port` to connect to.
    address: String,
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
    /// TLS, for an `https://` target: the client's settings and the name its certificate
    /// must hold (sent by SNI).
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
    /// TLS offering HTTP/1.1 alone, for WebSockets and event streams.
    stream_tls: Option<tokio_rustls::TlsConnector>,
    version: HttpVersion,
    keep_alive: bool,
    connect_timeout: Duration,
    read_buffer: usize,
    permits: Arc<Semaphore>,
    /// WebSockets' and event streams' connections: `maxConnections` of their own, so that
    /// users holding an idle HTTP connection can still open one.
    stream_permits: Arc<Semaphore>,
    shared: Option<Shared>,
}

/// `http.shareConnections`: idle HTTP/1.1 connections any user may take, and the HTTP/2
/// connection every user multiplexes on.
#[derive(Default)]
struct Shared {
    idle: Mutex<Vec<Sender>>,
    /// Rung when a connection goes back to `idle`, for users waiting for one.
    returned: Notify,
    /// The HTTP/2 connection every user multiplexes on, cloned for each request.
    two: Mutex<Option<http2::SendRequest<Full<Bytes>>>>,
    /// Held while the HTTP/2 connection is opened, so that users arriving together open
    /// one, not one each.
    opening: tokio::sync::Mutex<()>,
    /// `version: 2`, but the server chose HTTP/1.1 by ALPN: connections are pooled as
    /// HTTP/1.1 ones.
    fell_back: std::sync::atomic::AtomicBool,
}

impl Transport {
    /// The transport to `uri` (`http://` or `https://`, validated when the scenario was
    /// loaded) with `settings`; `base_dir` resolves a relative `tls.caFile`.
    pub fn new(uri: &http::Uri, settings: &HttpSettings, base_dir: &Path) -> Result<Self, String> {
        let authority = uri
            .authority()
            .ok_or_else(|| format!("baseUrl {uri} has no host"))?
            .clone();
        let https = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        // `[::1]` in a URL, `::1` to connect to and in the certificate.
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let (tls, stream_tls) = if https {
            let config = client_config(&settings.tls, settings.version, base_dir)?;
            let one = client_config(&settings.tls, HttpVersion::Http1, base_dir)?;
            let name = ServerName::try_from(host.to_owned())
                .map_err(|e| format!("baseUrl host {host:?} is no TLS server name: {e}"))?;
            (
                Some((tokio_rustls::TlsConnector::from(config), name)),
                Some(tokio_rustls::TlsConnector::from(one)),
            )
        } else {
            (None, None)
        };
        Ok(Transport {
            address: if host.contains(':') {
                format!("[{host}]:{port}")
            } else {
                format!("{host}:{port}")
            },
            scheme: if https {
                http::uri::Scheme::HTTPS
            } else {
                http::uri::Scheme::HTTP
            },
            authority,
            tls,
            stream_tls,
            version: settings.version,
            keep_alive: settings.keep_alive,
            connect_timeout: settings.connect_timeout.get(),
            // Validated when the file was loaded; settings built in code get the floor.
            read_buffer: usize::try_from(settings.read_buffer.to_bytes())
                .unwrap_or(usize::MAX)
                .max(crate::scenario::MIN_READ_BUFFER.to_bytes() as usize),
            permits: Arc::new(Semaphore::new(
                settings.max_connections.clamp(1, Semaphore::MAX_PERMITS),
            )),
            stream_permits: Arc::new(Semaphore::new(
                settings.max_connections.clamp(1, Semaphore::MAX_PERMITS),
            )),
            shared: settings.share_connections.then(Shared::default),
        })
    }

    /// The scheme of every HTTP/2 request's URI.
    pub fn scheme(&self) -> &http::uri::Scheme {
        &self.scheme
    }

    /// The authority of `baseUrl`: HTTP/2's `:authority`, HTTP/1.1's `Host`.
    pub fn authority(&self) -> &http::uri::Authority {
        &self.authority
    }

    /// Each connection's HTTP/1.1 read buffer (`http.readBuffer`).
    pub fn read_buffer(&self) -> usize {
        self.read_buffer
    }

    /// A sender for one request: `own` (the user's connection) while it is open; with
    /// `shareConnections`, an idle pooled connection or the shared HTTP/2 one; else a new
    /// connection, once one of `maxConnections` is free (the wait is the request's).
    ///
    /// The user's own open connection is taken at once; anything else is a boxed future, so
    /// that the pool's and the handshakes' state is not carried inline by every user's
    /// future (10,000 users, 10,000 copies) for the few requests that need it.
    pub async fn checkout(&self, own: &mut Option<Sender>) -> Result<Checkout, Failure> {
        let ready = own
            .take()
            .filter(|s| !s.is_closed())
            .or_else(|| self.shared_two());
        match ready {
            Some(sender) => Ok(Checkout {
                sender,
                opened: None,
            }),
            None => self.elsewhere().await,
        }
    }

    /// The shared HTTP/2 connection while it is open (`shareConnections`, `version: 2`,
    /// `keepAlive`).
    fn shared_two(&self) -> Option<Sender> {
        let shared = self.shared.as_ref()?;
        if !self.multiplexed(shared) {
            return None;
        }
        let two = shared.two.lock().ok()?;
        two.as_ref()
            .filter(|s| !s.is_closed())
            .map(|s| Sender::Two(s.clone()))
    }

    /// Whether users share one HTTP/2 connection: asked for, kept alive, and the server has
    /// not chosen HTTP/1.1.
    fn multiplexed(&self, shared: &Shared) -> bool {
        self.version == HttpVersion::Http2 && self.keep_alive && !shared.fell_back.load(Relaxed)
    }

    /// A sender from the pool, or a new connection.
    fn elsewhere(
        &self,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Checkout, Failure>> + Send + '_>> {
        Box::pin(self.pooled_or_new())
    }

    async fn pooled_or_new(&self) -> Result<Checkout, Failure> {
        let Some(shared) = &self.shared else {
            return self.open_new().await;
        };
        if self.multiplexed(shared) {
            // One user opens the connection; those arriving meanwhile wait for it, then
            // find it (or find that the server chose HTTP/1.1, and pool as below).
            let _opening = shared.opening.lock().await;
            if let Some(sender) = self.shared_two() {
                return Ok(Checkout {
                    sender,
                    opened: None,
                });
            }
            if self.multiplexed(shared) {
                let checkout = self.open_new().await?;
                match &checkout.sender {
                    Sender::Two(s) => {
                        if let Ok(mut two) = shared.two.lock() {
                            *two = Some(s.clone());
                        }
                    }
                    Sender::One(_) => shared.fell_back.store(true, Relaxed),
                }
                return Ok(checkout);
            }
        }
        loop {
            // Armed before the pool is looked at, so a connection returned in between
            // still wakes this user.
            let returned = shared.returned.notified();
            tokio::pin!(returned);
            returned.as_mut().enable();
            if let Some(s) = self.take_idle(shared) {
                return Ok(Checkout {
                    sender: s,
                    opened: None,
                });
            }
            tokio::select! {
                permit = self.permits.clone().acquire_owned() => {
                    let permit = permit.map_err(|_| Failure::new("Connection pool closed"))?;
                    return self.open(permit).await;
                }
                () = &mut returned => {}
            }
        }
    }

    /// Gives back a sender after a complete response: to the user (`own`) or, shared, to
    /// the pool.
    pub fn checkin(&self, own: &mut Option<Sender>, sender: Sender) {
        match (&self.shared, sender) {
            (Some(shared), s @ Sender::One(_)) => {
                if let Ok(mut idle) = shared.idle.lock() {
                    idle.push(s);
                }
                shared.returned.notify_one();
            }
            // The shared HTTP/2 connection stays where it is; this was a handle to it.
            (Some(_), Sender::Two(_)) => {}
            (None, s) => *own = Some(s),
        }
    }

    fn take_idle(&self, shared: &Shared) -> Option<Sender> {
        let mut idle = shared.idle.lock().ok()?;
        while let Some(s) = idle.pop() {
            if !s.is_closed() {
                return Some(s);
            }
        }
        None
    }

    /// One of `maxConnections`, once one is free.
    async fn permit(&self) -> Result<OwnedSemaphorePermit, Failure> {
        self.permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Failure::new("Connection pool closed"))
    }

    async fn open_new(&self) -> Result<Checkout, Failure> {
        let permit = self.permit().await?;
        self.open(permit).await
    }

    /// A TCP connection to the target, and how long it took to open.
    async fn tcp(&self) -> Result<(TcpStream, Duration), Failure> {
        let start = Instant::now();
        let tcp =
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(&self.address))
                .await
            {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    return Err(Failure {
                        message: classify_io(&e),
                        out_of_files: e.raw_os_error() == Some(nix::libc::EMFILE),
                    });
                }
                Err(_) => return Err(timeout("Connection", self.connect_timeout)),
            };
        let _ = tcp.set_nodelay(true);
        Ok((tcp, start.elapsed()))
    }

    /// `tcp` with TLS, by `connector`, within `connectTimeout`.
    async fn handshake(
        &self,
        connector: &tokio_rustls::TlsConnector,
        name: &ServerName<'static>,
        tcp: TcpStream,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, Failure> {
        match tokio::time::timeout(self.connect_timeout, connector.connect(name.clone(), tcp)).await
        {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(Failure::new(format!("TLS handshake failed: {e}"))),
            Err(_) => Err(timeout("TLS handshake", self.connect_timeout)),
        }
    }

    /// A byte stream to the target for a WebSocket or an event stream: TCP, or TLS offering
    /// HTTP/1.1 alone (an upgrade needs it), counted against a `maxConnections` of its own
    /// until it is closed (a user's idle HTTP connection keeps its permit). Its opening is
    /// recorded as a connection's.
    pub async fn stream(&self) -> Result<(Stream, Opened), Failure> {
        let permit = self
            .stream_permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Failure::new("Connection pool closed"))?;
        let (tcp, connect) = self.tcp().await?;
        let Some((_, name)) = &self.tls else {
            let opened = Opened {
                connect,
                handshake: None,
            };
            return Ok((
                Box::new(Permitted {
                    io: tcp,
                    _permit: permit,
                }),
                opened,
            ));
        };
        let started = Instant::now();
        let connector = self
            .stream_tls
            .as_ref()
            .ok_or_else(|| Failure::new("no TLS"))?;
        let tls = self.handshake(connector, name, tcp).await?;
        let opened = Opened {
            connect,
            handshake: Some(started.elapsed()),
        };
        Ok((
            Box::new(Permitted {
                io: tls,
                _permit: permit,
            }),
            opened,
        ))
    }

    /// Opens a connection that holds `permit` until its socket is closed.
    async fn open(&self, permit: OwnedSemaphorePermit) -> Result<Checkout, Failure> {
        let (tcp, connect) = self.tcp().await?;
        let connected = Instant::now();
        let Some((connector, name)) = &self.tls else {
            let sender = match self.version {
                HttpVersion::Http1 => self.http1(TokioIo::new(tcp), permit).await?,
                HttpVersion::Http2 => self.http2(TokioIo::new(tcp), permit).await?,
            };
            return Ok(Checkout {
                sender,
                opened: Some(Opened {
                    connect,
                    handshake: None,
                }),
            });
        };
        // The handshake gets a `connectTimeout` of its own.
        let tls = self.handshake(connector, name, tcp).await?;
        let handshake = connected.elapsed();
        let two = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        let sender = if two {
            self.http2(TokioIo::new(tls), permit).await?
        } else {
            self.http1(TokioIo::new(tls), permit).await?
        };
        Ok(Checkout {
            sender,
            opened: Some(Opened {
                connect,
                handshake: Some(handshake),
            }),
        })
    }

    fn http1_builder(&self) -> http1::Builder {
        let mut builder = http1::Builder::new();
        // A modest fixed read buffer (`http.readBuffer`): 10,000 users are 10,000
        // connections, and hyper's default adaptive buffer starts at 8 KiB and grows.
        builder.read_buf_exact_size(Some(self.read_buffer));
        builder
    }

    async fn http1<T>(
        &self,
        io: TokioIo<T>,
        permit: OwnedSemaphorePermit,
    ) -> Result<Sender, Failure>
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, connection) = self
            .http1_builder()
            .handshake(TokioIo::new(Permitted {
                io: io.into_inner(),
                _permit: permit,
            }))
            .await
            .map_err(|e| Failure::new(format!("Connection failed: {e}")))?;
        // The connection itself, not a block awaiting it: a block would hold it twice.
        tokio::spawn(connection);
        Ok(Sender::One(sender))
    }

    async fn http2<T>(
        &self,
        io: TokioIo<T>,
        permit: OwnedSemaphorePermit,
    ) -> Result<Sender, Failure>
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, connection) = http2::Builder::new(TokioExecutor::new())
            .handshake(TokioIo::new(Permitted {
                io: io.into_inner(),
                _permit: permit,
            }))
            .await
            .map_err(|e| Failure::new(format!("Connection failed: {e}")))?;
        tokio::spawn(connection);
        Ok(Sender::Two(sender))
    }
}

/// A byte stream to the target ([`Transport::stream`]).
pub type Stream = Box<dyn Io>;

/// What a [`Stream`] is: read, written, and moved between tasks.
pub trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}

impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

/// A connection's socket with its `maxConnections` permit: the permit is given back when the
/// socket is dropped (closed), whoever drops it.
struct Permitted<T> {
    io: T,
    _permit: OwnedSemaphorePermit,
}

impl<T: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Permitted<T> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Permitted<T> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

fn timeout(what: &str, after: Duration) -> Failure {
    Failure::new(format!("{what} timeout after {} ms", after.as_millis()))
}

/// A connect error in Gatling's words.
pub fn classify_io(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "Connection refused".into(),
        std::io::ErrorKind::ConnectionReset => "Connection reset by peer".into(),
        _ => format!("Connection failed: {e}"),
    }
}

/// The TLS client of `http.tls`, offering by ALPN the protocols `version` allows.
fn client_config(
    tls: &TlsSettings,
    version: HttpVersion,
    base_dir: &Path,
) -> Result<Arc<rustls::ClientConfig>, String> {
    let builder = rustls::ClientConfig::builder_with_provider(ferrowizard_tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let ca_file = tls.ca_file.as_ref().map(|f| base_dir.join(f));
    // `http.tls.insecure`: any certificate is accepted. A `caFile` may hold the server's own
    // self-signed certificate, trusted as itself (as curl's --cacert does).
    let trust = if tls.insecure {
        ferrowizard_tls::Trust::Any
    } else {
        if tls.ca_file.is_none() && !ferrowizard_tls::system_has_roots() {
            return Err(
                "no system CA certificates found: give http.tls.caFile (a PEM file of the CAs \
                 to trust), or http.tls.insecure: true for a test server"
                    .to_owned(),
            );
        }
        ferrowizard_tls::Trust::Checked {
            ca_file: ca_file.as_deref(),
            verify_hostname: true,
        }
    };
    let verifier = ferrowizard_tls::verifier(&trust).map_err(|e| format!("http.tls.caFile {e}"))?;
    let mut config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = match version {
        HttpVersion::Http1 => vec![b"http/1.1".to_vec()],
        HttpVersion::Http2 => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
    };
    Ok(Arc::new(config))
}
