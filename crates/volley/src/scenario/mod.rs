//! The scenario file: what to send, by how many users, for how long.

use std::collections::BTreeMap;

use ferrowizard_config::{
    Config, ConfigError, Duration, ErrorKind, Node, Size, Value, positive_duration, validated_by,
};

mod checks;
mod stream;

pub use checks::{HeaderCheck, JsonCheck, JsonPath, JsonPathCheck, Part, Pattern, Save, SaveFrom};
use checks::{valid_target, valid_template_opt, valid_templates};
pub use stream::{Await, MessageCheck, SseStep, WsStep};

/// A load test.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct Simulation {
    /// The target, e.g. `http://127.0.0.1:8080` or `https://example.com`; a path in it
    /// (`http://host/api`) is put in front of every request's path, as Gatling's
    /// `baseUrl` does.
    #[config(custom(http_url))]
    pub base_url: String,
    /// HTTP settings.
    pub http: HttpSettings,
    /// Threads that generate load; 0 means one per core. On a machine shared with the
    /// target, 1 leaves the target its share (as `wrk -t1` does).
    pub threads: usize,
    /// How often the console block is printed.
    #[config(default = Duration::seconds(5))]
    pub console_interval: Duration,
    /// The run stops after this long whatever the injection says (always bounded).
    #[config(default = Duration::minutes(10), custom(positive_duration))]
    pub max_duration: Duration,
    /// The scenarios, run side by side.
    #[config(length(min = 1))]
    pub scenarios: Vec<Scenario>,
    /// Limits the rate of requests of all users together, one step after the other; the
    /// last rate holds to the end.
    pub throttle: Vec<ThrottleStep>,
    /// Checked at the end; any failure makes the exit code 2.
    pub assertions: Vec<crate::assertions::Assertion>,
    /// The response time distribution's bounds (ms), Gatling's 800 and 1200 by default.
    #[config(default = [800, 1200])]
    pub distribution_bounds: [u64; 2],
    /// A closed model's correction for coordinated omission (its users wait for the
    /// server, so a stall holds back the requests they would have sent): `average` adds,
    /// for a response longer than the average interval between a slot's sends of that
    /// request step, the responses that interval would have sent meanwhile (HdrHistogram's
    /// expected-interval correction); `minimum` takes the shortest interval instead;
    /// `off` keeps the times as measured. Open-model and throttled requests need none:
    /// they are timed from when they were due.
    #[config(default = CoordinatedOmission::Average)]
    pub coordinated_omission: CoordinatedOmission,
}

impl Simulation {
    /// Whether its times are corrected for coordinated omission: a closed model's users
    /// (`constantConcurrentUsers`, `rampConcurrentUsers`) unthrottled, under any
    /// `coordinatedOmission` but `off`. Open-model and throttled requests are timed from when
    /// they were due and need none.
    ///
    /// ```
    /// let yaml = |injection: &str| {
    ///     format!(
    ///         "baseUrl: http://127.0.0.1:1\nscenarios:\n  - name: s\n    \
    ///          injection: [{injection}]\n    steps:\n      - request: {{name: r, path: /}}\n"
    ///     )
    /// };
    /// let closed = yaml("{constantConcurrentUsers: 2, during: 1s}");
    /// let open = yaml("{constantUsersPerSec: 2, during: 1s}");
    /// assert!(volley::scenario::load_str("s.yaml", &closed).unwrap().corrects_omission());
    /// assert!(!volley::scenario::load_str("s.yaml", &open).unwrap().corrects_omission());
    /// ```
    pub fn corrects_omission(&self) -> bool {
        self.coordinated_omission != CoordinatedOmission::Off
            && self.throttle.is_empty()
            && self.scenarios.iter().any(|s| {
                s.injection.iter().any(|i| {
                    i.constant_concurrent_users.is_some() || i.ramp_concurrent_users.is_some()
                })
            })
    }
}

/// `coordinatedOmission:`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CoordinatedOmission {
    /// The user's average interval between sends.
    #[default]
    Average,
    /// The user's shortest interval between sends.
    Minimum,
    /// No correction.
    Off,
}

impl CoordinatedOmission {
    /// As written in a scenario.
    pub fn name(self) -> &'static str {
        match self {
            CoordinatedOmission::Average => "average",
            CoordinatedOmission::Minimum => "minimum",
            CoordinatedOmission::Off => "off",
        }
    }
}

fn http_url(url: &str, _: &()) -> garde::Result {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    let authority = rest.map(|r| r.split('/').next().unwrap_or_default());
    if url.contains(['?', '#']) {
        Err(garde::Error::new(
            "must not hold a query or fragment (put them in each request's path)",
        ))
    } else if authority.is_some_and(|a| a.contains('@')) {
        Err(garde::Error::new(
            "must not hold a user name or password (they would be sent as the host); send \
             credentials in a header, e.g. http.headers: {Authorization: ...}",
        ))
    } else if rest.is_some_and(|r| !r.is_empty()) {
        Ok(())
    } else {
        Err(garde::Error::new(
            "must be an http:// or https:// URL such as http://127.0.0.1:8080",
        ))
    }
}

