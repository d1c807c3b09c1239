//! What the compare and advise benchmarks share: a throwaway server (the binaries `pgplan demo`
//! would find, or PGPLAN_PG_BIN) with JIT off, and a database `bench` loaded from a SQL script.

use pgplan::db::cluster::{Cluster, ClusterOptions, ServerBinaries};

/// Starts the server, creates `bench` and runs `setup_sql` in it, statement by statement.
/// Returns the binaries (for the version the bench prints), the server (stopped when dropped)
/// and the database's conninfo.
#[allow(dead_code)] // Each bench that includes this module uses one of the two.
pub async fn throwaway_bench_db(setup_sql: &str) -> (ServerBinaries, Cluster, String) {
    throwaway_bench_db_with(setup_sql, &[]).await
}

/// [`throwaway_bench_db`] with more server settings (`shared_preload_libraries`, say).
pub async fn throwaway_bench_db_with(
    setup_sql: &str,
    settings: &[(&str, &str)],
) -> (ServerBinaries, Cluster, String) {
    let binaries = ServerBinaries::discover(None).expect("server binaries");
    let mut options = ClusterOptions::new(binaries.clone()).setting("jit", "off");
    for (name, value) in settings {
        options = options.setting(name, value);
    }
    let cluster = Cluster::start(options).unwrap();
    cluster
        .execute("postgres", "CREATE DATABASE bench")
        .await
        .unwrap();
    for statement in pgplan::sql::split_statements(setup_sql).unwrap() {
        cluster.execute("bench", &statement.text).await.unwrap();
    }
    let conninfo = cluster.conninfo("bench");
    (binaries, cluster, conninfo)
}
