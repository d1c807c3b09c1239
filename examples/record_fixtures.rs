//! Records the canned plans in `fixtures/` from real PostgreSQL servers, 13 to 18.
//!
//! Run through `scripts/record-fixtures.sh` (which fetches the server binaries first). Each case
//! is a `.sql` file whose header comments say how to run it:
//!
//! ```text
//! -- explain: ANALYZE, BUFFERS, VERBOSE     EXPLAIN options (this is the default; FORMAT JSON is added)
//! -- set: work_mem = '64kB'                 SET LOCAL before the query (repeatable)
//! -- index: CREATE INDEX ...                run inside the transaction before the query
//! -- versions: 14+                          only on these major versions
//! -- cold: yes                              restart the server first and record the first run
//! -- capture: psql | auto_explain           also record the plan as psql prints it / as auto_explain logs it
//! -- capture: auto_explain_text             the server log excerpt of auto_explain's TEXT plans (two runs)
//! -- capture: psql_styles                   the TEXT plan in every psql output style (borders,
//!                                           line styles, wrapped, expanded, unaligned, CSV, a session)
//! -- server: jit                            only on a server built with LLVM (see below)
//! ```
//!
//! The server builds of 13 to 18 the recorder uses have no LLVM, so JIT cases (`server: jit`)
//! are recorded from a second server whose build has `llvmjit.so`: `PGPLAN_JIT_PG_BIN` names
//! its `bin` directory, else the newest `/usr/lib/postgresql/<major>` that ships `llvmjit.so`
//! (Debian's and Ubuntu's packages). Its fixtures carry its major version like every other.
//!
//! Every case whose options name no FORMAT is also recorded in every format, back to back in the
//! same transaction on a warm cache, into `fixtures/formats/`: `<case>.pg<major>.json`, then
//! `.txt` (TEXT), `.yaml`, `.xml`, then `.repeat.json` (JSON again). A figure the two JSON runs
//! agree on is one the TEXT, YAML and XML runs between them must show too; a cold case restarts
//! the server before each run. `--formats-only` records only these.
//!
//! Every case runs in a transaction that is rolled back. Unless `cold`, the query runs once
//! before the recorded run, so the recorded figures are a warm cache's.
//! Cases live in `fixtures/plans` and `fixtures/story` (each with its setup script) and
//! `fixtures/advise` (its own `setup.sql`).
//! Output: `<case>.pg<major>.json` beside the case (`.txt` for FORMAT TEXT), plus
//! `<case>.pg<major>.psql.txt` / `<case>.pg<major>.auto_explain.json` for captures.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use pgplan::db::cluster::{Cluster, ClusterOptions, ServerBinaries, binaries_cache_dir};

struct Case {
    name: String,
    dir: PathBuf,
    database: &'static str,
    explain: String,
    settings: Vec<String>,
    index: Option<String>,
    min_version: u32,
    cold: bool,
    captures: Vec<String>,
    /// Recorded only from the server built with LLVM.
    jit: bool,
    query: String,
}

fn parse_case(path: &Path, database: &'static str) -> Case {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut case = Case {
        name: path.file_stem().unwrap().to_string_lossy().into_owned(),
        dir: path.parent().unwrap().to_path_buf(),
        database,
        explain: "ANALYZE, BUFFERS, VERBOSE".into(),
        settings: Vec::new(),
        index: None,
        min_version: 13,
        cold: false,
        captures: Vec::new(),
        jit: false,
        query: String::new(),
    };
    let mut query = Vec::new();
    for line in text.lines() {
        if let Some(comment) = line.strip_prefix("-- ") {
            if let Some((key, value)) = comment.split_once(": ") {
                let value = value.trim().to_owned();
                match key {
                    "explain" => case.explain = value,
                    "set" => case.settings.push(value),
                    "index" => case.index = Some(value),
                    "versions" => {
                        case.min_version =
                            value.trim_end_matches('+').parse().expect("versions: N+")
                    }
                    "cold" => case.cold = value == "yes",
                    "capture" => case.captures.push(value),
                    "server" => {
                        assert_eq!(value, "jit", "{}: server: jit", path.display());
                        case.jit = true;
                    }
                    _ => {}
                }
            }
            continue;
        }
        query.push(line);
    }
    case.query = query.join("\n").trim().trim_end_matches(';').to_owned();
    case
}