/// Rules of the tree before it is read: `http.version` written as a number (`2`, `1.1`) is
/// the version's name; `http.tls` acts on an `https://` target only, so with an `http://`
/// one it is refused rather than ignored, as `tls.caFile` is beside `tls.insecure: true`.
fn http_rules(root: &mut Node, errors: &mut Vec<ConfigError>) {
    let https = matches!(
        root.get("baseUrl").map(|n| &n.value),
        Some(Value::Str(url)) if url.starts_with("https://")
    );
    let Some(http) = root.get_mut("http") else {
        return;
    };
    if let Some(version) = http.get_mut("version") {
        let name = match version.value {
            Value::UInt(n) => Some(n.to_string()),
            Value::Float(f) => Some(f.to_string()),
            _ => None,
        };
        if let Some(name) = name {
            version.value = Value::Str(name);
        }
    }
    if let Some(tls) = http.get_mut("tls")
        && tls.get("insecure").is_some_and(|n| match &n.value {
            Value::Bool(b) => *b,
            Value::Str(t) => t.eq_ignore_ascii_case("true"),
            _ => false,
        })
        && let Some((key, ca)) = tls.remove("caFile")
    {
        errors.push(ConfigError::new(
            key.origin,
            ca.written_at
                .unwrap_or_else(|| "http.tls.caFile".to_owned()),
            ErrorKind::Invalid(
                "caFile has no effect with insecure: true, which accepts any certificate: \
                 remove one of them"
                    .to_owned(),
            ),
        ));
    }
    if !https && let Some((key, tls)) = http.remove("tls") {
        errors.push(ConfigError::new(
            key.origin,
            tls.written_at.unwrap_or_else(|| "http.tls".to_owned()),
            ErrorKind::Invalid(
                "tls applies to an https:// baseUrl only, and this one is not: use https:// or \
                 remove http.tls"
                    .to_owned(),
            ),
        ));
    }
}

/// `http:`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct HttpSettings {
    /// Connecting may take this long, and the TLS handshake after it as long again.
    #[config(default = Duration::seconds(5))]
    pub connect_timeout: Duration,
    /// A request (send to last byte received) may take this long; then it is KO.
    #[config(default = Duration::seconds(60))]
    pub request_timeout: Duration,
    /// Reuse connections.
    #[config(default = true)]
    pub keep_alive: bool,
    /// Connections open at once, across every user: a user that needs one while all
    /// are open waits for one to close (under `shareConnections`, or for an idle one),
    /// and the wait counts in its response time (and toward `requestTimeout`).
    #[config(default = 1000, range(min = 1))]
    pub max_connections: usize,
    /// Headers sent with every request.
    pub headers: BTreeMap<String, String>,
    /// Each HTTP/1.1 connection's fixed read buffer, and each WebSocket's. Every user holds
    /// a connection, so this is what 10,000 users cost in memory; a response whose head
    /// (status line and headers) does not fit in it is KO. Bodies and messages of any length
    /// are read through it.
    #[config(default = Size::kibibytes(2), custom(read_buffer_fits))]
    pub read_buffer: Size,
    /// `1.1`, or `2` for HTTP/2: negotiated by ALPN with an `https://` target (which may
    /// still choose HTTP/1.1), spoken with prior knowledge (h2c) to an `http://` one.
    #[config(default = HttpVersion::Http1)]
    pub version: HttpVersion,
    /// One pool of connections shared by every user, as Gatling's `shareConnections`
    /// (a server's view of a few clients behind a proxy), instead of a connection per
    /// user (a browser each). HTTP/1.1 users take an idle connection or open one, up to
    /// `maxConnections`; HTTP/2 users multiplex their requests on one connection.
    pub share_connections: bool,
    /// TLS for an `https://` target.
    pub tls: TlsSettings,
}

/// `http.version:`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum HttpVersion {
    /// HTTP/1.1.
    #[default]
    #[serde(rename = "1.1")]
    Http1,
    /// HTTP/2.
    #[serde(rename = "2")]
    Http2,
}

/// `http.tls:`: whom an `https://` target's certificate must be signed by. The server
/// name checked is the host of `baseUrl`, sent by SNI when it is a name (an IP address
/// is checked against the certificate's IP addresses and not sent).
#[derive(Clone, Debug, PartialEq, Config)]
pub struct TlsSettings {
    /// A PEM file of the CA certificates to trust instead of the system's.
    pub ca_file: Option<std::path::PathBuf>,
    /// Accept any certificate, for a test server's self-signed one (the handshake is
    /// still encrypted; nobody is authenticated).
    pub insecure: bool,
}

/// The smallest read buffer: smaller, and no ordinary response head fits.
pub const MIN_READ_BUFFER: Size = Size::bytes(512);

