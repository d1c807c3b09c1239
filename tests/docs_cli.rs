//! `pgplan completions` and `pgplan man` as a user installs them: every shell's script is
//! generated from the CLI definition, bash accepts its script, and the man pages name every
//! command and option. And the documentation's command lines: every `pgplan ...` line in the
//! README and `docs/` still parses with the current CLI, and every option a synopsis or an
//! inline mention names still exists.

use std::path::PathBuf;
use std::process::{Command, Output};

use clap::{CommandFactory, Parser};
use pgplan::cli::Cli;

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

/// The README and every reference page under `docs/`.
fn documents() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    files.extend(pages);
    files
}

/// A command line as the documentation shows it.
#[derive(Debug)]
struct DocLine {
    place: String,
    text: String,
    kind: DocKind,
}

#[derive(Debug, PartialEq)]
enum DocKind {
    /// A line a user can paste: it must parse as it is.
    Runnable,
    /// A synopsis (`[--top N]`, `text|json`, `QUERY.sql ...`) or a mention in prose: its
    /// options must exist, its placeholders need not parse.
    Options,
}

/// The line with each quoted value replaced by `Q`, split at white space: a synopsis's words,
/// where `|` separates alternatives inside a word (`text|json`) rather than ending a pipeline.
fn synopsis_words(line: &str) -> Vec<String> {
    let mut unquoted = String::new();
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                unquoted.push('Q');
            }
            None => unquoted.push(c),
        }
    }
    unquoted.split_whitespace().map(str::to_string).collect()
}

/// A synopsis shows optional parts in brackets, alternatives with `|` inside a word, or
/// repetition with `...`; a line a user runs has none of these outside its quoted values
/// (`--index "CREATE INDEX ..."` is a value).
fn is_synopsis(line: &str) -> bool {
    synopsis_words(line).iter().any(|w| {
        w.starts_with('[')
            || w.ends_with(']')
            || w.ends_with("...")
            || (w.contains('|') && w != "|" && !w.contains('='))
    })
}

/// Every `pgplan ...` (or `cargo run --release -- ...`) command line of a document: lines in
/// shell blocks, `$ `-prompted lines in output blocks (the rest of an output block is output,
/// which also starts with `pgplan compare ·`), with a synopsis's indented continuation lines
/// joined; and `pgplan <command> ...` spans in prose.
fn command_lines(name: &str, text: &str) -> Vec<DocLine> {
    let mut lines = Vec::new();
    let mut fence: Option<String> = None;
    let all: Vec<&str> = text.lines().collect();
    let mut index = 0;
    while index < all.len() {
        let line = all[index];
        let number = index + 1;
        index += 1;
        if let Some(rest) = line.trim_start().strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(rest.trim().to_string()),
            };
            continue;
        }
        match &fence {
            Some(language) => {
                let shell = language == "sh" || language == "bash";
                let command = if let Some(prompted) = line.strip_prefix("$ ") {
                    Some(prompted)
                } else if shell {
                    Some(line.trim_start())
                } else {
                    None
                };
                let Some(command) = command else { continue };
                let command = if let Some(args) = command.strip_prefix("cargo run --release -- ") {
                    format!("pgplan {args}")
                } else if command.starts_with("pgplan ") {
                    command.to_string()
                } else {
                    continue;
                };
                let mut command = command;
                // A synopsis goes on over indented lines.
                while index < all.len()
                    && all[index].starts_with(' ')
                    && all[index].trim_start().starts_with('[')
                {
                    command.push(' ');
                    command.push_str(all[index].trim());
                    index += 1;
                }
                let kind = if is_synopsis(&command) {
                    DocKind::Options
                } else {
                    DocKind::Runnable
                };
                lines.push(DocLine {
                    place: format!("{name}:{number}"),
                    text: command,
                    kind,
                });
            }
            None => {
                for span in line.split('`').skip(1).step_by(2) {
                    if span.starts_with("pgplan ") {
                        lines.push(DocLine {
                            place: format!("{name}:{number}"),
                            text: span.to_string(),
                            kind: DocKind::Options,
                        });
                    }
                }
            }
        }
    }
    lines
}

/// The words of a shell command line, quotes removed, up to the first pipe, redirection, list
/// operator or comment; and whether the line went on past that point.
fn shell_words(line: &str) -> (Vec<String>, bool) {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => quote = None,
            Some('"') if c == '\\' => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            Some(_) => word.push(c),
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    in_word = true;
                }
                '\\' => {
                    if let Some(next) = chars.next() {
                        word.push(next);
                        in_word = true;
                    }
                }
                ' ' | '\t' => {
                    if in_word {
                        words.push(std::mem::take(&mut word));
                        in_word = false;
                    }
                }
                '|' | '>' | '<' | ';' | '&' | '#' if !in_word || c != '#' => {
                    // `2>` is a redirection of stderr, not an argument `2`.
                    if c == '>' && word == "2" {
                        word.clear();
                        in_word = false;
                    }
                    if in_word {
                        words.push(std::mem::take(&mut word));
                    }
                    return (words, true);
                }
                _ => {
                    word.push(c);
                    in_word = true;
                }
            },
        }
    }
    assert!(quote.is_none(), "unterminated quote in {line:?}");
    if in_word {
        words.push(word);
    }
    (words, false)
}

