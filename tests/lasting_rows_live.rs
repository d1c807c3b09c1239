//! The rows a trigger commits outside pgplan's rollback, on real servers 13–18: a trigger that
//! writes through dblink commits on its own connection, so a read-write run (`explain -d`,
//! `compare`, `compare --workload`) refuses to run a write that fires it, naming the trigger;
//! accepted with `--allow-lasting-effects` (and for `advise`'s accepted representative write)
//! it reports the rows that appeared in the table it writes as left behind, with the remedy,
//! and exits 4; a
//! trigger that writes in pgplan's own transaction is rolled back with it and reports nothing,
//! and a concurrent writer to a watched table shows the same as a trigger would (the caveat the
//! note gives).

mod common;

use std::process::{Command, Output};

use common::{TestDb, for_each_version, pgplan_bin, stderr};

const SETUP: &str = "
CREATE EXTENSION dblink;
CREATE TABLE local_log (at timestamptz NOT NULL DEFAULT now());
CREATE TABLE remote_log (at timestamptz NOT NULL DEFAULT now());
CREATE TABLE t_local (id integer PRIMARY KEY, v integer NOT NULL);
CREATE TABLE t_remote (id integer PRIMARY KEY, v integer NOT NULL);
INSERT INTO t_local SELECT i, i % 5000 FROM generate_series(1, 50000) AS i;
INSERT INTO t_remote SELECT i, i % 5000 FROM generate_series(1, 50000) AS i;
VACUUM (ANALYZE) t_local;
VACUUM (ANALYZE) t_remote;
CREATE FUNCTION log_local() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO local_log DEFAULT VALUES; RETURN NULL; END $$;
CREATE TRIGGER local_changes AFTER INSERT OR UPDATE OR DELETE ON t_local
  FOR EACH ROW EXECUTE FUNCTION log_local();
";

fn pgplan(db: &TestDb, dir: &std::path::Path, args: &[&str], query: &str) -> Output {
    let file = dir.join(format!("q{}.sql", query.len()));
    std::fs::write(&file, query).unwrap();
    let (command, rest) = args.split_first().unwrap();
    let mut cmd = Command::new(pgplan_bin());
    cmd.env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .arg(command)
        .args(["-d", &db.conninfo()]);
    if rest.first() == Some(&"--workload") {
        cmd.arg("--workload").arg(&file).args(&rest[1..]);
    } else {
        cmd.arg(&file).args(rest);
    }
    cmd.output().unwrap()
}

fn printed(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(out))
}

/// Waits until the statistics views hold every count the setup and earlier runs sent (each of
/// those backends has exited, and its counts reach the views up to a second later), so that
/// what a run reports moved during it.
async fn settle(db: &TestDb) {
    let read = async || -> Vec<(String, i64, i64)> {
        db.client()
            .await
            .query(
                "SELECT relname::text, n_mod_since_analyze, analyze_count + autoanalyze_count \
                 FROM pg_stat_user_tables ORDER BY 1",
                &[],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let mut last = read().await;
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(1200)).await;
        let now = read().await;
        if now == last || std::time::Instant::now() > deadline {
            return;
        }
        last = now;
    }
}