fn read_buffer_fits(size: &Size, _: &()) -> garde::Result {
    if *size < MIN_READ_BUFFER {
        Err(garde::Error::new(format!(
            "must be at least {MIN_READ_BUFFER} (a response's status line and headers must fit)"
        )))
    } else if usize::try_from(size.to_bytes()).is_err() {
        Err(garde::Error::new("is larger than this machine can address"))
    } else {
        Ok(())
    }
}

/// One scenario: a name, who comes and when, and what each user does.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct Scenario {
    /// Shown in the console ("Realtime interface").
    #[config(length(min = 1))]
    pub name: String,
    /// When users arrive, one step after the other.
    #[config(length(min = 1))]
    pub injection: Vec<Injection>,
    /// What each user does.
    #[config(length(min = 1))]
    pub steps: Vec<Step>,
}

/// One injection step: exactly one of the Gatling forms, with `during`/`to` as they need.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Injection {
    /// Open model: this many users at once.
    pub at_once_users: Option<u32>,
    /// Open model: this many users spread evenly over `during`.
    pub ramp_users: Option<u32>,
    /// Open model: this many new users a second for `during`.
    pub constant_users_per_sec: Option<f64>,
    /// Open model: from this rate to `to` over `during`.
    pub ramp_users_per_sec: Option<f64>,
    /// The end of a ramp: the rate of `rampUsersPerSec`, the users of `rampConcurrentUsers`.
    pub to: Option<f64>,
    /// Open model: wait this long.
    pub nothing_for: Option<Duration>,
    /// Closed model: keep this many users running for `during`.
    pub constant_concurrent_users: Option<u32>,
    /// Closed model: from this many users running to `to` over `during`, linearly (up or
    /// down).
    pub ramp_concurrent_users: Option<u32>,
    /// How long the step lasts.
    pub during: Option<Duration>,
    /// Each arrival at a random moment of its own slot of the rate (the count stays exact,
    /// the spacing is jittered; seeded, so a run repeats) instead of at the slot's start.
    /// For `constantUsersPerSec` and `rampUsersPerSec`.
    pub randomized: bool,
}

/// One throttle step: exactly one of `reachRps` (with `in`), `jumpToRps`, `holdFor`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ThrottleStep {
    /// Ramp linearly to this many requests a second over `in`.
    pub reach_rps: Option<f64>,
    /// The ramp's length.
    #[serde(rename = "in")]
    pub within: Option<Duration>,
    /// Change to this rate at once.
    pub jump_to_rps: Option<f64>,
    /// Keep the current rate this long.
    pub hold_for: Option<Duration>,
}

validated_by!(ThrottleStep, step);

/// A throttle step, validated: `(start rate, end rate, length)` segments are built from these.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Throttle {
    /// Ramp to a rate over a length.
    Reach(f64, std::time::Duration),
    /// Jump to a rate.
    Jump(f64),
    /// Hold for a length.
    Hold(std::time::Duration),
}

impl ThrottleStep {
    /// The step, or what is wrong with it.
    pub fn step(&self) -> Result<Throttle, String> {
        let ok = |r: f64| {
            if r.is_finite() && r >= 0.0 {
                Ok(r)
            } else {
                Err(format!("{r} is not a rate"))
            }
        };
        match (self.reach_rps, self.jump_to_rps, self.hold_for) {
            (Some(r), None, None) => Ok(Throttle::Reach(
                ok(r)?,
                self.within.ok_or("reachRps needs `in`")?.get(),
            )),
            (None, Some(r), None) if self.within.is_none() => Ok(Throttle::Jump(ok(r)?)),
            (None, None, Some(d)) if self.within.is_none() => Ok(Throttle::Hold(d.get())),
            _ => Err("give exactly one of reachRps (with in), jumpToRps, holdFor".into()),
        }
    }
}

/// The shape of an injection step, once validated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    /// Users at once.
    AtOnce(u32),
    /// Users spread over a duration.
    Ramp(u32, std::time::Duration),
    /// A rate from `.0` to `.1` users a second over a duration.
    Rate(f64, f64, std::time::Duration),
    /// A pause.
    Nothing(std::time::Duration),
    /// Concurrent users for a duration.
    Concurrent(u32, std::time::Duration),
    /// Concurrent users going linearly from `.0` to `.1` over a duration.
    RampConcurrent(u32, u32, std::time::Duration),
}

