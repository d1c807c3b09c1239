//! The layers' import rules of ARCHITECTURE.md, read from the `use` paths of `src/`: the pure
//! core imports neither the I/O shell, the measurement engine, the orchestration, the renderers
//! nor anything async; the I/O shell never imports the engine, the renderers or the
//! orchestration; the engine imports neither the orchestration nor the renderers and prints
//! nothing; and the modules of each core folder, of the renderers, of the shell, of the engine
//! and of the orchestration import each other without a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod source_tree;

use source_tree::{files_under, src};

/// A file's code without its unit tests, which may use any module.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    text.split("#[cfg(test)]")
        .next()
        .unwrap_or(&text)
        .to_owned()
}

/// The pure core: folders and files of `src/` with no database, no async and no output.
const CORE: &[&str] = &[
    "plan",
    "audit",
    "advise",
    "compare",
    "check",
    "explain",
    "effects",
    "effects.rs",
    "lasting_state.rs",
    "lasting_rows.rs",
    "sql.rs",
    "server.rs",
    "pgdist",
    "pgnames.rs",
    "format.rs",
];

#[test]
fn the_core_imports_neither_the_shell_the_orchestration_the_renderers_nor_async() {
    let mut crossings = Vec::new();
    let mut read = 0;
    for part in CORE {
        let path = src().join(part);
        let files = if path.is_dir() {
            files_under(&path)
        } else {
            vec![path]
        };
        for file in files {
            read += 1;
            let code = code_of(&file);
            for layer in [
                "crate::db",
                "crate::measure",
                "crate::app",
                "crate::cli",
                "crate::report",
                "tokio",
            ] {
                if code.contains(layer) {
                    crossings.push(format!(
                        "{} imports {layer}",
                        file.strip_prefix(src()).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(read > 100, "the scan read only {read} files");
    assert!(crossings.is_empty(), "{crossings:#?}");
}

/// The modules of `src/<folder>/` (a file's stem, or a subfolder's name for all its files) and
/// their code.
fn modules(folder: &str) -> BTreeMap<String, String> {
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(src().join(folder)).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        if name == "mod" {
            continue;
        }
        let code = if path.is_dir() {
            files_under(&path)
                .iter()
                .map(|f| code_of(f))
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            code_of(&path)
        };
        modules.insert(name, code);
    }
    modules
}

/// The other modules of `folder` a module's code names: `super::x`, `super::super::x` from a
/// subfolder, or `crate::<folder>::x`.
fn dependencies(folder: &str, name: &str, code: &str, all: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let qualified = format!("crate::{folder}::");
    for prefix in [qualified.as_str(), "super::super::", "super::"] {
        for (at, _) in code.match_indices(prefix) {
            let word: String = code[at + prefix.len()..]
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

fn circles(folder: &str) -> Vec<String> {
    let modules = modules(folder);
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let graph: BTreeMap<&str, BTreeSet<String>> = modules
        .iter()
        .map(|(name, code)| (name.as_str(), dependencies(folder, name, code, &names)))
        .collect();
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
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

/// Fails for each file under `src/<folder>/` whose code names one of `layers`; `min_files`
/// proves the scan read the folder.
fn assert_never_named(folder: &str, min_files: usize, layers: &[&str]) {
    let files = files_under(&src().join(folder));
    assert!(
        files.len() > min_files,
        "the scan read only {} files",
        files.len()
    );
    for file in files {
        let code = code_of(&file);
        for layer in layers {
            assert!(!code.contains(layer), "{} names {layer}", file.display());
        }
    }
}

#[test]
fn the_shell_never_imports_the_renderers_or_the_orchestration() {
    assert_never_named(
        "db",
        20,
        &[
            "crate::report",
            "crate::app",
            "crate::cli",
            "crate::measure",
        ],
    );
}

#[test]
fn the_engine_imports_neither_the_orchestration_nor_the_renderers_and_prints_nothing() {
    assert_never_named(
        "measure",
        5,
        &[
            "crate::report",
            "crate::app",
            "crate::cli",
            "super::super::",
        ],
    );
    // Progress goes through the caller's Observer and notes come back in the figures: what the
    // user reads is the command's to write.
    assert_never_named(
        "measure",
        5,
        &["print!(", "println!(", "io::stderr", "io::stdout"],
    );
}

#[test]
fn each_folders_modules_import_each_other_without_a_circle() {
    let db = modules("db");
    let names: BTreeSet<String> = db.keys().cloned().collect();
    assert!(
        dependencies("db", "session", &db["session"], &names).contains("connect"),
        "the scan found no imports"
    );
    let mut all = Vec::new();
    for folder in [
        "plan", "audit", "advise", "compare", "check", "explain", "report", "db", "measure", "app",
    ] {
        all.extend(
            circles(folder)
                .into_iter()
                .map(|c| format!("{folder}: {c}")),
        );
    }
    assert!(all.is_empty(), "import circles: {all:#?}");
}
