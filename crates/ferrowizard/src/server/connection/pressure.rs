//! The accept stage under pressure: a connector's live connections (oldest first), the idle
//! ones closed when connections or file descriptors near their limit (as Jetty's
//! low-resources monitor shortens idle timeouts), `maxConnections`, and accept errors backed
//! off and reported once a second at most.
//!
//! Two levels, each closing idle connections down to 80% of the limit it nears:
//! - *soft*, from 90% of `maxConnections` or of the open-file limit: connections idle for at
//!   least [`SOFT_IDLE_MS`], the longest idle first;
//! - *hard*, at `maxConnections` or when accept fails for lack of resources: any idle
//!   connection, the longest idle first, then the oldest.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::server::connection::activity::Activity;

/// Under soft pressure, only connections idle for this long are closed (Jetty's
/// `lowResourcesIdleTimeout` default).
pub(crate) const SOFT_IDLE_MS: u64 = 1000;

/// A connector's connections: counted (shutdown waits for them, a gauge shows them) and, once
/// being served, listed in the order they were accepted.
#[derive(Clone, Debug, Default)]
pub struct Connections(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    open: AtomicUsize,
    /// Asked to close and not closed yet: no longer counted against `maxConnections`.
    leaving: AtomicUsize,
    /// Refused at `maxConnections` and being answered: open, but not counted against it.
    refusing: AtomicUsize,
    next: AtomicU64,
    live: Mutex<BTreeMap<u64, Arc<Activity>>>,
    accept_errors: AtomicU64,
    refused: AtomicU64,
    closed_idle: AtomicU64,
}

impl Connections {
    /// Connections still open.
    pub fn open(&self) -> usize {
        self.0.open.load(Relaxed)
    }

    /// Accepts that failed (out of file descriptors, buffers, memory...).
    pub fn accept_errors(&self) -> u64 {
        self.0.accept_errors.load(Relaxed)
    }

    /// Connections refused at `maxConnections`.
    pub fn refused(&self) -> u64 {
        self.0.refused.load(Relaxed)
    }

    /// Idle connections closed under pressure.
    pub fn closed_idle(&self) -> u64 {
        self.0.closed_idle.load(Relaxed)
    }

    /// Open connections not already asked to close, nor refused.
    fn staying(&self) -> usize {
        self.open()
            .saturating_sub(self.0.leaving.load(Relaxed))
            .saturating_sub(self.0.refusing.load(Relaxed))
    }

    /// Counts one more connection until the returned guard drops, listed among those that
    /// may be closed when idle.
    pub(crate) fn opened(&self, activity: Arc<Activity>) -> OpenConnection {
        self.0.open.fetch_add(1, Relaxed);
        let id = self.0.next.fetch_add(1, Relaxed);
        lock(&self.0.live).insert(id, activity.clone());
        OpenConnection {
            connections: self.clone(),
            listed: Some((id, activity)),
            refused: false,
        }
    }

    /// Counts a connection refused at `maxConnections` until the returned guard drops: open
    /// (shutdown waits for its answer) but not served, so not counted against the limit.
    pub(crate) fn refusing(&self) -> OpenConnection {
        self.0.open.fetch_add(1, Relaxed);
        self.0.refusing.fetch_add(1, Relaxed);
        OpenConnection {
            connections: self.clone(),
            listed: None,
            refused: true,
        }
    }

