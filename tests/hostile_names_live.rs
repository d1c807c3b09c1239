//! Every report kind rendered with hostile catalog names (an escape sequence, a newline, a
//! `<script>` tag) in every format it has: no raw control byte but the renderers' own line
//! breaks reaches the reader, a name never breaks a line, and Markdown and HTML never carry the
//! tag as markup.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{TestDb, for_each_version, pgplan_bin, stderr};

/// A table, an index and a column whose names hold ESC (a colour, a window title), BEL, a
/// newline and an HTML tag.
const SETUP: &str = "
    CREATE TABLE \"bad\u{1b}[31m\n<script>t\" (
        id integer PRIMARY KEY,
        \"v\u{1b}]0;owned\u{7}\" integer NOT NULL,
        note text NOT NULL
    );
    INSERT INTO \"bad\u{1b}[31m\n<script>t\"
        SELECT i, i % 100, 'note ' || i FROM generate_series(1, 5000) i;
    CREATE INDEX \"i\u{1b}[2J\n<script>x\" ON \"bad\u{1b}[31m\n<script>t\" (\"v\u{1b}]0;owned\u{7}\");
    CREATE INDEX \"i_again\" ON \"bad\u{1b}[31m\n<script>t\" (\"v\u{1b}]0;owned\u{7}\");
    VACUUM (ANALYZE) \"bad\u{1b}[31m\n<script>t\";";

const QUERY: &str =
    "SELECT id FROM \"bad\u{1b}[31m\n<script>t\" WHERE \"v\u{1b}]0;owned\u{7}\" = 7 AND note > 'n'";

const CANDIDATE: &str = "CREATE INDEX \"c\u{1b}[5m\n<script>c\" ON \"bad\u{1b}[31m\n<script>t\" (\"v\u{1b}]0;owned\u{7}\", note)";

fn pgplan(db: &TestDb, args: &[&str]) -> Output {
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .arg(args[0])
        .arg("-d")
        .arg(db.conninfo())
        .args(&args[1..])
        .output()
        .unwrap()
}

/// The raw control bytes in `bytes` other than the newline, with their offsets.
fn raw_controls(bytes: &[u8]) -> Vec<(usize, u8)> {
    let text = String::from_utf8_lossy(bytes);
    let mut found = Vec::new();
    for (i, c) in text.char_indices() {
        if c.is_control() && c != '\n' {
            found.push((i, c as u32 as u8));
        }
    }
    found
}

fn check(what: &str, format: &str, out: &Output) {
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{what} --format {format}: {}",
        stderr(out)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.is_empty(), "{what} --format {format}: no output");
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let raw = raw_controls(bytes);
        assert!(
            raw.is_empty(),
            "{what} --format {format}: raw control bytes on {stream} {raw:?}:\n{}",
            String::from_utf8_lossy(bytes)
        );
    }
    // A newline inside a name would start a line with the rest of it; a query text shown whole
    // in a code block keeps the lines its author wrote.
    let mut in_block = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        assert!(
            in_block || !line.starts_with("<script>"),
            "{what} --format {format}: a name broke a line:\n{text}"
        );
        if matches!(format, "markdown" | "html") {
            // Outside a code span or block, the tag must be text (an entity), never markup.
            let outside_code: String = if format == "markdown" {
                line.split('`').step_by(2).collect()
            } else {
                line.to_owned()
            };
            assert!(
                in_block || !outside_code.contains("<script>"),
                "{what} --format {format}: raw <script> in {line:?}:\n{text}"
            );
        }
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_report_escapes_hostile_names_in_every_format() {
    for_each_version("hostile_names", |major| async move {
        let db = TestDb::create(major, "hostile_names").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        let query = write(dir.path(), "q.sql", QUERY);
        let workload = dir.path().join("workload");
        std::fs::create_dir(&workload).unwrap();
        write(
            &workload,
            "lookup.sql",
            &format!("-- calls: 1000\n{QUERY}\n"),
        );
        let workload = workload.display().to_string();

        for format in ["text", "markdown", "html"] {
            let out = pgplan(&db, &["audit", "--format", format]);
            check("audit", format, &out);
        }
        for format in ["text", "markdown", "html"] {
            let out = pgplan(
                &db,
                &[
                    "compare", &query, "--index", CANDIDATE, "--runs", "1", "--format", format,
                ],
            );
            check("compare", format, &out);
            let out = pgplan(&db, &["explain", &query, "--format", format]);
            check("explain -d", format, &out);
        }
        for format in ["text", "markdown"] {
            let out = pgplan(
                &db,
                &[
                    "compare",
                    "--workload",
                    &workload,
                    "--index",
                    CANDIDATE,
                    "--runs",
                    "1",
                    "--format",
                    format,
                ],
            );
            check("compare --workload", format, &out);
        }
        for format in ["text", "markdown"] {
            let out = pgplan(
                &db,
                &[
                    "advise",
                    "--workload",
                    &workload,
                    "--runs",
                    "1",
                    "--format",
                    format,
                ],
            );
            check("advise", format, &out);
        }
        db.drop_db().await;
    })
    .await;
}
