//! What volley's integration tests share: a small hyper server on a free port of 127.0.0.1,
//! on a runtime of its own or on the test's, answering with the test's handler (HTTP/1.1 and
//! HTTP/2); a plain HTTP/1.1 server that records what it reads ([`http1`]); and runs of the
//! real binary. Each test binary uses what it needs.
#![allow(dead_code)]

pub mod http1;
pub mod prometheus;
pub mod realtime;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Stdio};
use std::sync::{Arc, Once};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};

/// Serves `handler` until the test process ends; returns the address.
pub fn serve<F, Fut>(handler: F) -> SocketAddr
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            accept(listener, handler).await;
        });
    });
    rx.recv().unwrap()
}

/// Serves `handler` on the current runtime, in a task of its own, until the runtime ends;
/// returns the address.
pub async fn serve_here<F, Fut>(handler: F) -> SocketAddr
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(accept(listener, handler));
    addr
}

/// Accepts connections on `listener` for ever, each served with `handler` in a task of its
/// own.
async fn accept<F, Fut>(listener: tokio::net::TcpListener, handler: F)
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<Full<Bytes>>> + Send + 'static,
{
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let handler = handler.clone();
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let answer = handler(req);
            async move { Ok::<_, std::convert::Infallible>(answer.await) }
        });
        tokio::spawn(async move {
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// A stall of a whole server (a GC pause, say): from `after` past the first request that
/// passes it, for a second, every request that passes it waits. Clones share the stall.
#[derive(Clone)]
pub struct Stall {
    after: Duration,
    lock: Arc<tokio::sync::RwLock<()>>,
    first: Arc<Once>,
}

impl Stall {
    pub fn new(after: Duration) -> Stall {
        Stall {
            after,
            lock: Arc::new(tokio::sync::RwLock::new(())),
            first: Arc::new(Once::new()),
        }
    }

    /// Returns at once, unless the server is stalled: then once the stall is over. The first
    /// call starts the stall's clock, on the current runtime.
    pub async fn pass(&self) {
        self.first.call_once(|| {
            let (lock, after) = (self.lock.clone(), self.after);
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                let _paused = lock.write().await;
                tokio::time::sleep(Duration::from_secs(1)).await;
            });
        });
        let _running = self.lock.read().await;
    }
}

/// Writes `body` to `dir`/scenario.yaml; returns its path.
pub fn scenario(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("scenario.yaml");
    std::fs::write(&path, body).unwrap();
    path
}

/// Writes the scenario `yaml`, with `BASE` replaced by `addr`'s URL, to `dir`/scenario.yaml;
/// returns its path.
pub fn scenario_for(dir: &Path, addr: SocketAddr, yaml: &str) -> PathBuf {
    scenario(dir, &yaml.replace("BASE", &format!("http://{addr}")))
}

/// The results.json that a run with `--out DIR/out` wrote.
pub fn results(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("out/results.json")).unwrap()).unwrap()
}

/// `volley run FILE --out DIR/out` with `args` after, stopped after `timeout`.
fn run_for(
    dir: &Path,
    file: &Path,
    args: &[&Path],
    timeout: Duration,
) -> assert_cmd::assert::Assert {
    assert_cmd::Command::cargo_bin("volley")
        .unwrap()
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(dir.join("out"))
        .args(args)
        .timeout(timeout)
        .assert()
}

/// `volley run FILE --out DIR/out` with `args` after, stopped after a minute.
pub fn volley(dir: &Path, file: &Path, args: &[&Path]) -> assert_cmd::assert::Assert {
    run_for(dir, file, args, Duration::from_secs(60))
}

/// Runs the scenario `yaml` (with `BASE` replaced by `addr`'s URL) in `dir`, which must
/// succeed; returns results.json.
pub fn run(dir: &Path, addr: SocketAddr, yaml: &str) -> serde_json::Value {
    let file = scenario_for(dir, addr, yaml);
    run_for(dir, &file, &[], Duration::from_secs(120)).success();
    results(dir)
}

/// `volley check FILE`, which must exit 1; its report.
pub fn check_fails(file: &Path) -> String {
    let out = assert_cmd::Command::cargo_bin("volley")
        .unwrap()
        .arg("check")
        .arg(file)
        .assert()
        .code(1);
    String::from_utf8_lossy(&out.get_output().stderr).into_owned()
}

/// Starts `volley run FILE --out DIR/out` with `args` after, its stdout piped.
pub fn spawn_run(dir: &Path, file: &Path, args: &[&Path]) -> Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_volley"))
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(dir.join("out"))
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Takes `child`'s stdout and reads its first line, which must say that the run started (its
/// runtime and signal handlers are in place by then); returns the rest of stdout, to read.
pub fn started(child: &mut Child) -> BufReader<ChildStdout> {
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first, "Simulation scenario started...\n");
    stdout
}

/// A child process killed (by its handle) when the test ends, however it ends.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The value at `path` in `json` (object keys, outermost first). A missing key fails, naming
/// the field and the keys there are: a field `results.json` renames must fail a test, never
/// read as nothing.
pub fn field<'a>(json: &'a serde_json::Value, path: &[&str]) -> &'a serde_json::Value {
    let mut node = json;
    for (i, key) in path.iter().enumerate() {
        node = match node.get(*key) {
            Some(next) => next,
            None => {
                let there: Vec<&String> = match node.as_object() {
                    Some(object) => object.keys().collect(),
                    None => Vec::new(),
                };
                panic!(
                    "no field {} in the JSON (keys there: {there:?})",
                    path[..=i].join(".")
                )
            }
        };
    }
    node
}

/// The count at `path` in `json` (see [`field`]): fails, naming the field, when it is missing
/// or is not a whole number.
pub fn count_at(json: &serde_json::Value, path: &[&str]) -> u64 {
    let value = field(json, path);
    value
        .as_u64()
        .unwrap_or_else(|| panic!("{} is {value}, not a count", path.join(".")))
}
