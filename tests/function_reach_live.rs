//! User functions that reach outside, on real servers 13–18 through the binary: a PL/pgSQL or
//! SQL function whose body calls a function whose effects outlive the rollback (a replication
//! slot, dblink), directly or through another user function, is refused by compare, explain
//! -d, compare --workload and advise with the chain named; one wrongly marked IMMUTABLE is
//! refused before anything plans the query, even in the estimate-only modes (planning alone
//! would run it), by check too, and stats export leaves it unplanned; a statement of
//! pg_stat_statements that reaches outside is set aside with the reason;
//! `--allow-lasting-effects` lets them run. Each case proves nothing happened: no slot, no row
//! committed over dblink. `--hypothetical` runs on Debian's PostgreSQL 15, the build with HypoPG.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{TestDb, for_each_version, pgplan_bin, stderr};
use serde_json::Value;

const SETUP: &str = "
CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL);
INSERT INTO t SELECT i, i % 100 FROM generate_series(1, 5000) AS i;
CREATE TABLE remote_log (n integer);
CREATE EXTENSION dblink;
VACUUM (ANALYZE) t;
";

const SLOT_REASON: &str = "creates, drops or advances a replication slot, which is not \
                           transactional: a slot reserves WAL and holds back the xmin horizon \
                           until dropped";

const HINT: &str = "hint: measure the query without them, or pass --allow-lasting-effects to run \
                    it anyway (pgplan then cannot promise to leave nothing behind)";

const PLANNED_ONLY: &str = "the query is only planned, but the planner runs a function marked \
                            IMMUTABLE or STABLE when its arguments are constants (and a SQL \
                            function's body, which it inlines), whatever the function really does";

/// The functions of each case, in `db`: `slot` is this database's own slot name (the servers
/// are shared between tests), `other` a conninfo dblink reaches this database with.
async fn make_functions(db: &TestDb, slot: &str) {
    let other = db.conninfo();
    db.run(&format!(
        "CREATE FUNCTION make_slot() RETURNS integer LANGUAGE plpgsql VOLATILE AS \
         $f$BEGIN PERFORM pg_create_physical_replication_slot('{slot}'); RETURN 1; END$f$;
         CREATE FUNCTION relay() RETURNS integer LANGUAGE plpgsql VOLATILE AS \
         $f$BEGIN PERFORM dblink_exec('{other}', 'INSERT INTO remote_log VALUES (1)'); \
         RETURN 1; END$f$;
         CREATE FUNCTION log_it() RETURNS integer LANGUAGE sql VOLATILE AS 'SELECT relay()';
         CREATE FUNCTION frozen_slot(n integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE AS \
         $f$BEGIN PERFORM pg_create_physical_replication_slot('{slot}'); RETURN n; END$f$;
         CREATE FUNCTION run_dynamic() RETURNS integer LANGUAGE plpgsql VOLATILE AS \
         $f$BEGIN EXECUTE format('SELECT %s', 1); RETURN 1; END$f$;"
    ))
    .await;
}

/// `pgplan <command> -d DB <query file> <args>`; `advise`, `compare --workload` and `check
/// --update` read the query as a workload file.
fn pgplan(db: &TestDb, dir: &Path, command: &str, query: &str, args: &[&str]) -> Output {
    let path = dir.join(format!("q{}.sql", query.len()));
    std::fs::write(&path, format!("{query};\n")).unwrap();
    let conninfo = db.conninfo();
    let mut cmd = Command::new(pgplan_bin());
    cmd.env("NO_COLOR", "1").env_remove("PGSERVICE");
    match command {
        "advise" => cmd
            .args(["advise", "-d", &conninfo, "--runs", "1", "--workload"])
            .arg(&path),
        "workload" => cmd
            .args(["compare", "-d", &conninfo, "--runs", "1"])
            .args(["--index", "CREATE INDEX ON t (v)", "--workload"])
            .arg(&path),
        "compare" => cmd
            .args(["compare", "-d", &conninfo, "--runs", "1"])
            .args(["--index", "CREATE INDEX ON t (v)"])
            .arg(&path),
        "check" => cmd
            .args([
                "check",
                "-d",
                &conninfo,
                "--runs",
                "1",
                "--update",
                "--baseline",
            ])
            .arg(dir.join("baseline.json"))
            .arg("--workload")
            .arg(&path),
        _ => cmd.args([command, "-d", &conninfo]).arg(&path),
    };
    cmd.args(args).output().unwrap()
}

fn printed(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(out))
}

