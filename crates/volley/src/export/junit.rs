//! The assertions as a JUnit XML file: the format CI test reporters read (Jenkins, GitLab's
//! `artifacts:reports:junit`, the JUnit report actions of GitHub Actions).
//!
//! One `<testsuite>` for the run (its start and duration), one `<testcase>` for each
//! assertion, named by Gatling's sentence (the outcome's `description`, as the console prints
//! it). A failed assertion's test case holds a `<failure>` whose message is the sentence and
//! the measured value, and whose text is the console's line. A run without assertions is a
//! suite of no test cases. Every name and message goes through quick-xml's escaping, so a
//! request named `a<b&"c"` reads back as written.

use std::borrow::Cow;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesText, Event};

use super::ExportError;
use crate::assertions::Outcome;
use crate::results::Results;

/// Writes the JUnit file of `results` to `path`, creating its folder when missing; `suite`
/// names the test suite (the scenario, say).
pub fn write(results: &Results, suite: &str, path: &Path) -> Result<(), ExportError> {
    let suite = Suite {
        name: suite,
        started_at: &results.started_at,
        seconds: results.duration_seconds,
    };
    write_outcomes(&results.assertions, &suite, path)
}

/// A test suite's heading: its name, when what it judges started (RFC 3339), and how long
/// that took.
pub struct Suite<'a> {
    /// The suite's name.
    pub name: &'a str,
    /// When the run started (RFC 3339).
    pub started_at: &'a str,
    /// How long it ran, seconds.
    pub seconds: f64,
}

/// Writes `outcomes` as a JUnit file at `path`, a test case each, creating its folder when
/// missing: [`write()`] for a run's assertions, and `volley compare` for its thresholds.
pub fn write_outcomes(
    outcomes: &[Outcome],
    suite: &Suite<'_>,
    path: &Path,
) -> Result<(), ExportError> {
    if let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).map_err(|source| ExportError::Folder {
            file: path.to_path_buf(),
            folder: folder.to_path_buf(),
            source,
        })?;
    }
    let file = std::fs::File::create(path).map_err(ExportError::io(path))?;
    suite_to(outcomes, suite, BufWriter::new(file))
        .and_then(|mut out| out.flush())
        .map_err(ExportError::io(path))
}

/// Writes the JUnit XML of `results` into `out` and gives `out` back; `suite` names the test
/// suite.
///
/// ```
/// use std::time::Duration;
/// use volley::assertions::Outcome;
/// use volley::results::Results;
/// use volley::stats::Stats;
///
/// let failed = Outcome {
///     description: "Global: max of response time is less than 500.0".into(),
///     passed: false,
///     actual: 612.4,
/// };
/// let results = Results::new(
///     &Stats::new(1),
///     "2025-01-01T00:00:00Z".into(),
///     Duration::from_secs(3),
///     false,
///     vec![failed],
/// );
/// let xml = volley::export::junit::write_to(&results, "checkout", Vec::new())?;
/// let xml = String::from_utf8_lossy(&xml);
/// assert!(xml.contains(r#"<testsuite name="checkout" tests="1" failures="1""#));
/// assert!(xml.contains(r#"message="Global: max of response time is less than 500.0 : actual value 612.4""#));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_to<W: Write>(results: &Results, suite: &str, out: W) -> io::Result<W> {
    let suite = Suite {
        name: suite,
        started_at: &results.started_at,
        seconds: results.duration_seconds,
    };
    suite_to(&results.assertions, &suite, out)
}

fn suite_to<W: Write>(outcomes: &[Outcome], suite: &Suite<'_>, out: W) -> io::Result<W> {
    let tests = outcomes.len().to_string();
    let failures = outcomes.iter().filter(|o| !o.passed).count().to_string();
    let time = format!("{:.3}", suite.seconds);
    let timestamp = timestamp(suite.started_at);
    let suite = xml_chars(suite.name);
    let mut xml = Writer::new_with_indent(out, b' ', 2);
    xml.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))?;
    xml.create_element("testsuites")
        .with_attributes([
            ("name", "volley"),
            ("tests", tests.as_str()),
            ("failures", failures.as_str()),
            ("errors", "0"),
            ("time", time.as_str()),
        ])
        .write_inner_content(|xml| {
            xml.create_element("testsuite")
                .with_attributes([
                    ("name", &*suite),
                    ("tests", tests.as_str()),
                    ("failures", failures.as_str()),
                    ("errors", "0"),
                    ("skipped", "0"),
                    ("time", time.as_str()),
                    ("timestamp", timestamp.as_str()),
                ])
                .write_inner_content(|xml| {
                    outcomes.iter().try_for_each(|o| test_case(xml, o, &suite))
                })?;
            Ok(())
        })?;
    let mut out = xml.into_inner();
    out.write_all(b"\n")?;
    Ok(out)
}