#[test]
fn shell_words_split_as_the_shell_does() {
    let (words, cut) = shell_words(
        r#"pgplan explain -d "host=localhost dbname=shop" q.sql --param 'a b' >/dev/null"#,
    );
    assert_eq!(
        words,
        [
            "pgplan",
            "explain",
            "-d",
            "host=localhost dbname=shop",
            "q.sql",
            "--param",
            "a b"
        ]
    );
    assert!(cut);
    let (words, _) = shell_words("pgplan man --dir ~/man1   # then: man pgplan-audit");
    assert_eq!(words, ["pgplan", "man", "--dir", "~/man1"]);
    let (words, _) = shell_words("pgplan man | man -l -");
    assert_eq!(words, ["pgplan", "man"]);
    assert!(is_synopsis("pgplan diff [--format text|json] BEFORE AFTER"));
    assert!(is_synopsis("pgplan explain -d DBNAME|CONNINFO QUERY.sql|-"));
    assert!(!is_synopsis(
        r#"pgplan compare -d "dbname=app" q.sql --index "CREATE INDEX ...""#
    ));
    assert!(!is_synopsis("pgplan man | man -l -"));
}

/// The long and short options `pgplan <command>` accepts, the global ones included; for an
/// option in place of the command (`pgplan --version`), those of `pgplan` itself. When the
/// next word names a subcommand of the command (`pgplan stats export`), its options, and
/// `true` for the word it took.
fn options_of(command: &str, next: Option<&str>) -> Option<(Vec<String>, bool)> {
    let mut cli = Cli::command();
    // Built, the command holds the `--version` clap generates.
    cli.build();
    let sub = if command.starts_with('-') {
        &cli
    } else {
        cli.find_subcommand(command)?
    };
    let nested = next.and_then(|name| sub.find_subcommand(name));
    let mut options = Vec::new();
    let arguments = nested.into_iter().flat_map(|n| n.get_arguments());
    for arg in arguments
        .chain(sub.get_arguments())
        .chain(cli.get_arguments())
    {
        if let Some(long) = arg.get_long() {
            options.push(format!("--{long}"));
        }
        for alias in arg.get_all_aliases().unwrap_or_default() {
            options.push(format!("--{alias}"));
        }
        if let Some(short) = arg.get_short() {
            options.push(format!("-{short}"));
        }
    }
    Some((options, nested.is_some()))
}

#[test]
fn every_documented_command_line_parses_with_the_current_cli() {
    let mut runnable = 0;
    let mut synopses = 0;
    let mut failures = Vec::new();
    for document in documents() {
        let text = std::fs::read_to_string(&document).unwrap();
        let name = document
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .display()
            .to_string();
        for line in command_lines(name.trim_start_matches('/'), &text) {
            let (words, _) = shell_words(&line.text);
            match line.kind {
                DocKind::Runnable => {
                    runnable += 1;
                    if let Err(error) = Cli::try_parse_from(&words) {
                        failures.push(format!(
                            "{}: `{}` does not parse: {}",
                            line.place,
                            line.text,
                            error.render()
                        ));
                    }
                }
                DocKind::Options => {
                    let words = synopsis_words(&line.text);
                    let Some(command) = words.get(1) else {
                        continue;
                    };
                    let Some((known, nested)) =
                        options_of(command, words.get(2).map(String::as_str))
                    else {
                        // Prose such as `pgplan connects wherever psql does` is no command.
                        if line.text.contains('-') || words.len() == 2 {
                            failures.push(format!(
                                "{}: no command {command:?}: `{}`",
                                line.place, line.text
                            ));
                        }
                        continue;
                    };
                    synopses += 1;
                    let first = if command.starts_with('-') {
                        1
                    } else if nested {
                        3
                    } else {
                        2
                    };
                    for word in &words[first..] {
                        let option = word.trim_start_matches('[').trim_end_matches("...");
                        let option = option.trim_end_matches(']').trim_end_matches("...");
                        if !option.starts_with('-') || option == "-" {
                            continue;
                        }
                        let option = option.split('=').next().unwrap();
                        // `-d/--dbname` style pairs name both spellings.
                        for spelling in option.split('/') {
                            if !known.iter().any(|k| k == spelling) {
                                failures.push(format!(
                                    "{}: `pgplan {command}` has no option {spelling}: `{}`",
                                    line.place, line.text
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The README's and the reference's examples: far more than these, so a count this low
    // means the scan lost them.
    assert!(
        runnable >= 15,
        "only {runnable} runnable command lines found"
    );
    assert!(
        synopses >= 20,
        "only {synopses} synopses and mentions found"
    );
}