fn cases() -> Vec<Case> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut cases = Vec::new();
    for (dir, db) in [
        ("plans", "fixtures"),
        ("story", "story"),
        ("advise", "advise"),
    ] {
        let mut paths: Vec<PathBuf> = fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.extension().is_some_and(|e| e == "sql")
                    && p.file_name().is_some_and(|n| n != "setup.sql")
            })
            .collect();
        paths.sort();
        cases.extend(paths.iter().map(|p| parse_case(p, db)));
    }
    cases
}

fn explain_sql(case: &Case) -> String {
    let options = if case.explain.contains("FORMAT") {
        case.explain.clone()
    } else {
        format!("{}, FORMAT JSON", case.explain)
    };
    format!("EXPLAIN ({options}) {}", case.query)
}

async fn record_case(
    cluster: &mut Cluster,
    case: &Case,
    major: u32,
    formats_only: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    if formats_only {
        return record_formats(cluster, case, major).await;
    }
    if case.cold {
        cluster.restart()?;
    }
    let client = cluster.connect(case.database).await?;
    client.batch_execute("BEGIN").await?;
    prepare(&client, case).await?;
    let sql = explain_sql(case);
    let analyze = case.explain.contains("ANALYZE");
    if analyze && !case.cold {
        client.simple_query(&sql).await?;
    }
    let lines = rows_of(&client.simple_query(&sql).await?);
    client.batch_execute("ROLLBACK").await?;
    let ext = if case.explain.contains("FORMAT TEXT") {
        "txt"
    } else {
        "json"
    };
    let out = case.dir.join(format!("{}.pg{major}.{ext}", case.name));
    fs::write(&out, lines.join("\n") + "\n")?;
    println!("  {}", out.display());

    for capture in &case.captures {
        match capture.as_str() {
            "psql" => capture_psql(cluster, case, major)?,
            "auto_explain" => capture_auto_explain(cluster, case, major).await?,
            "auto_explain_text" | "psql_styles" => {}
            other => panic!("unknown capture {other}"),
        }
    }
    record_formats(cluster, case, major).await
}

fn formats_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/formats")
}

/// The case's settings and index, applied inside the open transaction.
async fn prepare(
    client: &tokio_postgres::Client,
    case: &Case,
) -> Result<(), Box<dyn std::error::Error>> {
    for setting in &case.settings {
        // A setting an older server does not have (enable_memoize on 13) governs a node type it
        // does not have either: skip it.
        let name = setting.split('=').next().unwrap_or_default().trim();
        let known = client
            .query("SELECT 1 FROM pg_settings WHERE name = $1", &[&name])
            .await?;
        if !known.is_empty() {
            client
                .batch_execute(&format!("SET LOCAL {setting}"))
                .await?;
        }
    }
    if let Some(index) = &case.index {
        client.batch_execute(index).await?;
    }
    Ok(())
}

fn rows_of(messages: &[tokio_postgres::SimpleQueryMessage]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
        .collect()
}

/// The case in JSON, TEXT, YAML, XML and JSON again, back to back, each run under a savepoint
/// that is rolled back so a data-modifying case sees the same rows every time.
async fn record_formats(
    cluster: &mut Cluster,
    case: &Case,
    major: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    if case.explain.contains("FORMAT") {
        return Ok(());
    }
    let dir = formats_dir();
    fs::create_dir_all(&dir)?;
    let analyze = case.explain.contains("ANALYZE");
    let runs = [
        ("JSON", "json"),
        ("TEXT", "txt"),
        ("YAML", "yaml"),
        ("XML", "xml"),
        ("JSON", "repeat.json"),
    ];
    let mut client = None;
    for (i, (format, ext)) in runs.iter().enumerate() {
        if case.cold || client.is_none() {
            drop(client.take());
            if case.cold {
                cluster.restart()?;
            }
            let c = cluster.connect(case.database).await?;
            c.batch_execute("BEGIN").await?;
            prepare(&c, case).await?;
            client = Some(c);
        }
        let c = client.as_ref().unwrap();
        let sql = format!("EXPLAIN ({}, FORMAT {format}) {}", case.explain, case.query);
        c.batch_execute("SAVEPOINT run").await?;
        if analyze && !case.cold && i == 0 {
            c.simple_query(&sql).await?;
            c.batch_execute("ROLLBACK TO SAVEPOINT run").await?;
        }
        let lines = rows_of(&c.simple_query(&sql).await?);
        c.batch_execute("ROLLBACK TO SAVEPOINT run").await?;
        let out = dir.join(format!("{}.pg{major}.{ext}", case.name));
        fs::write(&out, lines.join("\n") + "\n")?;
        println!("  {}", out.display());
        if case.cold {
            c.batch_execute("ROLLBACK").await?;
        }
    }
    if let Some(c) = client.take()
        && !case.cold
    {
        c.batch_execute("ROLLBACK").await?;
    }
    for capture in &case.captures {
        match capture.as_str() {
            "auto_explain_text" => capture_auto_explain_text(cluster, case, major).await?,
            "psql_styles" => capture_psql_styles(cluster, case, major)?,
            _ => {}
        }
    }
    Ok(())
}