/// One assertion's `<testcase>`. Its time is 0: an assertion is judged after the run, in no
/// time of its own; the suite carries the run's duration.
fn test_case<W: Write>(xml: &mut Writer<W>, o: &Outcome, classname: &str) -> io::Result<()> {
    let name = xml_chars(&o.description);
    let case = xml.create_element("testcase").with_attributes([
        ("name", &*name),
        ("classname", classname),
        ("time", "0"),
    ]);
    if o.passed {
        case.write_empty()?;
        return Ok(());
    }
    let message = xml_chars(&failure_message(o)).into_owned();
    let text = xml_chars(&crate::assertions::line(o)).into_owned();
    case.write_inner_content(|xml| {
        xml.create_element("failure")
            .with_attributes([("message", message.as_str()), ("type", "assertion")])
            .write_text_content(BytesText::new(&text))?;
        Ok(())
    })?;
    Ok(())
}

/// The failure's message: the sentence and what was measured, e.g. `Global: max of response
/// time is less than 500.0 : actual value 612.4`. An outcome with nothing measured already
/// says why in its sentence.
fn failure_message(o: &Outcome) -> String {
    if o.actual.is_nan() {
        format!("{} : no value measured", o.description)
    } else {
        format!("{} : actual value {:.1}", o.description, o.actual)
    }
}

/// The start as JUnit's `timestamp` (ISO 8601 without a zone, here UTC), or as written when
/// it does not parse (a hand-edited file).
fn timestamp(started_at: &str) -> String {
    match started_at.parse::<jiff::Timestamp>() {
        Ok(t) => t.strftime("%Y-%m-%dT%H:%M:%S").to_string(),
        Err(_) => started_at.to_owned(),
    }
}

/// `text` with the characters XML 1.0 cannot carry even escaped (control characters other
/// than tab, newline and carriage return; U+FFFE and U+FFFF) replaced by U+FFFD: a request
/// name may hold anything, and one such character would make the whole file unreadable.
fn xml_chars(text: &str) -> Cow<'_, str> {
    let allowed = |c: char| matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..);
    if text.chars().all(allowed) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(
            text.chars()
                .map(|c| if allowed(c) { c } else { '\u{FFFD}' })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(outcomes: Vec<Outcome>) -> Results {
        Results::new(
            &crate::stats::Stats::new(1),
            "2025-06-01T12:30:45.123Z".into(),
            std::time::Duration::from_millis(2_500),
            false,
            outcomes,
        )
    }

    /// A name with a control character and a line break still gives a file an XML parser
    /// reads, the break kept and the control character shown as U+FFFD.
    ///
    /// Catches: names written without `xml_chars` (the parser refuses the file).
    #[test]
    fn characters_xml_cannot_carry_are_replaced_and_line_breaks_kept() {
        let outcome = Outcome {
            description: "bell\u{7}: two\nlines".into(),
            passed: false,
            actual: f64::NAN,
        };
        let xml = write_to(&results(vec![outcome]), "s\u{1}", Vec::new()).unwrap();
        let xml = String::from_utf8(xml).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let case = doc
            .descendants()
            .find(|n| n.has_tag_name("testcase"))
            .unwrap();
        assert_eq!(case.attribute("name"), Some("bell\u{FFFD}: two\nlines"));
        assert_eq!(case.attribute("classname"), Some("s\u{FFFD}"));
        let failure = case.first_element_child().unwrap();
        assert_eq!(
            failure.attribute("message"),
            Some("bell\u{FFFD}: two\nlines : no value measured")
        );
    }

    /// The suite's timestamp is the run's start in UTC without fractions or zone, as JUnit's
    /// schema has it; its time is the run's duration.
    ///
    /// Catches: the start written as volley stores it (`...45.123Z`).
    #[test]
    fn the_suite_carries_the_start_and_duration() {
        let xml = write_to(&results(Vec::new()), "s", Vec::new()).unwrap();
        let xml = String::from_utf8(xml).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let suite = doc
            .descendants()
            .find(|n| n.has_tag_name("testsuite"))
            .unwrap();
        assert_eq!(suite.attribute("timestamp"), Some("2025-06-01T12:30:45"));
        assert_eq!(suite.attribute("time"), Some("2.500"));
        assert_eq!(suite.attribute("tests"), Some("0"));
        assert_eq!(suite.children().filter(|n| n.is_element()).count(), 0);
    }
}
