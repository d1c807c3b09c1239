//! The lasting-state diff on real servers 13–18: a user function that makes what no rollback
//! undoes (a replication slot, a session-level advisory lock) through dynamic SQL runs without
//! pgplan seeing it inside (a direct call in its body is refused, `function_reach_live.rs`), and `explain -d` and `compare` then report it as left behind, with the command that
//! removes it, and exit 4, as do `compare --workload`, `advise` and `check`; a run that leaves nothing
//! says nothing and exits as before.

mod common;

use std::process::Output;

use common::{TestDb, for_each_version, pgplan_command, stderr};

const SETUP: &str = "
CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL);
INSERT INTO t SELECT i, i % 100 FROM generate_series(1, 5000) AS i;
VACUUM (ANALYZE) t;
-- EXECUTE of a string made at run time: no reading of the body sees the call.
CREATE FUNCTION hold_lock() RETURNS integer LANGUAGE plpgsql VOLATILE AS
    $f$BEGIN EXECUTE format('SELECT pg_advisory_lock(%s)', 4242); RETURN 1; END$f$;
";

fn pgplan(db: &TestDb, dir: &std::path::Path, command: &str, query: &str, args: &[&str]) -> Output {
    let path = dir.join(format!("q{}.sql", query.len()));
    std::fs::write(&path, query).unwrap();
    pgplan_command(&[command])
        .arg("-d")
        .arg(db.conninfo())
        .arg(&path)
        .args(args)
        .output()
        .unwrap()
}

/// Held by each test for its whole run: a replication slot is the server's, so one test's slot
/// would show in the other's lasting-state diff, which asserts that a clean run says nothing.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn printed(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(out))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn what_a_user_function_leaves_is_reported_with_its_remedy_and_exit_4() {
    let _alone = ONE_AT_A_TIME.lock().await;
    for_each_version("lasting_state", |major| async move {
        let db = TestDb::create(major, "lasting_state").await;
        db.run(SETUP).await;
        // A slot name per database: the clusters are shared between tests.
        let slot = format!("pgplan_left_{}", db.name);
        db.run(&format!(
            "CREATE FUNCTION make_slot() RETURNS integer LANGUAGE plpgsql VOLATILE AS \
             $$BEGIN EXECUTE format('SELECT pg_create_physical_replication_slot(%L)', '{slot}'); \
             RETURN 1; END$$"
        ))
        .await;
        let dir = tempfile::tempdir().unwrap();
        let compare_args = ["--index", "CREATE INDEX ON t (v)", "--runs", "1"];

        // Nothing left: no note, the usual exit status.
        let plain = "SELECT id FROM t WHERE v = 3";
        for (command, args) in [("explain", &[][..]), ("compare", &compare_args[..])] {
            let out = pgplan(&db, dir.path(), command, plain, args);
            let text = printed(&out);
            assert!(matches!(out.status.code(), Some(0) | Some(1)), "{command}: {text}");
            assert!(!text.contains("left behind"), "{command}: {text}");
        }

        // A slot made inside a user function (explain -d's one run makes it).
        let out = pgplan(&db, dir.path(), "explain", "SELECT make_slot()", &[]);
        let text = printed(&out);
        assert_eq!(out.status.code(), Some(4), "explain: {text}");
        assert!(
            text.contains(&format!(
                "left behind: replication slot {slot} (physical, inactive) appeared while pgplan ran"
            )),
            "explain: {text}"
        );
        assert!(
            text.contains(&format!("SELECT pg_drop_replication_slot('{slot}')")),
            "explain: {text}"
        );
        db.run(&format!("SELECT pg_drop_replication_slot('{slot}')"))
            .await;

        // compare's baseline makes it; the candidate's run then fails on the existing slot.
        let out = pgplan(&db, dir.path(), "compare", "SELECT make_slot()", &compare_args);
        let text = printed(&out);
        assert!(
            text.contains(&format!("left behind: replication slot {slot}")),
            "compare: {text}"
        );
        assert!(matches!(out.status.code(), Some(2) | Some(4)), "compare: {text}");
        db.run(&format!("SELECT pg_drop_replication_slot('{slot}')"))
            .await;

        // A session-level advisory lock a function took: pgplan's session held it after the
        // rollback.
        for (command, args) in [("explain", &[][..]), ("compare", &compare_args[..])] {
            let out = pgplan(&db, dir.path(), command, "SELECT hold_lock()", args);
            let text = printed(&out);
            assert_eq!(out.status.code(), Some(4), "{command}: {text}");
            assert!(
                text.contains("left behind: advisory lock 4242 (ExclusiveLock)"),
                "{command}: {text}"
            );
            assert!(text.contains("pg_advisory_unlock_all()"), "{command}: {text}");
        }
        db.wait_until_pgplan_sessions_are_gone().await;
        assert_eq!(
            db.value(&format!(
                "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}'"
            ))
            .await
            .as_deref(),
            Some("0")
        );
        db.drop_db().await;
    })
    .await;
}