/// psql run on the case, with `args` before the command; what it prints, as a user copies it.
fn run_psql(
    cluster: &Cluster,
    case: &Case,
    args: &[&str],
    input: Option<&str>,
) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    // The case's settings as session defaults: psql -c runs one statement, with no SET LOCAL.
    let options: String = case
        .settings
        .iter()
        .map(|s| {
            let (name, value) = s.split_once('=').unwrap();
            format!("-c {}={} ", name.trim(), value.trim().trim_matches('\''))
        })
        .collect();
    let mut command = Command::new("psql");
    command
        .args(["-X", "-h"])
        .arg(cluster.socket_dir())
        .args(["-p", &cluster.port().to_string(), "-U", "postgres", "-d"])
        .arg(case.database)
        .args(args)
        .env("PGOPTIONS", options.trim())
        .env("PAGER", "")
        .env("COLUMNS", "100");
    let out = match input {
        Some(input) => {
            use std::io::Write;
            let mut child = command
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()?;
            child.stdin.take().unwrap().write_all(input.as_bytes())?;
            child.wait_with_output()?
        }
        None => command.output()?,
    };
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned().into());
    }
    Ok(out.stdout)
}

/// The TEXT plan (and, for the CSV style, the JSON plan) as each psql output style prints it.
fn capture_psql_styles(
    cluster: &Cluster,
    case: &Case,
    major: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let text = format!("EXPLAIN ({}) {}", case.explain, case.query);
    let json = format!("EXPLAIN ({}, FORMAT JSON) {}", case.explain, case.query);
    // Each style's psql options: `name=value` is a `\pset` (`-P`), anything else a flag.
    let styles: [(&str, &str, &str); 16] = [
        ("aligned", "", &text),
        ("border0", "border=0", &text),
        ("border2", "border=2", &text),
        ("unicode-border0", "linestyle=unicode border=0", &text),
        ("unicode-border1", "linestyle=unicode", &text),
        ("unicode-border2", "linestyle=unicode border=2", &text),
        (
            "unicode-double",
            "linestyle=unicode border=2 unicode_border_linestyle=double \
             unicode_column_linestyle=double unicode_header_linestyle=double",
            &text,
        ),
        ("old-ascii", "linestyle=old-ascii border=2", &text),
        ("wrapped", "format=wrapped columns=60", &text),
        (
            "unicode-wrapped",
            "format=wrapped columns=60 linestyle=unicode border=2",
            &text,
        ),
        ("expanded", "-x", &text),
        ("unaligned", "-At", &text),
        ("csv", "--csv", &text),
        ("csv-json", "--csv", &json),
        (
            "unicode-double-json",
            "linestyle=unicode border=2 unicode_border_linestyle=double \
             unicode_header_linestyle=double",
            &json,
        ),
        ("aligned-json", "", &json),
    ];
    let dir = formats_dir();
    for (style, options, sql) in styles {
        let mut all: Vec<&str> = Vec::new();
        for option in options.split_whitespace() {
            if option.contains('=') {
                all.push("-P");
            }
            all.push(option);
        }
        all.extend(["-c", sql]);
        let out = run_psql(cluster, case, &all, None)?;
        let path = dir.join(format!("{}.pg{major}.psql-{style}.txt", case.name));
        fs::write(&path, out)?;
        println!("  {}", path.display());
    }
    // A session as it scrolls by: the statements echoed, BEGIN and SET answered, the plan, and
    // ROLLBACK; then the plan read through a function, whose result column is not "QUERY PLAN".
    let mut session = String::from("BEGIN;\n");
    for setting in &case.settings {
        session.push_str(&format!("SET LOCAL {setting};\n"));
    }
    session.push_str(&format!("{text};\nROLLBACK;\n"));
    let out = run_psql(cluster, case, &["-a"], Some(&session))?;
    let path = dir.join(format!("{}.pg{major}.psql-session.txt", case.name));
    fs::write(&path, out)?;
    println!("  {}", path.display());
    let function = format!(
        "BEGIN;\nCREATE FUNCTION pg_temp.plan_of(q text) RETURNS SETOF text LANGUAGE plpgsql AS          $f$ BEGIN RETURN QUERY EXECUTE 'EXPLAIN ({}) ' || q; END $f$;\n\\pset footer off\n         SELECT plan_line FROM pg_temp.plan_of($q${}$q$) AS plan_line;\nROLLBACK;\n",
        case.explain, case.query
    );
    let out = run_psql(cluster, case, &["-q"], Some(&function))?;
    let path = dir.join(format!("{}.pg{major}.psql-column.txt", case.name));
    fs::write(&path, out)?;
    println!("  {}", path.display());
    Ok(())
}

