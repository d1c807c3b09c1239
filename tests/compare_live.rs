//! `pgplan compare` on real servers 13–18: the story's verdicts, the options, and the safety
//! guarantee — whatever happens (a failing candidate, a query error, a timeout, a lock held
//! elsewhere, Ctrl-C or kill -9 during a build), no index, lock, open transaction or changed row
//! is left behind.

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{TestDb, for_each_version, json_report as json, pgplan_bin, pgplan_command, stderr};
use serde_json::Value;

const SETUP: &str = "
CREATE TABLE events (
    id bigint PRIMARY KEY,
    tenant_id integer NOT NULL,
    status text NOT NULL,
    created_at timestamptz NOT NULL,
    payload text NOT NULL
);
INSERT INTO events
SELECT i, (i::bigint * 7919) % 1000,
       CASE WHEN (i::bigint * 37) % 100 < 70 THEN 'pending'
            WHEN (i::bigint * 37) % 100 < 90 THEN 'done'
            WHEN (i::bigint * 37) % 100 < 97 THEN 'failed'
            ELSE 'cancelled' END,
       timestamptz '2026-01-01 00:00:00+00' + i * interval '1 minute',
       md5(i::text) || md5((i + 1)::text)
FROM generate_series(1, 60000) AS i;
CREATE INDEX events_tenant_id_idx ON events (tenant_id);
VACUUM (ANALYZE) events;
CREATE TABLE slow (id integer PRIMARY KEY, v integer NOT NULL);
INSERT INTO slow SELECT i, i % 10 FROM generate_series(1, 400) AS i;
VACUUM (ANALYZE) slow;
CREATE FUNCTION slow_identity(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE
AS $$ BEGIN PERFORM pg_sleep(0.02); RETURN $1; END $$;
";

const QUERY: &str =
    "SELECT id, created_at FROM events WHERE status = 'pending' ORDER BY created_at DESC LIMIT 50";

async fn story_db(major: u32, test: &str) -> TestDb {
    let db = TestDb::create(major, test).await;
    db.run(SETUP).await;
    db
}

/// Writes a query file named after a counter, so several queries can live side by side.
fn write_query(dir: &Path, sql: &str) -> String {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let path = dir.join(format!("query{n}.sql"));
    std::fs::write(&path, sql).unwrap();
    path.display().to_string()
}

fn pgplan(db: &TestDb, args: &[&str]) -> Output {
    command(db, args).output().expect("running pgplan")
}

fn command(db: &TestDb, args: &[&str]) -> Command {
    let mut cmd = pgplan_command(&["compare", "-d", &db.conninfo()]);
    cmd.args(args);
    cmd
}

/// Runs a compare whose only candidate must fail (exit 2) and returns that candidate's error.
fn failed_candidate(db: &TestDb, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--runs", "1", "--format", "json"]);
    let out = pgplan(db, &all);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["candidates"][0]["error"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// What must be the same before and after pgplan ran, whatever happened.
#[derive(Debug, PartialEq)]
struct ServerState {
    relations: String,
    events_rows: String,
    slow_rows: String,
}

async fn state(db: &TestDb) -> ServerState {
    ServerState {
        relations: db
            .value("SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class WHERE relnamespace = 'public'::regnamespace")
            .await
            .unwrap(),
        events_rows: db
            .value("SELECT md5(string_agg(e::text, ',' ORDER BY id)) FROM events e")
            .await
            .unwrap(),
        slow_rows: db
            .value("SELECT md5(string_agg(s::text, ',' ORDER BY id)) FROM slow s")
            .await
            .unwrap(),
    }
}

/// Checks, right after pgplan exited on its own (normally, with an error, or on Ctrl-C), that
/// no pgplan session holds a lock or an open transaction — its backend may still be on its way
/// out, but must already be clean — then waits until the session is gone and compares the
/// server with `before`: no new relation, no changed row, no prepared transaction.
async fn assert_nothing_left(db: &TestDb, before: &ServerState) {
    let (locks, in_transaction) = db.pgplan_holdings().await;
    let detail = db
        .value(
            "SELECT string_agg(format('%s %s %s', pid, state, left(query, 60)), ' | ') \
             FROM pg_stat_activity \
             WHERE application_name = 'pgplan' AND datname = current_database()",
        )
        .await;
    assert_eq!(
        (locks.as_str(), in_transaction.as_str()),
        ("0", "0"),
        "after pgplan exited, its sessions still held {locks} relation locks and {in_transaction} open transactions: {detail:?}"
    );
    db.wait_until_pgplan_sessions_are_gone().await;
    assert_server_unchanged(db, before).await;
}

/// After `kill -9`, the server notices the lost client only when it next looks (at once on 14+
/// with client_connection_check_interval, at the end of the running statement on 13): wait for
/// that, then check the same.
async fn assert_nothing_left_after_kill(db: &TestDb, before: &ServerState) {
    db.wait_until_pgplan_sessions_are_gone().await;
    let (locks, in_transaction) = db.pgplan_holdings().await;
    assert_eq!((locks.as_str(), in_transaction.as_str()), ("0", "0"));
    assert_server_unchanged(db, before).await;
}

async fn assert_server_unchanged(db: &TestDb, before: &ServerState) {
    assert_eq!(&state(db).await, before, "the server changed");
    assert_eq!(
        db.value("SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()")
            .await
            .unwrap(),
        "0",
        "a prepared transaction was left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_story_partial_index_pays_and_the_others_do_not() {
    for_each_version("compare_story", |major| async move {
        let db = story_db(major, "compare_story").await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(dir.path(), QUERY);
        let before = state(&db).await;
        let plans = dir.path().join("plans");
        let out = pgplan(&db, &[
            &query,
            "--index", "CREATE INDEX ON events (status)",
            "--index", "CREATE INDEX CONCURRENTLY pending_recent ON events (created_at DESC) WHERE status = 'pending'",
            "--index", "CREATE INDEX ON events (tenant_id, created_at)",
            "--runs", "2",
            "--format", "json",
            "--save-plans", plans.to_str().unwrap(),
        ]);
        let doc = json(&out);
        assert_eq!(doc["schema_version"], 3);
        assert_eq!(doc["mode"], "measured");
        assert_eq!(doc["estimated"], false);
        assert_eq!(doc["best"], "pending_recent");
        assert_eq!(doc["baseline"]["runs"], 3);
        let candidates = doc["candidates"].as_array().unwrap();
        assert_eq!(candidates.len(), 3);
        let by_name = |name: &str| candidates.iter().find(|c| c["index_name"] == name).unwrap_or_else(|| panic!("no {name}: {candidates:#?}"));
        let partial = by_name("pending_recent");
        assert_eq!(partial["verdict"], "pays");
        assert_eq!(partial["used"], true);
        assert_eq!(partial["rank"], 1);
        assert!(partial["used_by"][0]["node_type"].as_str().unwrap().contains("Index"));
        let pages = &partial["summary"]["warm"]["pages_touched"];
        assert!(pages["after"].as_f64().unwrap() < 20.0, "{pages}");
        assert!(pages["before"].as_f64().unwrap() > 500.0, "{pages}");
        assert!(pages["ratio"].as_f64().unwrap() < 0.05, "{pages}");
        assert!(partial["index_size_bytes"].as_f64().unwrap() > 8192.0);
        assert!(partial["build_ms"].as_f64().unwrap() > 0.0);
        assert!(partial["diff"]["changes"].as_array().unwrap().iter().any(|c| c["kind"] == "access_method_changed"));
        assert!(partial["plan"]["nodes"].as_array().unwrap().len() >= 2);
        // PostgreSQL named the unnamed candidates itself.
        for name in ["events_status_idx", "events_tenant_id_created_at_idx"] {
            let c = by_name(name);
            assert_eq!(c["verdict"], "unused", "{name}");
            assert_eq!(c["used"], false);
        }
        assert!(doc["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("CONCURRENTLY")));
        // Every plan was saved and replays with pgplan diff.
        let baseline_plan = plans.join("baseline.run1.json");
        let partial_plan = plans.join("pending_recent.run1.json");
        assert!(plans.join("baseline.cold.json").exists());
        let diff = Command::new(pgplan_bin())
            .args(["diff", "--format", "json"])
            .arg(&baseline_plan)
            .arg(&partial_plan)
            .output()
            .unwrap();
        let diff: Value = serde_json::from_slice(&diff.stdout).unwrap();
        assert!(diff["ratios"]["pages_touched"].as_f64().unwrap() < 0.05);
        assert_nothing_left(&db, &before).await;

        // The text report names the best candidate and says what it is looking at.
        let out = pgplan(&db, &[&query, "--index", "CREATE INDEX pending_recent ON events (created_at DESC) WHERE status = 'pending'", "--runs", "1"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(text.contains("Best: pending_recent"), "{text}");
        assert!(text.contains("measured: EXPLAIN (ANALYZE, BUFFERS)"), "{text}");
        db.drop_db().await;
    })
    .await;
}

/// Whether two times differ by no more than the wider warm spread (the report's noise rule).
fn within_noise(a: &Value, b: &Value, spreads: [&Value; 2]) -> bool {
    let width = spreads
        .iter()
        .filter(|s| s.is_object())
        .map(|s| s["max"].as_f64().unwrap() - s["min"].as_f64().unwrap())
        .fold(0.0, f64::max);
    (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() <= width
}

/// A percentage delta ("+9%", "-0.3%"): the one notation is a factor with a word.
fn percent_delta(text: &str) -> Option<&str> {
    text.split_whitespace().find(|w| {
        let w = w.trim_matches(|c| c == '(' || c == ')' || c == '|');
        (w.starts_with('+') || w.starts_with('-'))
            && w.ends_with('%')
            && w[1..w.len() - 1].parse::<f64>().is_ok()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn time_differences_inside_the_warm_spread_are_noise_in_every_format() {
    for_each_version("compare_noise", |major| async move {
        let db = story_db(major, "compare_noise").await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(dir.path(), QUERY);
        // Two candidates the planner leaves unused: the same plan as the baseline, so any time
        // difference is noise unless it leaves the spread.
        let candidates = [
            "--index",
            "CREATE INDEX ON events (status)",
            "--index",
            "CREATE INDEX ON events (tenant_id, created_at)",
            "--runs",
            "4",
        ];
        let mut args = vec![query.as_str()];
        args.extend(candidates);
        let mut json_args = args.clone();
        json_args.extend(["--format", "json"]);
        let doc = json(&pgplan(&db, &json_args));
        let spread = &doc["baseline"]["warm_execution_ms_spread"];
        assert!(
            spread["min"].as_f64().unwrap() <= spread["max"].as_f64().unwrap(),
            "{spread}"
        );
        let cands = doc["candidates"].as_array().unwrap();
        for c in cands {
            assert_eq!(c["verdict"], "unused", "{c:#}");
            let warm = &c["summary"]["warm"];
            let expected = within_noise(
                &warm["execution_ms"]["before"],
                &warm["execution_ms"]["after"],
                [spread, &c["warm_execution_ms_spread"]],
            );
            assert_eq!(warm["execution_within_noise"], expected, "{c:#}");
        }
        // Same verdict, same pages: the times decide only outside noise, else the smaller wins.
        let (a, b) = (&cands[0], &cands[1]);
        let tie = within_noise(
            &a["summary"]["warm"]["execution_ms"]["after"],
            &b["summary"]["warm"]["execution_ms"]["after"],
            [
                &a["warm_execution_ms_spread"],
                &b["warm_execution_ms_spread"],
            ],
        );
        let pages = |c: &Value| {
            c["summary"]["warm"]["pages_touched"]["after"]
                .as_f64()
                .unwrap()
        };
        if tie && pages(a) == pages(b) {
            let smaller = if a["index_size_bytes"].as_f64() < b["index_size_bytes"].as_f64() {
                a
            } else {
                b
            };
            assert_eq!(doc["ranking"][0], smaller["index_name"], "{doc:#}");
        }

        // Text and Markdown: the spread beside the median, no candidate called faster or
        // slower inside it, and one notation for every change.
        for format in ["text", "markdown"] {
            let mut text_args = args.clone();
            text_args.extend(["--format", format]);
            let out = pgplan(&db, &text_args);
            assert!(out.status.success(), "{}", stderr(&out));
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("min–max"), "{format}: {text}");
            assert_eq!(percent_delta(&text), None, "{format}: {text}");
            for line in text.lines().filter(|l| l.contains("within noise")) {
                assert!(
                    !line.contains("faster") && !line.contains("slower"),
                    "{format}: {line}"
                );
            }
        }
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failing_candidates_and_queries_leave_nothing_behind() {
    for_each_version("compare_failures", |major| async move {
        let db = story_db(major, "compare_failures").await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(dir.path(), QUERY);
        let before = state(&db).await;

        // A syntax error, a missing column and duplicate values under UNIQUE: each candidate is
        // reported with the server's error, the others are still measured, exit code 2.
        let out = pgplan(
            &db,
            &[
                &query,
                "--index",
                "CREATE INDEX bad_syntax ON events (status,)",
                "--index",
                "CREATE INDEX no_column ON events (no_such_column)",
                "--index",
                "CREATE UNIQUE INDEX dup ON events (status)",
                "--index",
                "CREATE INDEX fine ON events (created_at)",
                "--runs",
                "1",
                "--format",
                "json",
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let error_of = |name: &str| {
            doc["candidates"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["index_name"] == name)
                .unwrap()["error"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        assert!(
            error_of("bad_syntax").contains("SQLSTATE 42601"),
            "{}",
            error_of("bad_syntax")
        );
        assert!(
            error_of("no_column").contains("no_such_column"),
            "{}",
            error_of("no_column")
        );
        let dup = error_of("dup");
        assert!(dup.contains("SQLSTATE 23505"), "{dup}");
        assert!(
            dup.contains("DETAIL:"),
            "the server's DETAIL is shown: {dup}"
        );
        assert!(
            doc["candidates"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["index_name"] == "fine" && c["verdict"].is_string())
        );
        assert!(
            stderr(&out).contains("candidate dup failed"),
            "{}",
            stderr(&out)
        );
        assert_nothing_left(&db, &before).await;

        // A query that fails: a clear error, exit 2.
        let bad_query = write_query(dir.path(), "SELECT no_such_column FROM events");
        let out = pgplan(
            &db,
            &[&bad_query, "--index", "CREATE INDEX ON events (status)"],
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(
            stderr(&out).contains("the query failed in the baseline run"),
            "{}",
            stderr(&out)
        );
        assert!(stderr(&out).contains("SQLSTATE 42703"), "{}", stderr(&out));
        assert_nothing_left(&db, &before).await;

        // A statement timeout during a run.
        let slow_query = write_query(dir.path(), "SELECT count(*) FROM events, pg_sleep(2)");
        let out = pgplan(
            &db,
            &[
                &slow_query,
                "--index",
                "CREATE INDEX ON events (status)",
                "--statement-timeout",
                "300ms",
            ],
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("SQLSTATE 57014"), "{}", stderr(&out));
        assert!(
            stderr(&out).contains("statement timeout"),
            "{}",
            stderr(&out)
        );
        assert_nothing_left(&db, &before).await;

        // A statement timeout and a query error while a candidate index exists, in its own
        // runs: the queries look the candidate up in pg_class, so the baseline runs cleanly
        // and only the candidate's runs sleep past the timeout or divide by zero.
        let sleepy = write_query(
            dir.path(),
            "SELECT count(*) FROM events \
             WHERE (SELECT count(pg_sleep(3)) FROM pg_class WHERE relname = 'sleepy_idx') = 0",
        );
        let error = failed_candidate(
            &db,
            &[
                &sleepy,
                "--index",
                "CREATE INDEX sleepy_idx ON events (status)",
                "--statement-timeout",
                "1s",
            ],
        );
        assert!(error.contains("SQLSTATE 57014"), "{error}");
        assert!(
            error.contains("first run"),
            "the timeout hit a run: {error}"
        );
        assert_nothing_left(&db, &before).await;
        let divides = write_query(
            dir.path(),
            "SELECT count(*) / (SELECT count(*) - 1 FROM pg_class WHERE relname = 'zero_idx') \
             FROM events",
        );
        let error = failed_candidate(
            &db,
            &[
                &divides,
                "--index",
                "CREATE INDEX zero_idx ON events (status)",
            ],
        );
        assert!(error.contains("SQLSTATE 22012"), "{error}");
        assert_nothing_left(&db, &before).await;

        // Refusals before anything runs: a write without --allow-writes, a smuggled statement.
        let write = write_query(dir.path(), "DELETE FROM events WHERE id < 10");
        let out = pgplan(&db, &[&write, "--index", "CREATE INDEX ON events (status)"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("--allow-writes"), "{}", stderr(&out));
        let out = pgplan(
            &db,
            &[
                &query,
                "--index",
                "CREATE INDEX x ON events (status); DROP TABLE events",
            ],
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("DROP"), "{}", stderr(&out));
        assert_nothing_left(&db, &before).await;
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lock_held_elsewhere_times_out_and_leaves_nothing() {
    for_each_version("compare_lock", |major| async move {
        let db = story_db(major, "compare_lock").await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(dir.path(), QUERY);
        let before = state(&db).await;
        // Another session writes to events and keeps its transaction open: CREATE INDEX needs a
        // SHARE lock, which conflicts with its ROW EXCLUSIVE.
        let holder = db.client().await;
        holder
            .batch_execute("BEGIN; UPDATE events SET payload = payload WHERE id = 1")
            .await
            .unwrap();
        let started = Instant::now();
        let out = pgplan(
            &db,
            &[
                &query,
                "--index",
                "CREATE INDEX ON events (status)",
                "--lock-timeout",
                "200ms",
                "--format",
                "json",
            ],
        );
        assert!(started.elapsed() < Duration::from_secs(30));
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let error = doc["candidates"][0]["error"].as_str().unwrap();
        assert!(error.contains("SQLSTATE 55P03"), "{error}");
        holder.batch_execute("ROLLBACK").await.unwrap();
        assert_nothing_left(&db, &before).await;
        db.drop_db().await;
    })
    .await;
}

/// Starts `pgplan compare` building the first of two slow expression indexes (0.02 s per row)
/// and waits until that build is running on the server.
// The child is handed to the caller, which waits for it; clippy cannot see through the return.
#[allow(clippy::zombie_processes)]
async fn start_slow_build(db: &TestDb, query: &str) -> Child {
    let child = command(
        db,
        &[
            query,
            "--index",
            "CREATE INDEX slow_build ON slow (slow_identity(id))",
            "--index",
            "CREATE INDEX slow_build_next ON slow (slow_identity(v))",
            "--lock-timeout",
            "30s",
        ],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let building = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgplan' \
                    AND state = 'active' AND query LIKE 'CREATE INDEX slow_build%'";
    if db
        .wait_for(building, |n| n == "1", Duration::from_secs(30))
        .await
        .is_err()
    {
        let mut child = child;
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "the build never started: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ctrl_c_during_a_build_cancels_and_rolls_back() {
    for_each_version("compare_sigint", |major| async move {
        let db = story_db(major, "compare_sigint").await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(dir.path(), "SELECT * FROM slow WHERE id = 7");
        let before = state(&db).await;
        let child = start_slow_build(&db, &query).await;
        let started = Instant::now();
        // SAFETY: signalling the child we started.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let out = child.wait_with_output().unwrap();
        // The cancel request stops the build at once; it does not run to its end (8 s), and the
        // second candidate is never started.
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
        assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
        assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
        assert!(stderr(&out).contains("rolled back"), "{}", stderr(&out));
        assert!(
            !stderr(&out).contains("slow_build_next"),
            "{}",
            stderr(&out)
        );
        assert_nothing_left(&db, &before).await;
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_during_a_build_leaves_nothing_behind() {
    for_each_version("compare_sigkill", |major| async move {
        let db = story_db(major, "compare_sigkill").await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(dir.path(), "SELECT * FROM slow WHERE id = 7");
        let before = state(&db).await;
        let mut child = start_slow_build(&db, &query).await;
        child.kill().unwrap();
        child.wait().unwrap();
        // The server rolls back when it notices the client is gone: within a second on 14+
        // (client_connection_check_interval), at the end of the build on 13.
        assert_nothing_left_after_kill(&db, &before).await;
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parameters_writes_drops_and_estimates() {
    for_each_version("compare_options", |major| async move {
        let db = story_db(major, "compare_options").await;
        let dir = tempfile::tempdir().unwrap();
        let before = state(&db).await;

        // Parameters: a custom plan for the given values.
        let query = write_query(
            dir.path(),
            "SELECT id FROM events WHERE created_at BETWEEN $1 AND $2",
        );
        let (from, to) = ("2026-01-02 00:00:00+00", "2026-01-02 02:00:00+00");
        let doc = json(&pgplan(
            &db,
            &[
                &query,
                "--param",
                from,
                "--param",
                to,
                "--index",
                "CREATE INDEX t_s ON events (created_at)",
                "--runs",
                "1",
                "--format",
                "json",
            ],
        ));
        assert_eq!(doc["query"]["params"], serde_json::json!([from, to]));
        assert_eq!(doc["candidates"][0]["verdict"], "pays", "{doc:#}");
        let rows = doc["baseline"]["plan"]["nodes"][0]["actual_rows"]
            .as_f64()
            .unwrap();
        assert!(rows > 0.0);
        // The generic plan: estimates only.
        let doc = json(&pgplan(
            &db,
            &[
                &query,
                "--generic-plan",
                "--index",
                "CREATE INDEX t_s ON events (created_at)",
                "--format",
                "json",
            ],
        ));
        assert_eq!(doc["mode"], "generic_plan");
        assert_eq!(doc["estimated"], true);
        assert!(doc["baseline"]["plan"]["analyzed"] == false);
        // A missing --param is refused before connecting.
        let out = pgplan(
            &db,
            &[
                &query,
                "--param",
                "7",
                "--index",
                "CREATE INDEX ON events (tenant_id)",
            ],
        );
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("$2"), "{}", stderr(&out));

        // Writes, with --allow-writes: measured, rolled back, the rows unchanged.
        let delete = write_query(dir.path(), "DELETE FROM events WHERE tenant_id = 5");
        let doc = json(&pgplan(
            &db,
            &[
                &delete,
                "--allow-writes",
                "--index",
                "CREATE INDEX ON events (tenant_id, id)",
                "--runs",
                "2",
                "--format",
                "json",
            ],
        ));
        assert!(
            doc["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains("sequences"))
        );
        // Every run deleted the same rows: each ran under a savepoint that was rolled back.
        let deleted: Vec<f64> = [&doc["baseline"]["plan"]["nodes"][1]["actual_rows"]]
            .iter()
            .map(|v| v.as_f64().unwrap_or_default())
            .collect();
        assert!(deleted[0] > 0.0, "{doc:#}");

        // --drop-index: the existing index pays for a tenant lookup; it still exists afterwards.
        let lookup = write_query(
            dir.path(),
            "SELECT count(*) FROM events WHERE tenant_id = 42",
        );
        let doc = json(&pgplan(
            &db,
            &[
                &lookup,
                "--drop-index",
                "events_tenant_id_idx",
                "--runs",
                "1",
                "--format",
                "json",
            ],
        ));
        let drop = &doc["candidates"][0];
        assert_eq!(drop["action"], "drop");
        assert_eq!(drop["used"], true, "{drop:#}");
        assert_eq!(drop["verdict"], "pays", "{drop:#}");
        assert!(
            doc["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().contains("ACCESS EXCLUSIVE"))
        );
        assert_eq!(
            db.value("SELECT count(*) FROM pg_class WHERE relname = 'events_tenant_id_idx'")
                .await
                .as_deref(),
            Some("1")
        );

        // A standby-like refusal: a read-only session cannot build indexes.
        let ro = format!(
            "{} options='-c default_transaction_read_only=on'",
            db.conninfo()
        );
        let out = Command::new(pgplan_bin())
            .args([
                "compare",
                "-d",
                &ro,
                &lookup,
                "--index",
                "CREATE INDEX ON events (status)",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("--hypothetical"), "{}", stderr(&out));
        assert_nothing_left(&db, &before).await;
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn estimate_changes_that_outlive_the_rollback_are_detected() {
    for_each_version("compare_estimates", |major| async move {
        let db = TestDb::create(major, "compare_estimates").await;
        // Never vacuumed or analyzed, autovacuum off: pg_class knows nothing of the rows yet.
        db.run(
            "CREATE TABLE fresh (id integer, v integer) WITH (autovacuum_enabled = off); \
             INSERT INTO fresh SELECT i, i % 100 FROM generate_series(1, 20000) i;",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(dir.path(), "SELECT * FROM fresh WHERE v = 3");
        let reltuples_before = db
            .value("SELECT reltuples FROM pg_class WHERE relname = 'fresh'")
            .await;
        let doc = json(&pgplan(
            &db,
            &[
                &query,
                "--index",
                "CREATE INDEX ON fresh (v)",
                "--index",
                "CREATE INDEX ON fresh (id)",
                "--runs",
                "1",
                "--format",
                "json",
            ],
        ));
        let reltuples_after = db
            .value("SELECT reltuples FROM pg_class WHERE relname = 'fresh'")
            .await;
        let changed = reltuples_before != reltuples_after;
        let reported = !doc["estimate_changes"].as_array().unwrap().is_empty();
        // Detected, not assumed: whatever this server version did, the report says the same.
        assert_eq!(
            reported, changed,
            "before {reltuples_before:?}, after {reltuples_after:?}: {doc:#}"
        );
        let candidates = doc["candidates"].as_array().unwrap();
        if changed {
            assert!(
                doc["baseline_rerun"].is_object(),
                "the baseline is measured again"
            );
            // Measured again right after the build that changed the estimates, before the next
            // candidate; both candidates are judged against it, since both ran with the new
            // estimates.
            assert_eq!(
                doc["baseline_reruns"].as_array().unwrap().len(),
                1,
                "{doc:#}"
            );
            assert_eq!(doc["baseline_reruns"][0]["after_candidate"], "fresh_v_idx");
            for c in candidates {
                assert_eq!(c["judged_against_rerun"], 0, "{c:#}");
            }
            // The unused candidate's plan is the re-measured baseline's: no change is reported
            // against a baseline planned with other estimates.
            let unused = &candidates[1];
            assert_eq!(unused["verdict"], "unused", "{unused:#}");
            let kinds: Vec<&str> = unused["diff"]["changes"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|c| c["kind"].as_str())
                .collect();
            assert!(
                !kinds
                    .iter()
                    .any(|k| ["access_method_changed", "node_added", "node_removed"].contains(k)),
                "{kinds:?}: {doc:#}"
            );
            assert_eq!(
                unused["summary"]["warm"]["pages_touched"]["before"],
                doc["baseline_rerun"]["warm"]["pages_touched"]
            );
            // One table, however it is spelled (the plan's public.fresh, the candidate's
            // fresh): one change.
            assert_eq!(
                doc["estimate_changes"].as_array().unwrap().len(),
                1,
                "{doc:#}"
            );
            assert_eq!(doc["estimate_changes"][0]["table"], "public.fresh");
            assert!(
                doc["warnings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|w| w.as_str().unwrap().contains("outlives the rollback"))
            );
        } else {
            assert!(doc["baseline_rerun"].is_null());
            for c in candidates {
                assert!(c["judged_against_rerun"].is_null(), "{c:#}");
            }
        }
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn index_files_expression_indexes_and_report_destinations() {
    for_each_version("compare_report", |major| async move {
        let db = story_db(major, "compare_report").await;
        let dir = tempfile::tempdir().unwrap();
        let before = state(&db).await;
        let query = write_query(dir.path(), "SELECT id FROM events WHERE lower(status) = 'failed' AND tenant_id < 100");
        let file = dir.path().join("candidates.sql");
        std::fs::write(
            &file,
            "-- two candidates\nCREATE INDEX by_lower_status ON events (lower(status));\nCREATE INDEX ON events (tenant_id, status);\n",
        )
        .unwrap();
        let file = file.to_str().unwrap();

        // An expression index without --analyze: the planner has no statistics for it, and
        // pgplan says so.
        let doc = json(&pgplan(&db, &[&query, "--index-file", file, "--runs", "1", "--format", "json"]));
        let names: Vec<&str> = doc["candidates"].as_array().unwrap().iter().map(|c| c["index_name"].as_str().unwrap()).collect();
        assert_eq!(names, ["by_lower_status", "events_tenant_id_status_idx"]);
        let warns = |doc: &Value| doc["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("no statistics until ANALYZE"));
        assert!(warns(&doc), "{doc:#}");
        // With --analyze the statistics exist (inside the rolled-back transaction): no warning.
        let doc = json(&pgplan(&db, &[&query, "--index-file", file, "--analyze", "--runs", "1", "--format", "json"]));
        assert!(!warns(&doc), "{doc:#}");
        assert_nothing_left(&db, &before).await;
        assert_eq!(
            db.value("SELECT to_regclass('by_lower_status') IS NULL").await.as_deref(),
            Some("t"),
            "the index and its statistics were rolled back"
        );

        // --output writes the report to a file and nothing to stdout; markdown for a PR comment.
        let report = dir.path().join("report.md");
        let out = pgplan(&db, &[&query, "--index-file", file, "--runs", "1", "--format", "markdown", "--output", report.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(out.stdout.is_empty());
        let md = std::fs::read_to_string(&report).unwrap();
        assert!(md.starts_with("### pgplan compare"), "{md}");
        assert!(md.contains("| # | index | verdict |"), "{md}");
        assert!(md.contains("`by_lower_status`"), "{md}");
        // The baseline and, per candidate, the first run and the warm medians.
        assert!(md.contains("**Baseline**"), "{md}");
        assert!(md.contains("| first: pages touched |"), "{md}");
        assert!(md.contains("| warm: pages touched |"), "{md}");
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn candidate_names_are_unique_and_never_an_existing_index() {
    for_each_version("compare_names", |major| async move {
        let db = story_db(major, "compare_names").await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(dir.path(), QUERY);
        let save = dir.path().join("plans");
        let before = state(&db).await;
        // Built unnamed in separate transactions, both get PostgreSQL's events_created_at_idx;
        // the report names the second as PostgreSQL would had both been built.
        let out = pgplan(
            &db,
            &[
                &query,
                "--index",
                "CREATE INDEX ON events (created_at)",
                "--index",
                "CREATE INDEX CONCURRENTLY ON events (created_at) WHERE status = 'pending'",
                "--runs",
                "1",
                "--save-plans",
                save.to_str().unwrap(),
                "--format",
                "json",
            ],
        );
        let doc = json(&out);
        let names: Vec<&str> = doc["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["index_name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["events_created_at_idx", "events_created_at_idx1"]);
        assert_eq!(
            doc["candidates"][1]["index_sql"],
            "CREATE INDEX CONCURRENTLY ON events (created_at) WHERE status = 'pending'",
            "index_sql is the statement as the user wrote it"
        );
        assert_eq!(doc["candidates"][1]["diff"]["schema_version"], 3);
        assert!(doc["candidates"][1]["diff"]["before"]["nodes"].is_array());
        let saved = std::fs::read_dir(&save).unwrap().count();
        assert_eq!(
            saved,
            3 * 2,
            "baseline and both candidates, cold and warm: {saved}"
        );
        assert_nothing_left(&db, &before).await;

        // IF NOT EXISTS naming an existing index would skip the build and measure the existing
        // index: the candidate fails with PostgreSQL's error instead.
        let error = failed_candidate(
            &db,
            &[
                &query,
                "--index",
                "CREATE INDEX IF NOT EXISTS events_tenant_id_idx ON events (status)",
            ],
        );
        assert!(error.contains("SQLSTATE 42P07"), "{error}");
        assert_nothing_left(&db, &before).await;
        db.drop_db().await;
    })
    .await;
}

/// On a partitioned table the plans scan each partition's index, never the partitioned index
/// the candidate creates: the candidate is still used, and its size is its partitions'.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn candidates_on_a_partitioned_table() {
    for_each_version("compare_partitioned", |major| async move {
        let db = TestDb::create(major, "compare_partitioned").await;
        db.run(
            "CREATE TABLE pevents (id bigint, status text NOT NULL, created_at timestamptz NOT NULL) \
               PARTITION BY RANGE (id); \
             CREATE TABLE pevents_1 PARTITION OF pevents FOR VALUES FROM (0) TO (30000); \
             CREATE TABLE pevents_2 PARTITION OF pevents FOR VALUES FROM (30000) TO (60000); \
             INSERT INTO pevents SELECT i, CASE WHEN i % 10 < 7 THEN 'pending' ELSE 'done' END, \
               timestamptz '2026-01-01' + i * interval '1 minute' FROM generate_series(0, 59999) i; \
             CREATE INDEX pevents_status_idx ON pevents (status); \
             VACUUM (ANALYZE) pevents_1; VACUUM (ANALYZE) pevents_2; ANALYZE pevents;",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        let query = write_query(
            dir.path(),
            "SELECT id, created_at FROM pevents WHERE status = 'pending' \
             ORDER BY created_at DESC LIMIT 50",
        );
        let before = state_of(&db, "pevents").await;
        let doc = json(&pgplan(
            &db,
            &[
                &query,
                "--index",
                "CREATE INDEX ON pevents (created_at DESC) WHERE status = 'pending'",
                "--runs",
                "1",
                "--format",
                "json",
            ],
        ));
        let candidate = &doc["candidates"][0];
        assert_eq!(candidate["used"], true, "{candidate:#}");
        assert_eq!(candidate["verdict"], "pays", "{candidate:#}");
        assert!(
            candidate["index_size_bytes"].as_f64().unwrap() > 8192.0,
            "{candidate:#}"
        );
        assert_eq!(doc["best"], candidate["index_name"]);
        assert_eq!(state_of(&db, "pevents").await, before);

        // The reverse: an existing partitioned index dropped, for a query that uses it.
        let by_status = write_query(
            dir.path(),
            "SELECT count(*) FROM pevents WHERE status = 'done'",
        );
        let doc = json(&pgplan(
            &db,
            &[
                &by_status,
                "--drop-index",
                "pevents_status_idx",
                "--runs",
                "1",
                "--format",
                "json",
            ],
        ));
        let drop = &doc["candidates"][0];
        assert_eq!(drop["used"], true, "{drop:#}");
        assert!(drop["index_size_bytes"].as_f64().unwrap() > 8192.0, "{drop:#}");
        assert_eq!(state_of(&db, "pevents").await, before);
        db.drop_db().await;
    })
    .await;
}

/// The relations of the public schema and a table's rows, to compare before and after.
async fn state_of(db: &TestDb, table: &str) -> (Option<String>, Option<String>) {
    (
        db.value(
            "SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class \
             WHERE relnamespace = 'public'::regnamespace",
        )
        .await,
        db.value(&format!(
            "SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {table} t"
        ))
        .await,
    )
}
