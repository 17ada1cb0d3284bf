//! `realtime-bare PORT [--naive-logging]`: see `realtime::bare`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(port) = args.get(1).and_then(|p| p.parse::<u16>().ok()) else {
        eprintln!("usage: realtime-bare PORT [--naive-logging]");
        return ExitCode::FAILURE;
    };
    realtime::bare::serve(port, args.iter().any(|a| a == "--naive-logging"))
}
