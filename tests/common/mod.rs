//! The live-test harness: one throwaway server per PostgreSQL version per test binary, started on
//! first use, and one database per test.
//!
//! Versions come from `PGPLAN_TEST_VERSIONS` (comma-separated majors, default 13 to 18; `none`
//! skips live tests). Binaries come from the cache `scripts/fetch-postgres.sh` fills; a version
//! asked for but missing fails the test with what to run, it is never skipped silently.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use pgplan::db::cluster::{Cluster, ClusterOptions, ServerBinaries, binaries_cache_dir};

/// The major versions live tests run against.
pub fn versions() -> Vec<u32> {
    match std::env::var("PGPLAN_TEST_VERSIONS") {
        Ok(v) if v.trim() == "none" => Vec::new(),
        Ok(v) if !v.trim().is_empty() => v
            .split(',')
            .map(|s| {
                s.trim().parse().unwrap_or_else(|_| {
                    panic!("PGPLAN_TEST_VERSIONS: {s:?} is not a major version")
                })
            })
            .collect(),
        _ => (13..=18).collect(),
    }
}

/// Server binaries for `major` from the fetch cache.
pub fn binaries(major: u32) -> ServerBinaries {
    let dir = binaries_cache_dir().join(major.to_string()).join("bin");
    ServerBinaries::at(&dir).unwrap_or_else(|e| {
        panic!(
            "PostgreSQL {major} binaries missing ({e}); run scripts/fetch-postgres.sh {major}, \
             or narrow PGPLAN_TEST_VERSIONS"
        )
    })
}

/// Debian's PostgreSQL 15, which has HypoPG from the postgresql-15-hypopg package.
pub fn debian_15_with_hypopg() -> Option<ServerBinaries> {
    let dir = PathBuf::from("/usr/lib/postgresql/15/bin");
    let hypopg = PathBuf::from("/usr/share/postgresql/15/extension/hypopg.control");
    if !hypopg.exists() {
        return None;
    }
    ServerBinaries::at(dir).ok()
}

/// Settings every shared test server gets: enough connections for parallel tests, stable plans.
pub fn default_options(binaries: ServerBinaries) -> ClusterOptions {
    ClusterOptions::new(binaries)
        .setting("max_connections", 100)
        .setting("shared_buffers", "64MB")
        .setting("jit", "off")
        .setting("max_prepared_transactions", 10)
        // Every build of 13–18 the tests use ships contrib; workload tests read the view
        // (CREATE EXTENSION in their own database), and no other test sees a difference.
        .setting("shared_preload_libraries", "pg_stat_statements")
}

static SERVERS: OnceLock<Mutex<HashMap<u32, Arc<OnceLock<Cluster>>>>> = OnceLock::new();

/// The shared server for `major`, started on first use.
pub fn server(major: u32) -> &'static Cluster {
    let cell = {
        let mut servers = SERVERS.get_or_init(Default::default).lock().unwrap();
        servers
            .entry(major)
            .or_insert_with(|| Arc::new(OnceLock::new()))
            .clone()
    };
    // Leak the Arc so the reference is 'static; servers live until the process exits (and are
    // stopped by the cluster module's exit hook).
    let cell: &'static OnceLock<Cluster> = Box::leak(Box::new(cell));
    cell.get_or_init(|| {
        Cluster::start(default_options(binaries(major)))
            .unwrap_or_else(|e| panic!("starting PostgreSQL {major}: {e}"))
    })
}

static DB_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A database of its own for one test on one server; dropped when the test is done.
pub struct TestDb {
    pub cluster: &'static Cluster,
    pub name: String,
}

impl TestDb {
    /// Creates `<test>_<n>` on the shared server for `major`.
    pub async fn create(major: u32, test: &str) -> TestDb {
        let cluster = server(major);
        let n = DB_COUNTER.fetch_add(1, Ordering::SeqCst);
        let name = format!(
            "{}_{}_{n}",
            test.replace(|c: char| !c.is_ascii_alphanumeric(), "_"),
            std::process::id()
        );
        cluster
            .execute("postgres", &format!("CREATE DATABASE \"{name}\""))
            .await
            .unwrap_or_else(|e| panic!("creating database {name} on {major}: {e}"));
        TestDb { cluster, name }
    }

