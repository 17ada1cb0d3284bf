//! `realtime-bare [--naive-logging] PORT`: see `realtime::bare`.

use std::process::ExitCode;

use clap::Parser;

/// The realtime handlers on plain axum, without ferrowizard: the baseline of the benchmarks
/// (no logging at all) and the experiment's `naive-rust` config (`--naive-logging`).
#[derive(Parser)]
#[command(name = "realtime-bare")]
struct Args {
    /// The port to listen on, on 127.0.0.1 (0 picks a free one; the address is printed).
    port: u16,
    /// Log as a Rust team would by hand: tracing-subscriber's fmt layer at DEBUG to stdout,
    /// and a line per request.
    #[arg(long)]
    naive_logging: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    realtime::bare::serve(args.port, args.naive_logging)
}
