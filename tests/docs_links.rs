//! Every relative link in the README, `docs/` and the developer documents reaches a file that
//! exists, and every `#anchor` names a heading of its page, as GitHub renders the heading's slug.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files a reader follows links through: the front door, the reference pages and
/// the documents for people working on pgplan.
fn documents() -> Vec<PathBuf> {
    let mut files = vec![
        root().join("README.md"),
        root().join("DEVELOPERS.md"),
        root().join("ARCHITECTURE.md"),
    ];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    files.extend(pages);
    files
}

/// Lines outside fenced code blocks, with their line numbers: a link inside a fence is text.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut in_fence = false;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence {
            lines.push((index + 1, line));
        }
    }
    lines
}

/// The line with its inline code spans blanked out, since `[a](b)` inside backticks is no link.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else if in_code {
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// The targets of `[text](target)` and `![alt](target)` links on a line. Link text may wrap
/// onto the line before; the `](target)` part never does, and no target here holds a `)`.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                targets.push(after[..end].trim().to_string());
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    targets
}

/// GitHub's heading anchor: lower case, letters, digits, `-` and `_` kept, spaces become `-`,
/// everything else (backticks, colons, apostrophes, dots) dropped; a repeated slug gets `-1`,
/// `-2`, ... in order.
fn slug(heading: &str) -> String {
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

fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut anchors = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = slug(heading);
        let count = seen.entry(base.clone()).or_insert(0);
        anchors.insert(if *count == 0 {
            base.clone()
        } else {
            format!("{base}-{count}")
        });
        *count += 1;
    }
    anchors
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn the_slug_is_githubs() {
    assert_eq!(
        slug(" `pgplan explain -d`: a query run live"),
        "pgplan-explain--d-a-query-run-live"
    );
    assert_eq!(slug("`compare`'s own overhead"), "compares-own-overhead");
    assert_eq!(
        slug("`audit` at fleet scale: the speed goals, measured again"),
        "audit-at-fleet-scale-the-speed-goals-measured-again"
    );
    let twice = anchors("# Notes\n\n## Notes\n\n```\n# not a heading\n```\n");
    assert_eq!(
        twice.into_iter().collect::<Vec<_>>(),
        ["notes", "notes-1"],
        "a repeated heading is numbered, a fenced `#` line is none"
    );
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut checked = 0;
    let mut broken = Vec::new();
    let mut anchor_cache: HashMap<PathBuf, BTreeSet<String>> = HashMap::new();
    for document in documents() {
        let text = std::fs::read_to_string(&document)
            .unwrap_or_else(|e| panic!("{}: {e}", relative(&document)));
        let dir = document.parent().unwrap();
        for (number, line) in prose_lines(&text) {
            for target in link_targets(&without_code_spans(line)) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let file = if path.is_empty() {
                    document.clone()
                } else {
                    dir.join(path)
                };
                let place = format!("{}:{number}: ({target})", relative(&document));
                if !file.exists() {
                    broken.push(format!("{place}: no file {}", relative(&file)));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                let file = file.canonicalize().unwrap();
                let known = anchor_cache.entry(file.clone()).or_insert_with(|| {
                    anchors(&std::fs::read_to_string(&file).unwrap_or_default())
                });
                if !known.contains(anchor) {
                    broken.push(format!(
                        "{place}: no heading #{anchor} in {}",
                        relative(&file)
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    // The README and the reference link to each other throughout: a count this low means the
    // scan found no links, not that there are none.
    assert!(checked >= 50, "only {checked} relative links found");
}

#[test]
fn every_reference_page_is_linked_from_the_index() {
    let index = std::fs::read_to_string(root().join("docs/README.md")).unwrap();
    let linked: BTreeSet<String> = link_targets(&index)
        .into_iter()
        .map(|t| t.split('#').next().unwrap().to_string())
        .collect();
    for document in documents() {
        if document.parent() == Some(&root().join("docs")) {
            let name = document.file_name().unwrap().to_str().unwrap().to_string();
            if name != "README.md" {
                assert!(
                    linked.contains(&name),
                    "docs/README.md does not link {name}"
                );
            }
        }
    }
}