    /// Asks up to `n` idle connections to close, the longest idle first (then the oldest);
    /// `hard`: any idle one, else only those idle for [`SOFT_IDLE_MS`]. Returns how many were
    /// asked.
    fn close_idle(&self, n: usize, hard: bool) -> usize {
        if n == 0 {
            return 0;
        }
        let min_idle = if hard { 0 } else { SOFT_IDLE_MS };
        let live = lock(&self.0.live);
        let mut idle: Vec<(u64, u64, &Arc<Activity>)> = live
            .iter()
            .filter(|(_, a)| !a.nudged.load(Relaxed))
            .filter_map(|(id, a)| {
                a.idle_for()
                    .filter(|ms| *ms >= min_idle)
                    .map(|ms| (ms, *id, a))
            })
            .collect();
        idle.sort_unstable_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        let mut asked = 0;
        for (_, _, a) in idle.into_iter().take(n) {
            if !a.nudged.swap(true, Relaxed) {
                self.0.leaving.fetch_add(1, Relaxed);
                a.nudge.notify_one();
                asked += 1;
            }
        }
        self.0.closed_idle.fetch_add(asked as u64, Relaxed);
        asked
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One live connection, counted from accept to close (the TLS handshake included).
pub(crate) struct OpenConnection {
    connections: Connections,
    listed: Option<(u64, Arc<Activity>)>,
    refused: bool,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        let shared = &self.connections.0;
        if let Some((id, activity)) = self.listed.take() {
            lock(&shared.live).remove(&id);
            if activity.nudged.load(Relaxed) {
                shared.leaving.fetch_sub(1, Relaxed);
            }
        }
        if self.refused {
            shared.refusing.fetch_sub(1, Relaxed);
        }
        shared.open.fetch_sub(1, Relaxed);
    }
}

/// What a connector watches: its `maxConnections`, the process's open-file limit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub max_connections: Option<usize>,
    pub open_files: Option<u64>,
}

impl Limits {
    /// `max_connections`, and the open-file limit as the process has it now.
    pub(crate) fn new(max_connections: Option<usize>) -> Limits {
        Limits {
            max_connections,
            open_files: open_file_limit(),
        }
    }
}

/// The soft `RLIMIT_NOFILE`, if there is one.
#[cfg(unix)]
fn open_file_limit() -> Option<u64> {
    use nix::sys::resource::{RLIM_INFINITY, Resource, getrlimit};
    getrlimit(Resource::RLIMIT_NOFILE)
        .ok()
        .map(|(soft, _)| soft)
        .filter(|soft| *soft != RLIM_INFINITY)
}

#[cfg(not(unix))]
fn open_file_limit() -> Option<u64> {
    None
}

/// What the accept stage does with a connection it has just accepted.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    Serve,
    /// At `maxConnections`, with no idle connection to make room: refused.
    Refuse,
}

/// The accept stage's view of one connector under pressure.
pub(crate) struct Pressure {
    connections: Connections,
    limits: Limits,
    /// The last soft-pressure scan: at most one every [`SCAN_EVERY`].
    scanned: Option<Instant>,
    /// Out of descriptors: when idle connections were first asked to close for it, and how
    /// many have been asked since (see [`Pressure::out_of_descriptors`]).
    asked: Option<(Instant, usize)>,
}

/// Idle connections asked to close for want of descriptors count as on their way out for this
/// long: failures meanwhile ask only for what they have not, and a connection that stays (a
/// request it had begun) holds nothing back after it.
const ASKED_FOR: Duration = Duration::from_secs(1);

/// Soft pressure lasts while connections keep coming: scanning the list on every accept would
/// cost a lock and a pass over every connection each time.
const SCAN_EVERY: Duration = Duration::from_millis(10);

impl Pressure {
    pub(crate) fn new(connections: Connections, limits: Limits) -> Pressure {
        Pressure {
            connections,
            limits,
            scanned: None,
            asked: None,
        }
    }

    /// A connection was accepted, `fd` its descriptor (the lowest free one, on Unix: about the
    /// number of descriptors in use). Closes idle connections if a limit is near; refuses this
    /// one at `maxConnections` if nothing could make room.
    pub(crate) fn accepted(&mut self, fd: Option<u64>) -> Admission {
        let staying = self.connections.staying();
        if let Some(max) = self.limits.max_connections
            && staying >= max
        {
            // Hard: room for this one, and down to 80%.
            let want = staying + 1 - max * 8 / 10;
            if self.connections.close_idle(want, true) == 0 {
                self.connections.0.refused.fetch_add(1, Relaxed);
                return Admission::Refuse;
            }
            return Admission::Serve;
        }
        self.relieve(fd, 1);
        Admission::Serve
    }

