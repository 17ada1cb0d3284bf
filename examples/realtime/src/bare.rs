//! The same handlers on plain axum: the baselines of the benchmarks and of the experiment.
//!
//! With no logging at all (`realtime-bare PORT`), or as a Rust team would write it by hand
//! (`--naive-logging`): tracing-subscriber's fmt layer at DEBUG to stdout and a request line
//! per request from a middleware.

use std::process::ExitCode;

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;

async fn log_request(req: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let (method, uri) = (req.method().clone(), req.uri().clone());
    let response = next.run(req).await;
    tracing::info!(target: "realtime::access", %method, %uri, status = response.status().as_u16(), elapsed_ms = started.elapsed().as_millis() as u64, "request");
    response
}

/// Serves the handlers on plain axum on 127.0.0.1:`port` until SIGTERM; `naive` adds
/// tracing-subscriber's fmt layer at DEBUG to stdout and a request line per request.
pub fn serve(port: u16, naive: bool) -> ExitCode {
    if naive {
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .init();
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("realtime-bare: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let feed = crate::Feed::new(
            &crate::default_symbols(),
            std::time::Duration::from_millis(100),
        );
        tokio::spawn(feed.clone().run());
        let mut app = crate::router(&feed);
        if naive {
            app = app.layer(middleware::from_fn(log_request));
        }
        let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("realtime-bare: cannot listen on 127.0.0.1:{port}: {e}");
                return ExitCode::FAILURE;
            }
        };
        // Handled before the address is printed: a SIGTERM sent as soon as it is read stops
        // the server gracefully, never by the default action.
        use tokio::signal::unix::{SignalKind, signal};
        let (mut term, mut int) = match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => (term, int),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("realtime-bare: cannot handle signals: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Ok(addr) = listener.local_addr() {
            println!("realtime-bare: application listening on http://{addr}");
        }
        let shutdown = async move {
            tokio::select! {
                _ = term.recv() => {},
                _ = int.recv() => {},
            }
        };
        match axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
        {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("realtime-bare: {e}");
                ExitCode::FAILURE
            }
        }
    })
}
