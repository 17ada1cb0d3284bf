//! A hand-written WebSocket load, the baseline of `bench/ws.sh`: CONNECTIONS sockets, each
//! sending TEXT and awaiting the answer in a loop for SECONDS, on tokio-tungstenite alone,
//! with the read buffer volley uses.
//! Prints the answers received a second.
//!
//!     ws_echo URL CONNECTIONS SECONDS TEXT

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

type Error = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, connections, seconds, text] = args.as_slice() else {
        return Err("usage: ws_echo URL CONNECTIONS SECONDS TEXT".into());
    };
    let connections: usize = connections.parse()?;
    let length = Duration::from_secs_f64(seconds.parse()?);
    let host = url
        .trim_start_matches("ws://")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    let answers = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let end = started + length;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let (url, host, text, answers) = (url.clone(), host.clone(), text.clone(), answers.clone());
        tasks.spawn(async move {
            let tcp = tokio::net::TcpStream::connect(&host).await?;
            tcp.set_nodelay(true)?;
            // The read buffer volley's sockets use (`http.readBuffer`'s default): tungstenite
            // zeroes the whole buffer before each read, and its 128 KiB default costs more
            // than the message.
            let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
                .read_buffer_size(2048);
            let (mut socket, _) =
                tokio_tungstenite::client_async_with_config(url.as_str(), tcp, Some(config))
                    .await?;
            while Instant::now() < end {
                socket.send(Message::text(text.as_str())).await?;
                loop {
                    match socket.next().await {
                        Some(Ok(Message::Text(_) | Message::Binary(_))) => break,
                        Some(Ok(_)) => continue,
                        Some(Err(e)) => return Err(Error::from(e)),
                        None => return Err("closed".into()),
                    }
                }
                answers.fetch_add(1, Relaxed);
            }
            socket.close(None).await?;
            Ok::<_, Error>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!("{:.1}", answers.load(Relaxed) as f64 / elapsed);
    Ok(())
}