    /// The periodic look while nothing is accepted: `probe` is the lowest free descriptor, or
    /// an error when there is none.
    pub(crate) fn tick(&mut self, probe: io::Result<u64>) {
        match probe {
            Ok(fd) => self.relieve(Some(fd), 0),
            Err(e) if lacks_resources(&e) => {
                self.out_of_descriptors();
            }
            Err(_) => {}
        }
    }

    /// Whether the connector watches a limit (and needs [`Pressure::tick`]).
    pub(crate) fn watches(&self) -> bool {
        self.limits.max_connections.is_some() || self.limits.open_files.is_some()
    }

    /// Soft pressure: with `coming` more connections and `fd` descriptors in use, closes
    /// connections idle for a second down to 80% of the limit that is past 90%.
    fn relieve(&mut self, fd: Option<u64>, coming: usize) {
        let staying = self.connections.staying() + coming;
        let mut want = 0;
        if let Some(max) = self.limits.max_connections
            && staying > max * 9 / 10
        {
            want = staying - max * 8 / 10;
        }
        if let (Some(limit), Some(fd)) = (self.limits.open_files, fd)
            && fd > limit * 9 / 10
        {
            want = want.max(usize::try_from(fd - limit * 8 / 10).unwrap_or(usize::MAX));
        }
        if want > 0 && self.scanned.is_none_or(|t| t.elapsed() >= SCAN_EVERY) {
            self.scanned = Some(Instant::now());
            self.connections.close_idle(want, false);
        }
    }

    /// Out of descriptors: a fifth of the open-file limit (down to 80%), or a tenth of the
    /// connections without one; at least one.
    fn hard_want(&self) -> usize {
        let by_files = self
            .limits
            .open_files
            .map_or(0, |l| usize::try_from(l / 5).unwrap_or(usize::MAX));
        by_files.max(self.connections.staying() / 10).max(1)
    }

    /// Out of descriptors: asks [`Pressure::hard_want`] idle connections to close, the longest
    /// idle first, less those it asked within [`ASKED_FOR`] that have not closed yet, so that
    /// accepts failing again before they close ask no more. Returns how many were asked.
    fn out_of_descriptors(&mut self) -> usize {
        let now = Instant::now();
        let recent = self
            .asked
            .filter(|(since, _)| now.saturating_duration_since(*since) < ASKED_FOR)
            .map_or(0, |(_, n)| n);
        let pending = recent.min(self.connections.0.leaving.load(Relaxed));
        let asked = self
            .connections
            .close_idle(self.hard_want().saturating_sub(pending), true);
        if asked > 0 {
            let since = self.asked.filter(|_| recent > 0).map_or(now, |(t, _)| t);
            self.asked = Some((since, recent + asked));
        }
        asked
    }

    /// Accept failed for lack of resources: closes idle connections (see
    /// [`Pressure::out_of_descriptors`]). Returns how many were asked to close.
    pub(crate) fn accept_failed(&mut self) -> usize {
        self.connections.0.accept_errors.fetch_add(1, Relaxed);
        self.out_of_descriptors()
    }
}

/// How often a connector that watches a limit looks at the descriptors in use while nothing
/// is accepted (after a burst, so that the admin side and the application's own files find
/// descriptors again).
pub(crate) const TICK: Duration = Duration::from_millis(250);

