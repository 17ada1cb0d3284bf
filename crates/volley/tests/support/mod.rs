//! What volley's integration tests share: a small hyper server on a free port of 127.0.0.1,
//! on a runtime of its own, answering with the test's handler (HTTP/1.1 and HTTP/2); and a
//! run of the real binary. Each test binary uses what it needs.
#![allow(dead_code)]

pub mod prometheus;
pub mod realtime;

use std::net::SocketAddr;
use std::path::Path;
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
        });
    });
    rx.recv().unwrap()
}

/// Runs the scenario `yaml` (with `BASE` replaced by `addr`'s URL) in `dir`, which must
/// succeed; returns results.json.
pub fn run(dir: &Path, addr: SocketAddr, yaml: &str) -> serde_json::Value {
    let file = dir.join("scenario.yaml");
    std::fs::write(&file, yaml.replace("BASE", &format!("http://{addr}"))).unwrap();
    assert_cmd::Command::cargo_bin("volley")
        .unwrap()
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(dir.join("out"))
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    serde_json::from_slice(&std::fs::read(dir.join("out/results.json")).unwrap()).unwrap()
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