impl Injection {
    /// The step's shape, or what is wrong with it.
    pub fn shape(&self) -> Result<Shape, String> {
        let during = self.during.map(Duration::get);
        let need = |what: &str| during.ok_or_else(|| format!("{what} needs `during`"));
        let set = [
            self.at_once_users.is_some(),
            self.ramp_users.is_some(),
            self.constant_users_per_sec.is_some(),
            self.ramp_users_per_sec.is_some(),
            self.nothing_for.is_some(),
            self.constant_concurrent_users.is_some(),
            self.ramp_concurrent_users.is_some(),
        ];
        if set.iter().filter(|s| **s).count() != 1 {
            return Err("give exactly one of atOnceUsers, rampUsers, constantUsersPerSec, rampUsersPerSec, nothingFor, constantConcurrentUsers, rampConcurrentUsers".into());
        }
        if self.randomized
            && self.constant_users_per_sec.is_none()
            && self.ramp_users_per_sec.is_none()
        {
            return Err(
                "randomized applies to constantUsersPerSec and rampUsersPerSec (arrivals at a \
                 rate), not to this step"
                    .into(),
            );
        }
        let rate_ok = |r: f64| {
            if r.is_finite() && r >= 0.0 {
                Ok(r)
            } else {
                Err(format!("{r} is not a rate"))
            }
        };
        Ok(if let Some(n) = self.at_once_users {
            Shape::AtOnce(n)
        } else if let Some(n) = self.ramp_users {
            Shape::Ramp(n, need("rampUsers")?)
        } else if let Some(r) = self.constant_users_per_sec {
            let r = rate_ok(r)?;
            Shape::Rate(r, r, need("constantUsersPerSec")?)
        } else if let Some(r) = self.ramp_users_per_sec {
            let to = rate_ok(self.to.ok_or("rampUsersPerSec needs `to`")?)?;
            Shape::Rate(rate_ok(r)?, to, need("rampUsersPerSec")?)
        } else if let Some(d) = self.nothing_for {
            Shape::Nothing(d.get())
        } else if let Some(from) = self.ramp_concurrent_users {
            let to = self.to.ok_or("rampConcurrentUsers needs `to`")?;
            if !(to.is_finite() && to >= 0.0 && to.fract() == 0.0 && to <= f64::from(u32::MAX)) {
                return Err(format!(
                    "`to` of rampConcurrentUsers must be a number of users, not {to}"
                ));
            }
            Shape::RampConcurrent(from, to as u32, need("rampConcurrentUsers")?)
        } else {
            Shape::Concurrent(
                self.constant_concurrent_users.unwrap_or(0),
                need("constantConcurrentUsers")?,
            )
        })
    }
}

validated_by!(Injection, shape);

/// One step of a user: exactly one of `request`, `ws`, `sse`, `pause`, `repeat`, `feed`,
/// `if`, `randomSwitch`, `during`, `group`, `tryMax`, `asLongAs`, `foreach`,
/// `exitBlockOnFail`, `exitHereIfFailed`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Step {
    /// Send a request.
    pub request: Option<Request>,
    /// Act on the user's WebSocket: connect, send, await messages, close.
    pub ws: Option<Box<WsStep>>,
    /// Act on the user's event stream: connect, await events, close.
    pub sse: Option<Box<SseStep>>,
    /// Wait: `100ms`, or `{min: 100ms, max: 500ms}` for a uniform random pause.
    pub pause: Option<Pause>,
    /// Do `steps` `times` times.
    pub repeat: Option<Box<Repeat>>,
    /// Take the next record of a feeder (a CSV or JSON file) into the user's session (its
    /// columns or keys become `${column}` variables).
    pub feed: Option<Feed>,
    /// Run `then` when a session variable exists (or has a value), `else` otherwise.
    #[serde(rename = "if")]
    pub when: Option<Box<If>>,
    /// Run one branch picked at random by weight (percent); past the weights' sum, none
    /// (the user goes on with the next step).
    pub random_switch: Option<Vec<Branch>>,
    /// Run `steps` over and over for `duration`.
    pub during: Option<Box<During>>,
    /// Run `steps` as a group: timed as a whole, its requests named under it.
    pub group: Option<Box<Group>>,
    /// Run `steps` again, up to `times` in all, while a request in them is KO.
    pub try_max: Option<Box<TryMax>>,
    /// Run `steps` over and over while a session variable exists (or has a value).
    pub as_long_as: Option<Box<AsLongAs>>,
    /// Run `steps` once for each item of a list a session variable holds.
    pub foreach: Option<Box<Foreach>>,
    /// Run `steps`, leaving them at the first KO request.
    pub exit_block_on_fail: Option<Box<Block>>,
    /// `true`: the user stops here if one of its requests so far was KO.
    pub exit_here_if_failed: Option<bool>,
}

impl Step {
    /// The step lists nested in this step: a `repeat`'s, an `if`'s two, each `randomSwitch`
    /// branch's, a `during`'s.
    pub fn nested(&self) -> Vec<&[Step]> {
        let mut lists: Vec<&[Step]> = Vec::new();
        if let Some(r) = &self.repeat {
            lists.push(&r.steps);
        }
        if let Some(w) = &self.when {
            lists.push(&w.then);
            lists.push(&w.otherwise);
        }
        if let Some(branches) = &self.random_switch {
            lists.extend(branches.iter().map(|b| b.steps.as_slice()));
        }
        if let Some(d) = &self.during {
            lists.push(&d.steps);
        }
        if let Some(g) = &self.group {
            lists.push(&g.steps);
        }
        if let Some(t) = &self.try_max {
            lists.push(&t.steps);
        }
        if let Some(a) = &self.as_long_as {
            lists.push(&a.steps);
        }
        if let Some(f) = &self.foreach {
            lists.push(&f.steps);
        }
        if let Some(b) = &self.exit_block_on_fail {
            lists.push(&b.steps);
        }
        lists
    }
}

