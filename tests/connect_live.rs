//! Connecting like psql, on real servers 13–18: every connection source and its precedence, TLS in
//! each sslmode against a server with certificates made here, the password file's rules, wrong
//! passwords, a stopped server, target_session_attrs against a primary and its standby, sessions
//! that leave nothing behind, and timeouts that report the server's SQLSTATE.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::{TestDb, for_each_version, pgplan_bin};
use pgplan::db::cluster::{Cluster, ClusterOptions};
use pgplan::db::connect::{ConnectOptions, Connection, connect};
use pgplan::db::conninfo::{ConnRequest, Environment, resolve};
use pgplan::db::session::Limits;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use serde_json::Value;

const PASSWORD: &str = "s3cret-Pa55word";

/// Runs pgplan with only the given environment (plus PATH), HOME set to `home`.
fn pgplan(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(pgplan_bin());
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("running pgplan")
}

fn info_json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "pgplan failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("info --format json is JSON")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn assert_fails_with(output: &Output, needle: &str) {
    assert_eq!(
        output.status.code(),
        Some(2),
        "expected exit 2, stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(output)
    );
    assert!(
        stderr(output).contains(needle),
        "stderr lacks {needle:?}:\n{}",
        stderr(output)
    );
}

fn no_secret(output: &Output) {
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(output)
    );
    assert!(!all.contains(PASSWORD), "the password leaked:\n{all}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_source_and_its_precedence() {
    for_each_version("sources", |major| async move {
        let db = TestDb::create(major, "sources").await;
        let home = tempfile::tempdir().unwrap();
        let sock = db.cluster.socket_dir().display().to_string();
        let port = db.cluster.port().to_string();
        let name = db.name.clone();

        // Flags, as psql takes them.
        let out = pgplan(home.path(), &["info", "--format", "json", "-h", &sock, "-p", &port, "-U", "postgres", "-d", &name], &[]);
        assert_eq!(info_json(&out)["database"], name.as_str());

        // The PG* environment alone.
        let out = pgplan(home.path(), &["info", "--format", "json"], &[
            ("PGHOST", &sock), ("PGPORT", &port), ("PGUSER", "postgres"), ("PGDATABASE", &name),
        ]);
        assert_eq!(info_json(&out)["database"], name.as_str());

        // A flag beats the environment.
        let out = pgplan(home.path(), &["info", "--format", "json", "-p", &port], &[
            ("PGHOST", &sock), ("PGPORT", "1"), ("PGUSER", "postgres"), ("PGDATABASE", &name),
        ]);
        assert_eq!(info_json(&out)["database"], name.as_str());

        // Values in a -d conninfo string beat -h/-p/-U (psql passes dbname last).
        let conninfo = format!("host={sock} port={port} user=postgres dbname={name}");
        let out = pgplan(home.path(), &["info", "--format", "json", "-p", "1", "-U", "nobody", "-d", &conninfo], &[]);
        assert_eq!(info_json(&out)["user"], "postgres");

        // A URL with a percent-encoded socket directory.
        let url = format!(
            "postgresql://postgres@{}:{port}/{name}",
            sock.replace('/', "%2F")
        );
        let out = pgplan(home.path(), &["info", "--format", "json", "-d", &url], &[]);
        assert_eq!(info_json(&out)["database"], name.as_str());

        // A service file fills what is unset, before the environment: its port beats PGPORT.
        let services = home.path().join("services.conf");
        std::fs::write(
            &services,
            format!("# test services\n[pgplan_test]\nhost={sock}\nport={port}\nuser=postgres\ndbname={name}\n"),
        )
        .unwrap();
        let out = pgplan(home.path(), &["-v", "info", "--format", "json"], &[
            ("PGSERVICEFILE", services.to_str().unwrap()),
            ("PGSERVICE", "pgplan_test"),
            ("PGPORT", "1"),
            ("PGAPPNAME", "nightly-audit"),
        ]);
        let doc = info_json(&out);
        assert_eq!(doc["database"], name.as_str());
        let sources = doc["connection_sources"].as_array().unwrap();
        let source_of = |param: &str| {
            sources
                .iter()
                .find(|s| s["parameter"] == param)
                .map(|s| (s["value"].as_str().unwrap().to_owned(), s["source"].as_str().unwrap().to_owned()))
                .unwrap_or_else(|| panic!("no source for {param}: {sources:?}"))
        };
        let (value, source) = source_of("port");
        assert_eq!(value, port);
        assert!(source.contains("pgplan_test"), "port source: {source}");
        let (value, source) = source_of("application_name");
        assert_eq!(value, "nightly-audit");
        assert!(source.contains("PGAPPNAME"), "application_name source: {source}");

        // A service that does not exist is named in the error.
        let out = pgplan(home.path(), &["info"], &[
            ("PGSERVICEFILE", services.to_str().unwrap()),
            ("PGSERVICE", "no_such_service"),
        ]);
        assert_fails_with(&out, "no_such_service");

        db.drop_db().await;
    })
    .await;
}

/// A CA, a server certificate for "localhost" only, and a client certificate, made fresh.
struct Pki {
    dir: tempfile::TempDir,
    ca_pem: String,
    server_cert_pem: String,
    server_key_pem: String,
}

impl Pki {
    fn new() -> Pki {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "pgplan test CA");
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);

        let server_key = KeyPair::generate().unwrap();
        let mut server_params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        server_params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        let server_cert = server_params.signed_by(&server_key, &issuer).unwrap();

        let client_key = KeyPair::generate().unwrap();
        let mut client_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        client_params
            .distinguished_name
            .push(DnType::CommonName, "cert_user");
        let client_cert = client_params.signed_by(&client_key, &issuer).unwrap();

        // Another CA that signed nothing here: trusting it must fail verification.
        let other_key = KeyPair::generate().unwrap();
        let mut other_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        other_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        other_params
            .distinguished_name
            .push(DnType::CommonName, "someone else's CA");
        let other = other_params.self_signed(&other_key).unwrap();

        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str, mode: u32| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        write("ca.crt", &ca_cert.pem(), 0o644);
        write("other-ca.crt", &other.pem(), 0o644);
        write("client.crt", &client_cert.pem(), 0o644);
        write("client.key", &client_key.serialize_pem(), 0o600);
        Pki {
            dir,
            ca_pem: ca_cert.pem(),
            server_cert_pem: server_cert.pem(),
            server_key_pem: server_key.serialize_pem(),
        }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

/// A server with TLS and pg_hba.conf rules that tell the modes apart:
/// plain_only may not use TLS, tls_only must, pw_user needs a password, cert_user a certificate.
async fn tls_server(major: u32, pki: &Pki) -> Cluster {
    tls_server_with(
        major,
        &pki.server_cert_pem,
        &pki.server_key_pem,
        &pki.ca_pem,
        &[],
    )
    .await
}

