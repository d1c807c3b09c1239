//! The binary's offline commands as a user runs them: every input form, bad input with a one-line
//! error and exit code 2 (never a panic), thresholds with exit code 1, colour decided once.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pgplan"))
}

fn fixture(path: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(path)
        .display()
        .to_string()
}

fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap()
}

fn run_stdin(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(bin())
        .env("NO_COLOR", "1")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Exit 2, one line on stderr that names the input and says `expected`, no panic.
fn assert_input_error(out: &Output, name: &str, expected: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("pgplan: "), "{err}");
    assert!(err.contains(name), "names the input: {err}");
    assert!(err.contains(expected), "says {expected:?}: {err}");
    assert!(stdout(out).is_empty(), "nothing on stdout");
}

#[test]
fn bad_input_gets_a_one_line_error_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let full = std::fs::read_to_string(fixture("story/before.pg16.json")).unwrap();
    let cases = [
        (write("empty.json", ""), "empty"),
        (write("blank.json", "  \n\n"), "empty"),
        (write("prose.txt", "this is not a plan"), "no plan found"),
        (
            write("query.sql", "SELECT * FROM orders WHERE id = 1;"),
            "looks like a SQL query, not its plan",
        ),
        (
            write(
                "error.txt",
                "ERROR:  relation \"orderz\" does not exist\nLINE 1: EXPLAIN SELECT * FROM orderz;",
            ),
            "looks like a psql error",
        ),
        // A child's line below a line of the plan that is not its root: what is left of a
        // plan whose first line was lost (a child's line first is a subtree, and reads).
        (
            write(
                "fragment.txt",
                "  Filter: (a > 1)\n  ->  Seq Scan on t  (cost=0.00..1.00 rows=1 width=4)\n",
            ),
            "part of a TEXT plan without its first line",
        ),
        (
            write(
                "collapsed.txt",
                "Nested Loop (cost=0.00..2.00 rows=1 width=4)\n -> Seq Scan on t (cost=0.00..1.00 rows=1 width=4)\n",
            ),
            "runs of spaces were collapsed",
        ),
        (
            write("truncated.json", &full[..full.len() / 2]),
            "truncated",
        ),
        (write("object.json", r#"{"rows": [1, 2, 3]}"#), "not a plan"),
        (write("array.json", "[1, 2, 3]"), "not a plan"),
        (
            write(
                "huge.json",
                r#"[{"Plan": {"Node Type": "Result", "Plan Rows": 1e999}}]"#,
            ),
            "out of range",
        ),
        (
            write(
                "wrong_type.json",
                r#"[{"Plan": {"Node Type": "Result", "Plan Rows": "many"}}]"#,
            ),
            "not a plan",
        ),
        (write("binary.bin", "\u{0}\u{1}\u{2}"), "no plan found"),
        // A file of JSON is read without its white space; an error still points into the file
        // as the user has it.
        (
            write(
                "typo.json",
                "[\n  {\n    \"Plan\": {\n      \"Node Type\" \"Result\"\n    }\n  }\n]\n",
            ),
            "at line 4, column 19",
        ),
    ];
    for (path, expected) in &cases {
        let out = run(&["explain", path]);
        assert_input_error(&out, path, expected);
        // diff reports the same error for either side.
        let out = run(&["diff", &fixture("story/before.pg16.json"), path]);
        assert_input_error(&out, path, expected);
    }
    let out = run(&["explain", "/nonexistent/plan.json"]);
    assert_input_error(&out, "/nonexistent/plan.json", "No such file");
    let invalid_utf8 = dir.path().join("latin1.json");
    std::fs::write(&invalid_utf8, [b'[', 0xff, b']']).unwrap();
    let out = run(&["explain", invalid_utf8.to_str().unwrap()]);
    assert_input_error(&out, "latin1.json", "not UTF-8");
}

/// A plan pasted from its middle reads, and every output says it is a subtree.
#[test]
fn a_subtree_reads_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("subtree.txt");
    std::fs::write(
        &path,
        "   ->  Parallel Seq Scan on t  (cost=0.00..1.00 rows=1 width=4) (actual time=0.010..0.020 rows=1 loops=3)\n         Filter: (a > 1)\n",
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let out = run(&["explain", path]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("  subtree: the plan starts at a child node (->)"),
        "{text}"
    );
    assert!(text.contains("no Execution Time (a subtree)"), "{text}");
    let out = run(&["explain", "--format", "json", path]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["subtree"], true);
    assert_eq!(doc["execution_ms"], serde_json::Value::Null);
    let out = run(&["explain", "--format", "markdown", path]);
    assert!(stdout(&out).contains("subtree: "), "{}", stdout(&out));
    let out = run(&["explain", "--format", "html", path]);
    assert!(
        stdout(&out).contains("subtree (pasted from the middle of a larger plan)"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn every_input_form_reads_the_same_plan() {
    let json = run(&[
        "explain",
        "--format",
        "json",
        &fixture("plans/psql_paste.pg16.json"),
    ]);
    let pasted = run(&[
        "explain",
        "--format",
        "json",
        &fixture("plans/psql_paste.pg16.psql.txt"),
    ]);
    assert!(
        json.status.success() && pasted.status.success(),
        "{}",
        stderr(&pasted)
    );
    // Two runs of the same query: everything but the timings is the same.
    let without_timings = |out: &Output| {
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let mut nodes = doc["nodes"].as_array().unwrap().clone();
        for node in &mut nodes {
            node.as_object_mut()
                .unwrap()
                .retain(|k, _| !k.ends_with("_ms"));
        }
        nodes
    };
    assert_eq!(
        without_timings(&json),
        without_timings(&pasted),
        "psql's pasted output reads as the JSON does"
    );

    let text = std::fs::read_to_string(fixture("story/partial_index.pg17.json")).unwrap();
    let from_stdin = run_stdin(&["explain", "--format", "json", "-"], &text);
    assert!(from_stdin.status.success(), "{}", stderr(&from_stdin));
    let doc: serde_json::Value = serde_json::from_slice(&from_stdin.stdout).unwrap();
    assert_eq!(doc["schema_version"], 3);
    assert_eq!(doc["nodes"][1]["node_type"], "Index Scan");
    assert_eq!(doc["nodes"][1]["index"], "events_pending_created_at_idx");

    let auto = run(&[
        "explain",
        "--format",
        "json",
        &fixture("plans/auto_explain_log.pg18.auto_explain.json"),
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&auto.stdout).unwrap();
    assert!(
        doc["query_text"]
            .as_str()
            .unwrap()
            .contains("SELECT customer_id")
    );

    // Only one of diff's inputs may be standard input.
    let out = run(&["diff", "-", "-"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("standard input"));
}

#[test]
fn thresholds_set_exit_code_1() {
    // The lossy bitmap plan has a warning.
    let lossy = fixture("plans/bitmap_heap_scan_lossy.pg18.json");
    assert_eq!(run(&["explain", &lossy]).status.code(), Some(0));
    assert_eq!(
        run(&["explain", "--fail-on", "warning", &lossy])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(
        run(&["explain", "--fail-on", "critical", &lossy])
            .status
            .code(),
        Some(0)
    );

    let before = fixture("story/before.pg16.json");
    let after = fixture("story/partial_index.pg16.json");
    // Fewer pages after: no regression either way round... until it is reversed.
    assert_eq!(
        run(&["diff", "--fail-on-regression", "10", &before, &after])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        run(&["diff", "--fail-on-regression", "10", &after, &before])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn colour_is_decided_once() {
    let plan = fixture("story/before.pg16.json");
    let coloured = Command::new(bin())
        .args(["explain", "--color", "always", &plan])
        .output()
        .unwrap();
    assert!(
        stdout(&coloured).contains("\u{1b}["),
        "--color always colours"
    );
    let plain = Command::new(bin())
        .args(["explain", &plan])
        .output()
        .unwrap();
    assert!(
        !stdout(&plain).contains("\u{1b}["),
        "not a terminal: no colour"
    );
    let never = Command::new(bin())
        .env("NO_COLOR", "1")
        .args(["explain", "--color", "auto", &plan])
        .output()
        .unwrap();
    assert!(!stdout(&never).contains("\u{1b}["));
}

#[test]
fn usage_errors_exit_2() {
    let out = run(&["explain"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[
        "compare",
        "--runs",
        "0",
        "-",
        "--index",
        "CREATE INDEX ON t (a)",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("compare"));
}

/// `pgplan ... | head`: when the reader goes away, pgplan stops quietly with 0, as other Unix
/// tools do, in every format (JSON goes through serde_json, which must keep the pipe's error).
#[test]
fn a_reader_that_goes_away_is_not_an_error() {
    use std::io::Read;
    for format in ["text", "json", "markdown"] {
        for args in [
            vec!["explain", "--format", format, "story/before.pg16.json"],
            vec![
                "diff",
                "--format",
                format,
                "story/before.pg16.json",
                "story/status_index.pg16.json",
            ],
        ] {
            let args: Vec<String> = args
                .iter()
                .map(|a| {
                    if a.ends_with(".json") {
                        fixture(a)
                    } else {
                        a.to_string()
                    }
                })
                .collect();
            // A pipe of one page (4 KiB), smaller than every one of these outputs, so pgplan is
            // still writing when the reader goes away.
            let mut fds = [0; 2];
            // SAFETY: pipe2 fills the two descriptors, which are owned below.
            assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
            // SAFETY: fds[0] and fds[1] are open and owned by nothing else.
            let (reader, writer) = unsafe {
                use std::os::fd::FromRawFd;
                (
                    std::fs::File::from_raw_fd(fds[0]),
                    std::os::fd::OwnedFd::from_raw_fd(fds[1]),
                )
            };
            // SAFETY: F_SETPIPE_SZ on a pipe we own.
            let size = unsafe { libc::fcntl(fds[0], libc::F_SETPIPE_SZ, 4096) };
            assert!(size >= 4096, "F_SETPIPE_SZ");
            let child = Command::new(bin())
                .env("NO_COLOR", "1")
                .args(&args)
                .stdout(Stdio::from(writer))
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut reader = reader;
            let mut first = [0u8; 5];
            reader.read_exact(&mut first).unwrap();
            // Wait until pgplan fills the pipe again, then go away: its next write fails with
            // EPIPE.
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(reader);
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
            assert!(stderr(&out).is_empty(), "{args:?}: {}", stderr(&out));
        }
    }
}

/// psql's output in the forms users paste it: the header cut off (the paste starts at `[` but
/// keeps the `+` marks), `psql -t` (tuples only: no header, rule or footer), and the unicode
/// line style (`─` rule, `↵` continuation marks, `│` in expanded output). Each is made from the
/// recorded psql capture, as psql would print it, and must read as the plain JSON does.
#[test]
fn psql_pastes_without_header_tuples_only_and_unicode_read() {
    let captured = std::fs::read_to_string(fixture("plans/psql_paste.pg16.psql.txt")).unwrap();
    let lines: Vec<&str> = captured.lines().collect();
    // The JSON's lines: after the header and rule, before the "(1 row)" footer.
    let body: Vec<&str> = lines[2..]
        .iter()
        .copied()
        .take_while(|l| !l.starts_with('('))
        .collect();
    let from_bracket = lines[2..].join("\n").trim_start().to_owned();
    let tuples_only = body.join("\n") + "\n";
    let unicode = captured
        .lines()
        .map(|l| {
            if l.chars().all(|c| c == '-') && !l.is_empty() {
                "─".repeat(l.len())
            } else if let Some(head) = l.strip_suffix('+') {
                format!("{head}↵")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    // Expanded unicode output: a record header, the label and `│` bars.
    let mut expanded = String::from("─[ RECORD 1 ]─────────────\n");
    for (i, line) in body.iter().enumerate() {
        let content = line.strip_prefix(' ').unwrap_or(line);
        let content = content
            .strip_suffix('+')
            .map(|c| format!("{}↵", c.trim_end()))
            .unwrap_or_else(|| content.to_owned());
        let label = if i == 0 { "QUERY PLAN" } else { "          " };
        expanded.push_str(&format!("{label} │ {content}\n"));
    }
    let json = run(&[
        "explain",
        "--format",
        "json",
        &fixture("plans/psql_paste.pg16.json"),
    ]);
    let nodes_of = |out: &Output| {
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| (n["node_type"].clone(), n["actual_rows"].clone()))
            .collect::<Vec<_>>()
    };
    for (form, input) in [
        ("without the header", &from_bracket),
        ("psql -t", &tuples_only),
        ("unicode line style", &unicode),
        ("unicode expanded", &expanded),
    ] {
        let out = run_stdin(&["explain", "--format", "json", "-"], input);
        assert!(out.status.success(), "{form}: {}", stderr(&out));
        assert_eq!(nodes_of(&out), nodes_of(&json), "{form}");
    }
}

/// Counters that no server reports (negative, or past a 64-bit counter) are refused with the key
/// and the node named, exit 2, instead of printing "inf.0 ms" or negative totals.
#[test]
fn impossible_figures_are_refused_naming_key_and_node() {
    let text = std::fs::read_to_string(fixture("plans/seq_scan_filter.pg16.json")).unwrap();
    for (from, to, key) in [
        (
            "\"Actual Loops\": 1",
            "\"Actual Loops\": -1",
            "Actual Loops",
        ),
        (
            "\"Shared Hit Blocks\": ",
            "\"Shared Hit Blocks\": 1e308, \"x\": ",
            "Shared Hit Blocks",
        ),
        (
            "\"Actual Rows\": ",
            "\"Actual Rows\": 1e300, \"x\": ",
            "Actual Rows",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        let broken = text.replacen(from, to, 1);
        let out = run_stdin(&["explain", "-"], &broken);
        assert_eq!(out.status.code(), Some(2), "{key}");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("\"{key}\" of node 0 (")), "{err}");
    }
}

/// A diff of a measured plan and an estimate-only one says which was measured, and estimate-only
/// plans compare their estimated totals.
#[test]
fn diff_says_which_plan_was_measured() {
    let measured = fixture("plans/seq_scan_filter.pg16.json");
    let estimated = fixture("plans/estimate_only.pg16.json");
    let out = run(&["diff", &measured, &estimated]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("neither plan was measured"), "{text}");
    assert!(text.contains("only the before plan was measured"), "{text}");
    let out = run(&["diff", &estimated, &estimated]);
    let text = stdout(&out);
    assert!(text.contains("neither plan was measured"), "{text}");
    assert!(text.contains("estimated cost"), "{text}");
    assert!(text.contains("estimated rows"), "{text}");
}

/// The Markdown diff shows the same totals as the text diff, planning time included.
#[test]
fn markdown_diff_has_the_totals_of_the_text_diff() {
    let (before, after) = (
        fixture("story/before.pg16.json"),
        fixture("story/partial_index.pg16.json"),
    );
    let text = stdout(&run(&["diff", &before, &after]));
    let markdown = stdout(&run(&["diff", "--format", "markdown", &before, &after]));
    for row in [
        "execution time",
        "planning time",
        "pages touched",
        "temp blocks",
    ] {
        assert!(text.contains(row), "{text}");
        assert!(
            markdown.contains(&format!("| {row} |")),
            "{row}:\n{markdown}"
        );
    }
}

/// Control characters in a plan's strings (a relation named with an escape sequence, a newline in
/// a filter) reach neither the terminal nor the Markdown raw: they are shown escaped.
#[test]
fn control_characters_in_plan_strings_are_escaped() {
    let plan = r#"[{"Plan": {"Node Type": "Seq Scan", "Relation Name": "evil\u001b[2Jname",
        "Schema": "public", "Alias": "e", "Plan Rows": 10, "Actual Rows": 100000,
        "Actual Loops": 1, "Actual Startup Time": 0, "Actual Total Time": 5,
        "Filter": "(a = 1)\nAND (b = 2)", "Rows Removed by Filter": 900000}}]"#;
    for format in ["text", "markdown"] {
        let out = run_stdin(&["explain", "--format", format, "-"], plan);
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(!text.contains('\u{1b}'), "{format}: {text:?}");
        assert!(text.contains(r"evil\u{1b}[2Jname"), "{format}: {text}");
        assert!(text.contains(r"(a = 1)\nAND (b = 2)"), "{format}: {text}");
    }
    // The diff's change messages name the relation too.
    let dir = std::env::temp_dir().join(format!("pgplan-control-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (before, after) = (dir.join("before.json"), dir.join("after.json"));
    std::fs::write(&before, plan).unwrap();
    std::fs::write(&after, plan.replace("Seq Scan", "Index Scan")).unwrap();
    for format in ["text", "markdown"] {
        let out = run(&[
            "diff",
            "--format",
            format,
            before.to_str().unwrap(),
            after.to_str().unwrap(),
        ]);
        let text = stdout(&out);
        assert!(text.contains("access_method_changed"), "{format}: {text}");
        assert!(!text.contains('\u{1b}'), "{format}: {text:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