impl garde::Validate for Step {
    type Context = ();

    fn validate_into(
        &self,
        ctx: &(),
        parent: &mut dyn FnMut() -> garde::Path,
        report: &mut garde::Report,
    ) {
        let n = [
            self.request.is_some(),
            self.ws.is_some(),
            self.sse.is_some(),
            self.pause.is_some(),
            self.repeat.is_some(),
            self.feed.is_some(),
            self.when.is_some(),
            self.random_switch.is_some(),
            self.during.is_some(),
            self.group.is_some(),
            self.try_max.is_some(),
            self.as_long_as.is_some(),
            self.foreach.is_some(),
            self.exit_block_on_fail.is_some(),
            self.exit_here_if_failed.is_some(),
        ]
        .iter()
        .filter(|x| **x)
        .count();
        if n != 1 {
            report.append(
                parent(),
                garde::Error::new(
                    "give exactly one of request, ws, sse, pause, repeat, feed, if, randomSwitch, \
                     during, group, tryMax, asLongAs, foreach, exitBlockOnFail, exitHereIfFailed",
                ),
            );
        }
        if let Some(r) = &self.request {
            r.validate_into(ctx, &mut || parent().join("request"), report);
        }
        if let Some(w) = &self.ws {
            w.validate_into(ctx, &mut || parent().join("ws"), report);
        }
        if let Some(e) = &self.sse {
            e.validate_into(ctx, &mut || parent().join("sse"), report);
        }
        if let Some(r) = &self.repeat {
            r.validate_into(ctx, &mut || parent().join("repeat"), report);
        }
        if let Some(w) = &self.when {
            w.validate_into(ctx, &mut || parent().join("if"), report);
        }
        if let Some(d) = &self.during {
            d.validate_into(ctx, &mut || parent().join("during"), report);
        }
        if let Some(g) = &self.group {
            g.validate_into(ctx, &mut || parent().join("group"), report);
        }
        if let Some(t) = &self.try_max {
            t.validate_into(ctx, &mut || parent().join("tryMax"), report);
        }
        if let Some(a) = &self.as_long_as {
            a.validate_into(ctx, &mut || parent().join("asLongAs"), report);
        }
        if let Some(f) = &self.foreach {
            f.validate_into(ctx, &mut || parent().join("foreach"), report);
        }
        if let Some(b) = &self.exit_block_on_fail {
            b.validate_into(ctx, &mut || parent().join("exitBlockOnFail"), report);
        }
        if let Some(branches) = &self.random_switch {
            let path = &mut || parent().join("randomSwitch");
            if branches.is_empty() {
                report.append(path(), garde::Error::new("give at least one branch"));
            }
            let sum: f64 = branches.iter().map(|b| b.weight).sum();
            if sum > 100.0 + 1e-9 {
                report.append(
                    path(),
                    garde::Error::new(format!(
                        "the weights add up to {sum}: at most 100 (percent; the rest falls through)"
                    )),
                );
            }
            for (i, b) in branches.iter().enumerate() {
                b.validate_into(ctx, &mut || path().join(i), report);
            }
        }
        if self.exit_here_if_failed == Some(false) {
            report.append(
                parent().join("exitHereIfFailed"),
                garde::Error::new("false does nothing: give true, or remove the step"),
            );
        }
    }
}

/// `if:`: Gatling's `doIf`/`doIfEquals`, with an `else`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct If {
    /// The session variable looked at.
    #[config(length(min = 1))]
    pub variable: String,
    /// Absent: the condition is that the variable exists. Given (`${...}` filled in):
    /// that it has this value.
    #[config(custom(valid_template_opt))]
    pub equals: Option<String>,
    /// The steps run when the condition holds.
    pub then: Vec<Step>,
    /// The steps run when it does not.
    #[config(rename = "else")]
    pub otherwise: Vec<Step>,
}

/// One branch of `randomSwitch`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct Branch {
    /// Its chance in percent (above 0; the branches' weights add up to 100 at most).
    #[config(default = 0.0, custom(positive_weight))]
    pub weight: f64,
    /// Its steps.
    #[config(length(min = 1))]
    pub steps: Vec<Step>,
}

fn positive_weight(w: &f64, _: &()) -> garde::Result {
    if w.is_finite() && *w > 0.0 && *w <= 100.0 {
        Ok(())
    } else {
        Err(garde::Error::new(
            "must be above 0 and at most 100 (percent)",
        ))
    }
}

/// `during:`: Gatling's `during` with `exitASAP = false` (the time is looked at before
/// each pass, not between its steps).
#[derive(Clone, Debug, PartialEq, Config)]
pub struct During {
    /// How long: a pass of `steps` starts while less than this has passed since the loop
    /// began (a pass under way finishes).
    #[config(default = Duration::seconds(0), custom(positive_duration))]
    pub duration: Duration,
    /// What each pass does.
    #[config(length(min = 1))]
    pub steps: Vec<Step>,
}

