//! Opening connections for hyper's pool: TCP within `connectionTimeout` and, for `https`, the
//! TLS handshake within the same time; each connection is counted while it is open, and marked
//! expired once it has lived `timeToLive`.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::stats::Stats;

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    /// The URI has no host, or a scheme other than `http` and `https`.
    #[error("cannot connect to {0}: an http:// or https:// URL with a host is needed")]
    Destination(String),
    /// TCP and TLS did not finish within `connectionTimeout`.
    #[error("no connection to {host} within connectionTimeout ({timeout:?})")]
    Timeout {
        /// `host:port`.
        host: String,
        /// `connectionTimeout`.
        timeout: Duration,
    },
    /// TCP failed: refused, unreachable, or the name did not resolve.
    #[error("cannot connect to {host}: {source}")]
    Tcp {
        /// `host:port`.
        host: String,
        /// What the system said.
        source: io::Error,
    },
    /// The TLS handshake failed: most often a certificate not trusted.
    #[error("TLS handshake with {host} failed: {source}")]
    Tls {
        /// `host:port`.
        host: String,
        /// What rustls said.
        source: io::Error,
    },
}

/// A connection's age, shared by the connection, its timer and the responses it carries
/// (hyper's pool copies a connection's extras into each response's extensions).
#[derive(Debug, Default)]
pub(crate) struct Age {
    /// It has lived `timeToLive`.
    expired: AtomicBool,
    /// It was retired (not to be used again) or closed since it expired.
    settled: AtomicBool,
}

impl Age {
    /// Whether the connection has lived `timeToLive`.
    pub(crate) fn expired(&self) -> bool {
        self.expired.load(Ordering::Relaxed)
    }

    /// Settles an expired connection once: true the first time it is called after expiry
    /// (`stats.expired_open` is then one less).
    pub(crate) fn settle(&self, stats: &Stats) -> bool {
        let first = self.expired() && !self.settled.swap(true, Ordering::Relaxed);
        if first {
            stats.expired_open.fetch_sub(1, Ordering::Relaxed);
        }
        first
    }
}

/// The extra each connection carries into its responses.
#[derive(Clone, Debug)]
pub(crate) struct Born(pub(crate) Arc<Age>);

/// hyper's connector: opens the connections the pool asks for.
#[derive(Clone)]
pub(crate) struct Connector {
    pub(crate) tls: TlsConnector,
    pub(crate) timeout: Duration,
    pub(crate) time_to_live: Duration,
    pub(crate) stats: Arc<Stats>,
}

impl tower::Service<Uri> for Connector {
    type Response = Stream;
    type Error = ConnectError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, ConnectError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ConnectError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connector = self.clone();
        Box::pin(async move { connector.open(uri).await })
    }
}

impl Connector {
    async fn open(self, uri: Uri) -> Result<Stream, ConnectError> {
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(ConnectError::Destination(uri.to_string())),
        };
        let Some(host) = uri.host() else {
            return Err(ConnectError::Destination(uri.to_string()));
        };
        // `[::1]` in a URI is `::1` to the resolver and to TLS.
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let named = format!("{host}:{port}");
        let timeout = self.timeout;
        let opening = async {
            let tcp = TcpStream::connect((host.as_str(), port))
                .await
                .map_err(|source| ConnectError::Tcp {
                    host: named.clone(),
                    source,
                })?;
            // Requests are written whole: no reason to wait for more bytes before sending.
            let _ = tcp.set_nodelay(true);
            if !https {
                return Ok(Io::Plain(tcp));
            }
            let name = ServerName::try_from(host.clone())
                .map_err(|_| ConnectError::Destination(uri.to_string()))?;
            let tls = self
                .tls
                .connect(name, tcp)
                .await
                .map_err(|source| ConnectError::Tls {
                    host: named.clone(),
                    source,
                })?;
            Ok(Io::Tls(Box::new(tls)))
        };
        let io = match tokio::time::timeout(timeout, opening).await {
            Ok(io) => io?,
            Err(_) => {
                return Err(ConnectError::Timeout {
                    host: named,
                    timeout,
                });
            }
        };
        self.stats.opened.fetch_add(1, Ordering::Relaxed);
        self.stats.open.fetch_add(1, Ordering::Relaxed);
        let age = Arc::new(Age::default());
        // Marks the connection expired once it has lived timeToLive: calls then look for it
        // (see the client), and a response it carries is its last.
        let timer = {
            let (age, stats, ttl) = (age.clone(), self.stats.clone(), self.time_to_live);
            tokio::spawn(async move {
                tokio::time::sleep(ttl).await;
                stats.expired_open.fetch_add(1, Ordering::Relaxed);
                age.expired.store(true, Ordering::Relaxed);
            })
            .abort_handle()
        };
        Ok(Stream {
            io: TokioIo::new(io),
            age,
            timer,
            stats: self.stats,
        })
    }
}

/// A TCP connection, encrypted or not.
enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// An open connection as hyper uses it; counted until hyper drops it.
pub(crate) struct Stream {
    io: TokioIo<Io>,
    age: Arc<Age>,
    timer: tokio::task::AbortHandle,
    stats: Arc<Stats>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.timer.abort();
        self.age.settle(&self.stats);
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        Connected::new().extra(Born(self.age.clone()))
    }
}

impl hyper::rt::Read for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
