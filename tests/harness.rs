//! The throwaway-server module itself, on every supported version: a server starts, serves a
//! database per test, streams to a standby, and leaves nothing behind when dropped.

mod common;

use common::{TestDb, for_each_version};
use pgplan::db::cluster::Cluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn servers_start_and_serve_a_database_per_test() {
    for_each_version("servers_start", |major| async move {
        let db = TestDb::create(major, "harness").await;
        let version = db.value("SHOW server_version_num").await.unwrap();
        assert_eq!(version.parse::<u32>().unwrap() / 10000, major);
        db.run("CREATE TABLE t (id int); INSERT INTO t VALUES (1), (2); VACUUM t;")
            .await;
        assert_eq!(
            db.value("SELECT count(*) FROM t").await.as_deref(),
            Some("2")
        );
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_standby_streams_from_its_primary_and_is_removed_on_drop() {
    for_each_version("standby", |major| async move {
        let primary = Cluster::start(common::default_options(common::binaries(major)))
            .expect("primary starts");
        primary
            .execute(
                "postgres",
                "CREATE TABLE before_backup (id int); INSERT INTO before_backup VALUES (1)",
            )
            .await
            .unwrap();
        let standby = primary
            .start_standby()
            .await
            .unwrap_or_else(|e| panic!("standby: {e}\nprimary log:\n{}", primary.log()));
        assert!(standby.is_standby());
        let client = standby.connect("postgres").await.unwrap();
        let row = client
            .query_one("SELECT pg_is_in_recovery()", &[])
            .await
            .unwrap();
        assert!(row.get::<_, bool>(0), "the standby is in recovery");
        let row = client
            .query_one("SELECT count(*) FROM before_backup", &[])
            .await
            .unwrap();
        assert_eq!(row.get::<_, i64>(0), 1);

        // Something written after the backup arrives by streaming.
        primary
            .execute(
                "postgres",
                "CREATE TABLE after_backup (id int); INSERT INTO after_backup VALUES (1), (2)",
            )
            .await
            .unwrap();
        let mut seen = 0;
        for _ in 0..200 {
            if let Ok(row) = client
                .query_one("SELECT count(*) FROM after_backup", &[])
                .await
            {
                seen = row.get::<_, i64>(0);
                if seen == 2 {
                    break;
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(seen, 2, "standby log:\n{}", standby.log());
        drop(client);

        let dirs = [
            primary.socket_dir().to_path_buf(),
            standby.socket_dir().to_path_buf(),
        ];
        drop(standby);
        drop(primary);
        for dir in dirs {
            assert!(!dir.exists(), "{} was not removed", dir.display());
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn server_facts_are_read_on_every_version() {
    for_each_version("facts", |major| async move {
        let db = TestDb::create(major, "facts").await;
        let client = db.client().await;
        let facts = pgplan::db::facts::read_facts(&client).await.unwrap();
        assert_eq!(facts.major(), major);
        assert!(!facts.in_recovery);
        assert!(!facts.read_only);
        assert!(facts.superuser);
        assert!(facts.pg_monitor);
        assert_eq!(facts.user, "postgres");
        assert_eq!(facts.database, db.name);
        assert!(facts.has_extension("plpgsql"));
        assert!(facts.system_identifier.is_some());
        assert!(
            facts.tls_version.is_none(),
            "Unix socket connections are not encrypted"
        );
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn extensions_are_installed_when_their_package_is_present() {
    for_each_version("extensions", |major| async move {
        let db = TestDb::create(major, "extensions").await;
        // pg_trgm ships with every build the tests use; a made-up name is simply absent.
        assert!(
            db.cluster
                .create_extension(&db.name, "pg_trgm")
                .await
                .unwrap()
        );
        assert_eq!(
            db.value("SELECT count(*) FROM pg_extension WHERE extname = 'pg_trgm'")
                .await
                .as_deref(),
            Some("1")
        );
        assert!(
            !db.cluster
                .create_extension(&db.name, "no_such_extension")
                .await
                .unwrap()
        );
        db.drop_db().await;
    })
    .await;
}