/// `group:`: Gatling's `group`. Each execution is counted, OK unless one of its requests was
/// KO, with its cumulated response time (the sum of its requests', nested groups' included)
/// and its duration (first step to last, pauses included). Its requests are named under it,
/// `checkout / pay`; a group in it is `checkout / payment`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct Group {
    /// The group's name (`/` separates nested groups' names, so it holds none).
    #[config(length(min = 1), custom(valid_group_name))]
    pub name: String,
    /// Its steps.
    #[config(length(min = 1))]
    pub steps: Vec<Step>,
}

fn valid_group_name(name: &str, _: &()) -> garde::Result {
    if name.contains(" / ") {
        Err(garde::Error::new(
            "\" / \" separates nested groups' names: nest a group instead",
        ))
    } else {
        Ok(())
    }
}

/// `tryMax:`: Gatling's `tryMax`. The steps stop at their first KO request and start again,
/// `times` times in all; when a try gets through, the user is as it was before the KOs of the
/// tries before (not failed for `exitHereIfFailed`), and when none does, it goes on, failed.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct TryMax {
    /// Tries in all.
    #[config(default = 1, range(min = 1))]
    pub times: u32,
    /// What is tried.
    #[config(length(min = 1))]
    pub steps: Vec<Step>,
}

/// `asLongAs:`: Gatling's `asLongAs`: the steps run again and again while the condition
/// holds, looked at before each pass.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct AsLongAs {
    /// The session variable looked at: a pass starts while it exists.
    #[config(length(min = 1))]
    pub variable: String,
    /// Given (`${...}` filled in): while it has this value.
    #[config(custom(valid_template_opt))]
    pub equals: Option<String>,
    /// A session variable counting the passes from 0, if wanted.
    pub counter: Option<String>,
    /// What each pass does.
    #[config(length(min = 1))]
    pub steps: Vec<Step>,
}

/// `foreach:`: Gatling's `foreach`: the steps run once for each item of a list that a
/// session variable holds as a JSON array (what `save: {jsonPath, all: true}` keeps, or a
/// JSON feeder's array), the item in the variable `as`. A variable that holds no list is KO.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct Foreach {
    /// The session variable holding the list.
    #[config(length(min = 1))]
    pub items: String,
    /// The session variable each item goes in (a string without its quotes, anything else
    /// as JSON).
    #[config(rename = "as", length(min = 1))]
    pub item: String,
    /// A session variable counting the items from 0, if wanted.
    pub counter: Option<String>,
    /// What is done with each item.
    #[config(length(min = 1))]
    pub steps: Vec<Step>,
}

/// `exitBlockOnFail:`: Gatling's `exitBlockOnFail`: the steps stop at their first KO
/// request, and the user goes on after them (failed).
#[derive(Clone, Debug, PartialEq, Config)]
pub struct Block {
    /// The steps.
    #[config(length(min = 1))]
    pub steps: Vec<Step>,
}

/// A pause: fixed, or drawn from a distribution for each user each time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pause {
    /// Always this long.
    Fixed(Duration),
    /// Uniformly between `min` and `max`.
    Uniform {
        /// Shortest.
        min: Duration,
        /// Longest.
        max: Duration,
    },
    /// Exponentially distributed with this mean (the pauses between independent arrivals).
    Exponential(Duration),
    /// Normally distributed, a draw below zero counting as zero (as Gatling's).
    Normal {
        /// The mean.
        mean: Duration,
        /// The standard deviation.
        std_dev: Duration,
    },
}

/// `pause:` as a map: `{min, max}`, `{exponential: MEAN}` or
/// `{normal: {mean, stdDev}}`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct PauseForm {
    /// Uniform: the shortest.
    pub min: Option<Duration>,
    /// Uniform: the longest.
    pub max: Option<Duration>,
    /// Exponential: the mean.
    pub exponential: Option<Duration>,
    /// Normal: the mean and standard deviation.
    pub normal: Option<NormalPause>,
}

/// `pause: {normal: {mean, stdDev}}`: both required (a pause with neither would be none).
#[derive(Clone, Debug, PartialEq, Config)]
pub struct NormalPause {
    /// The mean.
    pub mean: Option<Duration>,
    /// The standard deviation.
    pub std_dev: Option<Duration>,
}