/// What no refused run may leave: this database's slot, and rows committed over dblink.
async fn left(db: &TestDb, slot: &str) -> String {
    db.value(&format!(
        "SELECT format('slots %s, remote rows %s', \
         (SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}'), \
         (SELECT count(*) FROM remote_log))"
    ))
    .await
    .unwrap()
}

const NOTHING: &str = "slots 0, remote rows 0";

/// A wrapper, one level and two, refused by every command with its chain; accepted, it runs.
async fn chains(major: u32) {
    let db = TestDb::create(major, "function_reach").await;
    db.run(SETUP).await;
    let slot = format!("reach_{}", db.name);
    make_functions(&db, &slot).await;
    let dir = tempfile::tempdir().unwrap();

    let one_level = format!(
        "the query calls functions whose effects outlive pgplan's rollback or reach outside \
         its session:\n  public.make_slot() calls \
         pg_catalog.pg_create_physical_replication_slot(): it {SLOT_REASON}\n{HINT}"
    );
    let two_levels = format!(
        "the query calls functions whose effects outlive pgplan's rollback or reach outside \
         its session:\n  public.log_it() calls public.relay(), which calls \
         public.dblink_exec(): it runs SQL over another connection, which commits on its own \
         and outlives pgplan's rollback (a named connection also stays open on this \
         backend)\n{HINT}"
    );
    for (query, refusal) in [
        ("SELECT make_slot()", &one_level),
        (
            "SELECT id FROM t WHERE id = 1 AND log_it() = 1",
            &two_levels,
        ),
    ] {
        for command in ["compare", "explain"] {
            let out = pgplan(&db, dir.path(), command, query, &[]);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{command} {query}: {}",
                printed(&out)
            );
            assert_eq!(
                stderr(&out),
                format!("pgplan: {refusal}\n"),
                "{command} {query}"
            );
            assert!(out.stdout.is_empty(), "{command} {query}");
        }
        // A workload file's query is refused before its values are chosen or it is planned.
        for command in ["workload", "advise"] {
            let out = pgplan(&db, dir.path(), command, query, &[]);
            let text = printed(&out);
            assert_eq!(out.status.code(), Some(2), "{command} {query}: {text}");
            assert!(text.contains(refusal.as_str()), "{command} {query}: {text}");
        }
        assert_eq!(left(&db, &slot).await, NOTHING, "{query}");
    }

    // A SQL-standard body (RETURN or BEGIN ATOMIC, 14+) is kept parsed, not in prosrc: read
    // from its deparsed text.
    if major >= 14 {
        db.run("CREATE FUNCTION atomic_slot() RETURNS integer LANGUAGE sql RETURN make_slot()")
            .await;
        let out = pgplan(&db, dir.path(), "compare", "SELECT atomic_slot()", &[]);
        assert_eq!(out.status.code(), Some(2), "{}", printed(&out));
        assert!(
            stderr(&out).contains(&format!(
                "\n  public.atomic_slot() calls public.make_slot(), which calls \
                 pg_catalog.pg_create_physical_replication_slot(): it {SLOT_REASON}\n"
            )),
            "{}",
            stderr(&out)
        );
        assert_eq!(left(&db, &slot).await, NOTHING, "RETURN body");
    }

    // A body that runs SQL made at run time cannot be read: run, and said.
    let out = pgplan(
        &db,
        dir.path(),
        "compare",
        "SELECT run_dynamic()",
        &["--format", "json"],
    );
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{}",
        printed(&out)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        doc["warnings"].as_array().unwrap().iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("(here: public.run_dynamic() runs dynamic SQL (EXECUTE of a string made at run time), which pgplan cannot read)")),
        "{doc:#}"
    );
    assert_eq!(left(&db, &slot).await, NOTHING);

    // Accepted, they run, and the report says what ran. Here, not in a test of its own:
    // the slot is the server's, and the other tests' lasting-state diff would see it.
    let accept = ["--allow-lasting-effects"];

    // explain -d runs it once: the slot is made, named as left behind, exit 4.
    let out = pgplan(&db, dir.path(), "explain", "SELECT make_slot()", &accept);
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(
        text.contains(&format!(
            "--allow-lasting-effects: the query calls public.make_slot(), which calls \
             pg_catalog.pg_create_physical_replication_slot(): it {SLOT_REASON}; pgplan ran \
             it and cannot undo that"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("left behind: replication slot {slot}")),
        "{text}"
    );
    assert_eq!(left(&db, &slot).await, "slots 1, remote rows 0");
    db.run(&format!("SELECT pg_drop_replication_slot('{slot}')"))
        .await;

    // Planning alone runs the IMMUTABLE wrapper: accepted, the estimate says so.
    let out = pgplan(
        &db,
        dir.path(),
        "explain",
        "SELECT id FROM t WHERE v = $1 AND id > frozen_slot(1)",
        &["--generic-plan", "--allow-lasting-effects"],
    );
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(4), "{text}");
    assert!(
        text.contains("planning the query ran it, and pgplan cannot undo that"),
        "{text}"
    );
    assert_eq!(left(&db, &slot).await, "slots 1, remote rows 0");
    db.run(&format!("SELECT pg_drop_replication_slot('{slot}')"))
        .await;

    // The two-level chain over dblink commits its row on the other connection.
    let out = pgplan(&db, dir.path(), "explain", "SELECT log_it()", &accept);
    let text = printed(&out);
    assert!(matches!(out.status.code(), Some(0) | Some(1)), "{text}");
    assert!(
        text.contains("the query calls public.log_it(), which calls public.relay(), which calls public.dblink_exec(): it runs SQL over another connection"),
        "{text}"
    );
    assert_eq!(left(&db, &slot).await, "slots 0, remote rows 1");
    db.wait_until_pgplan_sessions_are_gone().await;
    db.drop_db().await;
}

