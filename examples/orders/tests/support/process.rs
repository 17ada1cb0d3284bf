//! A service run as a process of its own: started with `server CONFIG`, its application
//! address read from what it prints, stopped with SIGTERM. Shared by the tests that run the
//! binaries (`#[path]`-included).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running service: its process and its application's base URL (`http://HOST:PORT`).
pub struct Service(Child, pub String);

impl Service {
    /// Starts `binary server config` and waits for its application connector.
    pub fn start(binary: &Path, config: &Path) -> Service {
        let mut child = Command::new(binary)
            .arg("server")
            .arg(config)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let app = loop {
            let line = lines.next().expect("the service's address").unwrap();
            if line.contains("application listening") {
                break line.rsplit("://").next().unwrap().to_owned();
            }
        };
        // The rest of its output is read, so that its prints never meet a closed pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Service(child, format!("http://{app}"))
    }

    /// Stops it with SIGTERM; it must exit 0.
    pub fn stop(mut self) {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        assert!(self.0.wait().unwrap().success());
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
    }
}
