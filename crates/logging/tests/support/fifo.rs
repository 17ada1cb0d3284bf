//! A FIFO for tests of an appender under real pressure: nobody reads it at first, so the
//! appender's writer blocks once the pipe is full and its queue fills; then a thread reads it
//! out. Shared by `ferrowizard-logging`'s tests and `ferrowizard`'s (`#[path]`-included).

use std::io::{BufRead, BufReader};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// A FIFO at `path`, and its read end, opened without blocking and not yet read: the
/// appender's writer can open it (its open for writing does not wait), and blocks once the
/// pipe is full.
pub fn fifo(path: &Path) -> std::fs::File {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
        .unwrap()
}

/// Reads the FIFO from now on (blocking reads), on a thread of its own: its lines once the
/// writer has closed it.
pub fn drain(read_end: std::fs::File) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        nix::fcntl::fcntl(
            &read_end,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()),
        )
        .unwrap();
        BufReader::new(read_end)
            .lines()
            .map_while(Result::ok)
            .collect()
    })
}
