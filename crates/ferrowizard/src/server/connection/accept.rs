//! Stage 1, **accept**: a connector's listening socket, the connections it accepts (through
//! the TLS handshake on an https connector), and their count. Each accepted connection is
//! handed to [`crate::server::connection`], which serves it on a task of its own; near the limits of
//! connections and file descriptors, [`crate::server::connection::pressure`] decides what gives way.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::server::connection::activity::Activity;
use crate::server::connection::pressure::{
    self, AcceptErrors, Admission, Backoff, Connections, Limits, OpenConnection, Pressure,
};
use crate::server::connection::{Connection, ConnectionSettings, HttpService};

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

/// Accepts connections until `shutdown` turns true, each served by a [`Connection`] on a task of
/// its own; under pressure (`limits` near), closes idle connections or refuses new ones
/// ([`crate::server::connection::pressure`]).
pub(crate) async fn accept_loop(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    service: HttpService,
    settings: ConnectionSettings,
    mut shutdown: watch::Receiver<bool>,
    (connector, connections, limits): (Arc<str>, Connections, Limits),
) {
    let local = listener.local_addr().ok();
    let mut pressure = Pressure::new(connections.clone(), limits);
    let mut errors = AcceptErrors::new(connector);
    let mut backoff = Backoff::default();
    let watching = pressure.watches();
    let mut tick = tokio::time::interval(pressure::TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = tick.tick(), if watching => {
                #[cfg(unix)]
                pressure.tick(pressure::probe(std::os::fd::AsFd::as_fd(&listener)));
                continue;
            }
            _ = shutdown.changed() => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: make room, breathe, say so (once a
                // second at most), carry on.
                let closed = if pressure::lacks_resources(&e) {
                    pressure.accept_failed()
                } else {
                    0
                };
                errors.failed(&e, closed);
                tokio::select! {
                    () = tokio::time::sleep(backoff.next(closed)) => {}
                    _ = shutdown.changed() => break,
                }
                continue;
            }
        };
        backoff.reset();
        errors.succeeded();
        #[cfg(unix)]
        let fd = u64::try_from(std::os::fd::AsRawFd::as_raw_fd(&stream)).ok();
        #[cfg(not(unix))]
        let fd = None;
        if pressure.accepted(fd) == Admission::Refuse {
            tracing::debug!(target: "ferrowizard::server::connection", %peer, "refused at maxConnections");
            let open = connections.refusing();
            tokio::spawn(refuse(stream, tls.is_some(), open));
            continue;
        }
        tracing::debug!(target: "ferrowizard::server::connection", %peer, local = ?local, "connection accepted");
        let _ = stream.set_nodelay(true);
        let task = Connection::new(
            tls.is_some(),
            service.clone(),
            settings.clone(),
            shutdown.clone(),
            peer,
        );
        let activity = Arc::new(Activity::new(peer));
        let open = connections.opened(activity.clone());
        let tls = tls.clone();
        tokio::spawn(async move {
            // Counted from accept to close, the TLS handshake included.
            let _open = open;
            match tls {
                None => task.serve(stream, activity).await,
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(task.header_read_timeout(), acceptor.accept(stream))
                            .await;
                    match handshake {
                        Ok(Ok(tls)) => task.serve(tls, activity).await,
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

/// The answer to a plain-HTTP connection past `maxConnections`.
const REFUSED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 20\r\nconnection: close\r\n\r\nToo many connections";

/// Answers a connection past `maxConnections` and closes it: on plain HTTP a 503 (before any
/// request is read: the client needs no more), then the rest of what it sent read and dropped
/// for up to a second, so that closing with unread bytes does not reset the connection before
/// the client read the 503; over TLS, closed at once (a handshake would cost what the limit
/// saves).
async fn refuse(mut stream: tokio::net::TcpStream, tls: bool, _open: OpenConnection) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    if tls {
        return;
    }
    let answered = async {
        stream.write_all(REFUSED).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        io::Result::Ok(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), answered).await;
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

/// The listening socket on real sockets: what `acceptQueueSize` and `reuseAddress` set.
#[cfg(test)]
mod bind_tests {
    use std::io::Read;
    use std::net::TcpStream;

    use super::*;
    use crate::config::server::{ConnectorCommon, ConnectorFactory, HttpConnectorFactory};

    /// The listen backlog and `SO_REUSEADDR` that `server::settings`, which every connector's
    /// keys go through (application, admin and the simple server's), gives `connector`.
    fn socket_options(connector: HttpConnectorFactory) -> (u32, bool) {
        let (_, backlog, reuse) = crate::server::settings(&ConnectorFactory::Http(connector));
        (backlog, reuse)
    }

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
    /// Catches: the key not read by `server::settings`, or the backlog not passed to `listen`
    /// (the default 1024 would take all 12).
    #[tokio::test]
    async fn accept_queue_size_is_the_listen_backlog() {
        for queue in [2u32, 5] {
            let (backlog, reuse) = socket_options(HttpConnectorFactory {
                common: ConnectorCommon {
                    accept_queue_size: queue,
                    ..Default::default()
                },
            });
            let listener = bind("127.0.0.1:0".parse().unwrap(), backlog, reuse).unwrap();
            let addr = listener.local_addr().unwrap();
            let done = tokio::task::spawn_blocking(move || handshakes(addr, 12))
                .await
                .unwrap();
            assert_eq!(done, queue as usize + 1, "acceptQueueSize {queue}");
            drop(listener);
        }
    }

    /// `reuseAddress`: a port whose connection the server closed first is in TIME_WAIT; binding
    /// it again needs `SO_REUSEADDR`.
    ///
    /// Catches: the key not read by `server::settings`, the option not set (the restart
    /// fails), or set regardless (the refusal passes).
    #[tokio::test]
    async fn reuse_address_lets_a_restart_bind_a_port_in_time_wait() {
        for reuse_address in [true, false] {
            let (backlog, reuse) = socket_options(HttpConnectorFactory {
                common: ConnectorCommon {
                    reuse_address,
                    ..Default::default()
                },
            });
            let listener = bind("127.0.0.1:0".parse().unwrap(), backlog, reuse).unwrap();
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
            let again = bind(addr, backlog, reuse);
            assert_eq!(
                again.is_ok(),
                reuse_address,
                "reuseAddress {reuse_address}: {again:?}"
            );
        }
    }
}
