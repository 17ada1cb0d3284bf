//! Normalizes the layouts DropWizard users bring into the one model.
//!
//! The 2014 DropWizard logging report's file uses DropWizard 0.6's layout (`http:` with `port`/`adminPort` and
//! `requestLog.console.enabled`; `logging.console/file/syslog` with `enabled`). It is rewritten
//! here, on the tree, into the 4.x layout (`server.applicationConnectors`,
//! `logging.appenders`...), keeping every node's position and the path the user wrote, so that
//! an error in a 0.6 file still names the 0.6 key and line. A file mixing the two layouts is
//! an error that says so.

use ferrowizard_config::{ConfigError, ErrorKind, Node, Origin, Value, did_you_mean};

/// The 0.6 `http:` fields and what they become (relative to `server`), or `None` for the
/// fields handled specially.
const HTTP_FIELDS: &[(&str, Option<&str>)] = &[
    ("port", None),
    ("adminPort", None),
    ("bindHost", None),
    ("adminBindHost", None),
    ("requestLog", None),
    ("maxIdleTime", None),
    ("maxThreads", Some("maxThreads")),
    ("minThreads", Some("minThreads")),
    ("maxQueuedRequests", Some("maxQueuedRequests")),
    ("rootPath", Some("rootPath")),
    ("gzip", Some("gzip")),
    ("shutdownGracePeriod", Some("shutdownGracePeriod")),
    ("adminUsername", None),
    ("adminPassword", None),
];

/// The appender blocks of the 0.6 layout, and whether each is on when `enabled` is absent.
const LEGACY_APPENDERS: &[(&str, bool)] = &[("console", true), ("file", false), ("syslog", false)];

fn key_origin(root: &Node, key: &str) -> Origin {
    match &root.value {
        Value::Map(entries) => entries
            .iter()
            .find(|(k, _)| k.key_text() == key)
            .map(|(k, _)| k.origin.clone())
            .unwrap_or(Origin::Synthetic),
        _ => Origin::Synthetic,
    }
}

fn is_false(node: &Node) -> bool {
    matches!(&node.value, Value::Bool(false))
        || matches!(&node.value, Value::Str(s) if s.eq_ignore_ascii_case("false"))
}

/// The tree transform: run by [`crate::config::loader`] after overrides.
pub(crate) fn normalize(root: &mut Node, errors: &mut Vec<ConfigError>) {
    if !matches!(root.value, Value::Map(_)) {
        return;
    }
    if root.get("http").is_some() {
        if root.get("server").is_some() {
            errors.push(ConfigError::new(
                key_origin(root, "http"),
                "http",
                ErrorKind::Invalid(
                    "this file mixes DropWizard 0.6's `http:` with 4.x's `server:`; write one of them \
                     (`server:` is the current layout)"
                        .into(),
                ),
            ));
            root.remove("http");
        } else if let Some((_, http)) = root.remove("http") {
            let server = migrate_http(http, errors);
            push(root, "server", server);
        }
    }
    if let Some(logging) = root.get_mut("logging") {
        migrate_logging(logging, errors);
    }
    if let Some(server) = root.get_mut("server") {
        if matches!(server.value, Value::Null) {
            server.value = Value::Map(Vec::new());
        }
        if matches!(server.value, Value::Map(_)) && server.get("type").is_none() {
            // DropWizard's default server type.
            if let Value::Map(entries) = &mut server.value {
                entries.insert(0, (Node::string("type"), Node::string("default")));
            }
        }
    }
}

fn push(map: &mut Node, key: &str, value: Node) {
    if let Value::Map(entries) = &mut map.value {
        entries.push((Node::string(key), value));
    }
}

/// Turns the 0.6 `{console: {enabled, ...}, file: {...}, syslog: {...}}` blocks of `parent`
/// (written at `path`) into a 4.x `appenders` list, or `None` if `parent` has none.
fn legacy_appenders(parent: &mut Node, path: &str, errors: &mut Vec<ConfigError>) -> Option<Node> {
    let present = LEGACY_APPENDERS
        .iter()
        .any(|(k, _)| parent.get(k).is_some());
    if !present {
        return None;
    }
    if parent.get("appenders").is_some() {
        errors.push(ConfigError::new(
            key_origin(parent, "appenders"),
            format!("{path}.appenders"),
            ErrorKind::Invalid(format!(
                "this section mixes DropWizard 0.6's {path}.console/file/syslog with 4.x's {path}.appenders; write one of them"
            )),
        ));
        for (k, _) in LEGACY_APPENDERS {
            parent.remove(k);
        }
        return None;
    }
    let mut appenders = Vec::new();
    for (kind, on_by_default) in LEGACY_APPENDERS {
        let Some((key, mut block)) = parent.remove(kind) else {
            // 0.6 writes to the console unless told not to.
            if *on_by_default {
                appenders.push(Node::map([("type".into(), Node::string(*kind))]));
            }
            continue;
        };
        let written = format!("{path}.{kind}");
        if matches!(block.value, Value::Null) {
            block.value = Value::Map(Vec::new());
        }
        let enabled = match block.remove("enabled") {
            Some((_, flag)) => !is_false(&flag),
            None => *on_by_default,
        };
        if !enabled {
            continue;
        }
        if let Value::Map(entries) = &mut block.value {
            for (k, v) in entries.iter_mut() {
                let at = format!("{written}.{}", k.key_text());
                k.written_at = Some(at.clone());
                v.written_at = Some(at);
            }
            entries.insert(0, (Node::string("type"), Node::string(*kind)));
        }
        block.origin = key.origin.clone();
        appenders.push(block.moved_from(written));
    }
    Some(Node::synthetic(Value::Seq(appenders)))
}

