//! The loader on types of its own, through files on disk.

use std::collections::BTreeMap;

use ferrowizard_config::{Duration, ErrorKind, Level, Loader, Origin, Report, Size};
use garde::Validate;
use serde::Deserialize;

#[derive(Debug, Deserialize, Validate, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[garde(allow_unvalidated)]
struct Service {
    name: String,
    #[garde(range(min = 1))]
    port: u16,
    #[serde(default)]
    level: Option<Level>,
    #[serde(default)]
    timeout: Option<Duration>,
    #[serde(default)]
    buffer: Option<Size>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    limits: BTreeMap<String, u32>,
    #[serde(default)]
    extra: Option<serde_json::Value>,
}

fn env(name: &str) -> Option<String> {
    match name {
        "PORT" => Some("9090".into()),
        "NAME" => Some("realtime".into()),
        _ => None,
    }
}

fn load(text: &str) -> Result<Service, Report> {
    Loader::new().lookup(env).load_str("service.yaml", text)
}

#[test]
fn loads_a_plain_type_with_value_types() {
    let s = load("name: a\nport: 80\nlevel: warn\ntimeout: 1 minute\nbuffer: 8KiB\ntags: [x, y]\nlimits: {a: 1}\n").unwrap();
    assert_eq!(s.level, Some(Level::Warn));
    assert_eq!(s.timeout, Some(Duration::seconds(60)));
    assert_eq!(s.buffer, Some(Size::kibibytes(8)));
    assert_eq!(s.tags, ["x", "y"]);
    assert_eq!(s.limits["a"], 1);
}

#[test]
fn substitution_types_values_as_yaml() {
    let s = load("name: ${NAME}\nport: ${PORT}\nextra: ${PORT:-1}\n").unwrap();
    assert_eq!(s.name, "realtime");
    assert_eq!(s.port, 9090);
    // A value of any type (here a JSON value) sees the number, not the text.
    assert_eq!(s.extra, Some(serde_json::json!(9090)));
    let s = load("name: \"$${NAME}\"\nport: ${MISSING:-8080}\n").unwrap();
    assert_eq!(s.name, "${NAME}");
    assert_eq!(s.port, 8080);
}

#[test]
fn substitution_can_be_turned_off() {
    let s: Service = Loader::new()
        .lookup(env)
        .substitution(false)
        .load_str("s", "name: ${NAME}\nport: 1\n")
        .unwrap();
    assert_eq!(s.name, "${NAME}");
}

#[test]
fn every_error_is_reported_with_its_position() {
    let report = load("name: [1]\nport: 0\nlevel: LOUD\ntimeout: 5\nbogus: 1\nlimits: {a: -1}\n")
        .unwrap_err();
    let lines: Vec<(u64, &str)> = report
        .errors
        .iter()
        .map(|e| match e.origin {
            Origin::File { line, .. } => (line, e.path.as_str()),
            _ => (0, e.path.as_str()),
        })
        .collect();
    assert_eq!(
        lines,
        [
            (1, "name"),
            (3, "level"),
            (4, "timeout"),
            (5, "bogus"),
            (6, "limits.a")
        ]
    );
    // A broken rule (`port: 0`) is reported beside a type error: validation runs on the
    // value of the last pass.
    let report = load("name: x\nport: 0\nbogus: 1\n").unwrap_err();
    assert_eq!(report.errors.len(), 2, "{report}");
    assert!(
        matches!(report.errors[0].kind, ErrorKind::Invalid(_)),
        "{report}"
    );
}

#[test]
fn missing_required_fields_are_named() {
    let report = load("port: 1\n").unwrap_err();
    assert_eq!(report.errors.len(), 1);
    assert_eq!(report.errors[0].path, "name");
    assert_eq!(report.errors[0].kind, ErrorKind::MissingField);
    // A required field that is present but wrong is reported once, as wrong.
    let report = load("name: {a: 1}\nport: 1\n").unwrap_err();
    assert_eq!(report.errors.len(), 1, "{report}");
}

#[test]
fn overrides_are_validated_like_the_file() {
    let s: Service = Loader::new()
        .overrides(["port=81", "tags[0]=z", "limits.b=2"])
        .load_str("s", "name: a\nport: 80\n")
        .unwrap();
    assert_eq!(
        (s.port, s.tags.as_slice(), s.limits["b"]),
        (81, ["z".to_owned()].as_slice(), 2)
    );
    let report = Loader::new()
        .overrides(["port=x"])
        .load_str::<Service>("s", "name: a\nport: 80\n")
        .unwrap_err();
    assert_eq!(
        report.errors[0].origin,
        Origin::Override {
            index: 1,
            text: "port=x".into()
        }
    );
    assert_eq!(
        report.to_string(),
        "s has the following error:\n  * --set #1 (port=x): Incorrect type of value at: port; is of type: string \"x\", expected: an integer from 0 to 65535"
    );
}

