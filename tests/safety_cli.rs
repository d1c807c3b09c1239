//! The safety rules that hold before any server is involved, through the binary as a user runs
//! it: the report destination checked before any work and never replaced when it is not a
//! regular file, connection strings never echoed with their user info, timeouts and inputs
//! bounded, and the exact message for each.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pgplan"))
}

fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .env("NO_COLOR", "1")
        .env_remove("PGSERVICE")
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A compare whose server cannot be reached (a socket directory that does not exist): any error
/// about something else was found before connecting.
fn compare(dir: &Path, query: &str, extra: &[&str]) -> Output {
    let path = dir.join("q.sql");
    std::fs::write(&path, query).unwrap();
    let mut args = vec![
        "compare".to_owned(),
        "-d".to_owned(),
        format!("host={} dbname=x", dir.join("nowhere").display()),
        path.display().to_string(),
        "--index".to_owned(),
        "CREATE INDEX ON t (a)".to_owned(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&args)
}

fn assert_error(out: &Output, expected: &str) {
    assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
    assert_eq!(stderr(out), expected);
}

#[test]
fn a_destination_that_cannot_be_written_is_refused_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let missing = d.join("no/such/dir/report.txt");
    let out = compare(d, "SELECT 1", &["-o", missing.to_str().unwrap()]);
    assert_error(
        &out,
        &format!(
            "pgplan: --output {}: cannot create a file in {}: No such file or directory (os error 2)\n",
            missing.display(),
            d.join("no/such/dir").display()
        ),
    );
    let out = compare(d, "SELECT 1", &["-o", d.to_str().unwrap()]);
    assert_error(
        &out,
        &format!("pgplan: --output {}: is a directory\n", d.display()),
    );
    // The same for audit: no node is read.
    let out = run(&[
        "audit",
        "-d",
        &format!("host={} dbname=x", d.join("nowhere").display()),
        "-o",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("pgplan: --output "),
        "{}",
        stderr(&out)
    );
}

/// The account to run pgplan as, to see permission rules that root is exempt from.
fn unprivileged() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions; getpwnam's record is read at once.
    unsafe {
        if libc::geteuid() != 0 {
            return Some((libc::geteuid(), libc::getegid()));
        }
        let pw = libc::getpwnam(c"postgres".as_ptr());
        (!pw.is_null()).then(|| ((*pw).pw_uid, (*pw).pw_gid))
    }
}

