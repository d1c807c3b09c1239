//! pgplan's safety edges on real servers 13–18, through the binary as a user runs it: functions
//! whose effects outlive the rollback are refused before anything runs, the measured runs are
//! read-only, --analyze's lasting effect on the statistics counters is said before and after,
//! catalog names with control characters never reach a terminal raw, long candidates are
//! shortened in errors, and SIGTERM rolls back and exits 143. Each checks the exact message
//! and that nothing outlived pgplan.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{TestDb, for_each_version, pgplan_bin, stderr};
use serde_json::Value;

const SETUP: &str = "
CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL);
INSERT INTO t SELECT i, i % 100 FROM generate_series(1, 5000) AS i;
CREATE SEQUENCE s;
CREATE EXTENSION dblink;
VACUUM (ANALYZE) t;
";

fn compare(db: &TestDb, dir: &std::path::Path, query: &str, args: &[&str]) -> Output {
    let path = dir.join(format!("q{}.sql", query.len()));
    std::fs::write(&path, query).unwrap();
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .arg("compare")
        .arg("-d")
        .arg(db.conninfo())
        .arg(&path)
        .args(args)
        .output()
        .unwrap()
}

fn explain_live(db: &TestDb, dir: &std::path::Path, query: &str) -> Output {
    let path = dir.join(format!("e{}.sql", query.len()));
    std::fs::write(&path, query).unwrap();
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .args(["explain", "-d", &db.conninfo()])
        .arg(&path)
        .output()
        .unwrap()
}

/// What a query that was refused or failed must not have changed.
async fn lasting_state(db: &TestDb) -> String {
    db.value(
        "SELECT format('slots %s, advisory locks %s, rows %s, sum %s, sequence %s, stats reset %s', \
         (SELECT count(*) FROM pg_replication_slots), \
         (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'), \
         (SELECT count(*) FROM t), (SELECT sum(v) FROM t), \
         (SELECT last_value || '/' || is_called FROM s), \
         (SELECT stats_reset FROM pg_stat_database WHERE datname = current_database()))",
    )
    .await
    .unwrap()
}

