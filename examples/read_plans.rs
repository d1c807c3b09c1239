//! Reads every file under a directory as a plan and counts what was read and what was refused,
//! by format and by reason: a check of the readers against plans nobody here wrote.
//!
//! `cargo run --release --example read_plans -- DIR [--show-refused]`

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pgplan::plan::read_plan;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e != "md") {
            out.push(path);
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = args
        .first()
        .expect("usage: read_plans DIR [--show-refused]");
    let show = args.iter().any(|a| a == "--show-refused");
    let mut paths = Vec::new();
    files(Path::new(dir), &mut paths);
    paths.sort();
    let mut read: BTreeMap<String, usize> = BTreeMap::new();
    let mut refused: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut several = 0;
    for path in &paths {
        let ext = path
            .extension()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let Ok(text) = std::fs::read_to_string(path) else {
            refused
                .entry("not UTF-8".into())
                .or_default()
                .push(path.display().to_string());
            continue;
        };
        match read_plan(&text, None) {
            Ok(plan) => {
                if plan.count > 1 {
                    several += 1;
                }
                *read
                    .entry(format!("{ext} as {}", plan.format.name()))
                    .or_default() += 1;
            }
            Err(e) => {
                // The reason without the quoted input: group by kind.
                let reason = e.to_string();
                let reason = reason
                    .split(['"', ':'])
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(":");
                refused
                    .entry(format!("{ext}: {reason}"))
                    .or_default()
                    .push(format!("{}: {e}", path.display()));
            }
        }
    }
    let total_read: usize = read.values().sum();
    let total_refused: usize = refused.values().map(Vec::len).sum();
    println!(
        "{} files: {total_read} read, {total_refused} refused",
        paths.len()
    );
    for (kind, n) in &read {
        println!("  read {n:>4}  {kind}");
    }
    if several > 0 {
        println!("  ({several} of them hold several plans; the first was read)");
    }
    for (reason, list) in &refused {
        println!("  refused {:>4}  {reason}", list.len());
        if show {
            for item in list {
                println!("      {item}");
            }
        }
    }
}
