//! The house's limits on function length, read from `src/`: no function in `app/` (parsing of
//! requests, wiring and exit codes) over 80 lines, none anywhere else over 150. Unit tests and
//! the helpers only tests use (`#[cfg(test)]` items and modules) are left out. Functions are
//! found the way `cargo fmt` lays them out: a body ends at the first `}` at the indent its `fn`
//! line starts at.

use std::path::{Path, PathBuf};

mod source_tree;

use source_tree::{files_under, src};

/// The longest a function in `app/` may be: a command's steps, each a call.
const APP_LIMIT: usize = 80;
/// The longest a function anywhere else may be.
const LIMIT: usize = 150;

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The name of the function a line opens, if it opens one.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("async ").unwrap_or(rest);
    let rest = rest.strip_prefix("fn ")?;
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The line after the item that starts at `start` (`fn`, `mod`, `impl`... at some indent): the
/// line after its closing brace at the same indent, or after its `;` for a declaration.
fn item_end(lines: &[&str], start: usize) -> usize {
    let at = indent(lines[start]);
    let mut open = start;
    while open < lines.len() {
        let line = lines[open].trim_end();
        if line.ends_with(';') && !line.ends_with("};") && open == start {
            return open + 1;
        }
        if line.ends_with('{') || line.ends_with("{}") {
            break;
        }
        if line.ends_with(';') && indent(lines[open]) == at {
            return open + 1;
        }
        open += 1;
    }
    if lines
        .get(open)
        .is_some_and(|l| l.trim_end().ends_with("{}"))
    {
        return open + 1;
    }
    let mut close = open + 1;
    while close < lines.len() {
        let line = lines[close];
        if indent(line) == at && line.trim_start().starts_with('}') {
            return close + 1;
        }
        close += 1;
    }
    lines.len()
}

/// Each function of a file's non-test code, with its length in lines; and the files of modules
/// it declares for tests only (`#[cfg(test)] mod testing;`).
fn functions(path: &Path) -> (Vec<(String, usize)>, Vec<PathBuf>) {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut test_files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim() == "#[cfg(test)]" && i + 1 < lines.len() {
            let item = lines[i + 1].trim();
            if (item.starts_with("mod ") || item.contains(" mod "))
                && let Some(name) = item.strip_suffix(';').and_then(|d| d.rsplit(' ').next())
            {
                let dir = if path
                    .file_name()
                    .is_some_and(|n| n == "mod.rs" || n == "lib.rs")
                {
                    path.parent().unwrap().to_path_buf()
                } else {
                    path.with_extension("")
                };
                test_files.push(dir.join(format!("{name}.rs")));
                test_files.push(dir.join(name).join("mod.rs"));
            }
            i = item_end(&lines, i + 1);
            continue;
        }
        if let Some(name) = fn_name(line) {
            let end = item_end(&lines, i);
            found.push((name.to_owned(), end - i));
            i = end;
            continue;
        }
        i += 1;
    }
    (found, test_files)
}

#[test]
fn no_function_is_over_the_house_limits() {
    let files = files_under(&src());
    let mut read = Vec::new();
    let mut test_only = Vec::new();
    for file in &files {
        let (found, tests) = functions(file);
        test_only.extend(tests);
        read.push((file.clone(), found));
    }
    let mut over = Vec::new();
    let mut counted = 0;
    for (file, found) in &read {
        if test_only.contains(file) {
            continue;
        }
        let relative = file.strip_prefix(src()).unwrap();
        let limit = if relative.starts_with("app") {
            APP_LIMIT
        } else {
            LIMIT
        };
        for (name, length) in found {
            counted += 1;
            if *length > limit {
                over.push(format!(
                    "{} {name}: {length} lines (limit {limit})",
                    relative.display()
                ));
            }
        }
    }
    assert!(counted > 1000, "the scan found only {counted} functions");
    assert!(
        over.is_empty(),
        "functions over the limit (split them along their steps):\n{}",
        over.join("\n")
    );
}

#[test]
fn the_scan_measures_a_function_as_rustfmt_lays_it_out() {
    let dir = std::env::temp_dir().join(format!("pgplan-fnlen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sample.rs");
    std::fs::write(
        &file,
        "//! A sample.\n\
         \n\
         pub async fn three(\n    a: u32,\n) -> u32 {\n    let b = {\n        a\n    };\n    b\n}\n\
         \n\
         trait T {\n    fn declared(&self);\n}\n\
         \n\
         #[cfg(test)]\nmod helpers;\n\
         \n\
         fn after() {}\n\
         \n\
         #[cfg(test)]\nmod tests {\n    fn hidden() {\n        let x = 1;\n    }\n}\n",
    )
    .unwrap();
    let (found, test_files) = functions(&file);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        vec![
            ("three".to_owned(), 8),
            ("declared".to_owned(), 1),
            ("after".to_owned(), 1)
        ]
    );
    assert_eq!(test_files[0], dir.join("sample").join("helpers.rs"));
}
