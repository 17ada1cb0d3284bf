//! `#[derive(Config)]` writes `garde::Validate` itself (so that a crate using it needs no
//! `garde`); these tests hold its reports to those of garde's derive for the same rules.

use garde::Validate;

fn nonempty(s: &str, _: &()) -> garde::Result {
    if s.is_empty() {
        Err(garde::Error::new("must not be empty"))
    } else {
        Ok(())
    }
}

fn no_x(s: &str, _: &()) -> garde::Result {
    if s.contains('x') {
        Err(garde::Error::new("must not contain x"))
    } else {
        Ok(())
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, garde::Validate)]
#[garde(allow_unvalidated)]
struct Leaf {
    #[garde(range(min = 1, max = 10))]
    n: u32,
}

/// A section nested in both.
#[derive(Clone, Debug, PartialEq, ferrowizard_config::Config)]
pub struct Inner {
    #[config(range(min = 1, max = 10))]
    n: u32,
}

// The fields are not in the order of their names, which is the order garde's derive checks
// them in.
#[derive(garde::Validate)]
#[garde(allow_unvalidated)]
struct ByDerive {
    #[garde(dive)]
    inner: Inner,
    #[garde(dive, custom(|v: &Vec<Leaf>, _: &()| if v.len() > 1 { Err(garde::Error::new("one at most")) } else { Ok(()) }))]
    leaves: Vec<Leaf>,
    #[garde(length(min = 1), dive)]
    more: Vec<Leaf>,
    #[garde(custom(no_x))]
    name: String,
    #[garde(ascii, length(min = 2, max = 4))]
    code: String,
    #[garde(length(max = 1))]
    short: String,
    #[garde(range(min = -1))]
    signed: i64,
    #[garde(range(max = 5))]
    small: u8,
    #[garde(inner(custom(nonempty)))]
    maybe: Option<String>,
    #[garde(length(min = 1), inner(length(min = 2, max = 3)))]
    words: Vec<String>,
    #[garde(inner(length(max = 2), inner(custom(nonempty), length(max = 3))))]
    lists: Vec<Vec<String>>,
    #[garde(skip)]
    skipped: u8,
    unvalidated: u8,
}

/// The same rules, through `#[derive(Config)]`: nested sections need no `dive`.
#[derive(Clone, Debug, PartialEq, ferrowizard_config::Config)]
pub struct BySection {
    /// A doc comment stays on the field.
    inner: Inner,
    #[config(
        custom(|v: &Vec<Leaf>, _: &()| if v.len() > 1 { Err(garde::Error::new("one at most")) } else { Ok(()) }),
    )]
    leaves: Vec<Leaf>,
    #[config(length(min = 1))]
    more: Vec<Leaf>,
    #[config(custom(no_x))]
    name: String,
    #[config(ascii, length(min = 2, max = 4))]
    code: String,
    #[config(length(max = 1))]
    short: String,
    #[config(range(min = -1))]
    signed: i64,
    #[config(range(max = 5))]
    small: u8,
    #[config(inner(custom(nonempty)))]
    maybe: Option<String>,
    #[config(length(min = 1), inner(length(min = 2, max = 3)))]
    words: Vec<String>,
    #[config(inner(length(max = 2), inner(custom(nonempty), length(max = 3))))]
    lists: Vec<Vec<String>>,
    #[config(skip)]
    skipped: u8,
    unvalidated: u8,
}

/// The reports of garde's derive and of `#[derive(Config)]` for the same values.
fn reports(d: ByDerive) -> (String, String) {
    let section = BySection {
        inner: d.inner.clone(),
        leaves: d.leaves.clone(),
        more: d.more.clone(),
        name: d.name.clone(),
        code: d.code.clone(),
        short: d.short.clone(),
        signed: d.signed,
        small: d.small,
        maybe: d.maybe.clone(),
        words: d.words.clone(),
        lists: d.lists.clone(),
        skipped: d.skipped,
        unvalidated: d.unvalidated,
    };
    let report = |r: Result<(), garde::Report>| match r {
        Ok(()) => "ok".to_owned(),
        Err(r) => r
            .iter()
            .map(|(path, e)| format!("{path}: {e}\n"))
            .collect::<String>(),
    };
    (report(d.validate()), report(section.validate()))
}

fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn leaves(ns: &[u32]) -> Vec<Leaf> {
    ns.iter().map(|&n| Leaf { n }).collect()
}

/// Values every rule accepts.
fn valid() -> ByDerive {
    ByDerive {
        inner: Inner { n: 5 },
        leaves: leaves(&[1]),
        more: leaves(&[2]),
        name: "abc".to_owned(),
        code: "ab".to_owned(),
        short: "a".to_owned(),
        signed: -1,
        small: 5,
        maybe: Some("a".to_owned()),
        words: strings(&["ab"]),
        lists: vec![strings(&["a"])],
        skipped: 0,
        unvalidated: 0,
    }
}

#[test]
fn a_valid_section_passes_as_with_garde_derive() {
    let (derived, section) = reports(valid());
    assert_eq!(derived, "ok");
    assert_eq!(section, derived);
}

#[test]
fn every_rule_reports_the_paths_and_messages_garde_derive_reports() {
    let (derived, section) = reports(ByDerive {
        inner: Inner { n: 0 },
        leaves: leaves(&[0, 11]),
        more: Vec::new(),
        name: "x".to_owned(),
        code: "\u{e9}".to_owned(),
        short: "ab".to_owned(),
        signed: -2,
        small: 6,
        maybe: Some(String::new()),
        words: strings(&["a", "abcd", "ok"]),
        lists: vec![strings(&["", "abcd"]), strings(&["a", "b", "c"])],
        skipped: 200,
        unvalidated: 200,
    });
    assert_eq!(section, derived);
    // Every rule fired, in garde's order: the fields by name, `dive` before `custom`.
    assert_eq!(
        section,
        "code: not ascii\n\
         inner.n: lower than 1\n\
         leaves[0].n: lower than 1\n\
         leaves[1].n: greater than 10\n\
         leaves: one at most\n\
         lists[0][0]: must not be empty\n\
         lists[0][1]: length is greater than 3\n\
         lists[1]: length is greater than 2\n\
         maybe: must not be empty\n\
         more: length is lower than 1\n\
         name: must not contain x\n\
         short: length is greater than 1\n\
         signed: lower than -1\n\
         small: greater than 5\n\
         words[0]: length is lower than 2\n\
         words[1]: length is greater than 3\n"
    );
}

#[test]
fn ascii_and_length_both_report_in_garde_order() {
    let (derived, section) = reports(ByDerive {
        code: "\u{e9}\u{e9}\u{e9}".to_owned(),
        ..valid()
    });
    assert_eq!(section, derived);
    assert_eq!(section, "code: not ascii\ncode: length is greater than 4\n");
}
