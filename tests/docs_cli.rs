//! `pgplan completions` and `pgplan man` as a user installs them: every shell's script is
//! generated from the CLI definition, bash accepts its script, and the man pages name every
//! command and option.

use std::path::PathBuf;
use std::process::{Command, Output};

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pgplan"))
}

fn run(args: &[&str]) -> Output {
    let out = Command::new(bin()).args(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "pgplan {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

const COMMANDS: [&str; 8] = [
    "explain",
    "diff",
    "info",
    "compare",
    "audit",
    "demo",
    "completions",
    "man",
];

#[test]
fn every_shell_gets_a_script_naming_every_command() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let script = String::from_utf8(run(&["completions", shell]).stdout).unwrap();
        for command in COMMANDS {
            assert!(
                script.contains(command),
                "{shell} completions lack {command}"
            );
        }
        // Options of a command, and the values of a value enum, are completed too.
        assert!(script.contains("fail-on-regression"), "{shell}: {script}");
        if ["bash", "zsh", "fish"].contains(&shell) {
            assert!(script.contains("prometheus"), "{shell}: no format values");
        }
    }
}

#[test]
fn bash_accepts_its_completion_script_and_registers_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pgplan.bash");
    std::fs::write(&path, run(&["completions", "bash"]).stdout).unwrap();
    let syntax = Command::new("bash").arg("-n").arg(&path).output().unwrap();
    assert!(
        syntax.status.success(),
        "bash -n: {}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    // Sourced, it registers a completion function for pgplan, and that function completes
    // `pgplan au` to `audit`.
    let script = format!(
        "source {path}; complete -p pgplan; COMP_WORDS=(pgplan au); COMP_CWORD=1; \
         COMP_LINE='pgplan au'; COMP_POINT=9; _pgplan pgplan au pgplan; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path = path.display()
    );
    let out = Command::new("bash").arg("-c").arg(script).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("-F _pgplan pgplan"), "{stdout}");
    assert!(stdout.lines().any(|l| l == "audit"), "{stdout}");
}

#[test]
fn the_man_page_names_every_command() {
    let page = String::from_utf8(run(&["man"]).stdout).unwrap();
    assert!(
        page.starts_with(".ie"),
        "roff: {}",
        &page[..80.min(page.len())]
    );
    assert!(page.contains(".TH pgplan 1"), "{page}");
    for command in COMMANDS {
        assert!(page.contains(command), "man page lacks {command}");
    }
}

#[test]
fn man_writes_one_page_per_command() {
    let dir = tempfile::tempdir().unwrap();
    run(&["man", "--dir", dir.path().to_str().unwrap()]);
    let audit = std::fs::read_to_string(dir.path().join("pgplan-audit.1")).unwrap();
    assert!(audit.contains(".TH pgplan-audit 1"), "{audit}");
    assert!(audit.contains("min\\-stats\\-age"), "{audit}");
    for command in COMMANDS {
        assert!(
            dir.path().join(format!("pgplan-{command}.1")).is_file(),
            "no page for {command}"
        );
    }
    assert!(dir.path().join("pgplan.1").is_file());
}