    /// A database on a server of its own, for a test that holds the xmin horizon back (an open
    /// snapshot, a prepared transaction): on the shared server it would stop other tests'
    /// VACUUMs from removing rows or setting visibility-map bits.
    pub async fn private(major: u32, test: &str) -> TestDb {
        let cluster = Cluster::start(default_options(binaries(major)))
            .unwrap_or_else(|e| panic!("starting PostgreSQL {major}: {e}"));
        // Lives until the process exits (the cluster module's exit hook stops it).
        let cluster: &'static Cluster = Box::leak(Box::new(cluster));
        let name = test.replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        cluster
            .execute("postgres", &format!("CREATE DATABASE \"{name}\""))
            .await
            .unwrap_or_else(|e| panic!("creating database {name} on {major}: {e}"));
        TestDb { cluster, name }
    }

    pub fn major(&self) -> u32 {
        self.cluster.major()
    }

    /// A conninfo string for this database over the server's Unix socket.
    pub fn conninfo(&self) -> String {
        self.cluster.conninfo(&self.name)
    }

    pub async fn client(&self) -> tokio_postgres::Client {
        self.cluster
            .connect(&self.name)
            .await
            .unwrap_or_else(|e| panic!("connecting to {}: {e}", self.name))
    }

    /// Runs SQL statements one at a time (so VACUUM and CREATE INDEX CONCURRENTLY work).
    pub async fn run(&self, sql: &str) {
        let client = self.client().await;
        for statement in pgplan::sql::split_statements(sql).expect("test SQL splits") {
            client
                .batch_execute(&statement.text)
                .await
                .unwrap_or_else(|e| {
                    panic!(
                        "PostgreSQL {}: {}\n{}",
                        self.major(),
                        statement.text,
                        pgplan::db::error::describe(&e)
                    )
                });
        }
    }

