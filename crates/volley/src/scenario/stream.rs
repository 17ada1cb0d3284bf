//! `ws:` and `sse:` steps: a user's WebSocket and event stream, opened, used and closed as
//! Gatling's `ws(...)` and `sse(...)` do, with their messages awaited and checked.

use std::collections::BTreeMap;

use ferrowizard_config::{Config, Duration, Invalid, positive_duration};

use super::checks::{JsonCheck, Pattern, Save, valid_path, valid_template_opt, valid_templates};

/// `ws:`: one action on the user's WebSocket: `connect` (with an `await` after it, if any),
/// `send` (likewise), `await` alone, or `close`. Each is timed under `name`: a connect to
/// its answer (101), a send with an `await` to the last message awaited (the round trip),
/// an `await` alone from when it began, a close to the server's close frame. A send
/// without an `await` is not timed (nothing answers it).
#[derive(Clone, Debug, PartialEq, Config)]
#[config(check = WsStep::one_action)]
pub struct WsStep {
    /// The name statistics are kept under.
    #[config(length(min = 1))]
    pub name: String,
    /// Opens the user's socket at this path after `baseUrl` (`ws://` for an `http://`
    /// target, `wss://` for `https://`, with `http.tls`). A socket still open is dropped
    /// first (its connection closed).
    #[config(custom(valid_path_opt))]
    pub connect: Option<String>,
    /// Headers of the connect request (`${...}` filled in), beside `http.headers`.
    #[config(custom(valid_templates))]
    pub headers: BTreeMap<String, String>,
    /// Sends this text message (`${...}` filled in).
    #[config(custom(valid_template_opt))]
    pub send: Option<String>,
    /// Waits for messages: after the connect or the send in the same step, or on its own.
    #[config(rename = "await")]
    pub wait: Option<Await>,
    /// `true`: closes the socket (code 1000) and waits for the server's close.
    pub close: Option<bool>,
}

impl WsStep {
    fn one_action(&self) -> Result<(), Invalid> {
        let actions = [
            self.connect.is_some(),
            self.send.is_some(),
            self.close.is_some(),
        ];
        match actions.iter().filter(|a| **a).count() {
            0 if self.wait.is_some() => {}
            1 => {}
            _ => {
                return Err(Invalid::new(
                    "give one of connect, send, close (connect and send may have an await), or an await alone",
                ));
            }
        }
        shared_rules(
            self.close,
            self.wait.is_some(),
            &self.headers,
            self.connect.is_some(),
        )
    }
}

/// `sse:`: one action on the user's event stream: `connect` (a GET with `Accept:
/// text/event-stream`; with an `await` after it, if any), `await` alone, or `close`. A connect
/// is timed to the response's head, or with an `await` to the last event awaited; an
/// `await` alone from when it began.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(check = SseStep::one_action)]
pub struct SseStep {
    /// The name statistics are kept under.
    #[config(length(min = 1))]
    pub name: String,
    /// Opens the user's event stream at this path after `baseUrl`. A stream still open is
    /// dropped first (its connection closed).
    #[config(custom(valid_path_opt))]
    pub connect: Option<String>,
    /// Headers of the connect request (`${...}` filled in), beside `http.headers`.
    #[config(custom(valid_templates))]
    pub headers: BTreeMap<String, String>,
    /// Waits for events: after the connect in the same step, or on its own.
    #[config(rename = "await")]
    pub wait: Option<Await>,
    /// The type of the events awaited (their `event:` field; `message` for those without
    /// one); events of other types are skipped.
    pub event: Option<String>,
    /// `true`: closes the stream (its connection).
    pub close: Option<bool>,
}

impl SseStep {
    fn one_action(&self) -> Result<(), Invalid> {
        match (
            self.connect.is_some(),
            self.close.is_some(),
            self.wait.is_some(),
        ) {
            (true, false, _) | (false, false, true) | (false, true, _) => {}
            _ => {
                return Err(Invalid::new(
                    "give one of connect (with an await, if any), await, close",
                ));
            }
        }
        if self.event.is_some() && self.wait.is_none() {
            return Err(Invalid::at(
                "event",
                "the type of the events awaited: give it with an await",
            ));
        }
        shared_rules(
            self.close,
            self.wait.is_some(),
            &self.headers,
            self.connect.is_some(),
        )
    }
}

/// The rules `ws:` and `sse:` steps share: `close: true` alone, with no await after it, and
/// headers only on a connect.
fn shared_rules(
    close: Option<bool>,
    waits: bool,
    headers: &BTreeMap<String, String>,
    connects: bool,
) -> Result<(), Invalid> {
    if close == Some(false) {
        return Err(Invalid::at(
            "close",
            "false does nothing: give true, or remove the step",
        ));
    }
    if close.is_some() && waits {
        return Err(Invalid::at(
            "await",
            "nothing more comes once closed: await before the close",
        ));
    }
    if !headers.is_empty() && !connects {
        return Err(Invalid::at(
            "headers",
            "headers go with the connect request: give them in the step that connects",
        ));
    }
    Ok(())
}

/// `await:`: Gatling's `await(timeout)(checks)`: `messages` messages (or events) that
/// arrive after the step began, each checked. Messages that arrived before, and those that
/// `matching` skips, are not counted.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(check = Await::saves_from_the_body)]
pub struct Await {
    /// How many messages.
    #[config(default = 1, range(min = 1))]
    pub messages: u32,
    /// How long for all of them: past it, the step is KO.
    #[config(default = Duration::seconds(10), custom(positive_duration))]
    pub timeout: Duration,
    /// Only messages that pass these count; the others are skipped (Gatling's `matching`).
    pub matching: Option<MessageCheck>,
    /// Each message counted must pass these, or the step is KO.
    pub check: Option<MessageCheck>,
    /// Keeps a value of the last message counted (`jsonPointer` or `regex`).
    pub save: Option<Save>,
}

impl Await {
    fn saves_from_the_body(&self) -> Result<(), Invalid> {
        if self.save.as_ref().is_some_and(|s| s.header.is_some()) {
            return Err(Invalid::at(
                "save",
                "a message has no headers: save with jsonPointer or regex",
            ));
        }
        Ok(())
    }
}

/// Checks of a message's text (a WebSocket text message, an event's data).
#[derive(Clone, Debug, PartialEq, Config)]
pub struct MessageCheck {
    /// The text must contain this (`${...}` filled in).
    #[config(custom(valid_template_opt))]
    pub body_contains: Option<String>,
    /// The text must match this regular expression.
    pub body_matches: Option<Pattern>,
    /// A value of the text parsed as JSON must exist, or equal a text.
    pub json: Option<JsonCheck>,
}

fn valid_path_opt(p: &Option<String>, _: &()) -> garde::Result {
    p.as_deref().map_or(Ok(()), |p| valid_path(p, &()))
}
