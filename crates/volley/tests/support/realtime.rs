//! What the tests that load the real `realtime` service share: building and starting it, and
//! reading the paths its request log saw.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The `realtime` binary of this workspace, built once per test program with the profile the
/// tests were built with (it is another package's, which cargo does not build for volley's
/// tests).
pub fn realtime_binary() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_realtime)
}

fn build_realtime() -> PathBuf {
    let volley = Path::new(env!("CARGO_BIN_EXE_volley"));
    let profile = match volley.parent().and_then(Path::file_name) {
        Some(dir) if dir == "debug" => "dev".to_owned(),
        Some(dir) => dir.to_string_lossy().into_owned(),
        None => "dev".to_owned(),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let mut command = Command::new(cargo);
    // Without the variables cargo sets for the program it runs: build scripts that watch one
    // (ring's watches CARGO_MANIFEST_DIR) would otherwise run again, here and at the next
    // plain build.
    for (name, _) in std::env::vars_os() {
        let set_by_cargo = name.to_str().is_some_and(|n| {
            n.starts_with("CARGO_PKG_")
                || n.starts_with("CARGO_BIN_EXE_")
                || [
                    "CARGO_MANIFEST_DIR",
                    "CARGO_MANIFEST_PATH",
                    "CARGO_CRATE_NAME",
                    "CARGO_PRIMARY_PACKAGE",
                    "CARGO_TARGET_TMPDIR",
                    "CARGO_RUSTC_CURRENT_DIR",
                    "OUT_DIR",
                ]
                .contains(&n)
        });
        if set_by_cargo {
            command.env_remove(name);
        }
    }
    let output = command
        .args(["build", "--profile", &profile, "--manifest-path"])
        .arg(&manifest)
        .args([
            "-p",
            "realtime",
            "--bin",
            "realtime",
            "--message-format=json-render-diagnostics",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("run cargo to build realtime");
    assert!(output.status.success(), "cargo build -p realtime failed");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == "realtime")
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .expect("cargo named the realtime executable")
}

/// A running `realtime server`, killed when dropped.
pub struct Realtime {
    child: Child,
    /// Its application connector.
    pub addr: SocketAddr,
    log: PathBuf,
}

impl Drop for Realtime {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Realtime {
    /// Starts `realtime` quoting `symbols`, on free ports of 127.0.0.1, its request log in
    /// `dir/requests.log`.
    pub fn start(dir: &Path, symbols: &[String]) -> Realtime {
        let log = dir.join("requests.log");
        let config = dir.join("realtime.yaml");
        std::fs::write(
            &config,
            format!(
                "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
                 adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
                 requestLog:\n    appenders: [{{type: file, currentLogFilename: {}, \
                 archive: false, immediateFlush: true}}]\n\
                 logging:\n  level: WARN\n  appenders: []\n\
                 quotes:\n  symbols: [{}]\n",
                log.display(),
                symbols.join(", ")
            ),
        )
        .unwrap();
        let mut child = Command::new(realtime_binary())
            .arg("server")
            .arg(&config)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn realtime");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let said = "application listening on ";
        let line = lines
            .by_ref()
            .map_while(Result::ok)
            .find(|l| l.contains(said))
            .unwrap_or_else(|| panic!("realtime never said {said:?}"));
        let addr = line
            .rsplit("://")
            .next()
            .unwrap_or_default()
            .parse()
            .unwrap_or_else(|_| panic!("an address in {line}"));
        // Keep draining stdout so the child never blocks on it.
        std::thread::spawn(move || for _ in lines.by_ref() {});
        Realtime { child, addr, log }
    }

    /// The paths of the requests logged so far, once there are at least `n` (or after 10 s).
    pub fn paths(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            // `... "GET /path HTTP/1.1" ...`: the request line is the first quoted field.
            let paths: Vec<String> = text
                .lines()
                .filter_map(|l| l.split('"').nth(1)?.split(' ').nth(1).map(str::to_owned))
                .collect();
            if paths.len() >= n || Instant::now() > deadline {
                return paths;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `results.json` of a run, parsed.
pub fn results(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap()
}

/// The number of values in a `results.json` histogram (HdrHistogram V2, base64).
pub fn histogram_count(encoded: &serde_json::Value) -> u64 {
    volley::results::decode_histogram(encoded.as_str().expect("a histogram"))
        .expect("the histogram decodes")
        .len()
}
