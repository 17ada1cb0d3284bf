//! `volley import recording.har`: a recorded browser session (HAR 1.2, as a browser's
//! developer tools save it) written as a scenario, as Gatling's recorder does:
//! - the requests in the order they started, a pause before each one that began a while after
//!   the one before it ended (the user reading or typing);
//! - static assets (style sheets, scripts, images, fonts) left out unless asked for;
//! - the headers that matter kept (`Authorization`, `Content-Type`, `Accept`, the
//!   application's own); the browser's own left out (`User-Agent`, `Accept-Encoding`,
//!   `sec-*`, caching), and `Cookie`, which the user's jar keeps from the responses;
//! - the host of most requests as `baseUrl` (`${BASE_URL:-...}`, so that a run can aim
//!   elsewhere), the others as absolute URLs (`${HOST_1:-...}`, ...);
//! - a form body as `form`, any other as `body`; a recorded status other than 2xx and 304 as
//!   the request's `status`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Why a HAR file could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Not JSON, or not a HAR's fields.
    #[error("{file} is not a HAR file: {source}")]
    NotHar {
        /// The file.
        file: String,
        /// What serde said.
        source: serde_json::Error,
    },
    /// An entry's URL does not parse.
    #[error("{file}: entry {index} has no usable URL ({url:?}): {message}")]
    Url {
        /// The file.
        file: String,
        /// The entry, from 0.
        index: usize,
        /// Its URL.
        url: String,
        /// Why.
        message: String,
    },
    /// Nothing is left to import.
    #[error("{file} has no request to import{why}")]
    Empty {
        /// The file.
        file: String,
        /// What was left out.
        why: String,
    },
    /// The scenario written does not load (a bug of this import).
    #[error("the scenario written from {file} does not load: {report}")]
    Invalid {
        /// The file.
        file: String,
        /// The loader's report.
        report: String,
    },
}

#[derive(Deserialize)]
struct Har {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    started_date_time: String,
    /// Milliseconds, the whole exchange.
    #[serde(default)]
    time: f64,
    request: HarRequest,
    response: HarResponse,
    /// Chromium's resource type (`document`, `stylesheet`, `fetch`...), when it says.
    #[serde(default, rename = "_resourceType")]
    resource_type: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HarRequest {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<Header>,
    #[serde(default)]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct Header {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PostData {
    #[serde(default)]
    mime_type: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    params: Vec<Param>,
}

#[derive(Deserialize)]
struct Param {
    name: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HarResponse {
    status: u16,
    #[serde(default)]
    content: Option<Content>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Content {
    #[serde(default)]
    mime_type: String,
}

/// How to import.
#[derive(Clone, Debug)]
pub struct Options {
    /// Keep static assets (style sheets, scripts, images, fonts).
    pub keep_static: bool,
    /// Pauses shorter than this are left out (the browser's own gaps).
    pub min_pause: Duration,
    /// The scenario's name.
    pub name: String,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            keep_static: false,
            min_pause: Duration::from_millis(100),
            name: "recorded".into(),
        }
    }
}

/// The scenario as written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Written {
    base_url: String,
    scenarios: Vec<WrittenScenario>,
}

