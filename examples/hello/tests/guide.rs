//! The README's and the guide's examples, checked: every ```yaml block is a configuration
//! `hello check` accepts, every ```yaml volley block a scenario volley loads, every
//! ```yaml text block parses as YAML, no Rust block is left unchecked (the Rust blocks run as
//! doctests of this crate: see `src/lib.rs`), and every link between the pages leads to a
//! page and a heading that exist. The README's configuration is the file `hello` ships.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The workspace's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// README.md and every page of the guide (docs/src, recursively), as paths from the root.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut pages = vec![root().join("README.md")];
    walk(&root().join("docs/src"), &mut pages);
    pages
}

/// A fenced block: its page, the line its fence opens on, its info string and its text.
struct Block {
    page: PathBuf,
    line: usize,
    info: String,
    text: String,
}

impl Block {
    fn place(&self) -> String {
        let page = self.page.strip_prefix(root()).unwrap_or(&self.page);
        format!("{}:{} (```{})", page.display(), self.line, self.info)
    }
}

/// The fenced blocks of `page`.
fn blocks(page: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(page).unwrap();
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        match (&mut open, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    page: page.to_owned(),
                    line: i + 1,
                    info: info.trim().to_owned(),
                    text: String::new(),
                })
            }
            (Some(_), Some("")) => blocks.extend(open.take()),
            (Some(block), _) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(
        open.is_none(),
        "{}: a block is never closed",
        page.display()
    );
    blocks
}

fn all_blocks() -> Vec<Block> {
    pages().iter().flat_map(|p| blocks(p)).collect()
}

/// Catches: a configuration example that `check` refuses (a key renamed, a value out of its
/// range, a section misplaced), in the README or any page of the guide.
#[test]
fn every_configuration_example_passes_check() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for block in all_blocks().iter().filter(|b| b.info == "yaml") {
        let file = dir.path().join("config.yaml");
        std::fs::write(&file, &block.text).unwrap();
        let out = assert_cmd::Command::cargo_bin("hello")
            .unwrap()
            .arg("check")
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: `check` refuses it:\n{}{}",
            block.place(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        checked += 1;
    }
    assert!(checked > 0, "no configuration example found");
}

/// Catches: a scenario example that volley would refuse to run.
#[test]
fn every_scenario_example_loads() {
    let mut checked = 0;
    for block in all_blocks().iter().filter(|b| b.info == "yaml volley") {
        if let Err(report) = volley::scenario::load_str("scenario.yaml", &block.text) {
            panic!("{}: volley refuses it:\n{report}", block.place());
        }
        checked += 1;
    }
    assert!(checked > 0, "no scenario example found");
}

/// Catches: a YAML example for another tool (Kubernetes, Prometheus, a CI system) that is
/// not YAML, and a block with an info string this test does not know (so left unchecked).
#[test]
fn every_other_block_is_yaml_text_or_checked_elsewhere() {
    let known = [
        "yaml",
        "yaml volley",
        "yaml text",
        "rust",
        "rust,no_run",
        "sh",
        "toml",
        "text",
    ];
    for block in all_blocks() {
        assert!(
            known.contains(&block.info.as_str()),
            "{}: an example of a kind this test does not check (known: {known:?})",
            block.place()
        );
        if block.info == "yaml text" {
            let parsed: Result<Vec<serde_json::Value>, _> =
                serde_saphyr::from_str_multiple(&block.text);
            if let Err(e) = parsed {
                panic!("{}: not YAML: {e}", block.place());
            }
        }
    }
}

/// Catches: the README showing a configuration other than the one `hello` ships.
#[test]
fn the_readme_shows_the_configuration_hello_ships() {
    let shipped = std::fs::read_to_string(root().join("examples/hello/config.yaml")).unwrap();
    let readme = blocks(&root().join("README.md"));
    assert!(
        readme.iter().any(|b| b.info == "yaml" && b.text == shipped),
        "README.md has no ```yaml block equal to examples/hello/config.yaml"
    );
}

/// A heading's anchor as mdBook makes it: lower case, spaces as `-`, other punctuation but
/// `-` and `_` dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of `page`'s headings (outside code blocks).
fn anchors(page: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(page).unwrap();
    let mut in_code = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.insert(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// Catches: a link from one page to another that leads nowhere (a page moved or renamed, a
/// heading reworded).
#[test]
fn every_link_between_pages_leads_somewhere() {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut broken = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let mut in_code = false;
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                in_code = !in_code;
                continue;
            }
            if in_code {
                continue;
            }
            for target in link.captures_iter(line).map(|c| c[1].to_owned()) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, fragment) = match target.split_once('#') {
                    Some((file, fragment)) => (file, Some(fragment)),
                    None => (target.as_str(), None),
                };
                let dest = if file.is_empty() {
                    page.clone()
                } else {
                    page.parent().unwrap().join(file)
                };
                let place = format!(
                    "{}:{}: {target}",
                    page.strip_prefix(root()).unwrap_or(&page).display(),
                    i + 1
                );
                if !dest.exists() {
                    broken.push(format!("{place} (no such file)"));
                } else if let Some(fragment) = fragment
                    && dest.extension().is_some_and(|e| e == "md")
                    && !anchors(&dest).contains(fragment)
                {
                    broken.push(format!("{place} (no such heading)"));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links that lead nowhere:\n{}",
        broken.join("\n")
    );
}

/// Catches: a page with Rust examples that `src/lib.rs` does not include among its doctests
/// (its examples would go unchecked).
#[test]
fn every_page_with_rust_examples_runs_them_as_doctests() {
    let lib = std::fs::read_to_string(root().join("examples/hello/src/lib.rs")).unwrap();
    for page in pages() {
        let has_rust = blocks(&page).iter().any(|b| b.info.starts_with("rust"));
        let relative = page.strip_prefix(root()).unwrap().display().to_string();
        let included = format!("include_str!(\"../../../{relative}\")");
        assert!(
            !has_rust || lib.contains(&included),
            "{relative} has Rust examples; add `#[doc = {included}]` to src/lib.rs's guide"
        );
    }
}