/// auto_explain loaded into the session, logging every statement's plan analyzed with buffers in
/// `format`, under the case's settings. Session-level SET: auto_explain logs each statement of
/// the session, outside any one transaction.
fn auto_explain_session(case: &Case, format: &str, verbose: bool) -> String {
    let mut sql = format!(
        "LOAD 'auto_explain';
         SET auto_explain.log_min_duration = 0;
         SET auto_explain.log_analyze = on;
         SET auto_explain.log_buffers = on;
         SET auto_explain.log_verbose = {};
         SET auto_explain.log_format = '{format}';",
        if verbose { "on" } else { "off" }
    );
    for setting in &case.settings {
        sql.push_str(&format!("SET {setting};"));
    }
    sql
}

/// auto_explain's TEXT plans as the server log holds them, with its log_line_prefix: the case
/// run twice, then a second statement, so one excerpt holds several plans.
async fn capture_auto_explain_text(
    cluster: &Cluster,
    case: &Case,
    major: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let before = cluster.log().len();
    let client = cluster.connect(case.database).await?;
    client
        .batch_execute(&auto_explain_session(case, "text", false))
        .await?;
    client.simple_query(&case.query).await?;
    client.simple_query(&case.query).await?;
    client
        .simple_query("SELECT count(*) FROM customers WHERE country = 'nl'")
        .await?;
    drop(client);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let log = cluster.log();
    let excerpt = &log[before.min(log.len())..];
    if excerpt.matches("plan:").count() < 3 {
        return Err("auto_explain wrote fewer than three plans to the log".into());
    }
    let path = formats_dir().join(format!("{}.pg{major}.auto_explain.log", case.name));
    fs::write(&path, excerpt)?;
    println!("  {}", path.display());
    Ok(())
}

/// psql's default aligned output of the JSON plan, as a user would copy it from a terminal.
fn capture_psql(
    cluster: &Cluster,
    case: &Case,
    major: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let out = run_psql(cluster, case, &["-c", &explain_sql(case)], None)?;
    let path = case.dir.join(format!("{}.pg{major}.psql.txt", case.name));
    fs::write(&path, out)?;
    println!("  {}", path.display());
    Ok(())
}

/// The bare JSON object auto_explain writes to the server log.
async fn capture_auto_explain(
    cluster: &Cluster,
    case: &Case,
    major: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let client = cluster.connect(case.database).await?;
    let marker = format!("/* pgplan-fixture {} */", case.name);
    client
        .batch_execute(&auto_explain_session(case, "json", true))
        .await?;
    client
        .simple_query(&format!("{marker} {}", case.query))
        .await?;
    drop(client);
    // The log is written asynchronously by the backend; give it a moment.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let log = cluster.log();
    // Continuation lines of a multi-line log message start with a tab.
    let start = log
        .rfind("plan:\n")
        .ok_or("auto_explain wrote no plan to the log")?;
    let mut json = String::new();
    for line in log[start + "plan:\n".len()..].lines() {
        match line.strip_prefix('\t') {
            Some(rest) => {
                json.push_str(rest);
                json.push('\n');
            }
            None => break,
        }
    }
    if !json.contains(&marker) {
        return Err("the last auto_explain plan in the log is not this case's".into());
    }
    let path = case
        .dir
        .join(format!("{}.pg{major}.auto_explain.json", case.name));
    fs::write(&path, json)?;
    println!("  {}", path.display());
    Ok(())
}

/// Splits the fixture scripts, whose statements each end a line with ';'.
fn script_statements(script: &str) -> Vec<String> {
    let mut statements = Vec::new();
    let mut current = String::new();
    for line in script.lines() {
        if line.trim_start().starts_with("--") || line.trim().is_empty() {
            continue;
        }
        current.push_str(line);
        current.push('\n');
        if line.trim_end().ends_with(';') {
            statements.push(std::mem::take(&mut current));
        }
    }
    statements
}

