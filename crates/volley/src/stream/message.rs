//! A message's checks (a WebSocket text message, an event's data) and the values kept from
//! it, in Gatling's words as a request's are.

use crate::scenario::{Await, MessageCheck};
use crate::session::{Response, Session, save_from};

/// `Some(why)` when `text` fails `c`.
pub fn fails(c: &MessageCheck, text: &str, session: &Session) -> Option<String> {
    if let Some(needle) = &c.body_contains
        && let Some(why) = crate::checks::check_contains(needle, text, session)
    {
        return Some(why);
    }
    if let Some(pattern) = &c.body_matches
        && let Some(why) = crate::checks::check_matches(pattern, text)
    {
        return Some(why);
    }
    if let Some(json) = &c.json {
        let parsed = serde_json::from_str::<serde_json::Value>(text).ok();
        return crate::checks::check_json(json, parsed.as_ref(), session);
    }
    None
}

/// Counts the messages an [`Await`] waits for: each is skipped (`matching` fails), counted,
/// or KO (`check` fails); the last counted is kept for `save`.
pub struct Awaiting<'a> {
    wait: &'a Await,
    counted: u32,
    last: Option<String>,
}

impl<'a> Awaiting<'a> {
    /// Waiting for `wait`'s messages.
    pub fn new(wait: &'a Await) -> Awaiting<'a> {
        Awaiting {
            wait,
            counted: 0,
            last: None,
        }
    }

    /// Takes one message; `Err(why)` when its check fails.
    pub fn take(&mut self, text: String, session: &Session) -> Result<(), String> {
        if let Some(m) = &self.wait.matching
            && fails(m, &text, session).is_some()
        {
            return Ok(());
        }
        if let Some(c) = &self.wait.check
            && let Some(why) = fails(c, &text, session)
        {
            return Err(why);
        }
        self.counted += 1;
        self.last = Some(text);
        Ok(())
    }

    /// Whether every message awaited has come.
    pub fn done(&self) -> bool {
        self.counted >= self.wait.messages
    }

    /// Why the wait ended early: `what` (the socket closed, the time ran out...).
    pub fn short(&self, what: &str) -> String {
        format!(
            "{what} after {} of {} messages awaited",
            self.counted, self.wait.messages
        )
    }

    /// Keeps `save`'s value from the last message counted.
    pub fn save(self, session: &mut Session) -> Result<(), String> {
        let (Some(s), Some(text)) = (&self.wait.save, &self.last) else {
            return Ok(());
        };
        let json = (s.json_pointer.is_some() || s.json_path.is_some())
            .then(|| serde_json::from_str::<serde_json::Value>(text).ok())
            .flatten();
        let headers = http::HeaderMap::new();
        let response = Response {
            headers: &headers,
            body: text.as_bytes(),
            json: json.as_ref(),
        };
        save_from(s, &response, session)
    }
}
