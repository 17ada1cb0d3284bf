//! A real PostgreSQL for a test: the system's `initdb` and `postgres`, a data directory in a
//! temporary folder, a free port on 127.0.0.1, password authentication over TCP; stopped (and
//! its files removed) when dropped. As root, the server runs as the `postgres` user, since
//! `initdb` refuses root.

#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The superuser's password.
pub const PASSWORD: &str = "s3cret-Pa55";

pub struct Postgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    owner: Option<(u32, u32)>,
    child: Option<Child>,
}

/// The folder of the system's PostgreSQL binaries: `initdb` on the PATH, or Debian's
/// `/usr/lib/postgresql/VERSION/bin`.
fn binaries() -> PathBuf {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let initdb = dir.join("initdb");
            if initdb.exists() {
                // Debian's /usr/bin/initdb may be a wrapper: take the real folder.
                let real = std::fs::canonicalize(&initdb).unwrap_or(initdb);
                if real.with_file_name("postgres").exists() {
                    return real.parent().unwrap().to_path_buf();
                }
            }
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|d| d.flatten().map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    found.sort();
    found
        .pop()
        .filter(|b| b.join("initdb").exists())
        .expect("PostgreSQL's binaries (initdb, postgres): install Debian's postgresql")
}

/// The `postgres` user's uid and gid, when this process is root.
fn owner() -> Option<(u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    // /proc/self belongs to the process's effective user.
    if std::fs::metadata("/proc/self").map_or(true, |m| m.uid() != 0) {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
    let line = passwd
        .lines()
        .find(|l| l.starts_with("postgres:"))
        .expect("a postgres user to run PostgreSQL as (root cannot)");
    let fields: Vec<&str> = line.split(':').collect();
    Some((fields[2].parse().unwrap(), fields[3].parse().unwrap()))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Postgres {
    /// A new cluster, initialised and started, with a database `orders`.
    pub fn start() -> Postgres {
        let bin = binaries();
        let dir = tempfile::tempdir().unwrap();
        let owner = owner();
        let mut pg = Postgres {
            bin,
            dir,
            port: free_port(),
            owner,
            child: None,
        };
        std::fs::write(pg.dir.path().join("pw"), PASSWORD).unwrap();
        std::fs::create_dir(pg.dir.path().join("socket")).unwrap();
        if let Some((uid, gid)) = owner {
            for p in [
                pg.dir.path(),
                &pg.dir.path().join("pw"),
                &pg.dir.path().join("socket"),
            ] {
                std::os::unix::fs::chown(p, Some(uid), Some(gid)).unwrap();
            }
        }
        let out = pg
            .command("initdb")
            .args([
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-U",
                "postgres",
            ])
            .arg(format!("--pwfile={}", pg.dir.path().join("pw").display()))
            .arg("-D")
            .arg(pg.data())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        pg.resume();
        pg.sql("postgres", "CREATE DATABASE orders");
        pg
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn command(&self, program: &str) -> Command {
        let mut c = Command::new(self.bin.join(program));
        if let Some((uid, gid)) = self.owner {
            c.uid(uid).gid(gid);
        }
        c.env("LC_ALL", "C").stdin(Stdio::null());
        c
    }

    /// `postgres://postgres@127.0.0.1:PORT/DATABASE`, without the password.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Starts the server (again, after [`stop`](Self::stop)) and waits until it answers.
    pub fn resume(&mut self) {
        assert!(self.child.is_none(), "already running");
        let log = std::fs::File::create(self.dir.path().join("server.log")).unwrap();
        let child = self
            .command("postgres")
            .arg("-D")
            .arg(self.data())
            .args([
                "-p",
                &self.port.to_string(),
                "-c",
                "listen_addresses=127.0.0.1",
            ])
            .arg("-k")
            .arg(self.dir.path().join("socket"))
            .args(["-c", "max_connections=200", "-c", "fsync=off"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.answers() {
            assert!(
                Instant::now() < deadline,
                "PostgreSQL did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether the server accepts a login.
    fn answers(&self) -> bool {
        self.psql("postgres", "SELECT 1").is_ok()
    }

    /// Stops the server at once (fast shutdown: connections are cut).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
            let _ = child.wait();
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    /// Runs `sql` on `database` with psql over the socket; its output, or its error.
    pub fn psql(&self, database: &str, sql: &str) -> Result<String, String> {
        let out = self
            .command("psql")
            .arg("-h")
            .arg(self.dir.path().join("socket"))
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                "-d",
                database,
            ])
            .args(["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
        }
    }

    /// [`psql`](Self::psql), which must succeed.
    pub fn sql(&self, database: &str, sql: &str) -> String {
        self.psql(database, sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}
