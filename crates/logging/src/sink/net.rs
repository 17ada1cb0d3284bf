//! Lines over the network: TCP, UDP and syslog (RFC 5424 over UDP, TCP or a unix socket).
//!
//! A peer that is down never stalls the application: the writer thread reconnects at most
//! once a second, and batches written meanwhile fail (they are counted as dropped).

use std::io::Write;
use std::net::{TcpStream, ToSocketAddrs, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::lines;
use crate::config::{Facility, SyslogProtocol};

const RECONNECT_INTERVAL: Duration = Duration::from_secs(1);

/// How lines are framed on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// As they are, newline-terminated.
    Lines,
    /// RFC 5424 with RFC 6587 octet counting (`LEN SP MSG`), for syslog over TCP.
    OctetCounted,
}

/// A TCP connection, over TLS or not, reconnected as needed.
pub struct TcpSink {
    addr: String,
    host: String,
    timeout: Duration,
    framing: Framing,
    /// The socket's send buffer (`sendBufferSize`), bytes.
    send_buffer: Option<usize>,
    /// Set: every connection is a TLS client of `host`.
    tls: Option<Arc<rustls::ClientConfig>>,
    stream: Option<Stream>,
    last_attempt: Option<Instant>,
    frame: Vec<u8>,
}

/// A connection: plain, or TLS over it.
enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

impl TcpSink {
    /// A sink for `host:port`; connects lazily.
    pub fn new(host: &str, port: u16, timeout: Duration, framing: Framing) -> TcpSink {
        TcpSink {
            addr: format!("{host}:{port}"),
            host: host.to_owned(),
            timeout,
            framing,
            send_buffer: None,
            tls: None,
            stream: None,
            last_attempt: None,
            frame: Vec::new(),
        }
    }

    /// Sets the socket's send buffer (`SO_SNDBUF`) of every connection.
    #[must_use]
    pub fn send_buffer(mut self, bytes: usize) -> TcpSink {
        self.send_buffer = Some(bytes);
        self
    }

    /// Makes every connection a TLS client of the host, with `config`.
    #[must_use]
    pub fn tls(mut self, config: Arc<rustls::ClientConfig>) -> TcpSink {
        self.tls = Some(config);
        self
    }

    fn connect(&mut self) -> std::io::Result<&mut Stream> {
        if self.stream.is_none() {
            if self
                .last_attempt
                .is_some_and(|t| t.elapsed() < RECONNECT_INTERVAL)
            {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "waiting to reconnect",
                ));
            }
            self.last_attempt = Some(Instant::now());
            let addr =
                self.addr.to_socket_addrs()?.next().ok_or_else(|| {
                    std::io::Error::new(std::io::ErrorKind::NotFound, "no address")
                })?;
            let stream = TcpStream::connect_timeout(&addr, self.timeout)?;
            stream.set_write_timeout(Some(self.timeout.max(Duration::from_secs(1))))?;
            stream.set_read_timeout(Some(self.timeout.max(Duration::from_secs(1))))?;
            stream.set_nodelay(true)?;
            if let Some(bytes) = self.send_buffer {
                socket2::SockRef::from(&stream).set_send_buffer_size(bytes)?;
            }
            self.stream = Some(match &self.tls {
                None => Stream::Plain(stream),
                Some(config) => {
                    let name = rustls::pki_types::ServerName::try_from(self.host.clone())
                        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
                    let connection = rustls::ClientConnection::new(config.clone(), name)
                        .map_err(std::io::Error::other)?;
                    let mut tls = rustls::StreamOwned::new(connection, stream);
                    // The handshake now, so that a certificate that fails is this write's
                    // error (and counted), not a later one's.
                    while tls.conn.is_handshaking() {
                        tls.conn.complete_io(&mut tls.sock)?;
                    }
                    Stream::Tls(Box::new(tls))
                }
            });
        }
        self.stream
            .as_mut()
            .ok_or_else(|| std::io::Error::other("not connected"))
    }
}

impl super::Sink for TcpSink {
    fn write(&mut self, batch: &[u8], line_ends: &[usize]) -> std::io::Result<()> {
        let mut frame = std::mem::take(&mut self.frame);
        frame.clear();
        let data: &[u8] = match self.framing {
            Framing::Lines => batch,
            Framing::OctetCounted => {
                for line in lines(batch, line_ends) {
                    let line = line.strip_suffix(b"\n").unwrap_or(line);
                    let _ = write!(frame, "{} ", line.len());
                    frame.extend_from_slice(line);
                }
                &frame
            }
        };
        // A TLS stream keeps what it encrypted until flushed; a plain one flushes at no cost.
        let result = self
            .connect()
            .and_then(|s| s.write_all(data).and_then(|()| s.flush()));
        if result.is_err() {
            self.stream = None;
        }
        self.frame = frame;
        result
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.stream {
            Some(s) => s.flush(),
            None => Ok(()),
        }
    }

    fn describe(&self) -> String {
        match self.tls {
            None => format!("tcp {}", self.addr),
            Some(_) => format!("tls {}", self.addr),
        }
    }
}

/// One datagram per line, over UDP or a unix datagram socket.
pub enum DatagramSink {
    /// UDP to an address.
    Udp {
        /// The destination.
        addr: String,
        /// The socket, bound on first use.
        socket: Option<UdpSocket>,
    },
    /// A unix datagram socket such as `/dev/log`.
    Unix {
        /// The socket path.
        path: String,
        /// The socket, connected on first use.
        socket: Option<UnixDatagram>,
    },
}