#[derive(Serialize)]
struct WrittenScenario {
    name: String,
    injection: Vec<BTreeMap<&'static str, u32>>,
    steps: Vec<WrittenStep>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum WrittenStep {
    Request(WrittenRequest),
    Pause(String),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WrittenRequest {
    name: String,
    #[serde(skip_serializing_if = "is_get")]
    method: String,
    path: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    form: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<Vec<u16>>,
}

fn is_get(method: &String) -> bool {
    method == "GET"
}

/// The headers a browser sends of its own accord, or that the scenario's run sets itself.
const LEFT_OUT: &[&str] = &[
    "host",
    "connection",
    "content-length",
    "cookie",
    "user-agent",
    "accept-encoding",
    "accept-language",
    "cache-control",
    "pragma",
    "if-none-match",
    "if-modified-since",
    "upgrade-insecure-requests",
    "referer",
    "origin",
    "priority",
    "te",
    "dnt",
];

fn kept(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    !(name.starts_with(':') || name.starts_with("sec-") || LEFT_OUT.contains(&name.as_str()))
}

/// Whether `entry` fetched a static asset: by the browser's resource type, the response's
/// type, or the path's extension (a browser's own `/favicon.ico` is typed `other`).
fn is_static(entry: &Entry, path: &str) -> bool {
    if entry.resource_type.as_deref().is_some_and(|kind| {
        matches!(
            kind,
            "stylesheet" | "script" | "image" | "font" | "media" | "manifest"
        )
    }) {
        return true;
    }
    let mime = entry
        .response
        .content
        .as_ref()
        .map_or("", |c| c.mime_type.as_str());
    let extension = path
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase());
    mime.starts_with("image/")
        || mime.starts_with("font/")
        || mime == "text/css"
        || mime.contains("javascript")
        || extension.is_some_and(|e| {
            [
                "css", "js", "mjs", "png", "jpg", "jpeg", "gif", "svg", "ico", "webp", "woff",
                "woff2", "ttf", "otf", "map",
            ]
            .contains(&e.as_str())
        })
}

/// An entry's start, in ms since the epoch.
fn started_ms(entry: &Entry) -> Option<f64> {
    let t: jiff::Timestamp = entry.started_date_time.parse().ok()?;
    Some(t.as_millisecond() as f64 + f64::from(t.subsec_microsecond() % 1000) / 1000.0)
}

/// The scenario (YAML) that replays the HAR `text` read from `file`.
///
/// ```
/// let har = r#"{"log": {"entries": [
///   {"startedDateTime": "2026-12-04T10:00:00.000Z", "time": 20,
///    "request": {"method": "GET", "url": "http://127.0.0.1:8080/realtime/quotes/ACME",
///                "headers": [{"name": "Accept", "value": "application/json"},
///                            {"name": "User-Agent", "value": "Chromium"}]},
///    "response": {"status": 200}},
///   {"startedDateTime": "2026-12-04T10:00:02.020Z", "time": 5,
///    "request": {"method": "GET", "url": "http://127.0.0.1:8080/app.css"},
///    "response": {"status": 200, "content": {"mimeType": "text/css"}}}
/// ]}}"#;
/// let yaml = volley::har::import("r.har", har, &volley::har::Options::default())?;
/// assert!(yaml.contains("baseUrl: ${BASE_URL:-http://127.0.0.1:8080}"));
/// assert!(yaml.contains("path: /realtime/quotes/ACME"));
/// assert!(yaml.contains("Accept: application/json") && !yaml.contains("Chromium"));
/// assert!(!yaml.contains("app.css"), "a style sheet is left out");
/// # Ok::<(), volley::har::ImportError>(())
/// ```
pub fn import(file: &str, text: &str, options: &Options) -> Result<String, ImportError> {
    let har: Har = serde_json::from_str(text).map_err(|source| ImportError::NotHar {
        file: file.to_owned(),
        source,
    })?;
    let mut entries: Vec<(f64, Entry, url::Url)> = Vec::new();
    let mut dropped = 0;
    for (index, entry) in har.log.entries.into_iter().enumerate() {
        let url = url::Url::parse(&entry.request.url).map_err(|e| ImportError::Url {
            file: file.to_owned(),
            index,
            url: entry.request.url.clone(),
            message: e.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            dropped += 1;
            continue;
        }
        if !options.keep_static && is_static(&entry, url.path()) {
            dropped += 1;
            continue;
        }
        let at = started_ms(&entry).unwrap_or(index as f64);
        entries.push((at, entry, url));
    }
    if entries.is_empty() {
        return Err(ImportError::Empty {
            file: file.to_owned(),
            why: if dropped > 0 {
                format!(" ({dropped} static or non-HTTP left out; --keep-static keeps assets)")
            } else {
                String::new()
            },
        });
    }
    entries.sort_by(|a, b| a.0.total_cmp(&b.0));
    // The host of most requests is baseUrl; the others are named in order of first use.
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut first_seen: Vec<String> = Vec::new();
    for (_, _, url) in &entries {
        let origin = url.origin().ascii_serialization();
        if !counts.contains_key(&origin) {
            first_seen.push(origin.clone());
        }
        *counts.entry(origin).or_default() += 1;
    }
    let main = first_seen
        .iter()
        .max_by_key(|o| {
            (
                counts[*o],
                std::cmp::Reverse(first_seen.iter().position(|f| f == *o)),
            )
        })
        .cloned()
        .unwrap_or_default();
    let others: Vec<&String> = first_seen.iter().filter(|o| **o != main).collect();
    let mut steps = Vec::new();
    let mut last_end: Option<f64> = None;
    for (at, entry, url) in &entries {
        if let Some(end) = last_end {
            let gap = at - end;
            if gap >= options.min_pause.as_millis() as f64 {
                steps.push(WrittenStep::Pause(format!("{}ms", gap.round() as u64)));
            }
        }
        last_end = Some(last_end.map_or(at + entry.time, |e: f64| e.max(at + entry.time)));
        steps.push(WrittenStep::Request(request(entry, url, &main, &others)));
    }
    let written = Written {
        base_url: format!("${{BASE_URL:-{main}}}"),
        scenarios: vec![WrittenScenario {
            name: options.name.clone(),
            injection: vec![BTreeMap::from([("atOnceUsers", 1)])],
            steps,
        }],
    };
    let yaml = serde_saphyr::to_string(&written).map_err(|e| ImportError::Invalid {
        file: file.to_owned(),
        report: e.to_string(),
    })?;
    let hosts = others
        .iter()
        .enumerate()
        .map(|(i, o)| format!("#   HOST_{}: {o}\n", i + 1))
        .collect::<String>();
    let out = format!(
        "# Written by `volley import {file}`: {} requests in the order recorded, with the \
         pauses between them.\n# BASE_URL: {main}{}\n{hosts}{yaml}",
        entries.len(),
        if hosts.is_empty() {
            ""
        } else {
            "; the other hosts:"
        },
    );
    // What is written must load: checked here, not left to the user's first run.
    crate::scenario::load_str(file, &out).map_err(|report| ImportError::Invalid {
        file: file.to_owned(),
        report: report.to_string(),
    })?;
    Ok(out)
}

/// An entry as a request step.
fn request(entry: &Entry, url: &url::Url, main: &str, others: &[&String]) -> WrittenRequest {
    let origin = url.origin().ascii_serialization();
    let mut target = url.path().to_owned();
    if let Some(q) = url.query() {
        target.push('?');
        target.push_str(q);
    }
    let path = if origin == main {
        target.clone()
    } else {
        let n = others.iter().position(|o| **o == origin).unwrap_or(0) + 1;
        format!("${{HOST_{n}:-{origin}}}{target}")
    };
    let mut headers = BTreeMap::new();
    for h in &entry.request.headers {
        if kept(&h.name) {
            headers.insert(canonical(&h.name), h.value.clone());
        }
    }
    let (mut body, mut form) = (None, BTreeMap::new());
    if let Some(post) = &entry.request.post_data {
        if post
            .mime_type
            .starts_with("application/x-www-form-urlencoded")
        {
            form = match &post.text {
                Some(text) if post.params.is_empty() => form_urlencoded::parse(text.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect(),
                _ => post
                    .params
                    .iter()
                    .map(|p| (p.name.clone(), p.value.clone()))
                    .collect(),
            };
            headers.remove("Content-Type");
        } else {
            body = post.text.clone();
        }
    }
    let status = entry.response.status;
    WrittenRequest {
        name: format!("{} {}", entry.request.method, url.path()),
        method: entry.request.method.clone(),
        path,
        headers,
        body,
        form,
        status: (!((200..300).contains(&status) || status == 304 || status == 0))
            .then(|| vec![status]),
    }
}

/// `content-type` as `Content-Type`: HTTP/2 recordings have their names in lower case.
fn canonical(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(at: &str, time: u32, method: &str, url: &str, extra: &str) -> String {
        format!(
            r#"{{"startedDateTime": "{at}", "time": {time},
               "request": {{"method": "{method}", "url": "{url}", "headers": [] {extra}}},
               "response": {{"status": 200, "content": {{"mimeType": "text/html"}}}}}}"#
        )
    }

    fn har(entries: &[String]) -> String {
        format!(r#"{{"log": {{"entries": [{}]}}}}"#, entries.join(","))
    }

    /// The host of most requests is `baseUrl`, another host an absolute URL named `HOST_1`;
    /// a form body is `form`; `--keep-static` keeps a script; entries recorded out of order
    /// are put in the order they started; a status other than 2xx is the request's.
    ///
    /// Catches: the first host taken as `baseUrl` whatever the counts, another host's path
    /// sent to `baseUrl`, a form sent as text, the static filter on when asked off, the
    /// file's order kept over the times.
    #[test]
    fn hosts_forms_statics_and_order() {
        let text = har(&[
            entry("2026-12-04T10:00:00.000Z", 10, "GET", "https://cdn.example.com/app.js", ""),
            entry("2026-12-04T10:00:00.200Z", 10, "GET", "http://shop.test:8080/b", ""),
            entry("2026-12-04T10:00:00.100Z", 10, "GET", "http://shop.test:8080/a?x=1", ""),
            entry(
                "2026-12-04T10:00:01.000Z",
                10,
                "POST",
                "https://api.example.com/login",
                r#", "postData": {"mimeType": "application/x-www-form-urlencoded", "text": "user=ada&pass=x%26y"}"#,
            ),
        ])
        .replace(
            r#""url": "http://shop.test:8080/b", "headers": [] },
               "response": {"status": 200"#,
            r#""url": "http://shop.test:8080/b", "headers": [] },
               "response": {"status": 302"#,
        );
        let yaml = import("t.har", &text, &Options::default()).unwrap();
        assert!(
            yaml.contains("baseUrl: ${BASE_URL:-http://shop.test:8080}"),
            "{yaml}"
        );
        assert!(
            yaml.contains("path: ${HOST_1:-https://api.example.com}/login"),
            "{yaml}"
        );
        assert!(
            yaml.contains("pass: x&y") && yaml.contains("user: ada"),
            "{yaml}"
        );
        assert!(!yaml.contains("app.js"), "{yaml}");
        assert!(yaml.find("path: /a?x=1").unwrap() < yaml.find("path: /b").unwrap());
        assert!(yaml.contains("status:\n      - 302"), "{yaml}");
        let kept = Options {
            keep_static: true,
            ..Options::default()
        };
        let yaml = import("t.har", &text, &kept).unwrap();
        assert!(
            yaml.contains("${HOST_2:-https://cdn.example.com}/app.js")
                || yaml.contains("${HOST_1:-https://cdn.example.com}/app.js"),
            "{yaml}"
        );
    }

    /// A file that is no HAR, and one with nothing left to import, are errors naming the file.
    #[test]
    fn what_cannot_be_imported_is_said() {
        let e = import("t.har", "{}", &Options::default()).unwrap_err();
        assert!(e.to_string().starts_with("t.har is not a HAR file"), "{e}");
        let only_css = har(&[entry(
            "2026-12-04T10:00:00.000Z",
            1,
            "GET",
            "http://a.test/s.css",
            "",
        )]);
        let e = import("t.har", &only_css, &Options::default()).unwrap_err();
        assert!(e.to_string().contains("--keep-static"), "{e}");
    }
}