async fn assert_no_pgplan_session(db: &TestDb) {
    db.wait_until_pgplan_sessions_are_gone().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn functions_whose_effects_outlive_the_rollback_are_refused() {
    for_each_version("safety_refusals", |major| async move {
        let db = TestDb::create(major, "safety_refusals").await;
        db.run(SETUP).await;
        if major < 15 {
            // Before 15 the statistics collector stamps a database's stats_reset when it first
            // hears of the database, a moment after its first activity: wait for that stamp, so
            // only a real reset can change it.
            db.wait_for(
                "SELECT stats_reset IS NOT NULL FROM pg_stat_database WHERE datname = current_database()",
                |v| v == "t",
                std::time::Duration::from_secs(30),
            )
            .await
            .expect("the collector never recorded the database");
        }
        let dir = tempfile::tempdir().unwrap();
        let before = lasting_state(&db).await;
        let index = ["--index", "CREATE INDEX ON t (v)", "--runs", "1"];
        let other = format!("dbname={} host={}", db.name, db.cluster.socket_dir().display());
        let cases = [
            (
                "SELECT pg_create_physical_replication_slot('pgplan_test', true)".to_owned(),
                "  pg_catalog.pg_create_physical_replication_slot() creates, drops or advances a \
                 replication slot, which is not transactional: a slot reserves WAL and holds back \
                 the xmin horizon until dropped",
            ),
            (
                format!("SELECT dblink_exec('{other}', 'DELETE FROM t')"),
                "  public.dblink_exec() runs SQL over another connection, which commits on its \
                 own and outlives pgplan's rollback (a named connection also stays open on this \
                 backend)",
            ),
            (
                "SELECT * FROM t WHERE v = 1 AND pg_stat_reset() IS NULL".to_owned(),
                "  pg_catalog.pg_stat_reset() resets cumulative statistics, which is not \
                 transactional (autovacuum and every monitoring tool lose their counts)",
            ),
            (
                "SELECT pg_advisory_lock(id) FROM t WHERE id = 1".to_owned(),
                "  pg_catalog.pg_advisory_lock() takes or releases a session-level advisory lock, \
                 which outlives the rollback (through a pooler the next client holds it); the \
                 pg_advisory_xact_* forms end with the transaction",
            ),
            (
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = 0".to_owned(),
                "  pg_catalog.pg_terminate_backend() signals another server process: done at \
                 once, whatever becomes of the transaction",
            ),
        ];
        for (query, line) in &cases {
            let expected = format!(
                "pgplan: the query calls functions whose effects outlive pgplan's rollback or \
                 reach outside its session:\n{line}\nhint: measure the query without them, or \
                 pass --allow-lasting-effects to run it anyway (pgplan then cannot promise to \
                 leave nothing behind)\n"
            );
            let out = compare(&db, dir.path(), query, &index);
            assert_eq!(out.status.code(), Some(2), "{query}: {}", stderr(&out));
            assert_eq!(stderr(&out), expected, "{query}");
            assert!(out.stdout.is_empty());
            // explain -d runs the query under the same rule.
            let out = explain_live(&db, dir.path(), query);
            assert_eq!(out.status.code(), Some(2), "{query}: {}", stderr(&out));
            assert_eq!(stderr(&out), expected, "explain -d {query}");
        }
        let out = explain_live(&db, dir.path(), "SELECT nextval('s')");
        assert_eq!(
            stderr(&out),
            "pgplan: the query failed: running the query: ERROR: cannot execute nextval() in a \
             read-only transaction (SQLSTATE 25006)\nhint: pgplan runs the query in a read-only \
             transaction, and something it calls writes (a function, or a sequence's nextval); \
             pass --allow-writes to run it in a read-write transaction that is still rolled back \
             (sequences still advance)\n"
        );
        // A sequence, and a function that writes: the read-only runs stop them.
        for query in [
            "SELECT nextval('s') FROM t WHERE id = 1",
            "SELECT setval('s', 42)",
        ] {
            let out = compare(&db, dir.path(), query, &index);
            assert_eq!(out.status.code(), Some(2), "{query}: {}", stderr(&out));
            let function = if query.contains("nextval") {
                "nextval"
            } else {
                "setval"
            };
            assert_eq!(
                stderr(&out),
                format!(
                    "pgplan: the query failed in the baseline run: running the query (baseline, \
                     first run): ERROR: cannot execute {function}() in a read-only transaction \
                     (SQLSTATE 25006)\nhint: pgplan runs the query in a read-only transaction, and \
                     something it calls writes (a function, or a sequence's nextval); pass \
                     --allow-writes to run it in a read-write transaction that is still rolled \
                     back (sequences still advance)\n"
                ),
            );
        }
        assert_no_pgplan_session(&db).await;
        assert_eq!(lasting_state(&db).await, before);

        // A volatile function is run, and the report says so.
        let out = compare(
            &db,
            dir.path(),
            "SELECT id FROM t WHERE v = 1 AND random() < 2",
            &[&index[..], &["--format", "json"]].concat(),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            doc["warnings"].as_array().unwrap().iter().any(|w| w
                == "the query calls volatile functions (pg_catalog.random()): each run may differ, \
                    and pgplan sees what they do only by name and in the bodies of SQL and \
                    PL/pgSQL functions; they ran in a read-only transaction that was rolled back, \
                    so writes fail, but effects that no rollback undoes and no body shows \
                    (dynamic SQL, a function in C or another language) are not caught"),
            "{doc:#}"
        );

        // Accepted: it runs, and the report names what was accepted. The session lock ends
        // with pgplan's session, which closes when pgplan exits; until then the session held
        // it past the rollback, which the report says, and exit 4 with it.
        let out = compare(
            &db,
            dir.path(),
            "SELECT pg_advisory_lock(id) FROM t WHERE id = 1",
            &[&index[..], &["--allow-lasting-effects", "--format", "json"]].concat(),
        );
        assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            doc["warnings"].as_array().unwrap().iter().any(|w| w
                .as_str()
                .unwrap()
                .starts_with("left behind: advisory lock 1 (ExclusiveLock) appeared while pgplan ran")),
            "{doc:#}"
        );
        assert!(
            doc["warnings"].as_array().unwrap().iter().any(|w| w
                .as_str()
                .unwrap()
                .starts_with("--allow-lasting-effects: the query calls pg_catalog.pg_advisory_lock(), which takes")),
            "{doc:#}"
        );
        assert_no_pgplan_session(&db).await;
        assert_eq!(lasting_state(&db).await, before);
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn control_characters_in_names_never_reach_the_terminal() {
    for_each_version("safety_escapes", |major| async move {
        let db = TestDb::create(major, "safety_escapes").await;
        db.run(
            "CREATE SCHEMA \"s\u{7}\";
             CREATE TABLE \"s\u{7}\".\"bad\u{1b}[31mtable\" (id integer PRIMARY KEY, v integer NOT NULL);
             INSERT INTO \"s\u{7}\".\"bad\u{1b}[31mtable\" SELECT i, i % 10 FROM generate_series(1, 2000) i;
             CREATE INDEX \"v\u{1b}]0;owned\u{7}\" ON \"s\u{7}\".\"bad\u{1b}[31mtable\" (v);
             CREATE INDEX \"v_again\" ON \"s\u{7}\".\"bad\u{1b}[31mtable\" (v);
             VACUUM (ANALYZE) \"s\u{7}\".\"bad\u{1b}[31mtable\";",
        )
        .await;
        let raw = |bytes: &[u8]| bytes.iter().any(|b| *b == 0x1b || *b == 0x07);
        for format in ["text", "markdown", "prometheus"] {
            let out = Command::new(pgplan_bin())
                .env("NO_COLOR", "1")
                .args(["audit", "-d", &db.conninfo(), "--format", format])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
            assert!(!raw(&out.stdout) && !raw(&out.stderr), "{format}: {}", String::from_utf8_lossy(&out.stdout));
            let text = String::from_utf8(out.stdout).unwrap();
            match format {
                "prometheus" => assert!(
                    text.contains("schema=\"s\\\\u{7}\",table=\"bad\\\\u{1b}[31mtable\""),
                    "{text}"
                ),
                _ => assert!(text.contains("s\\u{7}.bad\\u{1b}[31mtable"), "{format}: {text}"),
            }
        }
        // The fix names the objects in plain characters, and runs as written.
        let out = Command::new(pgplan_bin())
            .args(["audit", "-d", &db.conninfo(), "--format", "json"])
            .output()
            .unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let fix = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["check"] == "duplicate_index")
            .and_then(|f| f["fix"].as_str())
            .unwrap_or_else(|| panic!("{doc:#}"))
            .to_owned();
        assert!(
            fix == "DROP INDEX CONCURRENTLY U&\"s\\0007\".U&\"v\\001B]0;owned\\0007\";"
                || fix == "DROP INDEX CONCURRENTLY U&\"s\\0007\".v_again;",
            "{fix}"
        );
        db.run(&fix).await;

        // compare: the name PostgreSQL gives an unnamed candidate is printed escaped too.
        let dir = tempfile::tempdir().unwrap();
        let out = compare(
            &db,
            dir.path(),
            "SELECT id FROM \"s\u{7}\".\"bad\u{1b}[31mtable\" WHERE id = 7",
            &["--index", "CREATE INDEX ON \"s\u{7}\".\"bad\u{1b}[31mtable\" (id, v)", "--runs", "1"],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(!raw(&out.stdout) && !raw(&out.stderr), "{}", String::from_utf8_lossy(&out.stdout));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("bad\\u{1b}[31mtable_id_v_idx"),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_no_pgplan_session(&db).await;
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_long_candidate_is_shortened_in_its_error() {
    for_each_version("safety_long", |major| async move {
        let db = TestDb::create(major, "safety_long").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        // 1 MB of expression, then a column that does not exist.
        let definition = format!(
            "ON t ((v::text || '{}'), no_such_column)",
            "x".repeat(1 << 20)
        );
        let file = dir.path().join("candidates.sql");
        std::fs::write(&file, format!("CREATE INDEX {definition}")).unwrap();
        let out = compare(
            &db,
            dir.path(),
            "SELECT id FROM t WHERE v = 1",
            &["--index-file", file.to_str().unwrap(), "--runs", "1"],
        );
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out).len());
        let err = stderr(&out);
        assert!(err.len() < 1_000, "{} bytes of stderr", err.len());
        // The first 120 characters, and how long it was (the whole definition).
        let shown = format!(
            "unnamed index {}… (1,048,614 characters in all)",
            &definition[..120]
        );
        assert_eq!(
            err,
            format!(
                "pgplan: candidate {shown} failed: building {shown}: ERROR: column \
                 \"no_such_column\" does not exist (SQLSTATE 42703)\n"
            )
        );
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_rolls_back_and_exits_143() {
    for_each_version("safety_sigterm", |major| async move {
        let db = TestDb::create(major, "safety_sigterm").await;
        db.run(
            "CREATE TABLE slow (id integer PRIMARY KEY, v integer NOT NULL);
             INSERT INTO slow SELECT i, i % 10 FROM generate_series(1, 400) AS i;
             CREATE FUNCTION slow_identity(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE
             AS $$ BEGIN PERFORM pg_sleep(0.02); RETURN $1; END $$;",
        )
        .await;
        let dir = tempfile::tempdir().unwrap();
        let query = dir.path().join("q.sql");
        std::fs::write(&query, "SELECT * FROM slow WHERE id = 7").unwrap();
        let mut child = Command::new(pgplan_bin())
            .env("NO_COLOR", "1")
            .args(["compare", "-d", &db.conninfo(), query.to_str().unwrap()])
            .args([
                "--index",
                "CREATE INDEX slow_build ON slow (slow_identity(id))",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        db.wait_for_pgplan_statement("CREATE INDEX slow_build", &mut child)
            .await;
        let started = Instant::now();
        // SAFETY: signalling the child we started.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let out = child.wait_with_output().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(out.status.code(), Some(143), "{}", stderr(&out));
        assert_eq!(
            stderr(&out),
            "pgplan: terminated (SIGTERM): cancelling the running statement and rolling back\n\
             pgplan: terminated (SIGTERM): the running statement was cancelled and the transaction \
             rolled back; nothing was left on the server\n"
        );
        assert_no_pgplan_session(&db).await;
        assert_eq!(
            db.value("SELECT count(*) FROM pg_class WHERE relname = 'slow_build'")
                .await
                .unwrap(),
            "0"
        );
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn analyze_counters_moved_by_the_rolled_back_analyze_are_reported() {
    for_each_version("safety_analyze", |major| async move {
        let db = TestDb::create(major, "safety_analyze").await;
        db.run(SETUP).await;
        // Autovacuum must not analyze the table meanwhile: the counters are the test's.
        db.run(
            "ALTER TABLE t SET (autovacuum_enabled = off);
             INSERT INTO t SELECT i, i % 100 FROM generate_series(5001, 6000) AS i;",
        )
        .await;
        let counters = "SELECT n_mod_since_analyze || ' ' || analyze_count \
                        FROM pg_stat_user_tables WHERE relname = 't'";
        // The inserts are counted once their session's statistics are flushed (the setup's
        // own rows too, when they were flushed after its ANALYZE: 1000 or 6000, both right).
        let counted = db
            .settled_statistics(
                counters,
                |v| v.split(' ').next().is_some_and(|n| n.parse::<i64>().unwrap_or(0) >= 1000),
                Duration::from_secs(10),
            )
            .await
            .expect("the inserts were never counted");
        let (mods, analyzes) = counted.split_once(' ').unwrap();
        let analyzes: i64 = analyzes.parse().unwrap();
        let statistics = "SELECT md5(string_agg(attname || histogram_bounds::text, ',' ORDER BY attname)) \
                          FROM pg_stats WHERE tablename = 't'";
        let statistics_before = db.value(statistics).await;
        let dir = tempfile::tempdir().unwrap();
        let args = ["--index", "CREATE INDEX ON t (v)", "--runs", "1", "--analyze"];
        let out = compare(&db, dir.path(), "SELECT id FROM t WHERE v = 1", &args);
        assert!(out.status.success(), "{}", stderr(&out));
        // Said before the run, on stderr.
        assert!(
            stderr(&out).starts_with(
                "pgplan: note: --analyze: ANALYZE inside the rolled-back transaction still counts \
                 in the table's cumulative statistics, which no rollback undoes: it sets \
                 n_mod_since_analyze to 0, adds 1 to analyze_count and sets last_analyze, while \
                 the statistics it gathered are rolled back; autovacuum then does not analyze the \
                 table until enough rows change again to cross its autoanalyze threshold (the \
                 report gives the counters before and after)\n"
            ),
            "{}",
            stderr(&out)
        );
        // And after, in the report, with the counters as the server now has them.
        let report = String::from_utf8(out.stdout).unwrap();
        let now = db
            .value("SELECT to_char(last_analyze AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM pg_stat_user_tables WHERE relname = 't'")
            .await
            .unwrap();
        assert_eq!(db.value(counters).await, Some(format!("0 {}", analyzes + 1)));
        let note = format!(
            "--analyze on public.t: its statistics were rolled back, but n_mod_since_analyze \
             went {mods} → 0 and analyze_count {analyzes} → {}, last_analyze ",
            analyzes + 1
        );
        let line = report
            .lines()
            .find(|l| l.contains(&note))
            .unwrap_or_else(|| panic!("{report}"));
        assert!(
            line.ends_with(&format!(
                " → {now}, and that outlives the rollback: autovacuum counts rows changed from 0 \
                 again before it analyzes public.t (run ANALYZE public.t to give it the \
                 statistics it now believes it has)"
            )),
            "{line}"
        );
        // The statistics themselves were rolled back.
        assert_eq!(db.value(statistics).await, statistics_before);
        assert_no_pgplan_session(&db).await;
        db.drop_db().await;
    })
    .await;
}