/// A function marked IMMUTABLE is refused before anything plans the query, estimates included.
async fn planned(major: u32) {
    let db = TestDb::create(major, "function_reach_planned").await;
    db.run(SETUP).await;
    let slot = format!("reach_{}", db.name);
    make_functions(&db, &slot).await;
    let dir = tempfile::tempdir().unwrap();
    let line = format!(
        "  public.frozen_slot() calls pg_catalog.pg_create_physical_replication_slot(): it \
         {SLOT_REASON}"
    );
    let planned = format!(
        "the query calls functions whose effects outlive pgplan's rollback or reach \
         outside its session:\n{line}\n{PLANNED_ONLY}\n{HINT}\n"
    );
    // Estimate-only: the planner would fold frozen_slot(1), running its body.
    let generic = "SELECT id FROM t WHERE v = $1 AND id > frozen_slot(1)";
    for command in ["compare", "explain"] {
        let out = pgplan(&db, dir.path(), command, generic, &["--generic-plan"]);
        assert_eq!(out.status.code(), Some(2), "{command}: {}", printed(&out));
        // After compare's note on what a generic plan is.
        assert!(
            stderr(&out).ends_with(&planned),
            "{command}: {}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty(), "{command}");
        assert_eq!(left(&db, &slot).await, NOTHING, "{command} --generic-plan");
    }
    // Run: refused from the text, before the EXPLAIN that reads the plan's calls.
    let folded = "SELECT id FROM t WHERE id > frozen_slot(1)";
    for command in ["compare", "explain", "workload", "advise", "check"] {
        let out = pgplan(&db, dir.path(), command, folded, &[]);
        let text = printed(&out);
        assert_eq!(out.status.code(), Some(2), "{command}: {text}");
        assert!(
            text.contains(&format!("{line}\n{HINT}")),
            "{command}: {text}"
        );
        assert_eq!(left(&db, &slot).await, NOTHING, "{command}");
    }
    // check --estimated only plans its queries: refused for what planning runs.
    let out = pgplan(&db, dir.path(), "check", folded, &["--estimated"]);
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(2), "check --estimated: {text}");
    assert!(
        text.contains(&format!("{line}\n{PLANNED_ONLY}\n{HINT}")),
        "check --estimated: {text}"
    );
    assert!(!dir.path().join("baseline.json").exists());
    assert_eq!(left(&db, &slot).await, NOTHING, "check --estimated");
    // stats export plans its workload's queries to find their tables: not this one.
    let path = dir.path().join("stats_workload.sql");
    std::fs::write(&path, format!("{folded};\n")).unwrap();
    let out = Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .args([
            "stats",
            "export",
            "-d",
            &db.conninfo(),
            "--table",
            "t",
            "--workload",
        ])
        .arg(&path)
        .output()
        .unwrap();
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(0), "stats export: {text}");
    assert!(
        text.contains(&format!(
            "not planned, its tables are left out: planning it runs functions whose effects \
             outlive a rollback: {}",
            line.trim_start()
        )),
        "stats export: {text}"
    );
    assert_eq!(left(&db, &slot).await, NOTHING, "stats export");
    // A VOLATILE wrapper is never run by planning: the estimate-only modes plan it.
    let volatile = "SELECT id FROM t WHERE v = $1 AND make_slot() = 1";
    for command in ["compare", "explain"] {
        let out = pgplan(&db, dir.path(), command, volatile, &["--generic-plan"]);
        assert!(
            matches!(out.status.code(), Some(0) | Some(1)),
            "{command}: {}",
            printed(&out)
        );
        assert_eq!(left(&db, &slot).await, NOTHING, "{command} --generic-plan");
    }
    db.wait_until_pgplan_sessions_are_gone().await;
    db.drop_db().await;
}

