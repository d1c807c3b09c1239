//! What the compare and advise benchmarks share: a throwaway server (the binaries `pgplan demo`
//! would find, or PGPLAN_PG_BIN) with JIT off, and a database `bench` loaded from a SQL script.

use pgplan::db::cluster::{Cluster, ClusterOptions, ServerBinaries};

/// Starts the server, creates `bench` and runs `setup_sql` in it, statement by statement.
/// Returns the binaries (for the version the bench prints), the server (stopped when dropped)
/// and the database's conninfo.
pub async fn throwaway_bench_db(setup_sql: &str) -> (ServerBinaries, Cluster, String) {
    let binaries = ServerBinaries::discover(None).expect("server binaries");
    let cluster =
        Cluster::start(ClusterOptions::new(binaries.clone()).setting("jit", "off")).unwrap();
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