fn migrate_logging(logging: &mut Node, errors: &mut Vec<ConfigError>) {
    if let Some(appenders) = legacy_appenders(logging, "logging", errors) {
        push(logging, "appenders", appenders);
    }
}

fn migrate_http(mut http: Node, errors: &mut Vec<ConfigError>) -> Node {
    let origin = http.origin.clone();
    if matches!(http.value, Value::Null) {
        http.value = Value::Map(Vec::new());
    }
    let mut server = Node::map([("type".into(), Node::string("default"))]);
    server.origin = origin;
    let take = |http: &mut Node, key: &str| {
        http.remove(key)
            .map(|(_, v)| v.moved_from(format!("http.{key}")))
    };

    let connector = |port: Option<Node>, bind: Option<Node>| {
        let mut c = Node::map([("type".into(), Node::string("http"))]);
        if let Some(p) = port {
            push(&mut c, "port", p);
        }
        if let Some(b) = bind {
            push(&mut c, "bindHost", b);
        }
        c
    };
    let port = take(&mut http, "port").or_else(|| Some(Node::synthetic(Value::UInt(8080))));
    let bind = take(&mut http, "bindHost");
    let idle = take(&mut http, "maxIdleTime");
    let mut app = connector(port, bind.clone());
    if let Some(idle) = idle {
        push(&mut app, "idleTimeout", idle);
    }
    let admin_port =
        take(&mut http, "adminPort").or_else(|| Some(Node::synthetic(Value::UInt(8081))));
    let admin_bind = take(&mut http, "adminBindHost");
    let admin = connector(admin_port, admin_bind);
    push(
        &mut server,
        "applicationConnectors",
        Node::synthetic(Value::Seq(vec![app])),
    );
    push(
        &mut server,
        "adminConnectors",
        Node::synthetic(Value::Seq(vec![admin])),
    );

    if let Some((key, mut request_log)) = http.remove("requestLog") {
        if matches!(request_log.value, Value::Null) {
            request_log.value = Value::Map(Vec::new());
        }
        let mut migrated = Node::map([]);
        migrated.origin = key.origin.clone();
        if let Some(appenders) = legacy_appenders(&mut request_log, "http.requestLog", errors) {
            push(&mut migrated, "appenders", appenders);
        }
        // Anything else under requestLog is reported as written.
        if let Value::Map(rest) = request_log.value {
            for (k, v) in rest {
                let at = format!("http.requestLog.{}", k.key_text());
                if let Value::Map(entries) = &mut migrated.value {
                    entries.push((k.moved_from(at.clone()), v.moved_from(at)));
                }
            }
        }
        push(&mut server, "requestLog", migrated);
    } else {
        // 0.6 logs requests to the console unless told not to.
        let appenders = Node::synthetic(Value::Seq(vec![Node::map([(
            "type".into(),
            Node::string("console"),
        )])]));
        push(
            &mut server,
            "requestLog",
            Node::map([("appenders".into(), appenders)]),
        );
    }

    if let Value::Map(rest) = http.value {
        for (k, v) in rest {
            let name = k.key_text();
            match HTTP_FIELDS.iter().find(|(f, _)| *f == name) {
                Some((_, Some(target))) => {
                    let at = format!("http.{name}");
                    push(&mut server, target, v.moved_from(at));
                }
                Some((_, None)) => errors.push(ConfigError::new(
                    k.origin.clone(),
                    format!("http.{name}"),
                    ErrorKind::Invalid(format!(
                        "DropWizard 0.6's http.{name} has no equivalent here; see the server section of the configuration reference (docs/src/reference/configuration.md)"
                    )),
                )),
                None => errors.push(ConfigError::new(
                    k.origin.clone(),
                    format!("http.{name}"),
                    ErrorKind::UnknownField { suggestions: did_you_mean(&name, HTTP_FIELDS.iter().map(|(f, _)| *f)) },
                )),
            }
        }
    }
    server
}