#[test]
fn a_file_the_user_may_not_write_is_not_replaced_even_in_a_shared_directory() {
    let Some((uid, gid)) = unprivileged() else {
        panic!("the test needs a postgres account to run pgplan unprivileged as root");
    };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Not root: the file must belong to someone else, which only root can arrange.
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A shared directory (as /tmp): anyone may create files in it.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let report = dir.path().join("report.txt");
    std::fs::write(&report, "root's report\n").unwrap();
    std::fs::set_permissions(&report, std::fs::Permissions::from_mode(0o644)).unwrap();
    let query = dir.path().join("q.sql");
    std::fs::write(&query, "SELECT 1").unwrap();
    std::fs::set_permissions(&query, std::fs::Permissions::from_mode(0o644)).unwrap();
    // The unprivileged user may not be able to reach the build directory (a checkout under a
    // 0700 directory): run a copy of the binary from a directory anyone can enter.
    let bin_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(bin_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let unprivileged_bin = bin_dir.path().join("pgplan");
    std::fs::copy(bin(), &unprivileged_bin).unwrap();
    std::fs::set_permissions(&unprivileged_bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(&unprivileged_bin)
        .uid(uid)
        .gid(gid)
        .env("NO_COLOR", "1")
        .env("HOME", dir.path())
        .args([
            "compare",
            "-d",
            &format!(
                "host={} dbname=x user=x",
                dir.path().join("nowhere").display()
            ),
            query.to_str().unwrap(),
            "--index",
            "CREATE INDEX ON t (a)",
            "-o",
            report.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_error(
        &out,
        &format!(
            "pgplan: --output {}: Permission denied (os error 13)\n",
            report.display()
        ),
    );
    assert_eq!(std::fs::read_to_string(&report).unwrap(), "root's report\n");
    assert_eq!(std::fs::metadata(&report).unwrap().uid(), 0);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn devices_fifos_and_symlinks_are_written_through_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let full = "/dev/full";

    // A FIFO: its reader gets the report.
    let fifo = dir.path().join("report.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo reads a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let report = dir.path().join("real.md");
    let link = dir.path().join("link.md");
    std::os::unix::fs::symlink(&report, &link).unwrap();
    // audit with a node that cannot be reached still writes its report (exit 2).
    let node = format!("host={} dbname=x", dir.path().join("nowhere").display());
    let out = run(&[
        "audit",
        "-d",
        &node,
        "--format",
        "markdown",
        "-o",
        fifo.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let through_fifo = reader.join().unwrap();
    assert!(
        through_fifo.starts_with("## pgplan audit\n"),
        "{through_fifo}"
    );
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );

    // A symbolic link: the file it points at gets the report, the link stays a link.
    let out = run(&[
        "audit",
        "-d",
        &node,
        "--format",
        "markdown",
        "-o",
        link.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&report).unwrap(), through_fifo);

    // /dev/full through the same path: the error is the device's, and it stays a device.
    let out = run(&["audit", "-d", &node, "-o", full]);
    assert_error(
        &out,
        &format!(
            "pgplan: node {node} failed: could not connect to socket {}/.s.PGSQL.5432 (database x): \
             error connecting to server: No such file or directory (os error 2)\n\
             pgplan: writing to /dev/full (device): No space left on device (os error 28)\n",
            dir.path().join("nowhere").display()
        ),
    );
    assert!(
        std::fs::metadata(full)
            .unwrap()
            .file_type()
            .is_char_device()
    );
}

#[test]
fn connection_strings_never_echo_their_user_info() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("q.sql"), "SELECT 1").unwrap();
    for (d, expected) in [
        (
            "postgresql://u:Sup@Sekr3t@localhost/db",
            "pgplan: the -d URL \"postgresql://********@localhost/db\" has more than one \"@\" before \
             its host: libpq splits it at the first one and would take the rest of the user info for \
             a host name\nhint: percent-encode an \"@\" inside a user name or password as %40\n",
        ),
        (
            "postgresq://u:Sup@Sekr3t@localhost/db",
            "pgplan: -d \"postgresq://********@localhost/db\" looks like a URL, but \"postgresq://\" \
             is not a scheme libpq knows, so it would be taken for a database name\nhint: start a \
             connection URL with postgresql:// or postgres://\n",
        ),
    ] {
        let query = dir.path().join("q.sql");
        let out = run(&[
            "compare",
            "-v",
            "-d",
            d,
            query.to_str().unwrap(),
            "--index",
            "CREATE INDEX ON t (a)",
        ]);
        assert_error(&out, expected);
        let out = run(&["info", "-d", d]);
        assert_error(&out, expected);
        let out = run(&["audit", "-d", d, "--format", "json"]);
        let all = format!("{}{}", stderr(&out), String::from_utf8_lossy(&out.stdout));
        assert!(!all.contains("Sekr3t") && !all.contains("Sup"), "{all}");
    }
}

#[test]
fn timeouts_are_validated_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let out = compare(dir.path(), "SELECT 1", &["--lock-timeout", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "error: invalid value '0' for '--lock-timeout <DURATION>': \"0\" would turn lock_timeout \
         off: PostgreSQL then waits forever, and pgplan never runs unbounded; give at least 1ms\n\n\
         For more information, try '--help'.\n"
    );
    let out = compare(dir.path(), "SELECT 1", &["--statement-timeout", "30d"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "error: invalid value '30d' for '--statement-timeout <DURATION>': \"30d\" is above \
         PostgreSQL's largest statement_timeout, 2147483647ms (about 24.8 days)\n\n\
         For more information, try '--help'.\n"
    );
    let out = run(&["audit", "--lock-timeout", "0", "-d", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("would turn lock_timeout off"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn inputs_are_bounded_and_a_byte_order_mark_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    // A BOM before the query: skipped, so the error is the connection's, not the query's.
    let out = compare(dir.path(), "\u{feff}SELECT 1", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("pgplan: could not connect"),
        "{}",
        stderr(&out)
    );
    // A BOM before a saved plan.
    let plan = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/story/before.pg16.json"),
    )
    .unwrap();
    let bom_plan = dir.path().join("plan.json");
    std::fs::write(&bom_plan, format!("\u{feff}{plan}")).unwrap();
    let out = run(&["explain", bom_plan.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));

    // 64 MiB and one byte of query: refused before connecting, without reading it all.
    let big = dir.path().join("big.sql");
    let file = std::fs::File::create(&big).unwrap();
    file.set_len(64 * 1024 * 1024 + 1).unwrap();
    let out = run(&[
        "compare",
        "-d",
        "x",
        big.to_str().unwrap(),
        "--index",
        "CREATE INDEX ON t (a)",
    ]);
    assert_error(
        &out,
        &format!(
            "pgplan: {}: the query is larger than 64 MiB, more than pgplan reads; is it the right file?\n",
            big.display()
        ),
    );
    let out = run(&[
        "compare",
        "-d",
        "x",
        "/dev/zero",
        "--index",
        "CREATE INDEX ON t (a)",
    ]);
    assert_error(
        &out,
        "pgplan: /dev/zero: the query is larger than 64 MiB, more than pgplan reads; is it the right file?\n",
    );
}

#[test]
fn param_on_a_query_without_parameters_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = compare(dir.path(), "SELECT 1", &["--param", "7"]);
    assert_error(
        &out,
        "pgplan: the query has no parameters ($1, $2, ...) but 1 --param value(s) were given; drop \
         --param, or write the query with $1 where the value goes\n",
    );
}

fn story(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/story")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn a_completion_script_read_only_in_part_is_a_quiet_success() {
    // `pgplan completions bash | head -1`: the reader closes the pipe after one line.
    let mut child = Command::new(bin())
        .args(["completions", "bash"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
}

#[test]
fn explain_and_diff_write_their_report_to_the_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let before = story("before.pg16.json");
    let after = story("status_index.pg16.json");
    let report = dir.path().join("explain.md");
    let out = run(&[
        "explain",
        &before,
        "--format",
        "markdown",
        "-o",
        report.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let written = std::fs::read_to_string(&report).unwrap();
    assert!(written.starts_with("### Plan `"), "{written}");
    let report = dir.path().join("diff.txt");
    let out = run(&[
        "diff",
        &before,
        &after,
        "--output",
        report.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert!(!std::fs::read_to_string(&report).unwrap().is_empty());
    // A destination that cannot be written is refused before the plans are read.
    let missing = dir.path().join("no/such/dir/r.txt");
    let out = run(&[
        "diff",
        "no-such-plan.json",
        &after,
        "-o",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("pgplan: --output "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_save_plan_path_that_cannot_be_written_is_refused_before_connecting() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let query = d.join("q.sql");
    std::fs::write(&query, "SELECT 1").unwrap();
    let conninfo = format!("host={} dbname=x", d.join("nowhere").display());
    let missing = d.join("no/such/plan.json");
    let out = run(&[
        "explain",
        "-d",
        &conninfo,
        query.to_str().unwrap(),
        "--save-plan",
        missing.to_str().unwrap(),
    ]);
    assert_error(
        &out,
        &format!(
            "pgplan: --save-plan {}: {}: No such file or directory (os error 2)\n",
            missing.display(),
            d.join("no/such").display()
        ),
    );
    let out = run(&[
        "explain",
        "-d",
        &conninfo,
        query.to_str().unwrap(),
        "--save-plan",
        d.to_str().unwrap(),
    ]);
    assert_error(
        &out,
        &format!("pgplan: --save-plan {}: is a directory\n", d.display()),
    );
}

#[test]
fn a_plan_file_over_the_limit_is_refused_without_being_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.json");
    // Sparse: 1 GiB and one byte of zeros that take no disk, but would take 1 GiB of memory
    // read whole.
    std::fs::File::create(&path)
        .unwrap()
        .set_len((1 << 30) + 1)
        .unwrap();
    let out = run(&["explain", path.to_str().unwrap()]);
    assert_error(
        &out,
        &format!(
            "pgplan: {}: the plan is larger than 1 GiB, more than pgplan reads (PostgreSQL cannot \
             send a plan this large: is it the right file?)\n",
            path.display()
        ),
    );
    // The largest child this test process waited for stayed far below the file's size (every
    // other pgplan run here is a few megabytes).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes the struct it is given.
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) },
        0
    );
    let max_resident_kib = usage.ru_maxrss;
    assert!(
        max_resident_kib < 256 * 1024,
        "{max_resident_kib} KiB resident"
    );
}
