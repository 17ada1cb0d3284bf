//! `/threads`: the process's threads (from `/proc`) and the application runtime's state.
//!
//! DropWizard prints a JVM thread dump. A Rust service's equivalent has two halves: the OS
//! threads (name, state, CPU time: which one is spinning or stuck in I/O) and the async
//! runtime's view (workers, live tasks, queued tasks: whether the runtime keeps up).

use std::fmt::Write as _;

use tokio::runtime::Handle;

/// One OS thread, as `/proc/self/task/<tid>/stat` describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadInfo {
    /// The kernel's thread id.
    pub tid: u32,
    /// The thread's name (15 characters at most: the kernel's limit).
    pub name: String,
    /// `R` running, `S` sleeping, `D` in uninterruptible I/O, ...
    pub state: char,
    /// CPU time in user mode, seconds.
    pub user_seconds: f64,
    /// CPU time in the kernel, seconds.
    pub system_seconds: f64,
}

/// The kernel's clock ticks a second for `/proc` times (`sysconf(_SC_CLK_TCK)`: 100 on
/// every Linux this runs on; reading it would need `libc` and `unsafe` for one constant).
const CLOCK_TICKS: f64 = 100.0;

/// Parses one `stat` line: `tid (name) state ppid ... utime stime ...`. The name may hold
/// spaces and parentheses, so it ends at the *last* `)`.
pub fn parse_stat(line: &str) -> Option<ThreadInfo> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let tid = line[..open].trim().parse().ok()?;
    let name = line.get(open + 1..close)?.to_owned();
    let mut rest = line.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    // After the state: ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
    // utime stime (fields 4 to 15 of proc(5)).
    let mut after = rest.skip(10);
    let utime: f64 = after.next()?.parse().ok()?;
    let stime: f64 = after.next()?.parse().ok()?;
    Some(ThreadInfo {
        tid,
        name,
        state,
        user_seconds: utime / CLOCK_TICKS,
        system_seconds: stime / CLOCK_TICKS,
    })
}

/// The process's threads, by thread id.
pub fn threads() -> Vec<ThreadInfo> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut all: Vec<ThreadInfo> = dir
        .filter_map(Result::ok)
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|line| parse_stat(&line))
        .collect();
    all.sort_by_key(|t| t.tid);
    all
}

fn state_name(state: char) -> &'static str {
    match state {
        'R' => "RUNNABLE",
        'S' => "SLEEPING",
        'D' => "WAITING ON I/O",
        'T' | 't' => "STOPPED",
        'Z' => "ZOMBIE",
        'I' => "IDLE",
        _ => "OTHER",
    }
}

/// The `/threads` page: the runtime's state, then one line per thread.
pub(crate) fn render(runtime: &Handle) -> String {
    let metrics = runtime.metrics();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "application runtime: {} workers, {} alive tasks, {} tasks in the global queue",
        metrics.num_workers(),
        metrics.num_alive_tasks(),
        metrics.global_queue_depth(),
    );
    out.push('\n');
    for t in threads() {
        let _ = writeln!(
            out,
            "\"{}\" tid={} {} user={:.2}s system={:.2}s",
            t.name,
            t.tid,
            state_name(t.state),
            t.user_seconds,
            t.system_seconds
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_name_with_spaces_and_parentheses() {
        let line = "4242 (log writer (1)) S 1 4242 4242 0 -1 4194368 120 0 0 0 250 37 0 0 20 0 9 0 1234 0 0";
        let t = parse_stat(line).expect("parses");
        assert_eq!(t.tid, 4242);
        assert_eq!(t.name, "log writer (1)");
        assert_eq!(t.state, 'S');
        assert_eq!(t.user_seconds, 2.5);
        assert_eq!(t.system_seconds, 0.37);
    }

    #[test]
    fn this_thread_is_listed() {
        let all = threads();
        assert!(!all.is_empty());
        assert!(all.iter().any(|t| t.state == 'R'), "{all:?}");
    }
}