impl PauseForm {
    fn pause(self) -> Result<Pause, String> {
        match (self.min, self.max, self.exponential, self.normal) {
            (Some(min), Some(max), None, None) => {
                if min > max {
                    Err(format!("min {min} is longer than max {max}"))
                } else {
                    Ok(Pause::Uniform { min, max })
                }
            }
            (None, None, Some(mean), None) => Ok(Pause::Exponential(mean)),
            (None, None, None, Some(n)) => match (n.mean, n.std_dev) {
                (Some(mean), Some(std_dev)) => Ok(Pause::Normal { mean, std_dev }),
                _ => Err("a normal pause needs both mean and stdDev".into()),
            },
            (Some(_), None, None, None) | (None, Some(_), None, None) => {
                Err("a uniform pause needs both min and max".into())
            }
            _ => Err(
                "give one of {min, max} (uniform), exponential (its mean), normal: {mean, stdDev}"
                    .into(),
            ),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Pause {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Pause;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a duration such as 100ms, {min: 100ms, max: 500ms}, {exponential: 100ms} \
                     or {normal: {mean: 100ms, stdDev: 20ms}}",
                )
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Pause, E> {
                use serde::Deserialize;
                Duration::deserialize(serde::de::value::StrDeserializer::new(s)).map(Pause::Fixed)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Pause, A::Error> {
                use serde::Deserialize;
                PauseForm::deserialize(serde::de::value::MapAccessDeserializer::new(map))?
                    .pause()
                    .map_err(serde::de::Error::custom)
            }
        }
        d.deserialize_any(V)
    }
}

impl serde::Serialize for Pause {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut form = PauseForm::default();
        match *self {
            Pause::Fixed(d) => return d.serialize(s),
            Pause::Uniform { min, max } => {
                form.min = Some(min);
                form.max = Some(max);
            }
            Pause::Exponential(mean) => form.exponential = Some(mean),
            Pause::Normal { mean, std_dev } => {
                form.normal = Some(NormalPause {
                    mean: Some(mean),
                    std_dev: Some(std_dev),
                })
            }
        }
        form.serialize(s)
    }
}

impl Pause {
    /// How long to wait; `draw` gives uniform numbers in [0, 1).
    ///
    /// ```
    /// use volley::scenario::Pause;
    /// let p: Pause = serde_json::from_str(r#"{"exponential": "100ms"}"#).unwrap();
    /// let mean = (0..20_000).map(|_| p.length(fastrand::f64).as_secs_f64()).sum::<f64>() / 20_000.0;
    /// assert!((mean - 0.1).abs() < 0.01);
    /// ```
    pub fn length(&self, mut draw: impl FnMut() -> f64) -> std::time::Duration {
        match self {
            Pause::Fixed(d) => d.get(),
            Pause::Uniform { min, max } => {
                min.get() + (max.get() - min.get()).mul_f64(draw().clamp(0.0, 1.0))
            }
            Pause::Exponential(mean) => {
                // Inverse transform: 1 - u is in (0, 1], so the logarithm is finite.
                let u = 1.0 - draw().clamp(0.0, 1.0 - f64::EPSILON);
                std::time::Duration::try_from_secs_f64(mean.get().as_secs_f64() * -u.ln())
                    .unwrap_or(std::time::Duration::MAX)
            }
            Pause::Normal { mean, std_dev } => {
                // Box-Muller.
                let u1 = 1.0 - draw().clamp(0.0, 1.0 - f64::EPSILON);
                let u2 = draw();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let seconds = mean.get().as_secs_f64() + z * std_dev.get().as_secs_f64();
                std::time::Duration::try_from_secs_f64(seconds.max(0.0))
                    .unwrap_or(std::time::Duration::MAX)
            }
        }
    }
}

/// `feed:`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct Feed {
    /// The CSV file (with a header row), relative to the scenario file.
    #[config(length(min = 1))]
    pub file: String,
    /// `queue` (each record once; an empty feeder ends the user with a KO), `shuffle` (the
    /// same in random order), `random` (any record, any number of times), `circular`.
    #[config(default = FeedStrategy::Queue)]
    pub strategy: FeedStrategy,
}

/// How a feeder hands out records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FeedStrategy {
    /// In order, each once.
    Queue,
    /// In random order, each once.
    Shuffle,
    /// At random, with repeats.
    Random,
    /// In order, starting over at the end.
    Circular,
}

/// `repeat:`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct Repeat {
    /// How many times.
    #[config(default = 1)]
    pub times: u32,
    /// What.
    #[config(length(min = 1))]
    pub steps: Vec<Step>,
}

/// `request:`.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(check = Request::one_body)]
pub struct Request {
    /// The name statistics are kept under.
    #[config(length(min = 1))]
    pub name: String,
    /// GET, POST...
    #[config(default = "GET".to_owned())]
    pub method: String,
    /// The path after the base URL, or an absolute `http://` or `https://` URL (another
    /// host, on a connection of the user's own to it, with `http:`'s settings).
    #[config(custom(valid_target))]
    pub path: String,
    /// A body, `${...}` filled in.
    #[config(custom(valid_template_opt))]
    pub body: Option<String>,
    /// A body read from this file (relative to the scenario file, read once), `${...}`
    /// filled in for each request.
    pub body_file: Option<String>,
    /// Form parameters sent as `application/x-www-form-urlencoded` (values `${...}` filled
    /// in), in order of their names.
    #[config(custom(valid_templates))]
    pub form: BTreeMap<String, String>,
    /// Parts sent as `multipart/form-data`.
    pub multipart: Vec<Part>,
    /// Headers of this request.
    #[config(custom(valid_templates))]
    pub headers: BTreeMap<String, String>,
    /// Statuses that count as OK; absent: 2xx and 304, as in Gatling.
    pub status: Option<Vec<u16>>,
    /// The body must contain this text.
    #[config(custom(valid_template_opt))]
    pub body_contains: Option<String>,
    /// The body must match this regular expression.
    pub body_matches: Option<Pattern>,
    /// A response header must contain a text.
    pub header: Option<HeaderCheck>,
    /// A value of the JSON body must exist, or equal a text.
    pub json: Option<JsonCheck>,
    /// A JSONPath over the JSON body must find something: a first value of a text, or a
    /// number of values.
    pub json_path: Option<JsonPathCheck>,
    /// Keep a value of the response (a JSON pointer's, a JSONPath's, a header's, a regular
    /// expression's first group) for later requests.
    pub save: Option<Save>,
}

