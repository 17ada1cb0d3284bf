//! An event stream read off a raw socket: the response head, then its chunked body, event by
//! event, until it ends. The server's own framing is under test, so no client library smooths
//! it over. Shared by ferrowizard's and realtime's stream tests (`#[path]`).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;

/// One server-sent event: its `id` and `data` fields (empty when absent).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: String,
    pub data: String,
}

/// What [`read`] saw.
#[derive(Debug)]
pub struct EventStream {
    /// The response's status.
    pub status: u16,
    /// The events, in order.
    pub events: Vec<Event>,
    /// Whether the body ended with its last chunk (a clean end) rather than a cut.
    pub clean: bool,
}

/// Reads the response on `stream` until it ends, saying on `seen` as each event arrives.
pub fn read(stream: TcpStream, seen: std::sync::mpsc::Sender<()>) -> EventStream {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line.split(' ').nth(1).unwrap().parse().unwrap();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
    }
    let mut out = EventStream {
        status,
        events: Vec::new(),
        clean: false,
    };
    let mut text = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return out;
        }
        let size = usize::from_str_radix(line.trim(), 16).unwrap();
        if size == 0 {
            line.clear();
            let _ = reader.read_line(&mut line);
            out.clean = line == "\r\n";
            return out;
        }
        let mut chunk = vec![0; size + 2];
        if reader.read_exact(&mut chunk).is_err() {
            return out;
        }
        text.push_str(&String::from_utf8_lossy(&chunk[..size]));
        while let Some(end) = text.find("\n\n") {
            let event: String = text.drain(..end + 2).collect();
            let field = |name: &str| {
                event
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .unwrap_or_default()
                    .to_owned()
            };
            // A keep-alive comment is no event.
            if event.lines().any(|l| l.starts_with("data:")) {
                out.events.push(Event {
                    id: field("id: "),
                    data: field("data: "),
                });
                let _ = seen.send(());
            }
        }
    }
}
