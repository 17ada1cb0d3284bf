//! A plain HTTP/1.1 server over std's `TcpListener`, for what no well-behaved server does (a
//! response cut short, an answer held until the test lets it go) and for a record of every
//! request as it came on the wire: its line, its headers in the order sent, its body, when it
//! came and on which connection. A thread per connection; the test's route says what each
//! request gets.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// `200 ok`, with its length.
pub const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// One request as the server read it.
#[derive(Clone, Debug)]
pub struct Got {
    /// The connection it came on, numbered from 0 in the order accepted.
    pub conn: usize,
    /// The request line, without its line end.
    pub line: String,
    pub method: String,
    pub path: String,
    /// Names in lower case, in the order sent.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// When its request line was read.
    pub at: Instant,
}

impl Got {
    /// The values of header `name` (lower case).
    pub fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// Whether it says `Connection: close`.
    pub fn closes(&self) -> bool {
        self.header("connection")
            .iter()
            .any(|v| v.eq_ignore_ascii_case("close"))
    }
}

/// What a route answers.
pub enum Answer {
    /// These bytes, on a connection kept open unless the request says `Connection: close`.
    Keep(&'static [u8]),
    /// These bytes, then the connection closed.
    Close(&'static [u8]),
}

/// What the server saw.
#[derive(Default)]
pub struct Seen {
    /// The connections accepted.
    pub connections: AtomicUsize,
    /// The most requests in their route at once.
    pub peak: AtomicUsize,
    /// Set by the test, for a route that waits for it.
    pub released: AtomicBool,
    /// The requests in their route now.
    busy: AtomicUsize,
    requests: Mutex<Vec<Got>>,
}

impl Seen {
    /// Every request read, in the order read.
    pub fn requests(&self) -> Vec<Got> {
        self.requests.lock().unwrap().clone()
    }

    /// The number of requests that said `Connection: close`.
    pub fn closing(&self) -> usize {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|g| g.closes())
            .count()
    }
}

/// Serves HTTP/1.1 on a free port of 127.0.0.1, a thread per connection: each request is
/// recorded in [`Seen`], then `route` (which may take its time) says what to answer.
pub fn serve(route: fn(&Got, &Seen) -> Answer) -> (SocketAddr, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let shared = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let conn = shared.connections.fetch_add(1, SeqCst);
            let seen = shared.clone();
            std::thread::spawn(move || connection(conn, stream, route, &seen));
        }
    });
    (addr, seen)
}

fn connection(conn: usize, stream: TcpStream, route: fn(&Got, &Seen) -> Answer, seen: &Seen) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    while let Some(got) = read(conn, &mut reader) {
        seen.requests.lock().unwrap().push(got.clone());
        let now = seen.busy.fetch_add(1, SeqCst) + 1;
        seen.peak.fetch_max(now, SeqCst);
        let answer = route(&got, seen);
        seen.busy.fetch_sub(1, SeqCst);
        let (bytes, keep) = match answer {
            Answer::Keep(bytes) => (bytes, !got.closes()),
            Answer::Close(bytes) => (bytes, false),
        };
        if writer.write_all(bytes).is_err() || !keep {
            return;
        }
    }
}

/// The next request on connection `conn`; `None` once the peer has closed it, or cut a body
/// short.
fn read(conn: usize, reader: &mut BufReader<TcpStream>) -> Option<Got> {
    let mut first = String::new();
    if reader.read_line(&mut first).unwrap_or(0) == 0 {
        return None;
    }
    let at = Instant::now();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((k, v)) = line.trim_end().split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let mut parts = first.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    Some(Got {
        conn,
        line: first.trim_end().to_owned(),
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        at,
    })
}