/// The server with LLVM that records the JIT cases, if this machine has one.
fn jit_server() -> Result<Option<ServerBinaries>, Box<dyn std::error::Error>> {
    if let Some(bin) = std::env::var_os("PGPLAN_JIT_PG_BIN") {
        return Ok(Some(ServerBinaries::at(PathBuf::from(bin))?));
    }
    let debian = Path::new("/usr/lib/postgresql");
    let mut majors: Vec<u32> = fs::read_dir(debian)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    majors.sort_unstable();
    for major in majors.into_iter().rev() {
        let dir = debian.join(major.to_string());
        if dir.join("lib/llvmjit.so").exists() {
            return Ok(Some(ServerBinaries::at(dir.join("bin"))?));
        }
    }
    Ok(None)
}

/// Starts a server from `bins`, loads the fixture databases and records `cases` on it.
async fn record_server(
    bins: ServerBinaries,
    cases: &[&Case],
    formats_only: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    println!("PostgreSQL {} ({})", bins.version, bins.bin_dir.display());
    let options = ClusterOptions::new(bins)
        .setting("shared_buffers", "128MB")
        .setting("max_parallel_workers_per_gather", 2)
        // JIT cases turn it on for their own transaction (SET LOCAL); the rest run without it.
        .setting("jit", "off")
        // Keep autovacuum from changing visibility maps and statistics mid-recording.
        .setting("autovacuum", "off")
        // A prefix like production logs carry, for the auto_explain TEXT excerpts.
        .setting("log_line_prefix", "%m [%p] %q%u@%d ");
    let mut cluster = Cluster::start(options)?;
    let major = cluster.major();
    if cases.iter().any(|c| c.jit) {
        // pg_jit_available() is false while jit is off, as it is for every other case.
        let client = cluster.connect("postgres").await?;
        client.batch_execute("BEGIN; SET LOCAL jit = on").await?;
        let row = client.query_one("SELECT pg_jit_available()", &[]).await?;
        client.batch_execute("ROLLBACK").await?;
        if !row.get::<_, bool>(0) {
            return Err(format!(
                "{}: JIT is not available on this server",
                cluster.binaries().bin_dir.display()
            )
            .into());
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (database, script) in [
        ("fixtures", "fixtures/plans/setup.sql"),
        ("story", "demo/story.sql"),
        ("advise", "fixtures/advise/setup.sql"),
    ] {
        cluster
            .execute("postgres", &format!("CREATE DATABASE {database}"))
            .await?;
        // One statement at a time: VACUUM refuses the implicit transaction of a multi-statement
        // query.
        for statement in script_statements(&fs::read_to_string(root.join(script))?) {
            cluster.execute(database, &statement).await?;
        }
    }
    for case in cases {
        if major < case.min_version {
            continue;
        }
        if let Err(e) = record_case(&mut cluster, case, major, formats_only).await {
            eprintln!(
                "{} on {major}: {e}\nserver log:\n{}",
                case.name,
                cluster.log()
            );
            return Err(e);
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let versions: Vec<u32> = match args.iter().position(|a| a == "--versions") {
        Some(i) => args[i + 1].split(',').map(|v| v.parse().unwrap()).collect(),
        None => (13..=18).collect(),
    };
    let only: Option<Vec<String>> = args
        .iter()
        .position(|a| a == "--cases")
        .map(|i| args[i + 1].split(',').map(str::to_owned).collect());
    let formats_only = args.iter().any(|a| a == "--formats-only");
    let cases = cases();
    let chosen: Vec<&Case> = cases
        .iter()
        .filter(|c| only.as_ref().is_none_or(|only| only.contains(&c.name)))
        .collect();
    let (jit, plain): (Vec<&Case>, Vec<&Case>) = chosen.into_iter().partition(|c| c.jit);

    if !plain.is_empty() {
        for &major in &versions {
            let dir = binaries_cache_dir().join(major.to_string()).join("bin");
            record_server(ServerBinaries::at(dir)?, &plain, formats_only).await?;
        }
    }
    if !jit.is_empty() {
        match jit_server()? {
            Some(bins) if versions.contains(&bins.major) => {
                record_server(bins, &jit, formats_only).await?
            }
            Some(bins) => println!(
                "JIT cases skipped: the server with LLVM is PostgreSQL {}",
                bins.major
            ),
            None => {
                return Err(
                    "JIT cases need a server built with LLVM: set PGPLAN_JIT_PG_BIN \
                            to its bin directory"
                        .into(),
                );
            }
        }
    }
    Ok(())
}