    /// One column of one row, as text.
    pub async fn value(&self, sql: &str) -> Option<String> {
        let client = self.client().await;
        let messages = client
            .simple_query(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {}", pgplan::db::error::describe(&e)));
        messages.into_iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
    }

    /// Polls `sql` (one value) until `done` accepts it or `within` passes; returns the last
    /// value on success and `Err` with it on timeout, for the caller's message.
    pub async fn wait_for(
        &self,
        sql: &str,
        done: impl Fn(&str) -> bool,
        within: std::time::Duration,
    ) -> Result<String, String> {
        let deadline = std::time::Instant::now() + within;
        loop {
            let value = self.value(sql).await.unwrap_or_default();
            if done(&value) {
                return Ok(value);
            }
            if std::time::Instant::now() > deadline {
                return Err(value);
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// The settled value of a cumulative-statistics query: a session's counts reach the server
    /// only when it flushes them, at the latest as its backend exits, which happens after the
    /// client has already moved on (and on 13-14 the statistics collector applies them later
    /// still). So: wait until no other session is left in this database, then until two reads a
    /// second apart agree and `done` accepts the value.
    pub async fn settled_statistics(
        &self,
        sql: &str,
        done: impl Fn(&str) -> bool,
        within: std::time::Duration,
    ) -> Result<String, String> {
        let others = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                      AND pid <> pg_backend_pid() AND backend_type = 'client backend'";
        self.wait_for(others, |n| n == "0", within).await?;
        let deadline = std::time::Instant::now() + within;
        let mut last = self.value(sql).await.unwrap_or_default();
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            let value = self.value(sql).await.unwrap_or_default();
            if value == last && done(&value) {
                return Ok(value);
            }
            if std::time::Instant::now() > deadline {
                return Err(value);
            }
            last = value;
        }
    }

    /// A database `name` on a server of its own: Debian's PostgreSQL 15, the one build with
    /// HypoPG. The server lives as long as the test binary.
    pub async fn on_debian_hypopg(name: &str) -> TestDb {
        let binaries = debian_15_with_hypopg().expect(
            "Debian's PostgreSQL 15 with HypoPG is needed (apt-get install postgresql-15 \
             postgresql-15-hypopg; scripts/test.sh installs it)",
        );
        let cluster = Cluster::start(default_options(binaries)).unwrap();
        let cluster: &'static Cluster = Box::leak(Box::new(cluster));
        cluster
            .execute("postgres", &format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        TestDb {
            cluster,
            name: name.into(),
        }
    }

    /// Waits up to a minute until no pgplan session is left in this database (a backend may
    /// still be on its way out just after pgplan exited); panics with the count otherwise.
    pub async fn wait_until_pgplan_sessions_are_gone(&self) {
        let sql = "SELECT count(*) FROM pg_stat_activity \
                   WHERE application_name = 'pgplan' AND datname = current_database()";
        if let Err(sessions) = self
            .wait_for(sql, |n| n == "0", std::time::Duration::from_secs(60))
            .await
        {
            panic!("{sessions} pgplan sessions are still there a minute later");
        }
    }

    /// Relation locks held by this database's pgplan sessions, and those of its pgplan sessions
    /// inside a transaction. Only this database's: other tests run pgplan on the same server.
    pub async fn pgplan_holdings(&self) -> (String, String) {
        let locks = self
            .value(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) \
                 WHERE a.application_name = 'pgplan' AND a.datname = current_database() \
                 AND l.locktype = 'relation'",
            )
            .await
            .unwrap();
        let in_transaction = self
            .value(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgplan' \
                 AND datname = current_database() \
                 AND (state LIKE 'idle in transaction%' OR xact_start IS NOT NULL)",
            )
            .await
            .unwrap();
        (locks, in_transaction)
    }

    /// Waits up to a minute until one of this database's pgplan sessions is running a
    /// statement that starts with `prefix` (a slow `CREATE INDEX`, say), so a test can
    /// interrupt `pgplan` in the middle of it. Panics if it never does, and at once, with what
    /// pgplan printed, if the process ended before it did.
    pub async fn wait_for_pgplan_statement(&self, prefix: &str, pgplan: &mut std::process::Child) {
        let sql = format!(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgplan' \
             AND datname = current_database() AND state = 'active' AND query LIKE '{prefix}%'"
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while self.value(&sql).await.as_deref() == Some("0") {
            if let Some(status) = pgplan.try_wait().unwrap() {
                let mut printed = String::new();
                if let Some(mut stderr) = pgplan.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut stderr, &mut printed);
                }
                panic!("pgplan ended ({status}) before running {prefix:?}:\n{printed}");
            }
            if std::time::Instant::now() > deadline {
                panic!("pgplan never ran a statement starting with {prefix:?}");
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// Drops the database (terminating any session still in it).
    pub async fn drop_db(self) {
        let sql = if self.major() >= 13 {
            format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.name)
        } else {
            format!("DROP DATABASE IF EXISTS \"{}\"", self.name)
        };
        let _ = self.cluster.execute("postgres", &sql).await;
    }
}

/// Path of the built pgplan binary, for tests that run it as a user would.
pub fn pgplan_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pgplan"))
}

/// A finished pgplan's standard error, for assertion messages.
pub fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `pgplan <args>` as a user runs it: colour off, no service from the environment.
pub fn pgplan_command(args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new(pgplan_bin());
    cmd.env("NO_COLOR", "1").env_remove("PGSERVICE").args(args);
    cmd
}

/// A finished pgplan's standard output as JSON, whatever its exit status (audit exits 1 with
/// findings); panics with both outputs when it is not JSON.
pub fn json_stdout(output: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            stderr(output)
        )
    })
}

/// A finished pgplan's JSON report; panics with its standard error when it failed and with its
/// output when that is not JSON.
pub fn json_report(output: &std::process::Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "pgplan failed ({}):\n{}",
        output.status,
        stderr(output)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// Runs `f` for every test version concurrently and reports every version that failed, not just
/// the first.
pub async fn for_each_version<F, Fut>(test: &str, f: F)
where
    F: Fn(u32) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut handles = Vec::new();
    for major in versions() {
        let fut = f(major);
        handles.push((major, tokio::spawn(fut)));
    }
    let mut failures = Vec::new();
    for (major, handle) in handles {
        if let Err(e) = handle.await {
            let message = match e.try_into_panic() {
                Ok(panic) => panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into()),
                Err(e) => e.to_string(),
            };
            failures.push(format!("PostgreSQL {major}: {message}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{test} failed on:\n{}",
        failures.join("\n\n")
    );
}
