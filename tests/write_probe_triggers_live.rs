//! `compare --workload --allow-writes` and `advise --allow-writes` on a table with a user
//! trigger: pgplan's representative write (its own DELETE and re-INSERT of a row) would fire
//! the trigger, whose effects can outlive the rollback. The write is not run, the entry cost is
//! estimated, and the report and standard error say why and name the flag that accepts it;
//! with `--allow-probe-triggers TABLE` the write runs (the trigger fires) and its cost is
//! measured. A name that resolves to no table is an error before any work; an accepted table
//! that needs no acceptance, or that no candidate is on, is warned about.

mod common;

use std::process::{Command, Output};

use common::{TestDb, for_each_version, pgplan_bin, stderr};

// The trigger takes a value from a sequence: that, no rollback undoes, so it shows whether the
// trigger ever ran.
const SETUP: &str = "
CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL);
INSERT INTO t SELECT i, i % 5000 FROM generate_series(1, 50000) i;
CREATE TABLE plain (id integer PRIMARY KEY, v integer NOT NULL);
INSERT INTO plain SELECT i, i % 100 FROM generate_series(1, 5000) i;
ANALYZE t;
ANALYZE plain;
CREATE SEQUENCE trigger_calls;
CREATE FUNCTION count_call() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN PERFORM nextval('trigger_calls'); RETURN NULL; END $$;
CREATE TRIGGER log_changes AFTER INSERT OR DELETE ON t
  FOR EACH ROW EXECUTE FUNCTION count_call();
";

fn pgplan(db: &TestDb, workload: &std::path::Path, args: &[&str]) -> Output {
    let (command, rest) = args.split_first().unwrap();
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .arg(command)
        .args(["-d", &db.conninfo(), "--workload"])
        .arg(workload)
        .args(rest)
        .output()
        .unwrap()
}

async fn trigger_ran(db: &TestDb) -> bool {
    db.client()
        .await
        .query_one("SELECT is_called FROM trigger_calls", &[])
        .await
        .unwrap()
        .get(0)
}

