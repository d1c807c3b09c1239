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
//! ```
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
) -> Result<(), Box<dyn std::error::Error>> {
    if case.cold {
        cluster.restart()?;
    }
    let client = cluster.connect(case.database).await?;
    client.batch_execute("BEGIN").await?;
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
    let sql = explain_sql(case);
    let analyze = case.explain.contains("ANALYZE");
    if analyze && !case.cold {
        client.simple_query(&sql).await?;
    }
    let messages = client.simple_query(&sql).await?;
    client.batch_execute("ROLLBACK").await?;
    let lines: Vec<String> = messages
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
        .collect();
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
            other => panic!("unknown capture {other}"),
        }
    }
    Ok(())
}

/// psql's default aligned output of the JSON plan, as a user would copy it from a terminal.
fn capture_psql(
    cluster: &Cluster,
    case: &Case,
    major: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let options: String = case
        .settings
        .iter()
        .map(|s| {
            let (name, value) = s.split_once('=').unwrap();
            format!("-c {}={} ", name.trim(), value.trim().trim_matches('\''))
        })
        .collect();
    let out = Command::new("psql")
        .args(["-X", "-h"])
        .arg(cluster.socket_dir())
        .args(["-p", &cluster.port().to_string(), "-U", "postgres", "-d"])
        .arg(case.database)
        .arg("-c")
        .arg(explain_sql(case))
        .env("PGOPTIONS", options.trim())
        .env("PAGER", "")
        .output()?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned().into());
    }
    let path = case.dir.join(format!("{}.pg{major}.psql.txt", case.name));
    fs::write(&path, &out.stdout)?;
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
    let mut sql = String::from(
        "LOAD 'auto_explain';
         SET auto_explain.log_min_duration = 0;
         SET auto_explain.log_analyze = on;
         SET auto_explain.log_buffers = on;
         SET auto_explain.log_verbose = on;
         SET auto_explain.log_format = 'json';",
    );
    for setting in &case.settings {
        sql.push_str(&format!("SET {setting};"));
    }
    client.batch_execute(&sql).await?;
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let setup = fs::read_to_string(root.join("fixtures/plans/setup.sql"))?;
    let story = fs::read_to_string(root.join("demo/story.sql"))?;
    let advise = fs::read_to_string(root.join("fixtures/advise/setup.sql"))?;
    let cases = cases();

    for major in versions {
        let bins = ServerBinaries::at(binaries_cache_dir().join(major.to_string()).join("bin"))?;
        println!("PostgreSQL {} ({})", bins.version, bins.bin_dir.display());
        let options = ClusterOptions::new(bins)
            .setting("shared_buffers", "128MB")
            .setting("max_parallel_workers_per_gather", 2)
            .setting("jit", "off")
            // Keep autovacuum from changing visibility maps and statistics mid-recording.
            .setting("autovacuum", "off");
        let mut cluster = Cluster::start(options)?;
        cluster
            .execute("postgres", "CREATE DATABASE fixtures")
            .await?;
        cluster.execute("postgres", "CREATE DATABASE story").await?;
        cluster
            .execute("postgres", "CREATE DATABASE advise")
            .await?;
        // One statement at a time: VACUUM refuses the implicit transaction of a multi-statement query.
        for statement in script_statements(&setup) {
            cluster.execute("fixtures", &statement).await?;
        }
        for statement in script_statements(&story) {
            cluster.execute("story", &statement).await?;
        }
        for statement in script_statements(&advise) {
            cluster.execute("advise", &statement).await?;
        }
        for case in &cases {
            if major < case.min_version {
                continue;
            }
            if let Some(only) = &only
                && !only.contains(&case.name)
            {
                continue;
            }
            if let Err(e) = record_case(&mut cluster, case, major).await {
                eprintln!(
                    "{} on {major}: {e}\nserver log:\n{}",
                    case.name,
                    cluster.log()
                );
                return Err(e);
            }
        }
    }
    Ok(())
}
