//! `pgplan info` on real servers, 13 to 18: how many of the database's tables the connected role
//! owns, which is what building an index needs. A role that may read every table but owns none
//! is told that compare and advise cannot build there and what to do, and PostgreSQL's own
//! refusal of its CREATE INDEX is what info foretold.

mod common;

use common::{TestDb, for_each_version, pgplan_bin, stderr};
use serde_json::Value;

fn info(conninfo: &str, format: &str) -> std::process::Output {
    std::process::Command::new(pgplan_bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .args(["info", "-d", conninfo, "--format", format])
        .output()
        .expect("running pgplan")
}

fn info_json(conninfo: &str) -> Value {
    let out = info(conninfo, "json");
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("info --format json is JSON")
}

fn feature<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["features"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no feature {name}: {doc:#}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn info_says_when_the_role_owns_none_of_the_tables() {
    for_each_version("info_ownership", |major| async move {
        let db = TestDb::create(major, "info_ownership").await;
        // Roles are the server's: only this test creates these.
        db.run(
            "CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer);
             CREATE TABLE customers (id integer PRIMARY KEY);
             CREATE ROLE info_owner LOGIN;
             CREATE TABLE ledger (id integer);
             ALTER TABLE ledger OWNER TO info_owner;
             CREATE ROLE info_reader LOGIN;
             GRANT SELECT ON orders, customers, ledger TO info_reader;
             CREATE ROLE info_member LOGIN;
             GRANT info_owner TO info_member;",
        )
        .await;
        let as_role = |role: &str| format!("{} user={role}", db.conninfo());

        // Reads every table, owns none.
        let reader = info_json(&as_role("info_reader"));
        assert_eq!(
            reader["table_ownership"],
            serde_json::json!({
                "tables": 3,
                "owned": 0,
                "other_owners": [
                    {"role": "postgres", "tables": 2},
                    {"role": "info_owner", "tables": 1}
                ]
            }),
            "PostgreSQL {major}"
        );
        for name in ["compare", "compare --drop-index", "advise"] {
            let f = feature(&reader, name);
            assert_eq!(f["available"], false, "PostgreSQL {major}: {f:#}");
            let note = f["note"].as_str().unwrap();
            assert!(
                note.starts_with("info_reader owns none of the database's 3 table(s)")
                    && note.contains("\"must be owner of table\"")
                    && note.contains("connect as their owner (postgres owns 2, info_owner owns 1)"),
                "PostgreSQL {major}: {note}"
            );
        }
        let out = info(&as_role("info_reader"), "text");
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains("info_reader owns 0 of 3 (others owned by postgres 2, info_owner 1)"),
            "PostgreSQL {major}: {text}"
        );
        assert!(
            text.lines()
                .any(|l| l.trim_start().starts_with("compare ") && l.contains(" no ")),
            "PostgreSQL {major}: {text}"
        );

        // What info foretold: compare's build is refused by PostgreSQL for that role.
        let dir = tempfile::tempdir().unwrap();
        let query = dir.path().join("q.sql");
        std::fs::write(&query, "SELECT id FROM orders WHERE customer_id = 7").unwrap();
        let out = std::process::Command::new(pgplan_bin())
            .env("NO_COLOR", "1")
            .args([
                "compare",
                "-d",
                &as_role("info_reader"),
                "--index",
                "CREATE INDEX ON orders (customer_id)",
                "--format",
                "json",
            ])
            .arg(&query)
            .output()
            .unwrap();
        let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(
            all.contains("must be owner of table orders"),
            "PostgreSQL {major}: {all}"
        );

        // A member of the owner's role owns what it owns: one table of three.
        let member = info_json(&as_role("info_member"));
        assert_eq!(member["table_ownership"]["owned"], 1, "PostgreSQL {major}");
        let compare = feature(&member, "compare");
        assert_eq!(compare["available"], true, "PostgreSQL {major}");
        assert!(
            compare["note"]
                .as_str()
                .unwrap()
                .starts_with("info_member owns 1 of the database's 3 tables"),
            "PostgreSQL {major}: {compare:#}"
        );

        // A superuser owns everything.
        let owner = info_json(&db.conninfo());
        assert_eq!(owner["table_ownership"]["owned"], 3, "PostgreSQL {major}");
        assert_eq!(feature(&owner, "advise")["available"], true);
        db.drop_db().await;
    })
    .await;
}
