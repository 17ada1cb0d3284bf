//! `volley import recording.har` with a recording made by a real browser: headless Chromium
//! opens the realtime service's page (`/realtime/`: its style sheet, the quotes, a trade after
//! a pause, the traded quote), its network events are taken over the DevTools protocol and
//! written as a HAR (what DevTools' "Save all as HAR" writes from the same events), then
//! imported, and the scenario runs as written against the service.
//!
//! Needs Chromium (`apt-get install chromium`); without it the test fails and says so.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

mod support;
use support::realtime::Realtime;

fn chromium() -> PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("chromium"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "this test records a session in headless Chromium, which is not installed: \
                 `apt-get install chromium` (Debian's package) and run it again"
            )
        })
}

/// Headless Chromium with its DevTools endpoint on a free port; killed when dropped.
struct Browser {
    child: Child,
    endpoint: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn browser(profile: &Path) -> Browser {
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--remote-debugging-port=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("about:blank")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let endpoint = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.split("DevTools listening on ").nth(1).map(str::to_owned))
        .expect("Chromium said where its DevTools listen");
    std::thread::spawn(move || for _ in lines {});
    Browser { child, endpoint }
}

/// Opens `url` in a new tab and records its network events until the page says it is done
/// (its title becomes `done`); returns them as a HAR.
async fn record(endpoint: &str, url: &str) -> Value {
    let host = endpoint
        .trim_start_matches("ws://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let tcp = tokio::net::TcpStream::connect(host).await.unwrap();
    let (mut cdp, _) = tokio_tungstenite::client_async(endpoint, tcp)
        .await
        .unwrap();
    let mut id = 0;
    let mut session: Option<String> = None;
    let mut events: Vec<Value> = Vec::new();
    // Sends a command and waits for its answer, keeping the events that come meanwhile.
    macro_rules! call {
        ($method:expr, $params:expr) => {{
            id += 1;
            let mut message = json!({"id": id, "method": $method, "params": $params});
            if let Some(s) = &session {
                message["sessionId"] = json!(s);
            }
            cdp.send(Message::text(message.to_string())).await.unwrap();
            loop {
                let text = cdp.next().await.unwrap().unwrap().into_text().unwrap();
                let m: Value = serde_json::from_str(&text).unwrap();
                if m["id"] == id {
                    assert!(m.get("error").is_none(), "{m}");
                    break m["result"].clone();
                }
                events.push(m);
            }
        }};
    }
    let target = call!("Target.createTarget", json!({"url": "about:blank"}));
    let attached = call!(
        "Target.attachToTarget",
        json!({"targetId": target["targetId"], "flatten": true})
    );
    session = attached["sessionId"].as_str().map(str::to_owned);
    call!("Network.enable", json!({}));
    call!("Page.enable", json!({}));
    call!("Page.navigate", json!({"url": url}));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let done = events.iter().any(|e| {
            e["method"] == "Network.loadingFinished"
                && events.iter().any(|s| {
                    s["method"] == "Network.requestWillBeSent"
                        && s["params"]["requestId"] == e["params"]["requestId"]
                        && s["params"]["request"]["url"]
                            .as_str()
                            .is_some_and(|u| u.ends_with("/realtime/quotes/ACME"))
                })
        });
        if done {
            break;
        }
        let next = tokio::time::timeout_at(deadline, cdp.next())
            .await
            .expect("the page never finished its requests")
            .unwrap()
            .unwrap();
        events.push(serde_json::from_str(&next.into_text().unwrap()).unwrap());
    }
    har(&events)
}

/// A HAR 1.2 of the requests in `events` (DevTools' `Network.*`), as DevTools writes one.
fn har(events: &[Value]) -> Value {
    let mut by_id: BTreeMap<String, (Value, Option<Value>, Option<f64>)> = BTreeMap::new();
    let mut order = Vec::new();
    for e in events {
        let p = &e["params"];
        let Some(id) = p["requestId"].as_str() else {
            continue;
        };
        match e["method"].as_str() {
            Some("Network.requestWillBeSent") => {
                order.push(id.to_owned());
                by_id.insert(id.to_owned(), (p.clone(), None, None));
            }
            Some("Network.responseReceived") => {
                if let Some(entry) = by_id.get_mut(id) {
                    entry.1 = Some(p.clone());
                }
            }
            Some("Network.loadingFinished") => {
                if let Some(entry) = by_id.get_mut(id) {
                    entry.2 = p["timestamp"].as_f64();
                }
            }
            _ => {}
        }
    }
    let headers = |h: &Value| -> Vec<Value> {
        h.as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| json!({"name": k, "value": v.as_str().unwrap_or_default()}))
                    .collect()
            })
            .unwrap_or_default()
    };
    let entries: Vec<Value> = order
        .iter()
        .filter_map(|id| {
            let (sent, response, finished) = by_id.get(id)?;
            let response = response.as_ref()?;
            let request = &sent["request"];
            let wall = sent["wallTime"].as_f64()?;
            let started = jiff::Timestamp::from_millisecond((wall * 1000.0) as i64).ok()?;
            let time = finished.map_or(0.0, |f| {
                (f - sent["timestamp"].as_f64().unwrap_or(f)) * 1000.0
            });
            let mut har_request = json!({
                "method": request["method"],
                "url": request["url"],
                "httpVersion": "HTTP/1.1",
                "headers": headers(&request["headers"]),
                "queryString": [],
                "cookies": [],
                "headersSize": -1,
                "bodySize": -1,
            });
            if let Some(body) = request["postData"].as_str() {
                let mime = request["headers"]["Content-Type"]
                    .as_str()
                    .unwrap_or_default();
                har_request["postData"] = json!({"mimeType": mime, "text": body});
            }
            Some(json!({
                "startedDateTime": started.to_string(),
                "time": time,
                "_resourceType": sent["type"].as_str().unwrap_or_default().to_ascii_lowercase(),
                "request": har_request,
                "response": {
                    "status": response["response"]["status"],
                    "statusText": response["response"]["statusText"],
                    "httpVersion": "HTTP/1.1",
                    "headers": headers(&response["response"]["headers"]),
                    "cookies": [],
                    "content": {"size": 0, "mimeType": response["response"]["mimeType"]},
                    "redirectURL": "",
                    "headersSize": -1,
                    "bodySize": -1,
                },
                "cache": {},
                "timings": {"send": 0, "wait": time, "receive": 0},
            }))
        })
        .collect();
    json!({"log": {"version": "1.2", "creator": {"name": "volley test", "version": "1"}, "entries": entries}})
}

