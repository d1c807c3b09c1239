//! The I/O shell's modules import each other without a circle, and never the renderers or the
//! orchestration: read from the `use` paths of `src/db/`, as ARCHITECTURE.md states the rule.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn db_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/db")
}

/// The module a `src/db/` file is (`connect`, `conninfo` for every file of its folder), and the
/// text of every file of it.
fn modules() -> BTreeMap<String, String> {
    let mut modules: BTreeMap<String, String> = BTreeMap::new();
    for entry in std::fs::read_dir(db_dir()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        if name == "mod" {
            continue;
        }
        let text = if path.is_dir() {
            files_under(&path)
                .iter()
                .map(|file| std::fs::read_to_string(file).unwrap())
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            std::fs::read_to_string(&path).unwrap()
        };
        modules.insert(name, text);
    }
    modules
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// The code of a file without its unit tests, which may use any module.
fn without_tests(text: &str) -> &str {
    text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text)
}

/// Which other `db` modules a module's code names: `super::x` from a file of `src/db/`,
/// `super::super::x` from a file of a folder, or `crate::db::x` anywhere.
fn dependencies(name: &str, text: &str, all: &BTreeSet<String>) -> BTreeSet<String> {
    let code = without_tests(text);
    let mut found = BTreeSet::new();
    for prefix in ["crate::db::", "super::super::", "super::"] {
        for (at, _) in code.match_indices(prefix) {
            let rest = &code[at + prefix.len()..];
            let word: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if word != name && all.contains(&word) {
                found.insert(word);
            }
        }
    }
    found
}

#[test]
fn db_modules_import_each_other_without_a_circle() {
    let modules = modules();
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let graph: BTreeMap<&str, BTreeSet<String>> = modules
        .iter()
        .map(|(name, text)| (name.as_str(), dependencies(name, text, &names)))
        .collect();
    assert!(
        graph.get("session").is_some_and(|d| d.contains("connect")),
        "the scan found no imports: {graph:?}"
    );
    // Depth-first search from every module; a module met again on the current path closes a
    // circle.
    fn visit<'a>(
        node: &'a str,
        graph: &'a BTreeMap<&'a str, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
        circles: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|n| *n == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node);
            circles.push(circle.join(" → "));
            return;
        }
        if !done.insert(node) {
            return;
        }
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, done, circles);
        }
        path.pop();
    }
    let mut circles = Vec::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done, &mut circles);
    }
    assert!(circles.is_empty(), "import circles in src/db/: {circles:?}");
}

#[test]
fn db_never_imports_the_renderers_or_the_orchestration() {
    for (name, text) in modules() {
        let code = without_tests(&text);
        for layer in ["crate::report", "crate::app", "crate::cli"] {
            assert!(!code.contains(layer), "db::{name} imports {layer}");
        }
    }
}