/// A statement of pg_stat_statements whose function has reached outside since it was recorded
/// is set aside with the reason, and the rest of the workload is measured.
async fn view_statement(major: u32) {
    let db = TestDb::create(major, "function_reach_view").await;
    db.run(SETUP).await;
    let slot = format!("reach_{}", db.name);
    db.run(
        "CREATE EXTENSION pg_stat_statements;
         CREATE FUNCTION tag(n integer) RETURNS integer LANGUAGE plpgsql VOLATILE AS \
         'BEGIN RETURN n; END';",
    )
    .await;
    let client = db.client().await;
    for _ in 0..2 {
        for statement in [
            "SELECT id FROM t WHERE v = 3",
            "SELECT id FROM t WHERE id = 1 AND tag(1) = 1",
        ] {
            client.simple_query(statement).await.unwrap();
        }
    }
    drop(client);
    db.run(&format!(
        "CREATE OR REPLACE FUNCTION tag(n integer) RETURNS integer LANGUAGE plpgsql VOLATILE AS \
         $f$BEGIN PERFORM pg_create_physical_replication_slot('{slot}'); RETURN n; END$f$"
    ))
    .await;
    let out = Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .args([
            "compare",
            "-d",
            &db.conninfo(),
            "--workload",
            "pg_stat_statements",
        ])
        .args(["--top", "100", "--min-calls", "1", "--runs", "1"])
        .args(["--index", "CREATE INDEX ON t (v)", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0) | Some(1)),
        "{}",
        printed(&out)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let skipped = doc["skipped_statements"]["statements"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            let text = s["text"].as_str().unwrap();
            text.starts_with("SELECT") && text.contains("tag(")
        })
        .unwrap_or_else(|| panic!("not set aside: {doc:#}"));
    assert_eq!(
        skipped["reason"].as_str().unwrap(),
        format!(
            "it calls functions whose effects outlive pgplan's rollback: public.tag() calls \
             pg_catalog.pg_create_physical_replication_slot(): it {SLOT_REASON} \
             (--allow-lasting-effects runs it anyway)"
        )
    );
    assert_eq!(left(&db, &slot).await, NOTHING);
    db.wait_until_pgplan_sessions_are_gone().await;
    db.drop_db().await;
}

/// One test, each version's cases one after another: a slot is the server's, so an accepted
/// case's slot would show in another case's lasting-state diff if they ran side by side.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn user_functions_that_reach_outside_are_refused_unless_accepted() {
    for_each_version("function_reach", |major| async move {
        planned(major).await;
        view_statement(major).await;
        chains(major).await;
    })
    .await;
}

/// `--hypothetical` plans only, with HypoPG (Debian's PostgreSQL 15): the IMMUTABLE wrapper is
/// refused before the first plan, and advise, which still measures, refuses a VOLATILE one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hypothetical_runs_refuse_what_planning_would_run() {
    let db = TestDb::on_debian_hypopg("function_reach_hypo").await;
    db.run(SETUP).await;
    db.run("CREATE EXTENSION hypopg").await;
    let slot = format!("reach_{}", db.name);
    make_functions(&db, &slot).await;
    let dir = tempfile::tempdir().unwrap();
    let line = format!(
        "  public.frozen_slot() calls pg_catalog.pg_create_physical_replication_slot(): it \
         {SLOT_REASON}"
    );
    let out = pgplan(
        &db,
        dir.path(),
        "compare",
        "SELECT id FROM t WHERE id > frozen_slot(1)",
        &["--hypothetical"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", printed(&out));
    assert!(
        stderr(&out).ends_with(&format!("{line}\n{PLANNED_ONLY}\n{HINT}\n")),
        "{}",
        stderr(&out)
    );
    assert_eq!(left(&db, &slot).await, NOTHING);
    let out = pgplan(
        &db,
        dir.path(),
        "advise",
        "SELECT id FROM t WHERE v = 3 AND make_slot() = 1",
        &["--hypothetical"],
    );
    let text = printed(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains(
            "  public.make_slot() calls pg_catalog.pg_create_physical_replication_slot(): it "
        ),
        "{text}"
    );
    assert_eq!(left(&db, &slot).await, NOTHING);
    db.wait_until_pgplan_sessions_are_gone().await;
}