/// Chromium's recording of the realtime page, imported: the page, the quotes, the trade (its
/// JSON body and type kept) and the traded quote in order, with the user's 400 ms pause before
/// the trade, the style sheet left out, the browser's own headers left out; the scenario runs
/// as written, every request OK, and the service sees the recorded paths in the recorded order.
///
/// Catches: requests out of order, static assets kept by default, the pause lost, a body or
/// its type dropped, browser headers copied (a `User-Agent` of Chromium's, cookies), and a
/// scenario that does not run.
#[test]
fn a_session_recorded_in_chromium_imports_and_runs_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let service = Realtime::start(dir.path(), &["ACME".to_owned(), "GLOBEX".to_owned()]);
    let profile = tempfile::tempdir().unwrap();
    let chrome = browser(profile.path());
    let page = format!("http://{}/realtime/", service.addr);
    let har = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(record(&chrome.endpoint, &page));
    drop(chrome);
    let recording = dir.path().join("recording.har");
    std::fs::write(&recording, serde_json::to_vec_pretty(&har).unwrap()).unwrap();
    if let Ok(keep) = std::env::var("VOLLEY_KEEP_IMPORT") {
        std::fs::copy(&recording, format!("{keep}.har")).unwrap();
    }
    let scenario = dir.path().join("imported.yaml");
    assert_cmd::Command::cargo_bin("volley")
        .unwrap()
        .arg("import")
        .arg(&recording)
        .arg("-o")
        .arg(&scenario)
        .timeout(Duration::from_secs(30))
        .assert()
        .success();
    let yaml = std::fs::read_to_string(&scenario).unwrap();
    if let Ok(keep) = std::env::var("VOLLEY_KEEP_IMPORT") {
        std::fs::write(format!("{keep}.yaml"), &yaml).unwrap();
    }
    let at = |needle: &str| {
        yaml.find(needle)
            .unwrap_or_else(|| panic!("no {needle:?} in\n{yaml}"))
    };
    let order = [
        at("path: /realtime/\n"),
        at("path: /realtime/quotes\n"),
        at("method: POST"),
        at("path: /realtime/quotes/ACME"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{yaml}");
    let pause = yaml[order[1]..order[2]]
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("- pause: ")?
                .strip_suffix("ms")?
                .parse::<u64>()
                .ok()
        })
        .unwrap_or_else(|| panic!("no pause before the trade in\n{yaml}"));
    assert!((350..2_000).contains(&pause), "{pause} ms\n{yaml}");
    assert!(!yaml.contains("app.css"), "{yaml}");
    assert!(yaml.contains("Content-Type: application/json"), "{yaml}");
    assert!(
        yaml.contains("\\\"kind\\\":\\\"trade\\\"") || yaml.contains("\"kind\":\"trade\""),
        "{yaml}"
    );
    assert!(
        !yaml.contains("User-Agent") && !yaml.contains("Cookie") && !yaml.contains("Sec-"),
        "{yaml}"
    );
    let before = service.paths(4).len();
    let out = dir.path().join("out");
    assert_cmd::Command::cargo_bin("volley")
        .unwrap()
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let results: Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["global"]["ok"]["count"], 4, "{}", results["errors"]);
    assert_eq!(results["global"]["ko"]["count"], 0, "{}", results["errors"]);
    let replayed: Vec<String> = service.paths(before + 4)[before..].to_vec();
    assert_eq!(
        replayed,
        [
            "/realtime/",
            "/realtime/quotes",
            "/realtime/events",
            "/realtime/quotes/ACME"
        ]
    );
}