/// `compare --workload` and `advise` run the same diff around their runs: a workload query's
/// function that keeps a session-level advisory lock is reported as left behind, exit 4.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_workloads_runs_are_diffed_too() {
    let _alone = ONE_AT_A_TIME.lock().await;
    for_each_version("lasting_state_workload", |major| async move {
        let db = TestDb::create(major, "lasting_state_workload").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        let workload = dir.path().join("workload.sql");
        let file = workload.display().to_string();
        let run = |args: &[&str]| pgplan_command(args).output().unwrap();
        let conninfo = db.conninfo();
        let compare = [
            "compare",
            "-d",
            &conninfo,
            "--workload",
            &file,
            "--index",
            "CREATE INDEX ON t (v)",
            "--runs",
            "1",
        ];
        let advise = [
            "advise",
            "-d",
            &conninfo,
            "--workload",
            &file,
            "--runs",
            "1",
        ];

        // Nothing left: no note, the usual exit status.
        std::fs::write(&workload, "SELECT id FROM t WHERE v = 3;\n").unwrap();
        for args in [&compare[..], &advise[..]] {
            let out = run(args);
            let text = printed(&out);
            assert!(
                matches!(out.status.code(), Some(0) | Some(1)),
                "{}: {text}",
                args[0]
            );
            assert!(!text.contains("left behind"), "{}: {text}", args[0]);
        }

        std::fs::write(
            &workload,
            "SELECT id FROM t WHERE v = 3;\nSELECT hold_lock();\n",
        )
        .unwrap();
        for args in [&compare[..], &advise[..]] {
            let out = run(args);
            let text = printed(&out);
            assert_eq!(out.status.code(), Some(4), "{}: {text}", args[0]);
            assert!(
                text.contains("left behind: advisory lock 4242 (ExclusiveLock)"),
                "{}: {text}",
                args[0]
            );
            assert!(
                text.contains("pg_advisory_unlock_all()"),
                "{}: {text}",
                args[0]
            );
        }
        db.wait_until_pgplan_sessions_are_gone().await;
        db.drop_db().await;
    })
    .await;
}

/// `check` runs the same diff around its runs: recording a baseline (`--update`) and checking
/// against it both report a workload function's session-level advisory lock as left behind,
/// exit 4, in every format; a workload that leaves nothing says nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_checks_runs_are_diffed_too() {
    let _alone = ONE_AT_A_TIME.lock().await;
    for_each_version("lasting_state_check", |major| async move {
        let db = TestDb::create(major, "lasting_state_check").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        let workload = dir.path().join("workload.sql");
        let baseline = dir.path().join("baseline.json");
        let conninfo = db.conninfo();
        let run = |extra: &[&str]| {
            pgplan_command(&["check", "-d", &conninfo, "--runs", "1", "--workload"])
                .arg(&workload)
                .arg("--baseline")
                .arg(&baseline)
                .args(extra)
                .output()
                .unwrap()
        };
        let lock = "left behind: advisory lock 4242 (ExclusiveLock)";

        std::fs::write(&workload, "SELECT id FROM t WHERE v = 3;\n").unwrap();
        for extra in [&["--update"][..], &[][..]] {
            let out = run(extra);
            let text = printed(&out);
            assert_eq!(out.status.code(), Some(0), "{extra:?}: {text}");
            assert!(!text.contains("left behind"), "{extra:?}: {text}");
        }

        std::fs::write(
            &workload,
            "SELECT id FROM t WHERE v = 3;\nSELECT hold_lock();\n",
        )
        .unwrap();
        // Recording: the baseline is written, and the lasting lock still exits 4.
        let out = run(&["--update"]);
        let text = printed(&out);
        assert_eq!(out.status.code(), Some(4), "--update: {text}");
        assert!(text.contains(lock), "--update: {text}");
        assert!(text.contains("baseline recorded"), "--update: {text}");

        // Checking: nothing regressed, and every format names what was left.
        for format in ["text", "json", "sarif", "junit", "markdown"] {
            let out = run(&["--format", format]);
            let text = printed(&out);
            assert_eq!(out.status.code(), Some(4), "{format}: {text}");
            assert!(text.contains(lock), "{format}: {text}");
            assert!(
                text.contains("pg_advisory_unlock_all()"),
                "{format}: {text}"
            );
            if format == "json" {
                let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(doc["result"], "passed", "{text}");
                assert_eq!(
                    doc["left_behind"].as_array().map(Vec::len),
                    Some(1),
                    "{text}"
                );
            }
        }
        db.wait_until_pgplan_sessions_are_gone().await;
        db.drop_db().await;
    })
    .await;
}