/// The lowest free descriptor (about the number in use), found by duplicating `fd`
/// (`F_DUPFD_CLOEXEC` takes the lowest free number); the duplicate is closed at once.
#[cfg(unix)]
pub(crate) fn probe(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<u64> {
    let dup = fd.try_clone_to_owned()?;
    Ok(u64::try_from(std::os::fd::AsRawFd::as_raw_fd(&dup)).unwrap_or(0))
}

/// Whether an accept error is the kind that passes when resources come back (and is worth
/// closing idle connections for), rather than one connection's own failure.
pub(crate) fn lacks_resources(e: &io::Error) -> bool {
    #[cfg(unix)]
    {
        use nix::errno::Errno;
        matches!(
            e.raw_os_error().map(Errno::from_raw),
            Some(Errno::EMFILE | Errno::ENFILE | Errno::ENOBUFS | Errno::ENOMEM)
        )
    }
    #[cfg(not(unix))]
    {
        let _ = e;
        false
    }
}

/// How long the accept loop waits after a failed accept: from 5 ms, doubling to 1 s while
/// accepts keep failing; 1 ms when idle connections were just asked to close (their
/// descriptors come back as soon as their tasks run).
#[derive(Debug)]
pub(crate) struct Backoff(Duration);

impl Default for Backoff {
    fn default() -> Self {
        Backoff(Duration::from_millis(5))
    }
}

impl Backoff {
    pub(crate) fn next(&mut self, closed: usize) -> Duration {
        if closed > 0 {
            return Duration::from_millis(1);
        }
        let wait = self.0;
        self.0 = (self.0 * 2).min(Duration::from_secs(1));
        wait
    }

    pub(crate) fn reset(&mut self) {
        *self = Backoff::default();
    }
}

/// Accept errors, reported in one WARN a second at most with how many there were.
#[derive(Debug)]
pub(crate) struct AcceptErrors {
    connector: Arc<str>,
    /// Since the last WARN: failures, idle connections asked to close, the last error.
    failed: u64,
    closed: usize,
    last: Option<String>,
    warned: Option<Instant>,
}

impl AcceptErrors {
    pub(crate) fn new(connector: Arc<str>) -> AcceptErrors {
        AcceptErrors {
            connector,
            failed: 0,
            closed: 0,
            last: None,
            warned: None,
        }
    }

    /// One failure, after which `closed` idle connections were asked to close.
    pub(crate) fn failed(&mut self, e: &io::Error, closed: usize) {
        self.failed += 1;
        self.closed += closed;
        self.last = Some(e.to_string());
        self.report(false);
    }

    /// An accept succeeded: failures not reported yet are, once their second has passed.
    pub(crate) fn succeeded(&mut self) {
        if self.failed > 0 {
            self.report(true);
        }
    }

    fn report(&mut self, recovered: bool) {
        let since = self.warned.map(|t| t.elapsed());
        if since.is_some_and(|s| s < Duration::from_secs(1)) {
            return;
        }
        let error = self.last.take().unwrap_or_default();
        tracing::warn!(
            target: "ferrowizard::server::connector",
            connector = &*self.connector,
            failures = self.failed,
            idle_closed = self.closed,
            recovered,
            "accept failed {} time{} since the last report: {error}",
            self.failed,
            if self.failed == 1 { "" } else { "s" },
        );
        self.warned = Some(Instant::now());
        self.failed = 0;
        self.closed = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy() -> Arc<Activity> {
        let a = Arc::new(Activity::new("127.0.0.1:1".parse().unwrap()));
        a.head_pending.store(true, Relaxed);
        a
    }

    fn idle() -> Arc<Activity> {
        Arc::new(Activity::new("127.0.0.1:1".parse().unwrap()))
    }

    fn limits(max_connections: Option<usize>, open_files: Option<u64>) -> Limits {
        Limits {
            max_connections,
            open_files,
        }
    }

    /// A connection being refused holds a socket for up to a second, but is not served: it
    /// does not count against `maxConnections`.
    /// Catches: refused connections counted as served ones, refusing new clients after the
    /// served ones have gone below the limit.
    #[test]
    fn refused_connections_do_not_count_against_max_connections() {
        let connections = Connections::default();
        let mut pressure = Pressure::new(connections.clone(), limits(Some(2), None));
        let first = connections.opened(busy());
        let _second = connections.opened(busy());
        assert_eq!(pressure.accepted(None), Admission::Refuse);
        let _answering = connections.refusing();
        assert_eq!(connections.open(), 3, "the refused socket is open");
        drop(first);
        assert_eq!(pressure.accepted(None), Admission::Serve);
        assert_eq!(connections.refused(), 1);
    }

    /// Accepts that fail again before the idle connections asked to close have closed ask no
    /// more of them: out of descriptors, a fifth of the open-file limit goes, not all; but
    /// connections asked a second ago and still open hold back no more.
    /// Catches: each failed accept closing another fifth, emptying the idle connections; a
    /// connection that never closes stopping the closing for good.
    #[test]
    fn failed_accepts_ask_no_more_idle_connections_to_close_than_a_fifth_of_the_limit() {
        let connections = Connections::default();
        let mut pressure = Pressure::new(connections.clone(), limits(None, Some(50)));
        let open: Vec<_> = (0..40).map(|_| connections.opened(idle())).collect();
        assert_eq!(pressure.accept_failed(), 10);
        for _ in 0..5 {
            assert_eq!(pressure.accept_failed(), 0);
        }
        assert_eq!(connections.closed_idle(), 10);
        assert_eq!(connections.accept_errors(), 6);
        // Once they have closed, a failure asks the next ones.
        drop(open);
        let more: Vec<_> = (0..40).map(|_| connections.opened(idle())).collect();
        assert_eq!(pressure.accept_failed(), 10);
        // Those that stay past a second (a request they had begun) hold nothing back.
        std::thread::sleep(ASKED_FOR + Duration::from_millis(50));
        assert_eq!(pressure.accept_failed(), 10);
        drop(more);
    }

    /// File descriptors past 90% of the open-file limit: connections idle for a second are
    /// closed, the longest idle first, down to 80% of the limit; those idle for less stay.
    /// Catches: the open-file limit not watched (only `maxConnections`), busy or just-idle
    /// connections closed under soft pressure, more closed than 80% asks.
    #[test]
    fn descriptors_near_the_open_file_limit_close_connections_idle_for_a_second() {
        let connections = Connections::default();
        let mut pressure = Pressure::new(connections.clone(), limits(None, Some(100)));
        let old: Vec<_> = (0..20).map(|_| connections.opened(idle())).collect();
        let _busy: Vec<_> = (0..20).map(|_| connections.opened(busy())).collect();
        std::thread::sleep(Duration::from_millis(SOFT_IDLE_MS + 50));
        let _new: Vec<_> = (0..20).map(|_| connections.opened(idle())).collect();
        // At 90 descriptors in use, nothing yet.
        pressure.tick(Ok(90));
        assert_eq!(connections.closed_idle(), 0);
        // At 95: 15 to go (down to 80), all of them among the 20 idle for a second.
        pressure.tick(Ok(95));
        assert_eq!(connections.closed_idle(), 15);
        let nudged = |list: &[OpenConnection]| {
            list.iter()
                .filter(|c| {
                    c.listed
                        .as_ref()
                        .is_some_and(|(_, a)| a.nudged.load(Relaxed))
                })
                .count()
        };
        assert_eq!(nudged(&old), 15);
    }

    #[test]
    fn backoff_doubles_to_a_second_and_is_short_when_connections_were_closed() {
        let mut b = Backoff::default();
        let waits: Vec<u64> = (0..10).map(|_| b.next(0).as_millis() as u64).collect();
        assert_eq!(waits, [5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        assert_eq!(b.next(3), Duration::from_millis(1));
        b.reset();
        assert_eq!(b.next(0), Duration::from_millis(5));
    }

    #[test]
    fn resource_errors_are_told_from_a_connections_own() {
        for (errno, lacks) in [
            (24, true),
            (23, true),
            (105, true),
            (12, true),
            (103, false),
            (104, false),
        ] {
            assert_eq!(
                lacks_resources(&io::Error::from_raw_os_error(errno)),
                lacks,
                "errno {errno}"
            );
        }
    }
}