/// [`tls_server`] with any certificate and key, and extra server settings.
async fn tls_server_with(
    major: u32,
    cert_pem: &str,
    key_pem: &str,
    ca_pem: &str,
    settings: &[(&str, &str)],
) -> Cluster {
    let mut options = ClusterOptions::new(common::binaries(major));
    for (name, value) in settings {
        options = options.setting(name, value);
    }
    let options = options
        .setting("ssl", "on")
        .setting("ssl_cert_file", "server.crt")
        .setting("ssl_key_file", "server.key")
        .setting("ssl_ca_file", "ca.crt")
        .setting("password_encryption", "scram-sha-256")
        .data_file("server.crt", cert_pem.to_owned(), 0o644)
        .data_file("server.key", key_pem.to_owned(), 0o600)
        .data_file("ca.crt", ca_pem.to_owned(), 0o644)
        .hba("hostssl all plain_only 127.0.0.1/32 reject")
        .hba("hostnossl all tls_only 127.0.0.1/32 reject")
        .hba("host all pw_user 127.0.0.1/32 scram-sha-256")
        .hba("hostssl all cert_user 127.0.0.1/32 cert")
        .hba("hostnossl all cert_user 127.0.0.1/32 reject");
    let cluster = Cluster::start(options).expect("TLS server starts");
    cluster
        .execute(
            "postgres",
            &format!(
                "CREATE ROLE plain_only LOGIN; CREATE ROLE tls_only LOGIN; CREATE ROLE cert_user LOGIN; \
                 CREATE ROLE pw_user LOGIN PASSWORD '{PASSWORD}'"
            ),
        )
        .await
        .unwrap();
    cluster
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tls_in_every_sslmode() {
    for_each_version("tls", |major| async move {
        let pki = Pki::new();
        let server = tls_server(major, &pki).await;
        let home = tempfile::tempdir().unwrap();
        let port = server.port().to_string();
        let ca = pki.path("ca.crt");
        let other_ca = pki.path("other-ca.crt");
        let run = |conninfo: String| {
            pgplan(
                home.path(),
                &["info", "--format", "json", "-d", &conninfo],
                &[],
            )
        };
        let at = |host: &str, user: &str, extra: &str| {
            format!("host={host} port={port} user={user} dbname=postgres {extra}")
        };
        let encrypted = |out: &Output| info_json(out)["tls"]["encrypted"].as_bool().unwrap();

        // disable: never TLS; a user that must use TLS is turned away by pg_hba.conf.
        assert!(!encrypted(&run(at(
            "127.0.0.1",
            "postgres",
            "sslmode=disable"
        ))));
        assert_fails_with(
            &run(at("127.0.0.1", "tls_only", "sslmode=disable")),
            "tls_only",
        );
        // allow: plain text first, TLS when the server insists.
        assert!(!encrypted(&run(at(
            "127.0.0.1",
            "plain_only",
            "sslmode=allow"
        ))));
        assert!(encrypted(&run(at(
            "127.0.0.1",
            "tls_only",
            "sslmode=allow"
        ))));
        // prefer (the default): TLS when offered, plain text when TLS is turned away.
        assert!(encrypted(&run(at("127.0.0.1", "postgres", ""))));
        assert!(!encrypted(&run(at(
            "127.0.0.1",
            "plain_only",
            "sslmode=prefer"
        ))));
        // require: encrypts without verifying when no root certificate is given...
        assert!(encrypted(&run(at(
            "127.0.0.1",
            "tls_only",
            "sslmode=require"
        ))));
        assert_fails_with(
            &run(at("127.0.0.1", "plain_only", "sslmode=require")),
            "plain_only",
        );
        // ...and verifies the chain (as verify-ca) when one is.
        assert!(encrypted(&run(at(
            "127.0.0.1",
            "postgres",
            &format!("sslmode=require sslrootcert={ca}")
        ))));
        assert_fails_with(
            &run(at(
                "127.0.0.1",
                "postgres",
                &format!("sslmode=require sslrootcert={other_ca}"),
            )),
            "sslmode=require",
        );
        // verify-ca: the chain, not the name (the certificate names localhost, not 127.0.0.1).
        assert!(encrypted(&run(at(
            "127.0.0.1",
            "postgres",
            &format!("sslmode=verify-ca sslrootcert={ca}")
        ))));
        assert_fails_with(
            &run(at(
                "127.0.0.1",
                "postgres",
                &format!("sslmode=verify-ca sslrootcert={other_ca}"),
            )),
            "verify-ca",
        );
        assert_fails_with(
            &run(at("127.0.0.1", "postgres", "sslmode=verify-ca")),
            "root certificate",
        );
        // verify-full: the name must match: wrong for 127.0.0.1, right for localhost.
        assert_fails_with(
            &run(at(
                "127.0.0.1",
                "postgres",
                &format!("sslmode=verify-full sslrootcert={ca}"),
            )),
            "verify-full",
        );
        assert!(encrypted(&run(at(
            "localhost",
            "postgres",
            &format!("sslmode=verify-full sslrootcert={ca}")
        ))));
        // The environment works too.
        let out = pgplan(
            home.path(),
            &["info", "--format", "json"],
            &[
                ("PGHOST", "localhost"),
                ("PGPORT", &port),
                ("PGUSER", "postgres"),
                ("PGDATABASE", "postgres"),
                ("PGSSLMODE", "verify-full"),
                ("PGSSLROOTCERT", &ca),
            ],
        );
        assert!(encrypted(&out));
        // A client certificate authenticates cert_user.
        let out = run(at(
            "localhost",
            "cert_user",
            &format!(
                "sslmode=verify-full sslrootcert={ca} sslcert={} sslkey={}",
                pki.path("client.crt"),
                pki.path("client.key")
            ),
        ));
        assert_eq!(info_json(&out)["user"], "cert_user");
        // ...and without one it is refused.
        assert_fails_with(
            &run(at(
                "localhost",
                "cert_user",
                &format!("sslmode=verify-full sslrootcert={ca}"),
            )),
            "cert_user",
        );
    })
    .await;
}

/// The environment that points at the TLS test server as `pw_user`, who needs a password.
fn password_user_env(port: &str) -> [(&'static str, &str); 4] {
    [
        ("PGHOST", "127.0.0.1"),
        ("PGPORT", port),
        ("PGUSER", "pw_user"),
        ("PGDATABASE", "postgres"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn passwords_from_every_source_and_never_shown() {
    for_each_version("passwords", |major| async move {
        let pki = Pki::new();
        let server = tls_server(major, &pki).await;
        let home = tempfile::tempdir().unwrap();
        let port = server.port().to_string();
        let base = password_user_env(&port);
        let with = |extra: &[(&'static str, &str)]| {
            let mut env: Vec<(&str, &str)> = base.to_vec();
            env.extend_from_slice(extra);
            pgplan(home.path(), &["-v", "info", "--format", "json"], &env)
        };

        // No password anywhere.
        let out = with(&[]);
        assert_fails_with(&out, "authentication failed for user \"pw_user\"");
        assert!(stderr(&out).contains("none was given"), "{}", stderr(&out));

        // A wrong one from the environment: the message says where it came from.
        let out = with(&[("PGPASSWORD", "wrong")]);
        assert_fails_with(&out, "PGPASSWORD");

        // The right one from the environment, and from a URL: never echoed, even with -v.
        let out = with(&[("PGPASSWORD", PASSWORD)]);
        assert_eq!(info_json(&out)["user"], "pw_user");
        no_secret(&out);
        let url = format!("postgresql://pw_user:{PASSWORD}@127.0.0.1:{port}/postgres");
        let out = pgplan(
            home.path(),
            &["-v", "info", "--format", "json", "-d", &url],
            &[],
        );
        assert_eq!(info_json(&out)["user"], "pw_user");
        no_secret(&out);
        let out = pgplan(home.path(), &["-v", "info", "-d", &url], &[]);
        no_secret(&out);

        // The password file, with libpq's wildcards; only when nobody else can read it.
        let pgpass = home.path().join(".pgpass");
        std::fs::write(
            &pgpass,
            format!("# comment\notherhost:*:*:*:nope\n127.0.0.1:{port}:*:pw_user:{PASSWORD}\n"),
        )
        .unwrap();
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
        let out = with(&[]);
        assert_eq!(info_json(&out)["user"], "pw_user");
        no_secret(&out);
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
        let out = with(&[]);
        assert_fails_with(&out, "authentication failed");
        assert!(stderr(&out).contains("group or world"), "{}", stderr(&out));
        // PGPASSFILE points elsewhere.
        let elsewhere = home.path().join("elsewhere.pgpass");
        std::fs::write(&elsewhere, format!("*:*:*:pw_user:{PASSWORD}\n")).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).unwrap();
        let out = with(&[("PGPASSFILE", elsewhere.to_str().unwrap())]);
        assert_eq!(info_json(&out)["user"], "pw_user");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stopped_server_is_reported_and_retried_within_bounds() {
    for_each_version("stopped", |major| async move {
        let mut cluster = Cluster::start(common::default_options(common::binaries(major))).unwrap();
        let sock = cluster.socket_dir().display().to_string();
        let port = cluster.port().to_string();
        cluster.stop();
        let home = tempfile::tempdir().unwrap();
        let out = pgplan(
            home.path(),
            &["info", "-h", &sock, "-p", &port, "-U", "postgres"],
            &[],
        );
        assert_fails_with(&out, "could not connect");
        assert!(
            stderr(&out).contains(&format!(".s.PGSQL.{port}")),
            "{}",
            stderr(&out)
        );

        let started = Instant::now();
        let out = pgplan(
            home.path(),
            &[
                "info",
                "-h",
                &sock,
                "-p",
                &port,
                "-U",
                "postgres",
                "--retries",
                "2",
            ],
            &[],
        );
        assert_fails_with(&out, "could not connect");
        assert!(stderr(&out).contains("retry 1 of 2"), "{}", stderr(&out));
        assert!(stderr(&out).contains("retry 2 of 2"), "{}", stderr(&out));
        // Two full-jitter windows of at most 250 ms and 500 ms.
        assert!(started.elapsed() < Duration::from_secs(10));

        // Authentication errors are never retried.
        cluster.restart().unwrap();
        let out = pgplan(
            home.path(),
            &[
                "info",
                "-h",
                &sock,
                "-p",
                &port,
                "-U",
                "no_such_role",
                "--retries",
                "3",
            ],
            &[],
        );
        assert_fails_with(&out, "no_such_role");
        assert!(!stderr(&out).contains("retry"), "{}", stderr(&out));
    })
    .await;
}

async fn library_connect(conninfo: &str, home: &Path) -> Connection {
    let env = Environment::new(
        [("HOME".to_owned(), home.display().to_string())]
            .into_iter()
            .collect(),
        Some(home.to_path_buf()),
        "postgres",
    );
    let params = resolve(
        &ConnRequest {
            dbname: Some(conninfo.to_owned()),
            ..ConnRequest::default()
        },
        &env,
    )
    .unwrap();
    connect(&params, &ConnectOptions::default(), |_, _, _| {})
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sessions_leave_nothing_behind_and_work_through_a_pooler() {
    for_each_version("sessions", |major| async move {
        let db = TestDb::create(major, "sessions").await;
        db.run("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t SELECT generate_series(1, 100);").await;
        let home = tempfile::tempdir().unwrap();
        let conninfo = format!("{} application_name=startup_name", db.conninfo());
        let mut conn = library_connect(&conninfo, home.path()).await;
        let limits = Limits::read_only_defaults();

        // Inside a transaction the limits apply...
        let inside = conn
            .read_only(&limits, async |client| {
                let row = client.query_one("SHOW statement_timeout", &[]).await.unwrap();
                let timeout: String = row.get(0);
                let row = client.query_one("SHOW transaction_read_only", &[]).await.unwrap();
                let ro: String = row.get(0);
                Ok((timeout, ro))
            })
            .await
            .unwrap();
        assert_eq!(inside, ("30s".to_owned(), "on".to_owned()));
        conn.rolled_back(&limits, async |client| {
            client.batch_execute("CREATE INDEX t_extra ON t (id); DELETE FROM t WHERE id < 50").await.unwrap();
            Ok(())
        })
        .await
        .unwrap();

        // ...and after it nothing is left: settings, prepared statements, locks, rows, objects.
        let c = &conn.client;
        let show = |name: &'static str| async move {
            c.query_one(&format!("SHOW {name}"), &[]).await.unwrap().get::<_, String>(0)
        };
        assert_eq!(show("statement_timeout").await, "0");
        assert_eq!(show("lock_timeout").await, "0");
        assert_eq!(show("application_name").await, "startup_name");
        // The simple protocol, so that the check itself prepares no statement.
        let count = |sql: &'static str| async move {
            let rows = c.simple_query(sql).await.unwrap();
            rows.iter()
                .find_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(|v| v.parse::<i64>().unwrap()),
                    _ => None,
                })
                .unwrap()
        };
        assert_eq!(count("SELECT count(*) FROM pg_prepared_statements").await, 0);
        // Only the locks of the statement looking at pg_locks itself.
        let locks: String = c
            .query_one(
                "SELECT coalesce(string_agg(locktype || ':' || coalesce(relation::regclass::text, '') || ':' || mode, ', '), '') \
                 FROM pg_locks WHERE pid = pg_backend_pid() AND locktype <> 'virtualxid' \
                 AND relation IS DISTINCT FROM 'pg_locks'::regclass",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(locks, "");
        assert_eq!(count("SELECT count(*) FROM t").await, 100);
        assert_eq!(count("SELECT count(*) FROM pg_class WHERE relname = 't_extra'").await, 0);

        // A pooler in transaction mode may hand each transaction a different connection: the
        // work gives the same answers on fresh connections.
        let mut answers = Vec::new();
        for _ in 0..3 {
            let mut fresh = library_connect(&db.conninfo(), home.path()).await;
            answers.push(
                fresh
                    .read_only(&limits, async |client| {
                        Ok(client.query_one("SELECT count(*) FROM t", &[]).await.unwrap().get::<_, i64>(0))
                    })
                    .await
                    .unwrap(),
            );
        }
        assert_eq!(answers, [100, 100, 100]);
        drop(conn);
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn timeouts_fire_with_the_servers_sqlstate() {
    for_each_version("timeouts", |major| async move {
        let db = TestDb::create(major, "timeouts").await;
        db.run("CREATE TABLE t (id int)").await;
        let home = tempfile::tempdir().unwrap();
        let mut conn = library_connect(&db.conninfo(), home.path()).await;
        let short = Limits::read_only_defaults().with(
            Some(Duration::from_millis(100)),
            Some(Duration::from_millis(100)),
        );
        let lock_only = Limits::read_only_defaults().with(
            Some(Duration::from_secs(10)),
            Some(Duration::from_millis(100)),
        );
        let err = conn
            .read_only(&short, async |client| {
                client
                    .batch_execute("SELECT pg_sleep(5)")
                    .await
                    .map_err(|e| pgplan::db::session::SessionError::from_pg("sleeping", &e))
            })
            .await
            .unwrap_err();
        assert_eq!(err.sqlstate.as_deref(), Some("57014"));
        assert!(err.to_string().contains("statement timeout"), "{err}");
        assert!(err.to_string().contains("SQLSTATE 57014"), "{err}");

        // Another session holds a lock: lock_timeout gives up with 55P03.
        let holder = db.client().await;
        holder
            .batch_execute("BEGIN; LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
            .await
            .unwrap();
        let err = conn
            .read_only(&lock_only, async |client| {
                client
                    .batch_execute("SELECT * FROM t")
                    .await
                    .map_err(|e| pgplan::db::session::SessionError::from_pg("reading t", &e))
            })
            .await
            .unwrap_err();
        assert_eq!(err.sqlstate.as_deref(), Some("55P03"), "{err}");
        holder.batch_execute("ROLLBACK").await.unwrap();
        // The connection is still usable: the failed transaction was rolled back.
        let n = conn
            .read_only(&short, async |client| {
                Ok(client
                    .query_one("SELECT count(*) FROM t", &[])
                    .await
                    .unwrap()
                    .get::<_, i64>(0))
            })
            .await
            .unwrap();
        assert_eq!(n, 0);
        drop(conn);
        drop(holder);
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn target_session_attrs_pick_the_right_node() {
    for_each_version("target_session_attrs", |major| async move {
        let primary = Cluster::start(common::default_options(common::binaries(major))).unwrap();
        let standby = primary.start_standby().await.unwrap();
        let home = tempfile::tempdir().unwrap();
        let hosts = format!(
            "host={},{} port={},{} user=postgres dbname=postgres",
            standby.socket_dir().display(),
            primary.socket_dir().display(),
            standby.port(),
            primary.port()
        );
        let role = |attrs: &str| {
            let out = pgplan(
                home.path(),
                &[
                    "info",
                    "--format",
                    "json",
                    "-d",
                    &format!("{hosts} target_session_attrs={attrs}"),
                ],
                &[],
            );
            info_json(&out)["role"].as_str().unwrap().to_owned()
        };
        assert_eq!(role("any"), "standby");
        assert_eq!(role("primary"), "primary");
        assert_eq!(role("read-write"), "primary");
        assert_eq!(role("standby"), "standby");
        assert_eq!(role("read-only"), "standby");
        assert_eq!(role("prefer-standby"), "standby");
        // Only the primary listed: standby is impossible, and the error says why.
        let only_primary = format!(
            "host={} port={} user=postgres dbname=postgres target_session_attrs=standby",
            primary.socket_dir().display(),
            primary.port()
        );
        let out = pgplan(home.path(), &["info", "-d", &only_primary], &[]);
        assert_fails_with(&out, "the server is a primary");
        let _ = PathBuf::new();
    })
    .await;
}

/// A certificate made by the PostgreSQL documentation's recipe: `openssl req -new -x509 -nodes
/// -subj /CN=localhost`, self-signed with `CA:TRUE` and no subjectAltName, given to the client as
/// its own root. Returns (certificate PEM, key PEM).
fn openssl_self_signed(dir: &Path) -> (String, String) {
    let cert = dir.join("self.crt");
    let key = dir.join("self.key");
    let status = Command::new("openssl")
        .args([
            "req",
            "-new",
            "-x509",
            "-days",
            "365",
            "-nodes",
            "-subj",
            "/CN=localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("running openssl");
    assert!(status.success(), "openssl req failed");
    std::fs::set_permissions(&cert, std::fs::Permissions::from_mode(0o644)).unwrap();
    (
        std::fs::read_to_string(&cert).unwrap(),
        std::fs::read_to_string(&key).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_self_signed_certificate_is_its_own_root() {
    for_each_version("self_signed", |major| async move {
        let home = tempfile::tempdir().unwrap();
        let (cert, key) = openssl_self_signed(home.path());
        let server = tls_server_with(major, &cert, &key, &cert, &[]).await;
        let port = server.port().to_string();
        let root = home.path().join("self.crt").display().to_string();
        let run = |host: &str, extra: &str| {
            pgplan(
                home.path(),
                &[
                    "info",
                    "--format",
                    "json",
                    "-d",
                    &format!("host={host} port={port} user=postgres dbname=postgres sslrootcert={root} {extra}"),
                ],
                &[],
            )
        };
        let encrypted = |out: &Output| info_json(out)["tls"]["encrypted"].as_bool().unwrap();
        // psql connects in each of these modes with the certificate as its own root.
        assert!(encrypted(&run("127.0.0.1", "sslmode=require")));
        assert!(encrypted(&run("127.0.0.1", "sslmode=verify-ca")));
        // verify-full: no subjectAltName, so the Common Name is the name checked (libpq).
        assert!(encrypted(&run("localhost", "sslmode=verify-full")));
        assert_fails_with(&run("127.0.0.1", "sslmode=verify-full"), "verify-full");
    })
    .await;
}

/// A TCP listener that accepts connections and never says a word, as a hung server or a
/// firewall that swallows packets after the handshake.
fn silent_listener() -> (u16, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let mut held = Vec::new();
        // Hold every accepted socket open until the test process ends.
        for stream in listener.incoming().flatten() {
            held.push(stream);
            if held.len() > 64 {
                break;
            }
        }
    });
    (port, handle)
}

#[test]
fn connect_timeout_bounds_the_whole_attempt() {
    let (port, _listener) = silent_listener();
    let port = port.to_string();
    let home = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = pgplan(
        home.path(),
        &["info", "-h", "127.0.0.1", "-p", &port, "-U", "postgres"],
        &[("PGCONNECT_TIMEOUT", "2"), ("PGSSLMODE", "prefer")],
    );
    let took = started.elapsed();
    assert_fails_with(&out, "timeout expired");
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(8),
        "took {took:?}"
    );
    // Values below 2 become 2, as in libpq; each retry gets its own timeout.
    let started = Instant::now();
    let out = pgplan(
        home.path(),
        &["info", "-h", "127.0.0.1", "-p", &port, "--retries", "1"],
        &[("PGCONNECT_TIMEOUT", "1"), ("PGSSLMODE", "disable")],
    );
    let took = started.elapsed();
    assert_fails_with(&out, "timeout expired");
    assert!(stderr(&out).contains("retry 1 of 1"), "{}", stderr(&out));
    assert!(
        took >= Duration::from_millis(3900) && took < Duration::from_secs(12),
        "took {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_stay_within_their_total_time_without_a_connect_timeout() {
    let (port, _listener) = silent_listener();
    let home = tempfile::tempdir().unwrap();
    let env = Environment::new(
        [("HOME".to_owned(), home.path().display().to_string())]
            .into_iter()
            .collect(),
        Some(home.path().to_path_buf()),
        "postgres",
    );
    let params = resolve(
        &ConnRequest {
            dbname: Some(format!("host=127.0.0.1 port={port} sslmode=disable")),
            ..ConnRequest::default()
        },
        &env,
    )
    .unwrap();
    let mut retry = pgplan::db::retry::RetryPolicy::new(5);
    retry.budget = Duration::from_secs(3);
    let options = ConnectOptions {
        retry,
        ..ConnectOptions::default()
    };
    let started = Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(20),
        connect(&params, &options, |_, _, _| {}),
    )
    .await
    .expect("the retry budget bounds attempts that never get an answer");
    assert!(result.is_err());
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn verbose_prints_sources_on_stderr_before_connecting() {
    // A port nobody listens on: the connection fails, the sources are still shown.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let home = tempfile::tempdir().unwrap();
    let query = home.path().join("query.sql");
    std::fs::write(&query, "SELECT a FROM t WHERE a = 1").unwrap();
    let query = query.display().to_string();
    let compare = vec![
        "compare",
        query.as_str(),
        "--index",
        "CREATE INDEX ON t (a)",
    ];
    for command in [vec!["info"], compare, vec!["audit"]] {
        let mut args = vec!["-v"];
        args.extend(command.iter().copied());
        args.extend(["-h", "127.0.0.1", "-p", &port]);
        let out = pgplan(
            home.path(),
            &args,
            &[("PGUSER", "someone"), ("PGPASSWORD", PASSWORD)],
        );
        // A connection error is 2 for every command (audit too, when no node could be read).
        assert_eq!(out.status.code(), Some(2), "{command:?}: {}", stderr(&out));
        let err = stderr(&out);
        // The sources go to stderr; stdout carries only the command's report (audit's names the
        // failed node).
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            !stdout.contains("PGUSER"),
            "{command:?} wrote sources to stdout:\n{stdout}"
        );
        for needle in [
            "port",
            &port,
            "command-line flag",
            "PGUSER",
            "password",
            "PGPASSWORD",
        ] {
            assert!(
                err.contains(needle),
                "{command:?}: stderr lacks {needle:?}:\n{err}"
            );
        }
        // The sources come before the failure.
        let sources_at = err.find("PGUSER").unwrap();
        let failure_at = err
            .find("could not connect")
            .expect("the failure is reported");
        assert!(sources_at < failure_at, "{err}");
        no_secret(&out);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn channel_binding_and_client_side_authentication_failures() {
    for_each_version("channel_binding", |major| async move {
        let pki = Pki::new();
        let server = tls_server(major, &pki).await;
        let home = tempfile::tempdir().unwrap();
        let port = server.port().to_string();
        let run = |extra: &str| {
            pgplan(
                home.path(),
                &[
                    "info",
                    "--format",
                    "json",
                    "--retries",
                    "2",
                    "-d",
                    &format!("host=127.0.0.1 port={port} user=pw_user dbname=postgres {extra}"),
                ],
                &[("PGPASSWORD", PASSWORD)],
            )
        };
        // Without TLS there is nothing to bind to: an authentication failure, never retried.
        let out = run("sslmode=disable channel_binding=require");
        assert_fails_with(&out, "authentication failed for user \"pw_user\"");
        assert!(stderr(&out).contains("channel binding"), "{}", stderr(&out));
        assert!(!stderr(&out).contains("retry"), "{}", stderr(&out));
        // Over TLS, SCRAM with channel binding works as with psql.
        let out = run("sslmode=require channel_binding=require");
        assert_eq!(info_json(&out)["user"], "pw_user");
        assert!(info_json(&out)["tls"]["encrypted"].as_bool().unwrap());
        no_secret(&out);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tls_protocol_versions_are_honoured() {
    for_each_version("tls_versions", |major| async move {
        let pki = Pki::new();
        let tls12_only = tls_server_with(
            major,
            &pki.server_cert_pem,
            &pki.server_key_pem,
            &pki.ca_pem,
            &[("ssl_max_protocol_version", "TLSv1.2")],
        )
        .await;
        let modern = tls_server(major, &pki).await;
        let home = tempfile::tempdir().unwrap();
        let run = |server: &Cluster, extra: &str| {
            pgplan(
                home.path(),
                &[
                    "info",
                    "--format",
                    "json",
                    "-d",
                    &format!(
                        "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=require {extra}",
                        server.port()
                    ),
                ],
                &[],
            )
        };
        let version = |out: &Output| info_json(out)["tls"]["version"].as_str().unwrap().to_owned();
        assert_eq!(version(&run(&tls12_only, "")), "TLSv1.2");
        assert_eq!(version(&run(&modern, "")), "TLSv1.3");
        assert_eq!(version(&run(&modern, "ssl_max_protocol_version=TLSv1.2")), "TLSv1.2");
        assert_eq!(version(&run(&modern, "ssl_min_protocol_version=TLSv1.3")), "TLSv1.3");
        assert_fails_with(&run(&tls12_only, "ssl_min_protocol_version=TLSv1.3"), "TLS");
        // TLSv1 and TLSv1.1 cannot be spoken at all: asked for, they are refused up front.
        assert_fails_with(
            &run(&modern, "ssl_max_protocol_version=TLSv1.1"),
            "ssl_max_protocol_version",
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn direct_tls_negotiation() {
    for_each_version("sslnegotiation", |major| async move {
        let pki = Pki::new();
        let server = tls_server(major, &pki).await;
        let home = tempfile::tempdir().unwrap();
        let ca = pki.path("ca.crt");
        let out = pgplan(
            home.path(),
            &[
                "info",
                "--format",
                "json",
                "--retries",
                "2",
                "-d",
                &format!(
                    "host=localhost port={} user=postgres dbname=postgres sslmode=verify-full \
                     sslrootcert={ca} sslnegotiation=direct",
                    server.port()
                ),
            ],
            &[],
        );
        if major >= 17 {
            assert!(info_json(&out)["tls"]["encrypted"].as_bool().unwrap());
        } else {
            // Servers before 17 read the TLS hello as a broken startup packet.
            assert_fails_with(&out, "PostgreSQL 17");
            assert!(!stderr(&out).contains("retry"), "{}", stderr(&out));
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sslmode_does_not_apply_to_unix_sockets() {
    for_each_version("socket_sslmode", |major| async move {
        let db = TestDb::create(major, "socket_sslmode").await;
        let home = tempfile::tempdir().unwrap();
        let sock = db.cluster.socket_dir().display().to_string();
        let port = db.cluster.port().to_string();
        // A global verify-full with no root certificate anywhere, and certificate files that do
        // not exist: libpq ignores all of it for a socket.
        let out = pgplan(
            home.path(),
            &["info", "--format", "json"],
            &[
                ("PGHOST", &sock),
                ("PGPORT", &port),
                ("PGUSER", "postgres"),
                ("PGDATABASE", &db.name),
                ("PGSSLMODE", "verify-full"),
                ("PGSSLROOTCERT", "/nonexistent/root.crt"),
                ("PGSSLCERT", "/nonexistent/client.crt"),
                ("PGSSLKEY", "/nonexistent/client.key"),
            ],
        );
        let doc = info_json(&out);
        assert_eq!(doc["database"], db.name.as_str());
        assert_eq!(doc["tls"]["encrypted"], false);
        // A TCP host in the same list still gets the checks.
        let out = pgplan(
            home.path(),
            &["info"],
            &[
                ("PGHOST", "127.0.0.1"),
                ("PGPORT", &port),
                ("PGUSER", "postgres"),
                ("PGSSLMODE", "verify-full"),
                ("PGSSLROOTCERT", "/nonexistent/root.crt"),
            ],
        );
        assert_fails_with(&out, "/nonexistent/root.crt");
        db.drop_db().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn password_hints_name_the_real_cause() {
    for_each_version("password_hints", |major| async move {
        let pki = Pki::new();
        let server = tls_server(major, &pki).await;
        let home = tempfile::tempdir().unwrap();
        let port = server.port().to_string();
        let env = password_user_env(&port);
        let run = |extra: &[(&'static str, &str)]| {
            let mut all: Vec<(&str, &str)> = env.to_vec();
            all.extend_from_slice(extra);
            pgplan(home.path(), &["info"], &all)
        };
        let out = run(&[("PGPASSWORD", "wrong")]);
        assert_fails_with(&out, "the password came from PGPASSWORD");
        assert!(!stderr(&out).contains("from from"), "{}", stderr(&out));

        let pgpass = home.path().join(".pgpass");
        let out = run(&[]);
        assert_fails_with(&out, "does not exist");
        assert!(
            stderr(&out).contains(&pgpass.display().to_string()),
            "{}",
            stderr(&out)
        );

        std::fs::write(&pgpass, format!("otherhost:*:*:*:{PASSWORD}\n")).unwrap();
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o640)).unwrap();
        let out = run(&[]);
        assert_fails_with(&out, "ignored");
        assert!(stderr(&out).contains("0640"), "{}", stderr(&out));

        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
        let out = run(&[]);
        assert_fails_with(&out, "has no line for");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn application_name_given_wins_inside_transactions() {
    for_each_version("application_name", |major| async move {
        let db = TestDb::create(major, "application_name").await;
        let home = tempfile::tempdir().unwrap();
        let limits = Limits::read_only_defaults();
        let show = async |conn: &mut Connection| {
            conn.read_only(&limits, async |client| {
                Ok(client
                    .query_one("SHOW application_name", &[])
                    .await
                    .unwrap()
                    .get::<_, String>(0))
            })
            .await
            .unwrap()
        };
        let mut named = library_connect(
            &format!("{} application_name=nightly", db.conninfo()),
            home.path(),
        )
        .await;
        assert_eq!(show(&mut named).await, "nightly");
        let mut default = library_connect(&db.conninfo(), home.path()).await;
        assert_eq!(show(&mut default).await, "pgplan");
        drop(named);
        drop(default);
        db.drop_db().await;
    })
    .await;
}

/// One version is enough to show each variable is read; they connect to a real server.
fn env_test_version() -> Option<u32> {
    common::versions().last().copied()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_rest_of_the_libpq_environment() {
    let Some(major) = env_test_version() else {
        return;
    };
    let db = TestDb::create(major, "environment").await;
    let home = tempfile::tempdir().unwrap();
    let port = db.cluster.port().to_string();
    let base = [
        ("PGPORT", port.as_str()),
        ("PGUSER", "postgres"),
        ("PGDATABASE", db.name.as_str()),
    ];
    let run = |extra: &[(&str, &str)]| {
        let mut all: Vec<(&str, &str)> = base.to_vec();
        all.extend_from_slice(extra);
        pgplan(home.path(), &["-v", "info", "--format", "json"], &all)
    };
    let source_of = |doc: &Value, param: &str| {
        doc["connection_sources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["parameter"] == param)
            .map(|s| {
                (
                    s["value"].as_str().unwrap().to_owned(),
                    s["source"].as_str().unwrap().to_owned(),
                )
            })
            .unwrap_or_else(|| panic!("no source for {param}"))
    };

    // PGHOSTADDR alone: TCP to that address, no name resolution.
    let doc = info_json(&run(&[("PGHOSTADDR", "127.0.0.1")]));
    assert!(
        doc["target"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{doc}"
    );
    assert!(source_of(&doc, "hostaddr").1.contains("PGHOSTADDR"));

    // PGCONNECT_TIMEOUT: read, shown, and a working server is reached within it.
    let doc = info_json(&run(&[
        ("PGHOSTADDR", "127.0.0.1"),
        ("PGCONNECT_TIMEOUT", "5"),
    ]));
    assert_eq!(
        source_of(&doc, "connect_timeout"),
        ("5 s".to_owned(), "environment PGCONNECT_TIMEOUT".to_owned())
    );

    // PGOPTIONS reaches the server: a read-only default makes the session read-only.
    let read_only_opts = "-c default_transaction_read_only=on";
    let doc = info_json(&run(&[
        ("PGHOSTADDR", "127.0.0.1"),
        ("PGOPTIONS", read_only_opts),
    ]));
    assert_eq!(doc["read_only"], true);
    let doc = info_json(&run(&[("PGHOSTADDR", "127.0.0.1")]));
    assert_eq!(doc["read_only"], false);

    // PGTARGETSESSIONATTRS is checked against the server's answer.
    let out = pgplan(
        home.path(),
        &["info"],
        &[
            ("PGHOSTADDR", "127.0.0.1"),
            ("PGPORT", &port),
            ("PGUSER", "postgres"),
            ("PGTARGETSESSIONATTRS", "read-only"),
        ],
    );
    assert_fails_with(&out, "target_session_attrs=read-only");
    let doc = info_json(&run(&[
        ("PGHOSTADDR", "127.0.0.1"),
        ("PGOPTIONS", read_only_opts),
        ("PGTARGETSESSIONATTRS", "read-only"),
    ]));
    assert_eq!(doc["read_only"], true);

    // PGSYSCONFDIR: the system-wide service file.
    let sysconf = home.path().join("sysconf");
    std::fs::create_dir(&sysconf).unwrap();
    std::fs::write(
        sysconf.join("pg_service.conf"),
        format!(
            "[sys_service]\nhostaddr=127.0.0.1\nport={port}\nuser=postgres\ndbname={}\n",
            db.name
        ),
    )
    .unwrap();
    let out = pgplan(
        home.path(),
        &["-v", "info", "--format", "json"],
        &[
            ("PGSYSCONFDIR", sysconf.to_str().unwrap()),
            ("PGSERVICE", "sys_service"),
        ],
    );
    let doc = info_json(&out);
    assert_eq!(doc["database"], db.name.as_str());
    assert!(source_of(&doc, "port").1.contains("sys_service"));
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn client_certificate_from_the_environment() {
    let Some(major) = env_test_version() else {
        return;
    };
    let pki = Pki::new();
    let server = tls_server(major, &pki).await;
    let home = tempfile::tempdir().unwrap();
    let port = server.port().to_string();
    let ca = pki.path("ca.crt");
    let cert = pki.path("client.crt");
    let key = pki.path("client.key");
    let out = pgplan(
        home.path(),
        &["info", "--format", "json"],
        &[
            ("PGHOST", "localhost"),
            ("PGPORT", &port),
            ("PGUSER", "cert_user"),
            ("PGDATABASE", "postgres"),
            ("PGSSLMODE", "verify-full"),
            ("PGSSLROOTCERT", &ca),
            ("PGSSLCERT", &cert),
            ("PGSSLKEY", &key),
        ],
    );
    assert_eq!(info_json(&out)["user"], "cert_user");
}

/// The PostgreSQL documentation's certificate-authority recipe: a root made with `openssl x509
/// -req -signkey` and the `v3_ca` extensions, and a server certificate signed by it with `openssl
/// x509 -req -CA root.crt -CAkey root.key -CAcreateserial`. With no `-extfile`, OpenSSL 3.0
/// writes that server certificate as X.509 version 1 (no extensions at all). Returns the paths of
/// (root certificate, server certificate, server key).
fn openssl_v1_leaf(dir: &Path, common_name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let openssl = |args: &[&str]| {
        let status = Command::new("openssl")
            .current_dir(dir)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("running openssl");
        assert!(status.success(), "openssl {args:?} failed");
    };
    std::fs::write(
        dir.join("v3_ca.cnf"),
        "[v3_ca]\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid:always,issuer\n\
         basicConstraints=critical,CA:true\n",
    )
    .unwrap();
    openssl(&[
        "req",
        "-new",
        "-nodes",
        "-text",
        "-out",
        "root.csr",
        "-keyout",
        "root.key",
        "-subj",
        "/CN=root.example.com",
    ]);
    openssl(&[
        "x509",
        "-req",
        "-in",
        "root.csr",
        "-text",
        "-days",
        "3650",
        "-extfile",
        "v3_ca.cnf",
        "-extensions",
        "v3_ca",
        "-signkey",
        "root.key",
        "-out",
        "root.crt",
    ]);
    openssl(&[
        "req",
        "-new",
        "-nodes",
        "-text",
        "-out",
        "server.csr",
        "-keyout",
        "server.key",
        "-subj",
        &format!("/CN={common_name}"),
    ]);
    openssl(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-text",
        "-days",
        "365",
        "-CA",
        "root.crt",
        "-CAkey",
        "root.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
    ]);
    for name in ["root.crt", "server.crt"] {
        std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    (
        dir.join("root.crt"),
        dir.join("server.crt"),
        dir.join("server.key"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_x509_v1_server_certificate_works_in_every_sslmode() {
    for_each_version("v1_leaf", |major| async move {
        let home = tempfile::tempdir().unwrap();
        let pki = tempfile::tempdir().unwrap();
        let (root, cert, key) = openssl_v1_leaf(pki.path(), "localhost");
        let text = std::fs::read_to_string(&cert).unwrap();
        assert!(
            text.contains("Version: 1 (0x0)"),
            "not a v1 certificate:\n{text}"
        );
        let other = tempfile::tempdir().unwrap();
        let (other_root, _, _) = openssl_v1_leaf(other.path(), "localhost");
        let read = |p: &Path| std::fs::read_to_string(p).unwrap();
        let server = tls_server_with(major, &read(&cert), &read(&key), &read(&root), &[]).await;
        let port = server.port().to_string();
        let run = |host: &str, extra: String| {
            pgplan(
                home.path(),
                &[
                    "info",
                    "--format",
                    "json",
                    "-d",
                    &format!("host={host} port={port} user=postgres dbname=postgres {extra}"),
                ],
                &[],
            )
        };
        let encrypted = |out: &Output| info_json(out)["tls"]["encrypted"].as_bool().unwrap();
        let root = root.display();
        // No root certificate: encryption without verification, as psql; prefer must not fall
        // back to plain text because the certificate is version 1.
        assert!(encrypted(&run("127.0.0.1", "sslmode=require".into())));
        assert!(encrypted(&run("127.0.0.1", "sslmode=prefer".into())));
        // A v1 leaf signed directly by the trusted root verifies, as OpenSSL verifies it.
        assert!(encrypted(&run(
            "127.0.0.1",
            format!("sslmode=require sslrootcert={root}")
        )));
        assert!(encrypted(&run(
            "127.0.0.1",
            format!("sslmode=verify-ca sslrootcert={root}")
        )));
        assert!(encrypted(&run(
            "localhost",
            format!("sslmode=verify-full sslrootcert={root}")
        )));
        // ...and its name, dates and issuer still count.
        assert_fails_with(
            &run(
                "127.0.0.1",
                format!("sslmode=verify-full sslrootcert={root}"),
            ),
            "verify-full",
        );
        assert_fails_with(
            &run(
                "localhost",
                format!("sslmode=verify-ca sslrootcert={}", other_root.display()),
            ),
            "verify-ca",
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pg_hba_rejections_say_so_and_prefer_keeps_both_attempts() {
    for_each_version("hba_hints", |major| async move {
        let pki = Pki::new();
        let server = tls_server(major, &pki).await;
        let home = tempfile::tempdir().unwrap();
        let port = server.port().to_string();
        let run = |user: &str, extra: &str| {
            pgplan(
                home.path(),
                &[
                    "info",
                    "-d",
                    &format!("host=127.0.0.1 port={port} user={user} dbname=postgres {extra}"),
                ],
                &[],
            )
        };
        let no_password_hint = |out: &Output| {
            assert!(
                !stderr(out).contains("password"),
                "a pg_hba.conf rejection is not about a password:\n{}",
                stderr(out)
            );
        };
        // A hostssl-only user without TLS: pg_hba.conf, and TLS is the way in.
        let out = run("tls_only", "sslmode=disable");
        assert_fails_with(&out, "pg_hba.conf");
        assert_fails_with(&out, "sslmode=require");
        no_password_hint(&out);
        // A hostnossl-only user with TLS: TLS is what is forbidden.
        let out = run("plain_only", "sslmode=require");
        assert_fails_with(&out, "pg_hba.conf");
        assert_fails_with(&out, "hostnossl");
        no_password_hint(&out);
        // A role that does not exist is named as such.
        let out = run("no_such_role", "sslmode=disable");
        assert_fails_with(&out, "not a role");
        no_password_hint(&out);
        // prefer: the TLS attempt wanted a client certificate, the plain one was rejected by
        // pg_hba.conf; both are reported, as libpq does.
        let out = run("cert_user", "sslmode=prefer");
        assert_fails_with(&out, "pg_hba.conf rejects connection");
        assert_fails_with(&out, "the attempt with TLS before it failed too");
        assert_fails_with(&out, "certificate");
        // prefer: the TLS attempt failed verification, the plain one pg_hba.conf; both shown.
        let out = run(
            "tls_only",
            &format!("sslmode=prefer sslrootcert={}", pki.path("other-ca.crt")),
        );
        assert_fails_with(&out, "pg_hba.conf rejects connection");
        assert_fails_with(&out, "the attempt with TLS before it failed too");
        assert_fails_with(&out, "certificate verify failed");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tls_errors_say_what_failed_in_plain_words() {
    for_each_version("tls_words", |major| async move {
        let home = tempfile::tempdir().unwrap();
        let run = |port: &str, extra: &str| {
            pgplan(
                home.path(),
                &[
                    "info",
                    "-d",
                    &format!("host=127.0.0.1 port={port} user=postgres dbname=postgres {extra}"),
                ],
                &[],
            )
        };
        let no_debug_text = |out: &Output| {
            for raw in [
                "Other(",
                "OtherError",
                "InvalidCertificate",
                "UnknownIssuer",
            ] {
                assert!(
                    !stderr(out).contains(raw),
                    "rustls debug text:\n{}",
                    stderr(out)
                );
            }
        };
        // A server with ssl=off and sslmode=require: the server has no TLS, and that is the fix.
        let plain = common::server(major);
        let out = run(&plain.port().to_string(), "sslmode=require");
        assert_fails_with(&out, "the server does not support TLS");
        assert_fails_with(&out, "turn ssl on");

        let pki = Pki::new();
        let server = tls_server(major, &pki).await;
        let port = server.port().to_string();
        // require with the wrong root: fix the root or drop it, never "use sslmode=require".
        let out = run(
            &port,
            &format!("sslmode=require sslrootcert={}", pki.path("other-ca.crt")),
        );
        assert_fails_with(&out, "certificate verify failed: ");
        assert_fails_with(&out, "drop sslrootcert");
        assert!(
            !stderr(&out).contains("use sslmode=require"),
            "{}",
            stderr(&out)
        );
        assert!(
            !stderr(&out).contains("sslmode=require encrypts"),
            "{}",
            stderr(&out)
        );
        no_debug_text(&out);
        // verify-full with the wrong name: the name is the problem.
        let out = run(
            &port,
            &format!("sslmode=verify-full sslrootcert={}", pki.path("ca.crt")),
        );
        assert_fails_with(&out, "does not name the host");
        assert_fails_with(&out, "verify-ca");
        no_debug_text(&out);
        drop(server);

        // A CA certificate (CA:TRUE) served as the server's, checked against another root.
        let (cert, key) = openssl_self_signed(home.path());
        let server = tls_server_with(major, &cert, &key, &cert, &[]).await;
        let out = run(
            &server.port().to_string(),
            &format!("sslmode=verify-ca sslrootcert={}", pki.path("ca.crt")),
        );
        assert_fails_with(&out, "certificate verify failed: ");
        assert_fails_with(&out, "CA certificate");
        no_debug_text(&out);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_facts_query_that_times_out_is_not_a_refused_connection() {
    for_each_version("facts_timeout", |major| async move {
        let db = TestDb::create(major, "facts_timeout").await;
        let home = tempfile::tempdir().unwrap();
        // Another session holds a lock on a catalog the facts query reads.
        let holder = db.client().await;
        holder
            .batch_execute("BEGIN; LOCK TABLE pg_extension IN ACCESS EXCLUSIVE MODE")
            .await
            .unwrap();
        let env = Environment::new(
            [("HOME".to_owned(), home.path().display().to_string())]
                .into_iter()
                .collect(),
            Some(home.path().to_path_buf()),
            "postgres",
        );
        let params = resolve(
            &ConnRequest {
                dbname: Some(db.conninfo()),
                ..ConnRequest::default()
            },
            &env,
        )
        .unwrap();
        let options = ConnectOptions {
            limits: Limits::read_only_defaults().with(
                Some(Duration::from_secs(10)),
                Some(Duration::from_millis(100)),
            ),
            ..ConnectOptions::default()
        };
        let err = connect(&params, &options, |_, _, _| {})
            .await
            .unwrap_err()
            .to_string();
        assert!(!err.contains("refused"), "{err}");
        assert!(err.contains("connected to"), "{err}");
        assert!(err.contains("timed out or was cancelled"), "{err}");
        assert!(err.contains("SQLSTATE 55P03"), "{err}");
        holder.batch_execute("ROLLBACK").await.unwrap();
        drop(holder);
        db.drop_db().await;
    })
    .await;
}
