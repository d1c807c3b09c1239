//! pgplan through a real connection pooler in transaction mode (PgBouncer, Debian's package):
//! each transaction may land on a different server connection, and none may be handed on with
//! pgplan's settings, prepared statements or locks.

mod common;

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{TestDb, for_each_version, pgplan_bin};

struct Bouncer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Bouncer {
    /// A conninfo for `db` through this PgBouncer.
    fn conninfo(&self, db: &TestDb) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname={} sslmode=disable",
            self.port, db.name
        )
    }
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The unprivileged account to run PgBouncer as when the tests run as root (it refuses root).
fn run_as() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions; getpwnam's record is read at once.
    unsafe {
        if libc::geteuid() != 0 {
            return None;
        }
        let pw = libc::getpwnam(c"postgres".as_ptr());
        (!pw.is_null()).then(|| ((*pw).pw_uid, (*pw).pw_gid))
    }
}

fn start_bouncer(db: &TestDb) -> Bouncer {
    start_bouncer_with(db, "")
}

/// PgBouncer with more `[pgbouncer]` settings (lines ending in a newline).
fn start_bouncer_with(db: &TestDb, extra: &str) -> Bouncer {
    let binary = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("PgBouncer is needed (apt-get install pgbouncer; scripts/test.sh installs it)");
    let dir = tempfile::tempdir().unwrap();
    let port = TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let path = |name: &str| dir.path().join(name).display().to_string();
    std::fs::write(path("users.txt"), "\"postgres\" \"\"\n").unwrap();
    std::fs::write(
        path("pgbouncer.ini"),
        format!(
            "[databases]\n* = host={} port={}\n\n[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\n\
             unix_socket_dir =\nauth_type = trust\nauth_file = {}\npool_mode = transaction\n\
             default_pool_size = 2\nmax_client_conn = 100\nignore_startup_parameters = extra_float_digits\n\
             logfile = {}\npidfile = {}\n{extra}",
            db.cluster.socket_dir().display(),
            db.cluster.port(),
            path("users.txt"),
            path("pgbouncer.log"),
            path("pgbouncer.pid"),
        ),
    )
    .unwrap();
    let mut cmd = Command::new(binary);
    cmd.arg(path("pgbouncer.ini"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some((uid, gid)) = run_as() {
        std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            std::os::unix::fs::chown(entry.unwrap().path(), Some(uid), Some(gid)).unwrap();
        }
        cmd.uid(uid).gid(gid);
    }
    let child = cmd.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "PgBouncer did not start: {}",
            std::fs::read_to_string(path("pgbouncer.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Bouncer {
        child,
        port,
        _dir: dir,
    }
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn compare_and_info_through_pgbouncer_in_transaction_mode() {
    for_each_version("pooler", |major| async move {
        let db = TestDb::create(major, "pooler").await;
        db.run(
            "CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL, pad text NOT NULL); \
             INSERT INTO t SELECT i, i % 500, repeat('x', 100) FROM generate_series(1, 50000) i; \
             VACUUM (ANALYZE) t;",
        )
        .await;
        let bouncer = start_bouncer(&db);
        let conninfo = bouncer.conninfo(&db);
        let dir = tempfile::tempdir().unwrap();
        let query = dir.path().join("q.sql");
        std::fs::write(&query, "SELECT count(*) FROM t WHERE v = $1").unwrap();

        let out = run(&["info", "--format", "json", "-d", &conninfo]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );

        // Parameters make pgplan PREPARE and DEALLOCATE inside each transaction.
        let out = run(&[
            "compare",
            "-d",
            &conninfo,
            query.to_str().unwrap(),
            "--param",
            "42",
            "--index",
            "CREATE INDEX ON t (v)",
            "--index",
            "CREATE INDEX ON t (id, v)",
            "--runs",
            "2",
            "--format",
            "json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["best"], "t_v_idx", "{doc:#}");

        // Every pooled server connection is clean: ask through the pooler often enough to reach
        // each of the pool's two connections.
        let client = {
            let (client, connection) = tokio_postgres::connect(&conninfo, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
        };
        for _ in 0..10 {
            let rows = client
                .simple_query(
                    "SELECT (SELECT count(*) FROM pg_prepared_statements)::text \
                     || ' ' || current_setting('statement_timeout') \
                     || ' ' || current_setting('lock_timeout') \
                     || ' ' || current_setting('transaction_read_only')",
                )
                .await
                .unwrap();
            let value = rows
                .iter()
                .find_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                    _ => None,
                })
                .unwrap();
            assert_eq!(
                value, "0 0 0 off",
                "a pooled connection kept pgplan's session state"
            );
        }
        assert_eq!(
            db.value("SELECT count(*) FROM pg_class WHERE relname LIKE 't_%idx'")
                .await
                .as_deref(),
            Some("0")
        );
        drop(client);
        drop(bouncer);
        db.drop_db().await;
    })
    .await;
}

/// PGTZ, PGDATESTYLE and PGGEQO, which libpq sends as startup parameters: psql gets through
/// PgBouncer with them, and pgplan must too, with the settings in force in its transactions.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn libpq_startup_settings_through_pgbouncer() {
    use pgplan::db::connect::{ConnectOptions, connect};
    use pgplan::db::conninfo::{ConnRequest, Environment, resolve};
    use pgplan::db::session::Limits;

    for_each_version("pooler_startup", |major| async move {
        let db = TestDb::create(major, "pooler_startup").await;
        let bouncer = start_bouncer(&db);
        let home = tempfile::tempdir().unwrap();
        let vars = [
            ("HOME", home.path().display().to_string()),
            ("PGTZ", "Asia/Kolkata".to_owned()),
            ("PGDATESTYLE", "SQL, DMY".to_owned()),
            ("PGGEQO", "off".to_owned()),
        ];
        let conninfo = bouncer.conninfo(&db);

        // The binary, as a user runs it.
        let mut cmd = Command::new(pgplan_bin());
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("NO_COLOR", "1")
            .args(["info", "--format", "json", "-d", &conninfo]);
        for (name, value) in &vars {
            cmd.env(name, value);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );

        // The library: the settings hold inside every transaction pgplan runs.
        let env = Environment::new(
            vars.iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            Some(home.path().to_path_buf()),
            "postgres",
        );
        let params = resolve(
            &ConnRequest {
                dbname: Some(conninfo.clone()),
                ..ConnRequest::default()
            },
            &env,
        )
        .unwrap();
        let mut conn = connect(&params, &ConnectOptions::default(), |_, _, _| {})
            .await
            .unwrap();
        for _ in 0..3 {
            let seen = conn
                .read_only(&Limits::read_only_defaults(), async |client| {
                    let row = client
                        .query_one(
                            "SELECT current_setting('TimeZone') || ' | ' || \
                             current_setting('DateStyle') || ' | ' || current_setting('geqo')",
                            &[],
                        )
                        .await
                        .unwrap();
                    Ok(row.get::<_, String>(0))
                })
                .await
                .unwrap();
            assert_eq!(seen, "Asia/Kolkata | SQL, DMY | off");
        }
        drop(conn);
        drop(bouncer);
        db.drop_db().await;
    })
    .await;
}

/// One value through the pooler, on whichever server connection it lands.
async fn pooled_value(client: &tokio_postgres::Client, sql: &str) -> String {
    let rows = client.simple_query(sql).await.unwrap();
    rows.iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or("").to_owned()),
            _ => None,
        })
        .unwrap()
}

async fn pooled_client(conninfo: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

/// Session state a query would leave on a pooled server connection (a session advisory lock, a
/// dblink connection, a backup in progress) is refused before anything runs; pgplan's own
/// prepared statements are gone even when a run times out. Every pooled connection is clean.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn session_state_never_reaches_the_next_client_through_pgbouncer() {
    for_each_version("pooler_session_state", |major| async move {
        let db = TestDb::create(major, "pooler_session_state").await;
        db.run(
            "CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL);
             INSERT INTO t SELECT i, i % 500 FROM generate_series(1, 20000) i;
             CREATE EXTENSION dblink;
             VACUUM (ANALYZE) t;",
        )
        .await;
        let bouncer = start_bouncer(&db);
        let conninfo = bouncer.conninfo(&db);
        let dir = tempfile::tempdir().unwrap();
        let backup = if major >= 15 {
            ("SELECT pg_backup_start('pgplan')", "pg_backup_start")
        } else {
            ("SELECT pg_start_backup('pgplan')", "pg_start_backup")
        };
        let cases = [
            (
                "SELECT pg_advisory_lock(7)",
                "pg_catalog.pg_advisory_lock()",
            ),
            (
                "SELECT dblink_connect('pgplan_conn', 'dbname=postgres')",
                "public.dblink_connect()",
            ),
            (backup.0, &*format!("pg_catalog.{}()", backup.1)),
        ];
        for (n, (query, function)) in cases.iter().enumerate() {
            let path = dir.path().join(format!("q{n}.sql"));
            std::fs::write(&path, query).unwrap();
            let out = run(&[
                "compare",
                "-d",
                &conninfo,
                path.to_str().unwrap(),
                "--index",
                "CREATE INDEX ON t (v)",
            ]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{query}: {err}");
            assert!(
                err.starts_with(&format!(
                    "pgplan: the query calls functions whose effects outlive pgplan's rollback \
                     or reach outside its session:\n  {function} "
                )),
                "{query}: {err}"
            );
        }
        // A session-level setting the query makes is reverted with the rollback (PostgreSQL
        // undoes a SET in an aborted transaction), so pgplan runs it.
        let path = dir.path().join("setting.sql");
        std::fs::write(&path, "SELECT set_config('work_mem', '77MB', false)").unwrap();
        let out = run(&[
            "compare",
            "-d",
            &conninfo,
            path.to_str().unwrap(),
            "--index",
            "CREATE INDEX ON t (v)",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // A parameterised run that times out: its prepared statement is deallocated inside the
        // same transaction, before the server connection goes back to the pool.
        let path = dir.path().join("slow.sql");
        std::fs::write(&path, "SELECT count(*) FROM t, pg_sleep(0.5) WHERE v = $1").unwrap();
        let out = run(&[
            "compare",
            "-d",
            &conninfo,
            path.to_str().unwrap(),
            "--param",
            "7",
            "--index",
            "CREATE INDEX ON t (v)",
            "--statement-timeout",
            "200ms",
        ]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains("canceling statement due to statement timeout"),
            "{err}"
        );

        let client = pooled_client(&conninfo).await;
        for _ in 0..10 {
            let state = pooled_value(
                &client,
                "SELECT (SELECT count(*) FROM pg_prepared_statements) || ' ' || \
                 (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory') || ' ' || \
                 coalesce(array_to_string(dblink_get_connections(), ','), 'none') || ' ' || \
                 current_setting('transaction_read_only') || ' ' || current_setting('work_mem')",
            )
            .await;
            assert_eq!(
                state, "0 0 none off 4MB",
                "a pooled connection kept session state"
            );
        }
        assert_eq!(
            db.value("SELECT count(*) FROM pg_class WHERE relname LIKE 't_%idx'")
                .await
                .as_deref(),
            Some("0")
        );
        drop(client);
        drop(bouncer);
        db.drop_db().await;
    })
    .await;
}

/// HypoPG's hypothetical indexes live in the backend, outside any transaction: those pgplan
/// makes (and its prepared statements) are removed inside its transaction, and a query that
/// would make one itself is refused. Debian's PostgreSQL 15 has HypoPG.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hypothetical_indexes_never_reach_the_next_client_through_pgbouncer() {
    let db = TestDb::on_debian_hypopg("pooled_hypopg").await;
    db.run(
        "CREATE EXTENSION hypopg;
         CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL);
         INSERT INTO t SELECT i, i % 500 FROM generate_series(1, 20000) i;
         VACUUM (ANALYZE) t;",
    )
    .await;
    let bouncer = start_bouncer(&db);
    let conninfo = bouncer.conninfo(&db);
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.sql");
    std::fs::write(&good, "SELECT count(*) FROM t WHERE v = $1").unwrap();
    let out = run(&[
        "compare",
        "-d",
        &conninfo,
        good.to_str().unwrap(),
        "--hypothetical",
        "--param",
        "7",
        "--index",
        "CREATE INDEX ON t (v)",
        "--index",
        "CREATE INDEX ON t (v, id)",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The query itself making one: refused.
    let own = dir.path().join("own.sql");
    std::fs::write(
        &own,
        "SELECT * FROM hypopg_create_index('CREATE INDEX ON t (v)')",
    )
    .unwrap();
    let out = run(&[
        "compare",
        "-d",
        &conninfo,
        own.to_str().unwrap(),
        "--index",
        "CREATE INDEX ON t (id)",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "\n  public.hypopg_create_index() changes this backend's hypothetical indexes, which \
             outlive the rollback (through a pooler the next client's plans see them)\n"
        ),
        "{err}"
    );
    let client = pooled_client(&conninfo).await;
    for _ in 0..10 {
        let state = pooled_value(
            &client,
            "SELECT (SELECT count(*) FROM hypopg_list_indexes) || ' ' || \
             (SELECT count(*) FROM pg_prepared_statements)",
        )
        .await;
        assert_eq!(
            state, "0 0",
            "a pooled connection kept HypoPG's or pgplan's state"
        );
    }
    drop(client);
    drop(bouncer);
}

/// `advise --hypothetical` through PgBouncer in transaction mode on Debian's PostgreSQL 15 with
/// HypoPG: the shortlist is HypoPG's (labelled estimated), every recommendation is still
/// measured with the index built, a candidate HypoPG cannot represent (GIN) is measured as
/// without it, and no hypothetical index or prepared statement outlives pgplan's transactions
/// on any pooled server connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn advise_hypothetical_through_pgbouncer_leaves_no_hypothetical_index() {
    let db = TestDb::on_debian_hypopg("pooled_advise").await;
    db.run(
        "CREATE EXTENSION hypopg;
         CREATE TABLE tickets (id integer PRIMARY KEY, account_id integer NOT NULL,
                               created_at timestamptz NOT NULL, body text NOT NULL);
         INSERT INTO tickets SELECT i, i % 500, timestamptz '2026-01-01' + i * interval '1 minute',
                                    repeat('x', 80)
         FROM generate_series(1, 60000) i;
         CREATE TABLE docs (id integer PRIMARY KEY, attrs jsonb NOT NULL);
         INSERT INTO docs SELECT i, jsonb_build_object('n', i % 1000, 'pad', repeat('y', 60))
         FROM generate_series(1, 40000) i;
         VACUUM (ANALYZE) tickets, docs;",
    )
    .await;
    let bouncer = start_bouncer(&db);
    let conninfo = bouncer.conninfo(&db);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("newest.sql"),
        "-- calls: 20000\nSELECT id, created_at FROM tickets WHERE account_id = 17 ORDER BY created_at DESC LIMIT 20\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("by_attr.sql"),
        "-- calls: 1000\nSELECT id FROM docs WHERE attrs @> '{\"n\": 7}'\n",
    )
    .unwrap();
    let workload = dir.path().to_str().unwrap();
    let out = run(&[
        "advise",
        "-d",
        &conninfo,
        "--workload",
        workload,
        "--hypothetical",
        "--runs",
        "1",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("{doc:#}");
    assert_eq!(doc["shortlist_estimated"], true);
    let rec = doc["recommended"].as_array().unwrap();
    let composite = rec
        .iter()
        .find(|r| {
            r["definition"]
                .as_str()
                .unwrap()
                .starts_with("ON public.tickets (account_id, created_at DESC)")
        })
        .unwrap_or_else(|| panic!("the composite index not recommended: {doc:#}"));
    let estimate = &composite["hypopg_estimate"];
    assert_eq!(estimate["planner_chose_it"], true, "{composite:#}");
    assert!(estimate["cost_saved_per_day"].as_f64().unwrap() > 0.0);
    // Measured, not estimated: the pages of the run with the index built.
    let q = &composite["queries"][0];
    assert_eq!(q["id"], "newest.sql");
    assert!(q["pages_after"].as_f64().unwrap() < q["pages_before"].as_f64().unwrap());
    assert!(composite["size_bytes"].as_f64().unwrap() > 0.0);
    assert!(composite["build_ms"].as_f64().is_some());
    // HypoPG has no GIN: the candidate has no estimate, is said so, and was measured.
    let gin = rec
        .iter()
        .chain(doc["rejected"].as_array().unwrap())
        .find(|r| r["method"] == "gin")
        .unwrap_or_else(|| panic!("the GIN candidate was not measured: {doc:#}"));
    assert!(gin["hypopg_estimate"].is_null(), "{gin:#}");
    assert!(
        doc["notes"].as_array().unwrap().iter().any(|n| n["message"]
            .as_str()
            .unwrap()
            .contains("no HypoPG estimate")),
        "{doc:#}"
    );
    let text = run(&[
        "advise",
        "-d",
        &conninfo,
        "--workload",
        workload,
        "--hypothetical",
        "--runs",
        "1",
    ]);
    let text = String::from_utf8(text.stdout).unwrap();
    eprintln!("{text}");
    assert!(
        text.contains("shortlist ordered by HypoPG estimates (labelled estimated)")
            && text.contains("HypoPG estimated (it only ordered the measuring)"),
        "{text}"
    );
    let client = pooled_client(&conninfo).await;
    for _ in 0..10 {
        let state = pooled_value(
            &client,
            "SELECT (SELECT count(*) FROM hypopg_list_indexes) || ' ' || \
             (SELECT count(*) FROM pg_prepared_statements) || ' ' || \
             (SELECT count(*) FROM pg_class WHERE relname LIKE '%_idx')",
        )
        .await;
        assert_eq!(
            state, "0 0 0",
            "a pooled connection kept HypoPG's or pgplan's state"
        );
    }
    drop(client);
    drop(bouncer);
}

/// Ctrl-C and kill -9 through PgBouncer in transaction mode while `advise --hypothetical` plans
/// with a hypothetical index in place. HypoPG's indexes live in the backend's memory, outside
/// any transaction: after Ctrl-C the server connection goes back to the pool, and no pooled
/// connection's planner may see the index. After kill -9, PgBouncer closes the server
/// connection of a client gone mid-transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn advise_hypothetical_interrupted_leaves_no_hypothetical_index() {
    let db = TestDb::on_debian_hypopg("pooled_advise_stop").await;
    // An immutable function of a constant is evaluated while planning: every plan of the query
    // takes a quarter of a second, so pgplan can be stopped while HypoPG's index is in place.
    db.run(
        "CREATE EXTENSION hypopg;
         CREATE FUNCTION slow_const(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE
             AS $$ BEGIN PERFORM pg_sleep(0.25); RETURN $1; END $$;
         CREATE TABLE tickets (id integer PRIMARY KEY, account_id integer NOT NULL,
                               created_at timestamptz NOT NULL);
         INSERT INTO tickets SELECT i, i % 500, timestamptz '2026-01-01' + i * interval '1 minute'
         FROM generate_series(1, 30000) i;
         VACUUM (ANALYZE) tickets;",
    )
    .await;
    let bouncer = start_bouncer(&db);
    let conninfo = bouncer.conninfo(&db);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("newest.sql"),
        "-- calls: 20000\nSELECT id, created_at FROM tickets WHERE account_id = slow_const(17) ORDER BY created_at DESC LIMIT 20\n",
    )
    .unwrap();
    let workload = dir.path().to_str().unwrap().to_owned();
    let spawn = |conninfo: &str| {
        Command::new(pgplan_bin())
            .env("NO_COLOR", "1")
            .args(["advise", "-d", conninfo, "--hypothetical", "--runs", "1"])
            .args(["--workload", &workload])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let clean = async || {
        let client = pooled_client(&conninfo).await;
        for _ in 0..10 {
            let state = pooled_value(
                &client,
                "SELECT (SELECT count(*) FROM hypopg_list_indexes) || ' ' || \
                 (SELECT count(*) FROM pg_prepared_statements)",
            )
            .await;
            assert_eq!(
                state, "0 0",
                "a pooled connection kept HypoPG's or pgplan's state"
            );
        }
    };
    // HypoPG's planning is the only EXPLAIN without ANALYZE advise runs for this workload.
    let planning = "EXPLAIN (VERBOSE, SETTINGS, FORMAT JSON) EXECUTE";
    let planning_plain = "EXPLAIN (VERBOSE, SETTINGS, FORMAT JSON) SELECT";
    let wait = async || {
        let sql = format!(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND state = 'active' AND (query LIKE '{planning}%' OR query LIKE '{planning_plain}%')"
        );
        db.wait_for(&sql, |n| n != "0", Duration::from_secs(120))
            .await
            .unwrap_or_else(|_| panic!("pgplan never planned with HypoPG"));
        // The first plan is the one without any candidate; the next ones have one in place.
        tokio::time::sleep(Duration::from_millis(600)).await;
    };

    let child = spawn(&conninfo);
    wait().await;
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    clean().await;

    let mut child = spawn(&conninfo);
    wait().await;
    child.kill().unwrap();
    child.wait().unwrap();
    // PgBouncer notices the client is gone and closes its server connection.
    db.wait_for(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgplan' AND datname = current_database()",
        |n| n == "0",
        Duration::from_secs(60),
    )
    .await
    .unwrap_or_else(|n| panic!("{n} pgplan sessions are still there"));
    clean().await;
    drop(bouncer);
}

/// Ctrl-C through PgBouncer while a candidate builds: pgplan cancels the build and exits 130,
/// and PgBouncer is still serving afterwards. Its cancel request is sent as libpq sends one,
/// the socket kept open until the other end closes it: PgBouncer before 1.19 (Debian 12 ships
/// 1.18) exits with "bad client state" when a cancel request's client leaves before PgBouncer
/// has forwarded it (pgbouncer/pgbouncer#801), which closing the socket at once provokes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ctrl_c_through_pgbouncer_cancels_and_pgbouncer_keeps_serving() {
    for_each_version("pooler_cancel", |major| async move {
        let db = TestDb::create(major, "pooler_cancel").await;
        db.run(
            "CREATE FUNCTION slow_identity(integer) RETURNS integer LANGUAGE plpgsql IMMUTABLE \
                 AS $$ BEGIN PERFORM pg_sleep(0.01); RETURN $1; END $$; \
             CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL); \
             INSERT INTO t SELECT i, i % 50 FROM generate_series(1, 20000) i; \
             VACUUM (ANALYZE) t;",
        )
        .await;
        let mut bouncer = start_bouncer(&db);
        let conninfo = bouncer.conninfo(&db);
        let dir = tempfile::tempdir().unwrap();
        let query = dir.path().join("q.sql");
        std::fs::write(&query, "SELECT count(*) FROM t WHERE v = 7").unwrap();
        for round in 0..3 {
            let mut child = Command::new(pgplan_bin())
                .env("NO_COLOR", "1")
                .args(["compare", "-d", &conninfo, query.to_str().unwrap()])
                .args(["--index", "CREATE INDEX slow_build ON t (slow_identity(v))"])
                .args(["--runs", "1"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            db.wait_for_pgplan_statement("CREATE INDEX slow_build", &mut child)
                .await;
            // SAFETY: signalling the child this test started.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            let out = child.wait_with_output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(130),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            // PgBouncer did not exit, and still hands out connections.
            tokio::time::sleep(Duration::from_millis(200)).await;
            assert!(
                bouncer.child.try_wait().unwrap().is_none(),
                "round {round}: PgBouncer exited after pgplan's cancel request"
            );
            let client = pooled_client(&conninfo).await;
            assert_eq!(pooled_value(&client, "SELECT 1").await, "1");
            drop(client);
            // The pooled server connection may stay, idle, under pgplan's application_name:
            // it must hold nothing.
            let holdings = "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) \
                            WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() \
                            AND a.backend_type = 'client backend' AND l.locktype = 'relation'";
            db.wait_for(holdings, |n| n == "0", Duration::from_secs(30))
                .await
                .unwrap_or_else(|n| panic!("round {round}: {n} relation locks still held"));
            assert_eq!(
                db.value("SELECT count(*) FROM pg_class WHERE relname = 'slow_build'")
                    .await
                    .as_deref(),
                Some("0")
            );
        }
        drop(bouncer);
        db.drop_db().await;
    })
    .await;
}

/// `audit --connections 2` through PgBouncer in transaction mode: the helper's transaction gets
/// a server connection of its own and imports the audit's snapshot; when the pool is taken (one
/// of its two server connections held by another client's transaction, the other by the audit's
/// own), the helper waits in PgBouncer's queue, is given up after a second, and the audit reads
/// the indexes itself: the same report, no hang until PgBouncer's query_wait_timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn audit_with_a_second_connection_through_pgbouncer() {
    for_each_version("pooler_audit_helper", |major| async move {
        let db = TestDb::create(major, "pooler_audit_helper").await;
        db.run(
            "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; \
             CREATE TABLE t (id integer PRIMARY KEY, v integer NOT NULL); \
             INSERT INTO t SELECT i, i % 50 FROM generate_series(1, 1000) i; \
             CREATE INDEX t_v_idx ON t (v); CREATE INDEX t_v_again_idx ON t (v); \
             VACUUM (ANALYZE) t;",
        )
        .await;
        let bouncer = start_bouncer(&db);
        let conninfo = bouncer.conninfo(&db);
        let imports = "SELECT coalesce(sum(s.calls), 0) FROM pg_stat_statements s \
                       JOIN pg_database d ON d.oid = s.dbid \
                       WHERE d.datname = current_database() \
                         AND s.query ILIKE 'SET TRANSACTION SNAPSHOT%'";
        let duplicates = |out: &std::process::Output| -> Vec<String> {
            assert!(
                out.status.code().is_some_and(|c| c <= 1),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            doc["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["check"] == "duplicate_index")
                .map(|f| f["index"].as_str().unwrap().to_owned())
                .collect()
        };

        let audit_with_helper = || {
            run(&[
                "audit",
                "--connections",
                "2",
                "--format",
                "json",
                "-d",
                &conninfo,
            ])
        };
        let helped = audit_with_helper();
        assert_eq!(duplicates(&helped), ["t_v_again_idx"]);
        assert_eq!(
            db.value(imports).await.as_deref(),
            Some("1"),
            "the helper imported the snapshot"
        );

        // Another client holds one of the pool's two server connections in a transaction.
        let holder = pooled_client(&conninfo).await;
        holder.batch_execute("BEGIN; SELECT 1").await.unwrap();
        let started = Instant::now();
        let alone = audit_with_helper();
        let took = started.elapsed();
        assert_eq!(duplicates(&alone), ["t_v_again_idx"]);
        assert!(
            took < Duration::from_secs(20),
            "the audit did not wait for the pool: {took:?}"
        );
        assert_eq!(
            db.value(imports).await.as_deref(),
            Some("1"),
            "no second import"
        );
        holder.batch_execute("ROLLBACK").await.unwrap();

        // Every pooled server connection is clean afterwards: no transaction left open.
        let open = "SELECT count(*) FROM pg_stat_activity \
                    WHERE datname = current_database() AND state LIKE 'idle in transaction%'";
        db.wait_for(open, |n| n == "0", Duration::from_secs(10))
            .await
            .expect("no transaction is left open");
    })
    .await;
}

/// The incident `audit` looks for: a session-level advisory lock taken through PgBouncer in
/// transaction mode stays on the server connection after the client's statement, idle and
/// outside any transaction. The audit, through the same pooler, names that server connection's
/// pid, sees the pooler in PgBouncer's `application_name_add_host` suffix, and names the
/// session waiting for the same key; it never releases or ends anything itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_advisory_lock_left_on_a_pooled_connection() {
    for_each_version("pooler_advisory", |major| async move {
        let db = TestDb::create(major, "pooler_advisory").await;
        let bouncer = start_bouncer_with(&db, "application_name_add_host = 1\n");
        let conninfo = bouncer.conninfo(&db);
        let worker = pooled_client(&format!("{conninfo} application_name=worker")).await;
        // PgBouncer hands out the server connection released last: with another client's
        // transaction open meanwhile, the lock lands on the pool's other connection, and the
        // audit later gets the one that transaction released, not the holder.
        let other = pooled_client(&conninfo).await;
        other.batch_execute("BEGIN; SELECT 1").await.unwrap();
        // One statement, so the pid is the server connection that took the lock.
        let row = worker
            .query_one("SELECT pg_backend_pid(), pg_advisory_lock(4711)::text", &[])
            .await
            .unwrap();
        let holder: i32 = row.get(0);
        other.batch_execute("COMMIT").await.unwrap();
        // Another worker asks for the same key, straight to the server, and waits.
        let waiter = db.client().await;
        let waiter_pid: i32 = waiter
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        let waiting = tokio::spawn(async move {
            waiter
                .batch_execute("SELECT pg_advisory_lock(4711); SELECT pg_advisory_unlock(4711)")
                .await
        });
        db.wait_for(
            &format!("SELECT wait_event_type FROM pg_stat_activity WHERE pid = {waiter_pid}"),
            |w| w == "Lock",
            Duration::from_secs(30),
        )
        .await
        .expect("the second worker waits for the key");

        let out = run(&[
            "audit",
            "--connections",
            "1",
            "--lock-wait-min-age",
            "0",
            "--format",
            "json",
            "-d",
            &conninfo,
        ]);
        assert!(
            out.status.code() == Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let findings = doc["findings"].as_array().unwrap();
        let of = |check: &str| -> Vec<&serde_json::Value> {
            findings.iter().filter(|f| f["check"] == check).collect()
        };
        let leaked = of("advisory_lock");
        assert_eq!(leaked.len(), 1, "{findings:#?}");
        let leaked = leaked[0];
        assert_eq!(leaked["evidence"]["pid"], holder, "{leaked:#}");
        assert_eq!(leaked["evidence"]["advisory_locks"], 1, "{leaked:#}");
        assert_eq!(leaked["evidence"]["pooler"], 1, "{leaked:#}");
        assert_eq!(leaked["evidence"]["waiting_sessions"], 1, "{leaked:#}");
        assert_eq!(leaked["severity"], "critical");
        let message = leaked["message"].as_str().unwrap();
        assert!(message.contains("key 4711"), "{message}");
        assert!(message.contains("application_name_add_host"), "{message}");
        assert!(message.contains("pg_advisory_xact_lock"), "{message}");
        assert!(
            leaked["fix"]
                .as_str()
                .unwrap()
                .contains(&format!("SELECT pg_terminate_backend({holder});")),
            "{leaked:#}"
        );
        let queue = of("lock_queue");
        assert_eq!(queue.len(), 1, "{findings:#?}");
        assert_eq!(queue[0]["evidence"]["holder_pid"], holder, "{:#}", queue[0]);
        assert_eq!(queue[0]["evidence"]["first_waiter_pid"], waiter_pid);
        assert_eq!(queue[0]["evidence"]["waiting_sessions"], 1);
        let message = queue[0]["message"].as_str().unwrap();
        assert!(message.contains("advisory lock 4711"), "{message}");

        // The audit ended nothing: the lock is still held and the worker still waits.
        let held = format!(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted \
             AND pid = {holder}"
        );
        assert_eq!(db.value(&held).await.as_deref(), Some("1"));
        // PgBouncer gone, its server connections close and the lock with them.
        drop(bouncer);
        waiting.await.unwrap().unwrap();
        drop(worker);
    })
    .await;
}