#[test]
fn json_files_are_read_as_json_with_positions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("service.json");
    std::fs::write(&path, "{\n  \"name\": \"a\",\n  \"port\": \"x\"\n}\n").unwrap();
    let report = Loader::new().load_file::<Service>(&path).unwrap_err();
    assert_eq!(
        report.errors[0].origin,
        Origin::File {
            line: 3,
            column: 11
        }
    );
    std::fs::write(&path, "{\"name\": \"a\", \"port\": 1}").unwrap();
    assert_eq!(Loader::new().load_file::<Service>(&path).unwrap().port, 1);
}

/// Hostile or odd input gives a report naming where it is, never a panic, and never a
/// silent success where the file is wrong.
///
/// Catches: a recursion or alias bomb that overflows the stack (the test process aborts), a
/// report without its position, an out-of-range number or a second document accepted.
#[test]
fn hostile_input_gives_a_report_not_a_panic() {
    let deep = format!("{}1{}", "[".repeat(2000), "]".repeat(2000));
    let wide = format!(
        "name: a\nport: 1\ntags: [{}]\n",
        vec!["x"; 10_000].join(",")
    );
    // Each case, and what its report says (`None`: it loads).
    let cases: [(&str, Option<&str>); 13] = [
        ("", Some("Missing required field at: name")),
        (
            "~",
            Some("service.yaml:1:1: Missing required field at: name"),
        ),
        (
            "- a\n- b",
            Some(
                "service.yaml:1:1: Incorrect type of value at: (the top level); is of type: a list, expected: a mapping",
            ),
        ),
        ("name: !!binary aGVsbG8=\nport: 1", None),
        (
            "name: a\nport: 99999999999999999999999999",
            Some(
                "service.yaml:2:7: Incorrect type of value at: port; is of type: number 100000000000000000000000000, expected: an integer from 0 to 65535",
            ),
        ),
        (
            "? [complex]\n: key",
            Some("service.yaml:1:1: Missing required field at: name"),
        ),
        (
            "name: &a [*a]",
            Some("service.yaml:1:11: Malformed configuration: recursive references"),
        ),
        (
            "name: a\nport: 1\n---\nname: b",
            Some("service.yaml:4:1: Malformed configuration: multiple YAML documents detected"),
        ),
        (
            "\t\tname: a",
            Some("service.yaml:1:3: Missing required field at: port"),
        ),
        (
            "name: \"\\uD800\"\nport: 1",
            Some(
                "service.yaml:1:7: Malformed configuration: while parsing a quoted scalar, found high surrogate",
            ),
        ),
        (
            "name: a\nport: 1\nlimits: {1: 2, true: 3, ~: 4}",
            Some("service.yaml:3:25: Incorrect type of value at: limits.null"),
        ),
        (
            deep.as_str(),
            Some("service.yaml:1:256: Malformed configuration: recursion limit exceeded"),
        ),
        (wide.as_str(), None),
    ];
    for (text, expected) in cases {
        let shown: String = text.chars().take(40).collect();
        match (load(text), expected) {
            (Ok(s), None) => assert_eq!(s.port, 1, "{shown:?}"),
            (Err(report), Some(said)) => {
                let report = report.to_string();
                assert!(report.contains(said), "{shown:?}: {report}");
            }
            (Ok(_), Some(said)) => panic!("{shown:?} loaded; expected {said:?}"),
            (Err(report), None) => panic!("{shown:?}: {report}"),
        }
    }
}

/// A list whose item failed to load (and was left out) still names the later items' rule
/// breaches at their written index and line.
#[test]
fn a_rule_after_a_dropped_list_item_names_the_written_item() {
    #[derive(Debug, Deserialize, Validate)]
    #[serde(deny_unknown_fields)]
    struct Item {
        #[garde(range(min = 1))]
        n: u32,
    }
    #[derive(Debug, Deserialize, Validate)]
    #[serde(deny_unknown_fields)]
    struct List {
        #[garde(dive)]
        items: Vec<Item>,
    }
    let report = Loader::new()
        .load_str::<List>("l.yaml", "items:\n  - n: x\n  - n: 2\n  - n: 0\n")
        .unwrap_err();
    let found: Vec<(String, String)> = report
        .errors
        .iter()
        .map(|e| (e.path.clone(), e.origin.to_string()))
        .collect();
    assert_eq!(
        found,
        [
            ("items[0].n".to_owned(), "2:8".to_owned()),
            ("items[2].n".to_owned(), "4:8".to_owned()),
        ],
        "{report}"
    );
}
