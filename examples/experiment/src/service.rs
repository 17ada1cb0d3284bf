//! One service as a child process: started in its run's folder, its addresses read from its
//! stdout, waited for until it answers, and stopped as an operator would (SIGTERM).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::configs::Config;

/// How long a service may take to print its addresses, and then to answer.
const START_GRACE: Duration = Duration::from_secs(30);

/// How long a service may take to write its logs and exit after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// Why a service did not run as it should.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// A file of the run's folder could not be made.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The program could not be started.
    #[error("cannot start {}: {source}", program.display())]
    Spawn {
        /// The program.
        program: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// It exited, or printed no address in time.
    #[error("did not start ({why}); its stderr ends with:\n{stderr}")]
    NotStarted {
        /// What happened.
        why: String,
        /// The end of its stderr.
        stderr: String,
    },
    /// It never answered 200.
    #[error("http://{addr}{path} never answered 200 within {} s", START_GRACE.as_secs())]
    NotHealthy {
        /// The address.
        addr: String,
        /// The path asked.
        path: &'static str,
    },
    /// It did not stop as asked.
    #[error("{0}")]
    Stop(String),
}

/// A running service.
pub struct Service {
    child: Child,
    /// Its application address (`127.0.0.1:port`).
    pub app: String,
    /// Its admin address, when it has one.
    pub admin: Option<String>,
    folder: PathBuf,
}

impl Drop for Service {
    fn drop(&mut self) {
        // Stopped already, or abandoned on an error: never left running.
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts `config`'s service in `folder` (its working directory, where its `stdout`,
/// `stderr` and log files land) and reads the addresses it prints.
pub fn start(config: &Config, folder: &Path) -> Result<Service, ServiceError> {
    let file = |name: &str| {
        let path = folder.join(name);
        std::fs::File::create(&path)
            .map(|f| (f, path.clone()))
            .map_err(|source| ServiceError::File { path, source })
    };
    let (stdout, stdout_path) = file("stdout")?;
    let (stderr, _) = file("stderr")?;
    let child = Command::new(&config.program)
        .args(&config.args)
        .current_dir(folder)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .spawn()
        .map_err(|source| ServiceError::Spawn {
            program: config.program.clone(),
            source,
        })?;
    let mut service = Service {
        child,
        app: String::new(),
        admin: None,
        folder: folder.to_path_buf(),
    };
    let deadline = Instant::now() + START_GRACE;
    loop {
        let text = head(&stdout_path);
        let find = |role: &str| {
            text.lines()
                .find(|l| l.contains(&format!("{role} listening on")))
                .and_then(|l| l.rsplit("://").next())
                .map(|a| a.trim().replace("0.0.0.0", "127.0.0.1"))
        };
        if let Some(app) = find("application") {
            service.app = app;
            service.admin = find("admin");
            return Ok(service);
        }
        if let Ok(Some(status)) = service.child.try_wait() {
            return Err(service.not_started(format!("exited: {status}")));
        }
        if Instant::now() > deadline {
            return Err(service.not_started(format!(
                "no address printed within {} s",
                START_GRACE.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The start of a file (where a service prints its addresses), never all of a large one.
fn head(path: &Path) -> String {
    let mut bytes = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(1 << 20).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Service {
    fn not_started(&self, why: String) -> ServiceError {
        let text = std::fs::read_to_string(self.folder.join("stderr")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        ServiceError::NotStarted {
            why,
            stderr: lines[lines.len().saturating_sub(10)..].join("\n"),
        }
    }

    /// Waits until the service answers 200: on `/healthcheck` at its admin address, or, with
    /// none (the plain-axum service), for a quote.
    pub fn wait_healthy(&self) -> Result<(), ServiceError> {
        let (addr, path) = match &self.admin {
            Some(a) => (a.as_str(), "/healthcheck"),
            None => (self.app.as_str(), "/realtime/quotes/ACME"),
        };
        let deadline = Instant::now() + START_GRACE;
        while Instant::now() < deadline {
            if let Ok(mut s) = std::net::TcpStream::connect(addr) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = write!(
                    s,
                    "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                );
                let mut out = String::new();
                let _ = s.read_to_string(&mut out);
                if out.starts_with("HTTP/1.1 200") {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(ServiceError::NotHealthy {
            addr: addr.to_owned(),
            path,
        })
    }

    /// Stops the service as an operator would (SIGTERM) and waits for it to write its logs
    /// and exit. One that fails, or is still running after `STOP_GRACE` (then killed), is
    /// an error: its logs and counts would not be whole.
    pub fn stop(mut self) -> Result<(), ServiceError> {
        use nix::sys::signal::{Signal, kill};
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.child.id()).unwrap_or(i32::MAX));
        if let Err(e) = kill(pid, Signal::SIGTERM) {
            return Err(ServiceError::Stop(format!(
                "cannot send SIGTERM ({e}); killed"
            )));
        }
        let deadline = Instant::now() + STOP_GRACE;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => {
                    return Err(ServiceError::Stop(format!("{status} after SIGTERM")));
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => {
                    return Err(ServiceError::Stop(format!(
                        "still running {} s after SIGTERM; killed",
                        STOP_GRACE.as_secs()
                    )));
                }
                Err(e) => {
                    return Err(ServiceError::Stop(format!(
                        "cannot wait for it to exit: {e}"
                    )));
                }
            }
        }
    }
}

/// The events a service dropped, from the `N of M events dropped` lines of its exit
/// summary on stderr, summed.
pub fn dropped(folder: &Path) -> u64 {
    std::fs::read_to_string(folder.join("stderr"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("events dropped"))
        .filter_map(|l| {
            l.rsplit("): ")
                .next()?
                .split(' ')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}