impl DatagramSink {
    /// UDP to `host:port`.
    pub fn udp(host: &str, port: u16) -> Self {
        DatagramSink::Udp {
            addr: format!("{host}:{port}"),
            socket: None,
        }
    }

    /// The unix datagram socket at `path`.
    pub fn unix(path: &str) -> Self {
        DatagramSink::Unix {
            path: path.to_owned(),
            socket: None,
        }
    }

    fn send(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            DatagramSink::Udp { addr, socket } => {
                if socket.is_none() {
                    let s = UdpSocket::bind(("0.0.0.0", 0))?;
                    s.connect(addr.as_str())?;
                    *socket = Some(s);
                }
                let sent = socket.as_ref().map(|s| s.send(line));
                if let Some(Err(_)) = sent {
                    *socket = None;
                }
                sent.unwrap_or(Ok(0)).map(|_| ())
            }
            DatagramSink::Unix { path, socket } => {
                if socket.is_none() {
                    let s = UnixDatagram::unbound()?;
                    s.connect(path.as_str())?;
                    *socket = Some(s);
                }
                let sent = socket.as_ref().map(|s| s.send(line));
                if let Some(Err(_)) = sent {
                    *socket = None;
                }
                sent.unwrap_or(Ok(0)).map(|_| ())
            }
        }
    }
}

impl super::Sink for DatagramSink {
    fn write(&mut self, batch: &[u8], line_ends: &[usize]) -> std::io::Result<()> {
        let mut first_error = None;
        for line in lines(batch, line_ends) {
            let line = line.strip_suffix(b"\n").unwrap_or(line);
            if let Err(e) = self.send(line) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }

    fn describe(&self) -> String {
        match self {
            DatagramSink::Udp { addr, .. } => format!("udp {addr}"),
            DatagramSink::Unix { path, .. } => format!("unix {path}"),
        }
    }
}

/// The RFC 5424 header written before each syslog message.
#[derive(Clone, Debug)]
pub struct SyslogHeader {
    facility: u8,
    hostname: String,
    app_name: String,
    proc_id: String,
}

impl SyslogHeader {
    /// The header for this process.
    pub fn new(facility: Facility, app_name: &str) -> Self {
        let hostname = gethostname::gethostname().to_string_lossy().into_owned();
        SyslogHeader {
            facility: facility_code(facility),
            hostname: header_field(&hostname, 255),
            app_name: header_field(app_name, 48),
            proc_id: std::process::id().to_string(),
        }
    }

    /// Appends `<PRI>1 TIMESTAMP HOST APP PROCID - - ` for a record.
    pub fn write(&self, record: &crate::record::Record, out: &mut Vec<u8>) {
        let severity = match record.level() {
            tracing::Level::ERROR => 3,
            tracing::Level::WARN => 4,
            tracing::Level::INFO => 6,
            _ => 7,
        };
        let pri = self.facility as u32 * 8 + severity;
        let ts = jiff::Timestamp::from_nanosecond(record.unix_nanos())
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let _ = write!(
            out,
            "<{pri}>1 {} {} {} {} - - ",
            ts.strftime("%Y-%m-%dT%H:%M:%S%.6fZ"),
            self.hostname,
            self.app_name,
            self.proc_id
        );
    }
}

/// A header field as RFC 5424 allows it: printable US-ASCII (`!` to `~`) only, at most `max`
/// characters, `-` when empty; anything else (a space, a control or non-ASCII character)
/// becomes `_`, so that a name never shifts the fields after it.
fn header_field(value: &str, max: usize) -> String {
    let field: String = value
        .chars()
        .take(max)
        .map(|c| if ('!'..='~').contains(&c) { c } else { '_' })
        .collect();
    if field.is_empty() { "-".into() } else { field }
}

/// Syslog's numeric facility.
pub fn facility_code(f: Facility) -> u8 {
    use Facility::*;
    match f {
        Kern => 0,
        User => 1,
        Mail => 2,
        Daemon => 3,
        Auth => 4,
        Syslog => 5,
        Lpr => 6,
        News => 7,
        Uucp => 8,
        Cron => 9,
        Authpriv => 10,
        Ftp => 11,
        Local0 => 16,
        Local1 => 17,
        Local2 => 18,
        Local3 => 19,
        Local4 => 20,
        Local5 => 21,
        Local6 => 22,
        Local7 => 23,
    }
}

/// The sink for a syslog appender's protocol.
pub fn syslog_sink(
    protocol: SyslogProtocol,
    host: &str,
    port: u16,
    socket_path: &str,
) -> Box<dyn super::Sink> {
    match protocol {
        SyslogProtocol::Udp => Box::new(DatagramSink::udp(host, port)),
        SyslogProtocol::Tcp => Box::new(TcpSink::new(
            host,
            port,
            Duration::from_millis(500),
            Framing::OctetCounted,
        )),
        SyslogProtocol::Unix => Box::new(DatagramSink::unix(socket_path)),
    }
}

#[cfg(test)]
mod tests {
    use super::header_field;

    /// Catches: a space or a non-ASCII character left in APP-NAME (a syslog server then reads
    /// the next word as PROCID), a name longer than the grammar's 48, an empty one not `-`.
    #[test]
    fn header_fields_keep_to_rfc_5424s_characters_and_lengths() {
        assert_eq!(header_field("quotes", 48), "quotes");
        assert_eq!(header_field("my quotes\tsvc", 48), "my_quotes_svc");
        assert_eq!(header_field("café", 48), "caf_");
        assert_eq!(header_field("", 48), "-");
        assert_eq!(header_field(&"a".repeat(60), 48), "a".repeat(48));
    }
}
