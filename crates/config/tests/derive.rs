//! What `#[derive(Config)]` gives a section: inline keys with their positions, choices, nested
//! sections always validated, rules over several keys, and `check --dump`'s form.

use ferrowizard_config::{Config, Invalid, Loader, Report};

/// Keys every sender has.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct Common {
    /// Slots in the queue.
    #[config(default = 16, range(min = 1))]
    pub queue_size: usize,
}

/// `type: udp`.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(check = Udp::port_above_host_range)]
pub struct Udp {
    /// The keys every sender has, beside this one's.
    #[config(inline)]
    pub common: Common,
    /// The port.
    #[config(default = 514)]
    pub port: u16,
    /// The host.
    #[config(default = "localhost".to_owned(), length(min = 1))]
    pub host: String,
}

impl Udp {
    fn port_above_host_range(&self) -> Result<(), Invalid> {
        if self.port == 1 {
            Err(Invalid::at("port", "1 is not a syslog port"))
        } else {
            Ok(())
        }
    }
}

/// Where lines go.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(rename_all = "kebab-case")]
pub enum Sender {
    /// `type: udp`.
    Udp(Udp),
    /// `type: udp-relay`.
    UdpRelay(Udp),
}

/// A stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Config)]
pub enum Stream {
    /// `standardOutput`.
    #[default]
    StandardOutput,
    /// `err`.
    #[config(rename = "err")]
    StandardError,
}

/// The root.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct Root {
    /// Senders.
    #[config(default = vec![Sender::Udp(Udp::default())])]
    pub senders: Vec<Sender>,
    /// A nested section, validated without being asked.
    pub nested: Common,
    /// The stream.
    #[config(rename = "type")]
    pub kind: Stream,
}

fn load(yaml: &str) -> Result<Root, Report> {
    Loader::new().load_str("c.yaml", yaml)
}

/// Each error's place and path.
fn errors(yaml: &str) -> Vec<String> {
    load(yaml)
        .unwrap_err()
        .errors
        .iter()
        .map(|e| format!("{} {}", e.origin, e.path))
        .collect()
}

fn report(yaml: &str) -> String {
    load(yaml).unwrap_err().to_string()
}

#[test]
fn absent_keys_take_their_defaults() {
    let root = load("{}\n").unwrap();
    assert_eq!(root, Root::default());
    assert_eq!(root.senders[0], Sender::Udp(Udp::default()));
    assert_eq!(Udp::default().common.queue_size, 16);
    assert_eq!(Udp::default().host, "localhost");
    assert_eq!(root.kind, Stream::StandardOutput);
}

#[test]
fn inline_keys_sit_beside_the_sections_own_and_keep_their_positions() {
    let root = load("senders:\n  - type: udp\n    queueSize: 3\n    port: 9\n").unwrap();
    let Sender::Udp(udp) = &root.senders[0] else {
        panic!("{root:?}")
    };
    assert_eq!((udp.common.queue_size, udp.port), (3, 9));
    assert_eq!(
        errors("senders:\n  - type: udp\n    queueSize: 0\n    port: x\n"),
        ["3:16 senders[0].queueSize", "4:11 senders[0].port"]
    );
}

#[test]
fn an_unknown_key_is_refused_with_the_nearest_keys_inline_ones_included() {
    let text = report("senders:\n  - type: udp\n    queueSise: 3\n");
    assert!(
        text.contains("c.yaml:3:5: Unrecognized field at: senders[0].queueSise"),
        "{text}"
    );
    assert!(text.contains("- queueSize"), "{text}");
    let text = report("nested:\n  queue: 3\n");
    assert!(text.contains("- queueSize"), "{text}");
}

#[test]
fn a_key_written_twice_is_refused() {
    assert!(load("nested:\n  queueSize: 3\n  queueSize: 4\n").is_err());
}

#[test]
fn a_nested_section_is_validated_without_being_asked() {
    assert_eq!(
        errors("nested:\n  queueSize: 0\n"),
        ["2:14 nested.queueSize"]
    );
}

#[test]
fn a_rule_over_several_keys_reports_at_the_key_it_names() {
    let text = report("senders:\n  - type: udp\n    port: 1\n");
    assert!(
        text.contains("c.yaml:3:11: Invalid value at: senders[0].port; 1 is not a syslog port"),
        "{text}"
    );
}

#[test]
fn choices_are_read_by_name_and_by_type() {
    let root = load("type: err\nsenders:\n  - type: udp-relay\n    host: h\n").unwrap();
    assert_eq!(root.kind, Stream::StandardError);
    assert!(matches!(&root.senders[0], Sender::UdpRelay(u) if u.host == "h"));
    let text = report("type: stdout\n");
    assert!(text.contains("one of standardOutput, err"), "{text}");
    let text = report("senders:\n  - type: tcp\n");
    assert!(text.contains("one of udp, udp-relay"), "{text}");
}

#[test]
fn a_section_is_written_with_its_inline_keys_and_its_choices_by_type_and_name() {
    let root = Root {
        kind: Stream::StandardError,
        ..Root::default()
    };
    let json = serde_json::to_string(&root).unwrap();
    assert_eq!(
        json,
        r#"{"senders":[{"type":"udp","queueSize":16,"port":514,"host":"localhost"}],"nested":{"queueSize":16},"type":"err"}"#
    );
    let back: Root = Loader::new().load_str("c.json", &json).unwrap();
    assert_eq!(back, root);
}

/// A section that refuses a key another tool accepts.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(refuse(driverClass = "the driver follows url's scheme"))]
pub struct Source {
    /// Where the data is.
    pub url: String,
}

/// Catches: a refused key reported as a bare unknown field (or accepted), or reported away
/// from where it is written.
#[test]
fn a_refused_key_is_reported_where_it_is_with_why() {
    let report = Loader::new()
        .load_str::<Source>("c.yaml", "url: x\ndriverClass: org.postgresql.Driver\n")
        .unwrap_err()
        .to_string();
    assert!(
        report.contains(
            "c.yaml:2:1: Unrecognized field at: driverClass; the driver follows url's scheme"
        ),
        "{report}"
    );
    let report = Loader::new()
        .load_str::<Source>("c.yaml", "url: x\ndriverClas: y\n")
        .unwrap_err()
        .to_string();
    assert!(!report.contains("scheme"), "{report}");
}