/// Whether each write cost of the report is estimated: every candidate's entry cost (compare)
/// or every recommendation's write cost (advise).
fn write_cost_estimated(command: &str, doc: &serde_json::Value) -> Vec<bool> {
    if command == "advise" {
        return doc["recommended"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["write_estimated"].as_bool().unwrap())
            .collect();
    }
    doc["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| {
            c["workload"]["writes"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|w| w["entry_cost"]["estimated"].as_bool().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_write_probe_never_fires_a_user_trigger_unless_accepted_by_name() {
    for_each_version("probe_triggers", |major| async move {
        let db = TestDb::create(major, "probe_triggers").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("lookup.sql"),
            "-- calls: 1000\nSELECT id FROM t WHERE v = 7\n",
        )
        .unwrap();
        let compare = [
            "compare",
            "--index",
            "CREATE INDEX ON t (v)",
            "--allow-writes",
            "--runs",
            "1",
            "--format",
            "json",
        ];
        let advise = [
            "advise",
            "--allow-writes",
            "--runs",
            "1",
            "--format",
            "json",
        ];
        // compare names the table as its --index wrote it; advise as it proposed the index.
        let skipped = |table: &str| {
            format!(
                "the representative write on {table} was not run, because it would fire what \
                 the table runs on a write (trigger log_changes)"
            )
        };
        let remedy =
            |table: &str| format!("(pass --allow-probe-triggers {table} to run it anyway)");
        let named = |command: &str| {
            if command == "compare" {
                "t"
            } else {
                "public.t"
            }
        };

        // Not accepted: estimated, and said in the report (JSON) and on standard error.
        for args in [&compare[..], &advise[..]] {
            let (skipped, remedy) = (skipped(named(args[0])), remedy(named(args[0])));
            let out = pgplan(&db, dir.path(), args);
            let err = stderr(&out);
            assert!(
                matches!(out.status.code(), Some(0) | Some(1)),
                "{}: {err}",
                args[0]
            );
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let text = doc.to_string();
            assert!(
                text.contains(&skipped) && text.contains(&remedy),
                "{}: {doc:#}",
                args[0]
            );
            assert!(
                err.contains(&format!("pgplan: warning: --allow-writes: {skipped}"))
                    && err.contains(&remedy),
                "{}: {err}",
                args[0]
            );
            assert_eq!(write_cost_estimated(args[0], &doc), [true], "{doc:#}");
            assert!(
                !trigger_ran(&db).await,
                "{}: the trigger ran: {doc:#}",
                args[0]
            );
        }

        // Accepted by name: the write runs (the trigger fires) and its cost is measured.
        for args in [&compare[..], &advise[..]] {
            db.run("ALTER SEQUENCE trigger_calls RESTART").await;
            let mut accepted = args.to_vec();
            accepted.extend(["--allow-probe-triggers", "t"]);
            let out = pgplan(&db, dir.path(), &accepted);
            let err = stderr(&out);
            assert!(
                matches!(out.status.code(), Some(0) | Some(1)),
                "{}: {err}",
                args[0]
            );
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let text = doc.to_string();
            assert!(!text.contains("was not run"), "{}: {doc:#}", args[0]);
            let fired = "--allow-probe-triggers t: the representative write on public.t runs \
                         and fires trigger log_changes";
            assert!(text.contains(fired), "{}: {doc:#}", args[0]);
            assert!(
                err.contains(&format!("pgplan: warning: {fired}")),
                "{}: {err}",
                args[0]
            );
            assert_eq!(write_cost_estimated(args[0], &doc), [false], "{doc:#}");
            assert!(
                trigger_ran(&db).await,
                "{}: the probe did not run: {doc:#}",
                args[0]
            );
        }

        // A name that resolves to no table: an error before any work.
        for args in [&compare[..], &advise[..]] {
            db.run("ALTER SEQUENCE trigger_calls RESTART").await;
            let mut wrong = args.to_vec();
            wrong.extend([
                "--allow-probe-triggers",
                "t",
                "--allow-probe-triggers",
                "nosuch",
            ]);
            let out = pgplan(&db, dir.path(), &wrong);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{}: {err}", args[0]);
            assert!(
                err.contains("--allow-probe-triggers nosuch: no table of that name"),
                "{}: {err}",
                args[0]
            );
            assert!(out.stdout.is_empty(), "{}", args[0]);
            assert!(!trigger_ran(&db).await, "{}", args[0]);
        }

        // Accepting a table that needs it not, or that no candidate is on, changes nothing and
        // says so.
        let mut needless = compare.to_vec();
        needless.extend([
            "--index",
            "CREATE INDEX ON plain (v)",
            "--allow-probe-triggers",
            "plain",
        ]);
        let out = pgplan(&db, dir.path(), &needless);
        let err = stderr(&out);
        assert!(
            err.contains(
                "pgplan: warning: --allow-probe-triggers plain: public.plain has no user \
                 trigger, rule or publication"
            ),
            "{err}"
        );
        let mut elsewhere = compare.to_vec();
        elsewhere.extend(["--allow-probe-triggers", "public.plain"]);
        let out = pgplan(&db, dir.path(), &elsewhere);
        let err = stderr(&out);
        assert!(
            err.contains(
                "pgplan: warning: --allow-probe-triggers public.plain: no candidate index is on \
                 public.plain"
            ),
            "{err}"
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            doc.to_string()
                .contains("--allow-probe-triggers public.plain: no candidate index"),
            "{doc:#}"
        );
        db.drop_db().await;
    })
    .await;
}

#[test]
fn the_flag_needs_allow_writes_and_a_workload() {
    let out = Command::new(pgplan_bin())
        .args(["advise", "--allow-probe-triggers", "t"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--allow-writes"), "{}", stderr(&out));
    let dir = tempfile::tempdir().unwrap();
    let query = dir.path().join("q.sql");
    std::fs::write(&query, "SELECT 1").unwrap();
    let out = Command::new(pgplan_bin())
        .arg("compare")
        .arg(&query)
        .args([
            "--index",
            "CREATE INDEX ON t (v)",
            "--allow-writes",
            "--allow-probe-triggers",
            "t",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--allow-probe-triggers applies to a workload"),
        "{}",
        stderr(&out)
    );
}