impl Request {
    fn one_body(&self) -> Result<(), ferrowizard_config::Invalid> {
        let bodies = [
            self.body.is_some(),
            self.body_file.is_some(),
            !self.form.is_empty(),
            !self.multipart.is_empty(),
        ];
        if bodies.iter().filter(|b| **b).count() > 1 {
            return Err(ferrowizard_config::Invalid::new(
                "give at most one of body, bodyFile, form, multipart",
            ));
        }
        Ok(())
    }
}

/// Loads and validates a scenario file, with `--set` overrides.
///
/// `${NAME}` in capitals is an environment variable, substituted when the file is loaded
/// (`${TARGET:-http://127.0.0.1:8080}`); any other `${name}` is a session variable of the
/// user (a feeder's column or a saved value), filled in for each request.
pub fn load(
    path: &std::path::Path,
    overrides: &[String],
) -> Result<Simulation, ferrowizard_config::Report> {
    loader(overrides).load_file(path)
}

/// [`load`] from text; `source` names it in errors.
///
/// ```
/// let simulation = volley::scenario::load_str(
///     "inline.yaml",
///     "baseUrl: https://127.0.0.1:8443\nhttp: {version: 2, tls: {insecure: true}}\n\
///      scenarios: [{name: s, injection: [{atOnceUsers: 1}], steps: [{request: {name: r, path: /}}]}]\n",
/// )
/// .unwrap();
/// assert_eq!(simulation.http.version, volley::scenario::HttpVersion::Http2);
/// ```
pub fn load_str(source: &str, text: &str) -> Result<Simulation, ferrowizard_config::Report> {
    loader(&[]).load_str(source, text)
}

fn loader(overrides: &[String]) -> ferrowizard_config::Loader<'static> {
    ferrowizard_config::Loader::new()
        .transform(http_rules)
        .lookup(|name| {
            if name.chars().any(|c| c.is_ascii_lowercase()) {
                Some(format!("${{{name}}}"))
            } else {
                std::env::var(name).ok()
            }
        })
        .overrides(overrides.to_vec())
}

#[cfg(test)]
mod tests {
    use super::Pause;
    use ferrowizard_config::Duration;

    /// The mean and standard deviation of `n` draws of `pause`, in milliseconds.
    fn moments(pause: Pause, n: usize) -> (f64, f64, f64) {
        let mut rng = fastrand::Rng::with_seed(20261202);
        let draws: Vec<f64> = (0..n)
            .map(|_| pause.length(|| rng.f64()).as_secs_f64() * 1000.0)
            .collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / n as f64;
        let zeros = draws.iter().filter(|d| **d == 0.0).count() as f64 / n as f64;
        (mean, var.sqrt(), zeros)
    }

    /// Catches: an exponential drawn with the rate for the mean (or `ln(u)` of a possible
    /// 0), a normal's deviation ignored or its negative draws kept, a uniform's bounds.
    #[test]
    fn pause_distributions_have_their_means_and_spreads() {
        let ms = Duration::milliseconds;
        let (mean, sd, _) = moments(Pause::Exponential(ms(100)), 200_000);
        assert!((mean - 100.0).abs() < 5.0, "exponential mean {mean}");
        assert!((sd - 100.0).abs() < 5.0, "exponential deviation {sd}");
        let normal = Pause::Normal {
            mean: ms(100),
            std_dev: ms(20),
        };
        let (mean, sd, zeros) = moments(normal, 200_000);
        assert!((mean - 100.0).abs() < 5.0, "normal mean {mean}");
        assert!((sd - 20.0).abs() < 1.0, "normal deviation {sd}");
        assert_eq!(zeros, 0.0);
        // Truncated at zero: half of a normal centred on 0 is drawn as 0.
        let centred = Pause::Normal {
            mean: ms(0),
            std_dev: ms(20),
        };
        let (_, _, zeros) = moments(centred, 100_000);
        assert!((zeros - 0.5).abs() < 0.01, "{zeros} of the draws at 0");
        let uniform = Pause::Uniform {
            min: ms(50),
            max: ms(150),
        };
        let (mean, _, _) = moments(uniform, 100_000);
        assert!((mean - 100.0).abs() < 1.0, "uniform mean {mean}");
    }
}