async fn rows(db: &TestDb, table: &str) -> i64 {
    db.client()
        .await
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rows_a_trigger_commits_through_dblink_are_left_behind() {
    for_each_version("lasting_rows", |major| async move {
        let db = TestDb::create(major, "lasting_rows").await;
        db.run(SETUP).await;
        let other = db.conninfo();
        db.run(&format!(
            "CREATE FUNCTION log_remote() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM dblink_exec('{other}', 'INSERT INTO remote_log DEFAULT VALUES'); \
             RETURN NULL; END $$;
             CREATE TRIGGER remote_changes AFTER INSERT OR UPDATE OR DELETE ON t_remote \
             FOR EACH ROW EXECUTE FUNCTION log_remote();"
        ))
        .await;
        let dir = tempfile::tempdir().unwrap();
        let explain = ["explain", "--allow-writes"];
        let compare = [
            "compare",
            "--index",
            "CREATE INDEX ON {t} (v)",
            "--allow-writes",
            "--runs",
            "1",
        ];
        let workload = [
            "compare",
            "--workload",
            "--index",
            "CREATE INDEX ON {t} (v)",
            "--allow-writes",
            "--runs",
            "1",
        ];
        let with_table = |args: &[&str], table: &str| -> Vec<String> {
            args.iter().map(|a| a.replace("{t}", table)).collect()
        };

        // A trigger writing in pgplan's transaction: rolled back with it, nothing reported.
        let update = "UPDATE t_local SET v = v WHERE id = 1";
        for args in [&explain[..], &compare[..], &workload[..]] {
            let args = with_table(args, "t_local");
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            settle(&db).await;
            let out = pgplan(&db, dir.path(), &args, update);
            let text = printed(&out);
            assert!(
                matches!(out.status.code(), Some(0) | Some(1)),
                "{args:?}: {text}"
            );
            assert!(!text.contains("left behind"), "{args:?}: {text}");
        }
        assert_eq!(rows(&db, "local_log").await, 0);

        // Through dblink: the trigger's function is judged as if the query called it, and the
        // run is refused before it runs, with the trigger named; nothing is committed.
        let update = "UPDATE t_remote SET v = v WHERE id = 1";
        for args in [&explain[..], &compare[..], &workload[..]] {
            let before = rows(&db, "remote_log").await;
            let args = with_table(args, "t_remote");
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = pgplan(&db, dir.path(), &args, update);
            let text = printed(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
            assert!(
                text.contains(
                    "public.log_remote() (run by trigger remote_changes on public.t_remote, \
                     which the query writes) calls public.dblink_exec(): it runs SQL over \
                     another connection"
                ),
                "{args:?}: {text}"
            );
            assert!(text.contains("--allow-lasting-effects"), "{args:?}: {text}");
            assert_eq!(rows(&db, "remote_log").await, before, "{args:?}");
        }
        // Accepted: committed on the other connection, reported with the remedy, exit 4.
        for args in [&explain[..], &compare[..], &workload[..]] {
            let before = rows(&db, "remote_log").await;
            let mut args = with_table(args, "t_remote");
            args.push("--allow-lasting-effects".into());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            settle(&db).await;
            let out = pgplan(&db, dir.path(), &args, update);
            let text = printed(&out);
            assert_eq!(out.status.code(), Some(4), "{args:?}: {text}");
            assert!(rows(&db, "remote_log").await > before, "{args:?}");
            assert!(
                text.contains(
                    "left behind: rows of public.remote_log (trigger remote_changes on \
                     public.t_remote writes to it in public.log_remote): "
                ),
                "{args:?}: {text}"
            );
            assert!(
                text.contains(
                    "look at the table's newest rows and delete those pgplan's runs made"
                ),
                "{args:?}: {text}"
            );
        }

        // advise, whose workload only reads: the representative write fires the trigger only
        // when accepted, and then what it committed is reported.
        let lookup = "-- calls: 1000\nSELECT id FROM t_remote WHERE v = 7";
        let advise = [
            "advise",
            "--workload",
            "--allow-writes",
            "--runs",
            "1",
            "--format",
            "json",
        ];
        let before = rows(&db, "remote_log").await;
        settle(&db).await;
        let out = pgplan(&db, dir.path(), &advise, lookup);
        let text = printed(&out);
        assert!(
            matches!(out.status.code(), Some(0) | Some(1)),
            "advise: {text}"
        );
        assert!(!text.contains("left behind"), "advise: {text}");
        assert_eq!(rows(&db, "remote_log").await, before);
        let mut accepted = advise.to_vec();
        accepted.extend(["--allow-probe-triggers", "t_remote"]);
        settle(&db).await;
        let out = pgplan(&db, dir.path(), &accepted, lookup);
        let text = printed(&out);
        assert_eq!(out.status.code(), Some(4), "advise: {text}");
        assert!(rows(&db, "remote_log").await > before);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(
            doc["notes"].as_array().unwrap().iter().any(|n| n["message"]
                .as_str()
                .unwrap()
                .starts_with("left behind: rows of public.remote_log (")),
            "{doc:#}"
        );
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_concurrent_writer_to_a_watched_table_shows_as_a_trigger_would() {
    for_each_version("lasting_rows_writer", |major| async move {
        let db = TestDb::create(major, "lasting_rows_writer").await;
        db.run(SETUP).await;
        settle(&db).await;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("slow.sql");
        // The sleep holds the run open while another session commits a row to the table the
        // trigger writes.
        std::fs::write(
            &file,
            "UPDATE t_local SET v = v WHERE id = 1 AND pg_sleep(1.5) IS NOT NULL",
        )
        .unwrap();
        let child = Command::new(pgplan_bin())
            .env("NO_COLOR", "1")
            .env_remove("PGSERVICE")
            .args(["explain", "-d", &db.conninfo()])
            .arg(&file)
            .arg("--allow-writes")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let client = db.client().await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let sleeping: i64 = client
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE datname = current_database() AND wait_event = 'PgSleep'",
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            if sleeping > 0 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "pgplan never ran the query"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        // A connection of its own, closed at once: its counts reach the views when it exits.
        db.run("INSERT INTO local_log DEFAULT VALUES").await;
        // Waited for off the runtime's threads, so the writer's connection task can run and
        // close it.
        let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
            .await
            .unwrap();
        let text = printed(&out);
        assert_eq!(out.status.code(), Some(4), "{text}");
        assert!(
            text.contains(
                "left behind: rows of public.local_log (trigger local_changes on public.t_local \
                 writes to it in public.log_local): 1 row(s) were inserted, updated or deleted \
                 by committed transactions while pgplan ran"
            ) && text.contains("(a concurrent writer to the table shows the same)"),
            "{text}"
        );
        db.drop_db().await;
    })
    .await;
}
