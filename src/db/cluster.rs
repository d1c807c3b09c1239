//! Throwaway PostgreSQL servers: found binaries, `initdb` into a temporary directory, a running
//! postmaster on a free port, an optional streaming standby, and everything removed afterwards.
//!
//! Used by `pgplan demo` and by the test suite. Cleanup happens on drop (and therefore on panic),
//! at process exit for servers held in statics (an `atexit` hook), and when the owning process is
//! killed outright: the postmaster is started with a parent-death signal, and directories left by a
//! dead owner are swept by the next start.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::{self, Write as _};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Mutex, Once, OnceLock};
use std::time::{Duration, Instant};

/// The environment variable that names a directory of server binaries (`initdb`, `postgres`).
pub const PG_BIN_ENV: &str = "PGPLAN_PG_BIN";

/// Where Debian's versioned server directories are searched instead of `/usr/lib/postgresql`
/// (tests set it to stand for a machine without them).
pub const SYSTEM_PG_DIR_ENV: &str = "PGPLAN_TEST_SYSTEM_PG_DIR";

/// The environment variable that names the cache `scripts/fetch-postgres.sh` fills.
pub const PG_CACHE_ENV: &str = "PGPLAN_PG_CACHE";

/// Where `scripts/fetch-postgres.sh` keeps server binaries, one directory per major version:
/// `$PGPLAN_PG_CACHE`, else `/var/cache/pgplan/postgres` for root (the unprivileged user that
/// runs the server must be able to read them), else `~/.cache/pgplan/postgres`.
pub fn binaries_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(PG_CACHE_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return PathBuf::from("/var/cache/pgplan/postgres");
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("pgplan").join("postgres")
}

/// What can go wrong while finding binaries or starting a throwaway server.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(
        "no PostgreSQL server binaries found (looked in: {searched})\n\
         hint: install a server (Debian: apt-get install postgresql), point --pg-bin / {PG_BIN_ENV} \
         at a directory holding initdb and postgres, or fetch them with scripts/fetch-postgres.sh \
         (into {cache}, which is searched last; {PG_CACHE_ENV} moves it)",
        cache = binaries_cache_dir().display()
    )]
    BinariesNotFound { searched: String },
    #[error(
        "{path}: not a PostgreSQL bin directory ({reason})\n\
         hint: point --pg-bin / {PG_BIN_ENV} at a directory holding initdb and postgres (Debian: \
         /usr/lib/postgresql/<major>/bin after apt-get install postgresql), or unset it to search \
         pg_config, PATH, /usr/lib/postgresql and the cache scripts/fetch-postgres.sh fills \
         ({cache}; {PG_CACHE_ENV} moves it)",
        cache = binaries_cache_dir().display()
    )]
    BadBinDir { path: PathBuf, reason: String },
    #[error(
        "running as root, and there is no unprivileged user to run the server as (tried: postgres, nobody)\nhint: create one with `useradd --system postgres`"
    )]
    NoUnprivilegedUser,
    #[error("{step} failed: {source}")]
    Io {
        step: String,
        #[source]
        source: io::Error,
    },
    #[error("{step} failed ({status}):\n{output}")]
    Command {
        step: String,
        status: String,
        output: String,
    },
    #[error("the server did not accept connections within {seconds} s; its log:\n{log}")]
    StartTimeout { seconds: u64, log: String },
    #[error("{step}: {message}")]
    Sql { step: String, message: String },
}

fn io_err(step: impl Into<String>) -> impl FnOnce(io::Error) -> ClusterError {
    let step = step.into();
    move |source| ClusterError::Io { step, source }
}

/// A directory of PostgreSQL server binaries and the major version they are.
#[derive(Debug, Clone)]
pub struct ServerBinaries {
    pub bin_dir: PathBuf,
    /// e.g. 16
    pub major: u32,
    /// e.g. "16.14"
    pub version: String,
}

impl ServerBinaries {
    /// Uses the binaries in `bin_dir`, which must hold `initdb` and `postgres`.
    pub fn at(bin_dir: impl Into<PathBuf>) -> Result<Self, ClusterError> {
        let bin_dir = bin_dir.into();
        for tool in ["initdb", "postgres"] {
            if !bin_dir.join(tool).is_file() {
                return Err(ClusterError::BadBinDir {
                    path: bin_dir,
                    reason: format!("no {tool} in it"),
                });
            }
        }
        let out = Command::new(bin_dir.join("postgres"))
            .arg("--version")
            .output()
            .map_err(io_err(format!(
                "running {}/postgres --version",
                bin_dir.display()
            )))?;
        let text = String::from_utf8_lossy(&out.stdout);
        // "postgres (PostgreSQL) 16.14" or "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
        let version = text
            .split_whitespace()
            .nth(2)
            .map(str::to_owned)
            .ok_or_else(|| ClusterError::BadBinDir {
                path: bin_dir.clone(),
                reason: format!("unexpected `postgres --version` output {text:?}"),
            })?;
        let major = version
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|m| m.parse().ok())
            .ok_or_else(|| ClusterError::BadBinDir {
                path: bin_dir.clone(),
                reason: format!("unexpected version {version:?}"),
            })?;
        Ok(Self {
            bin_dir,
            major,
            version,
        })
    }

    /// Finds server binaries: `explicit` (from `--pg-bin`), then `$PGPLAN_PG_BIN`, then
    /// `pg_config --bindir`, then `postgres` on `PATH`, then the newest Debian
    /// `/usr/lib/postgresql/<major>/bin`, then the newest in [`binaries_cache_dir`].
    pub fn discover(explicit: Option<&Path>) -> Result<Self, ClusterError> {
        if let Some(dir) = explicit {
            return Self::at(dir);
        }
        if let Some(dir) = std::env::var_os(PG_BIN_ENV).filter(|v| !v.is_empty()) {
            return Self::at(PathBuf::from(dir));
        }
        let mut searched = vec![format!("${PG_BIN_ENV} (unset)")];
        if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
            && out.status.success()
        {
            let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if let Ok(found) = Self::at(&dir) {
                return Ok(found);
            }
            searched.push(format!("pg_config --bindir ({})", dir.display()));
        } else {
            searched.push("pg_config (not found)".into());
        }
        if let Some(path) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&path) {
                if dir.join("postgres").is_file() && dir.join("initdb").is_file() {
                    // Debian links /usr/local/bin/postgres into its versioned directory; resolve it
                    // so the other tools (pg_ctl, pg_basebackup) come from the same place.
                    let real = fs::canonicalize(dir.join("postgres"))
                        .ok()
                        .and_then(|p| p.parent().map(Path::to_path_buf))
                        .unwrap_or(dir);
                    if let Ok(found) = Self::at(&real) {
                        return Ok(found);
                    }
                }
            }
            searched.push("PATH".into());
        }
        // Tests point this away to stand for a machine without Debian's packages.
        let debian = std::env::var_os(SYSTEM_PG_DIR_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/lib/postgresql"));
        let debian = debian.as_path();
        let mut majors: Vec<u32> = fs::read_dir(debian)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
            .collect();
        majors.sort_unstable();
        for major in majors.iter().rev() {
            if let Ok(found) = Self::at(debian.join(major.to_string()).join("bin")) {
                return Ok(found);
            }
        }
        searched.push(format!("{}/*/bin", debian.display()));
        let cache = binaries_cache_dir();
        for major in (13..=30).rev() {
            let dir = cache.join(major.to_string());
            if !dir.exists() {
                continue;
            }
            // A build pgplan or the fetch script did not finish, or one damaged since, is
            // passed over (pgplan demo replaces it).
            match super::build_cache::inspect(&dir) {
                Ok(_) => {
                    if let Ok(found) = Self::at(dir.join("bin")) {
                        return Ok(found);
                    }
                }
                Err(problem) => searched.push(format!("{} ({problem})", dir.display())),
            }
        }
        searched.push(format!("{}/*/bin", cache.display()));
        Err(ClusterError::BinariesNotFound {
            searched: searched.join(", "),
        })
    }
}

/// Options for a throwaway server.
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    pub binaries: ServerBinaries,
    /// `postgresql.conf` settings, appended after initdb's.
    pub settings: Vec<(String, String)>,
    /// Lines placed before initdb's `pg_hba.conf` entries (first match wins).
    pub hba_lines: Vec<String>,
    /// Files written into the data directory before start (for example TLS keys), with their mode.
    pub data_files: Vec<(String, Vec<u8>, u32)>,
    /// Listen on 127.0.0.1 as well as on the socket.
    pub tcp: bool,
    /// How long to wait for the server to accept connections.
    pub start_timeout: Duration,
}

impl ClusterOptions {
    pub fn new(binaries: ServerBinaries) -> Self {
        Self {
            binaries,
            settings: Vec::new(),
            hba_lines: Vec::new(),
            data_files: Vec::new(),
            tcp: true,
            start_timeout: Duration::from_secs(60),
        }
    }

    pub fn setting(mut self, name: &str, value: impl fmt::Display) -> Self {
        self.settings.push((name.to_owned(), value.to_string()));
        self
    }

    pub fn hba(mut self, line: &str) -> Self {
        self.hba_lines.push(line.to_owned());
        self
    }

    pub fn data_file(mut self, name: &str, contents: impl Into<Vec<u8>>, mode: u32) -> Self {
        self.data_files
            .push((name.to_owned(), contents.into(), mode));
        self
    }
}

/// The unprivileged account a root process runs the server as (`initdb` refuses root).
#[derive(Debug, Clone, Copy)]
struct RunAs {
    uid: u32,
    gid: u32,
}

fn run_as() -> Result<Option<RunAs>, ClusterError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    for name in [c"postgres", c"nobody"] {
        // SAFETY: getpwnam takes a NUL-terminated name; the returned record is read immediately,
        // before any other call that could overwrite it.
        let pw = unsafe { libc::getpwnam(name.as_ptr()) };
        if !pw.is_null() {
            let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
            return Ok(Some(RunAs { uid, gid }));
        }
    }
    Err(ClusterError::NoUnprivilegedUser)
}

/// A running throwaway server. Stopped, and its files removed, on drop.
pub struct Cluster {
    binaries: ServerBinaries,
    /// Holds the data directory, the socket and the log; removed on drop.
    root: PathBuf,
    data_dir: PathBuf,
    port: u16,
    tcp: bool,
    postmaster: Option<Child>,
    run_as: Option<RunAs>,
    /// `true` for a standby started by [`Cluster::start_standby`].
    standby: bool,
}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster")
            .field("version", &self.binaries.version)
            .field("port", &self.port)
            .field("socket_dir", &self.root)
            .field("standby", &self.standby)
            .finish()
    }
}

/// Every live cluster's postmaster pid and directory, for the exit hook.
static LIVE: Mutex<Vec<(u32, PathBuf)>> = Mutex::new(Vec::new());
static EXIT_HOOK: Once = Once::new();

extern "C" fn stop_live_clusters_at_exit() {
    let live = match LIVE.lock() {
        Ok(mut live) => std::mem::take(&mut *live),
        Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
    };
    for (pid, root) in live {
        stop_postmaster(pid, Duration::from_secs(10));
        let _ = fs::remove_dir_all(&root);
    }
}

/// Fast shutdown (SIGINT): aborts open transactions and exits cleanly; falls back to an immediate
/// shutdown (SIGQUIT), then SIGKILL, if the postmaster does not go away.
fn stop_postmaster(pid: u32, patience: Duration) {
    let pid = pid as libc::pid_t;
    let alive = || unsafe { libc::kill(pid, 0) } == 0;
    for (signal, wait) in [
        (libc::SIGINT, patience),
        (libc::SIGQUIT, Duration::from_secs(5)),
        (libc::SIGKILL, Duration::from_secs(5)),
    ] {
        // SAFETY: sending a signal to a pid we started.
        if unsafe { libc::kill(pid, signal) } != 0 {
            return;
        }
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            // Reap it if it is our child; otherwise just watch it go.
            let mut status = 0;
            // SAFETY: waitpid on a pid we started, non-blocking.
            let reaped = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if reaped == pid || !alive() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Processes must be spawned from a thread that lives as long as the process: the parent-death
/// signal (`PR_SET_PDEATHSIG`) fires when the *thread* that forked the child exits, and test
/// threads come and go.
fn spawn_bound_to_process(mut command: Command) -> io::Result<Child> {
    type Request = (Command, mpsc::Sender<io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("pgplan-cluster-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("spawning the cluster spawner thread");
        Mutex::new(tx)
    });
    // SAFETY: prctl is async-signal-safe; it runs in the child between fork and exec, after the
    // uid change (a credential change would clear the setting).
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let (reply_tx, reply_rx) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send((command, reply_tx))
        .map_err(|_| io::Error::other("cluster spawner thread is gone"))?;
    reply_rx
        .recv()
        .map_err(|_| io::Error::other("cluster spawner thread is gone"))?
}

/// Where throwaway clusters live: one directory per cluster, named after the owning process.
fn clusters_base() -> PathBuf {
    std::env::temp_dir().join("pgplan-clusters")
}

/// Removes directories left by owners that died without cleaning up (kill -9).
fn sweep_abandoned(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix("owner-"))
            .and_then(|n| n.split('-').next())
            .and_then(|pid| pid.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        // SAFETY: signal 0 only checks for existence.
        let owner_alive = unsafe { libc::kill(owner, 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if owner_alive {
            continue;
        }
        let path = entry.path();
        let data_dir = path.join("data");
        if let Ok(pidfile) = fs::read_to_string(data_dir.join("postmaster.pid"))
            && let Some(pid) = pidfile.lines().next().and_then(|l| l.trim().parse().ok())
            && is_postmaster_of(pid, &data_dir)
        {
            stop_postmaster(pid, Duration::from_secs(5));
        }
        let _ = fs::remove_dir_all(&path);
    }
}

/// Whether `pid` is a postmaster running in `data_dir`. The pid comes from a file in a
/// world-writable directory, and pids are reused after a crash: signal it only when the process
/// is really that server. A postmaster changes its working directory to its data directory at
/// start (PostgreSQL's ChangeToDataDir), so its `/proc/<pid>/cwd` names it.
fn is_postmaster_of(pid: u32, data_dir: &Path) -> bool {
    if pid <= 1 {
        return false;
    }
    let Ok(cwd) = fs::read_link(format!("/proc/{pid}/cwd")) else {
        return false;
    };
    fs::canonicalize(data_dir).is_ok_and(|dir| dir == cwd)
}

fn free_port() -> Result<u16, ClusterError> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(io_err("finding a free port"))?;
    let port = listener
        .local_addr()
        .map_err(io_err("finding a free port"))?
        .port();
    Ok(port)
}

fn chown_tree(path: &Path, who: RunAs) -> Result<(), ClusterError> {
    std::os::unix::fs::lchown(path, Some(who.uid), Some(who.gid))
        .map_err(io_err(format!("chown {}", path.display())))?;
    if path.is_dir() && !path.is_symlink() {
        for entry in fs::read_dir(path).map_err(io_err(format!("reading {}", path.display())))? {
            let entry = entry.map_err(io_err(format!("reading {}", path.display())))?;
            chown_tree(&entry.path(), who)?;
        }
    }
    Ok(())
}

impl Cluster {
    /// Runs `initdb` into a new temporary directory and starts the server.
    pub fn start(options: ClusterOptions) -> Result<Self, ClusterError> {
        let base = clusters_base();
        fs::create_dir_all(&base).map_err(io_err(format!("creating {}", base.display())))?;
        // Everyone must be able to reach the cluster directories (the server may run as another user).
        let _ = fs::set_permissions(&base, fs::Permissions::from_mode(0o1777));
        sweep_abandoned(&base);
        let run_as = run_as()?;
        let root = tempfile::Builder::new()
            .prefix(&format!("owner-{}-", std::process::id()))
            .tempdir_in(&base)
            .map_err(io_err("creating the cluster directory"))?
            .keep();
        let mut cluster = Self {
            binaries: options.binaries.clone(),
            data_dir: root.join("data"),
            root,
            port: 0,
            tcp: options.tcp,
            postmaster: None,
            run_as,
            standby: false,
        };
        fs::set_permissions(&cluster.root, fs::Permissions::from_mode(0o755))
            .map_err(io_err("setting cluster directory permissions"))?;
        if let Some(who) = run_as {
            chown_tree(&cluster.root, who)?;
        }
        cluster.initdb()?;
        cluster.configure(&options)?;
        cluster.launch(options.start_timeout)?;
        Ok(cluster)
    }

    fn command(&self, tool: &str) -> Command {
        let mut cmd = Command::new(self.binaries.bin_dir.join(tool));
        if let Some(who) = self.run_as {
            cmd.uid(who.uid).gid(who.gid);
        }
        cmd.current_dir(&self.root);
        // Server messages in English whatever the caller's locale, so they can be parsed.
        cmd.env("LC_ALL", "C").env("LANG", "C");
        cmd
    }

    fn initdb(&self) -> Result<(), ClusterError> {
        let out = self
            .command("initdb")
            .arg("-D")
            .arg(&self.data_dir)
            .args([
                "--username=postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(io_err("running initdb"))?;
        if !out.status.success() {
            return Err(ClusterError::Command {
                step: "initdb".into(),
                status: out.status.to_string(),
                output: format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ),
            });
        }
        Ok(())
    }

    fn configure(&self, options: &ClusterOptions) -> Result<(), ClusterError> {
        let conf_path = self.data_dir.join("postgresql.conf");
        let mut conf = fs::OpenOptions::new()
            .append(true)
            .open(&conf_path)
            .map_err(io_err("opening postgresql.conf"))?;
        // fsync off: nothing here must survive a machine crash, and initdb/loads get faster.
        // synchronous_commit stays on: with asynchronous commits, hint bits (and so a VACUUM's
        // all-visible marks) wait for the WAL flush, which would make fresh data behave unlike
        // production's.
        let mut text = String::from(
            "\n# throwaway server settings\n\
             fsync = off\n\
             log_min_messages = warning\n\
             log_line_prefix = '%m [%p] %q%a '\n\
             track_io_timing = on\n\
             max_connections = 60\n",
        );
        for (name, value) in &options.settings {
            text.push_str(&format!("{name} = '{}'\n", value.replace('\'', "''")));
        }
        conf.write_all(text.as_bytes())
            .map_err(io_err("writing postgresql.conf"))?;
        if !options.hba_lines.is_empty() {
            let hba_path = self.data_dir.join("pg_hba.conf");
            let existing = fs::read_to_string(&hba_path).map_err(io_err("reading pg_hba.conf"))?;
            let mut hba = options.hba_lines.join("\n");
            hba.push('\n');
            hba.push_str(&existing);
            fs::write(&hba_path, hba).map_err(io_err("writing pg_hba.conf"))?;
        }
        for (name, contents, mode) in &options.data_files {
            let path = self.data_dir.join(name);
            fs::write(&path, contents).map_err(io_err(format!("writing {name}")))?;
            fs::set_permissions(&path, fs::Permissions::from_mode(*mode))
                .map_err(io_err(format!("chmod {name}")))?;
            if let Some(who) = self.run_as {
                chown_tree(&path, who)?;
            }
        }
        Ok(())
    }

    fn launch(&mut self, timeout: Duration) -> Result<(), ClusterError> {
        let mut last_error = None;
        // A free port can be taken by someone else between finding it and binding it: retry.
        for _ in 0..5 {
            self.port = free_port()?;
            match self.launch_on_port(timeout) {
                Ok(()) => return Ok(()),
                Err(ClusterError::StartTimeout { log, seconds })
                    if log.contains("could not bind") || log.contains("already in use") =>
                {
                    last_error = Some(ClusterError::StartTimeout { log, seconds });
                }
                Err(other) => return Err(other),
            }
        }
        Err(last_error.expect("at least one attempt"))
    }

    fn launch_on_port(&mut self, timeout: Duration) -> Result<(), ClusterError> {
        let log_path = self.root.join("server.log");
        let log = fs::File::create(&log_path).map_err(io_err("creating server.log"))?;
        if let Some(who) = self.run_as {
            chown_tree(&log_path, who)?;
        }
        let log_err = log.try_clone().map_err(io_err("opening server.log"))?;
        let listen = if self.tcp { "127.0.0.1" } else { "" };
        let mut cmd = self.command("postgres");
        cmd.arg("-D")
            .arg(&self.data_dir)
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-k")
            .arg(&self.root)
            .arg("-c")
            .arg(format!("listen_addresses={listen}"))
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let child = spawn_bound_to_process(cmd).map_err(io_err("starting postgres"))?;
        let pid = child.id();
        EXIT_HOOK.call_once(|| {
            // SAFETY: registering a plain extern "C" function.
            unsafe { libc::atexit(stop_live_clusters_at_exit) };
        });
        LIVE.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((pid, self.root.clone()));
        self.postmaster = Some(child);

        // postmaster.pid's status line becomes "ready" once connections are accepted
        // (PostgreSQL 10+; it is what `pg_ctl -w` waits for). A standby reports "standby".
        let deadline = Instant::now() + timeout;
        let pidfile = self.data_dir.join("postmaster.pid");
        loop {
            if let Some(child) = self.postmaster.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.postmaster = None;
                self.forget_live(pid);
                return Err(ClusterError::StartTimeout {
                    seconds: 0,
                    log: format!(
                        "postgres exited ({status})\n{}",
                        fs::read_to_string(&log_path).unwrap_or_default()
                    ),
                });
            }
            if let Ok(text) = fs::read_to_string(&pidfile) {
                let lines: Vec<&str> = text.lines().collect();
                if lines.first().map(|l| l.trim()) == Some(&pid.to_string())
                    && lines
                        .get(7)
                        .is_some_and(|s| matches!(s.trim(), "ready" | "standby"))
                {
                    return Ok(());
                }
            }
            if Instant::now() > deadline {
                let log = fs::read_to_string(&log_path).unwrap_or_default();
                self.stop_postmaster();
                return Err(ClusterError::StartTimeout {
                    seconds: timeout.as_secs(),
                    log,
                });
            }
            std::thread::sleep(Duration::from_millis(15));
        }
    }

    fn forget_live(&self, pid: u32) {
        LIVE.lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(p, _)| *p != pid);
    }

    fn stop_postmaster(&mut self) {
        if let Some(mut child) = self.postmaster.take() {
            let pid = child.id();
            stop_postmaster(pid, Duration::from_secs(30));
            let _ = child.try_wait();
            self.forget_live(pid);
        }
    }

    /// Stops the server (fast shutdown) and keeps the files; [`Cluster::restart`] brings it back.
    pub fn stop(&mut self) {
        self.stop_postmaster();
    }

    /// Starts a stopped server again on the same port.
    pub fn restart(&mut self) -> Result<(), ClusterError> {
        self.stop_postmaster();
        self.launch_on_port(Duration::from_secs(60))
    }

    /// Whether the postmaster is running.
    pub fn is_running(&self) -> bool {
        self.postmaster.is_some()
    }

    pub fn binaries(&self) -> &ServerBinaries {
        &self.binaries
    }

    pub fn major(&self) -> u32 {
        self.binaries.major
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the server's Unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.root
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The server log, for test failure messages.
    pub fn log(&self) -> String {
        fs::read_to_string(self.root.join("server.log")).unwrap_or_default()
    }

    pub fn is_standby(&self) -> bool {
        self.standby
    }

    /// A libpq conninfo string that reaches this server over its Unix socket as `postgres`.
    pub fn conninfo(&self, dbname: &str) -> String {
        format!(
            "host={} port={} user=postgres dbname={}",
            self.root.display(),
            self.port,
            dbname
        )
    }

    /// A libpq conninfo string over TCP on 127.0.0.1.
    pub fn tcp_conninfo(&self, dbname: &str, user: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user={user} dbname={dbname}",
            self.port
        )
    }

    /// A `tokio_postgres::Config` for the Unix socket, as superuser `postgres`.
    pub fn config(&self, dbname: &str) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host_path(&self.root)
            .port(self.port)
            .user("postgres")
            .dbname(dbname)
            .application_name("pgplan-harness");
        config
    }

    /// Connects over the Unix socket as `postgres`; the connection task runs on the current runtime.
    pub async fn connect(&self, dbname: &str) -> Result<tokio_postgres::Client, ClusterError> {
        let (client, connection) = self
            .config(dbname)
            .connect(tokio_postgres::NoTls)
            .await
            .map_err(|e| ClusterError::Sql {
                step: format!("connecting to the throwaway server (database {dbname})"),
                message: crate::db::error::describe(&e),
            })?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(client)
    }

    /// Runs SQL (one or more statements, simple protocol) as `postgres` in `dbname`.
    pub async fn execute(&self, dbname: &str, sql: &str) -> Result<(), ClusterError> {
        let client = self.connect(dbname).await?;
        client
            .batch_execute(sql)
            .await
            .map_err(|e| ClusterError::Sql {
                step: format!("running SQL on the throwaway server: {}", first_line(sql)),
                message: crate::db::error::describe(&e),
            })
    }

    /// Installs an extension in `dbname` when its package is present on the server (HypoPG for
    /// Debian's PostgreSQL 15 comes from `postgresql-15-hypopg`). Returns whether it is
    /// installed now; a missing package is `Ok(false)`, not an error.
    pub async fn create_extension(&self, dbname: &str, name: &str) -> Result<bool, ClusterError> {
        let client = self.connect(dbname).await?;
        let available = client
            .query(
                "SELECT 1 FROM pg_available_extensions WHERE name = $1",
                &[&name],
            )
            .await
            .map_err(|e| ClusterError::Sql {
                step: format!("looking for the {name} extension"),
                message: crate::db::error::describe(&e),
            })?;
        if available.is_empty() {
            return Ok(false);
        }
        client
            .batch_execute(&format!(
                "CREATE EXTENSION IF NOT EXISTS {}",
                crate::sql::quote_ident(name)
            ))
            .await
            .map_err(|e| ClusterError::Sql {
                step: format!("creating the {name} extension"),
                message: crate::db::error::describe(&e),
            })?;
        Ok(true)
    }

    /// Starts a streaming standby of this server.
    ///
    /// The base backup is taken with the low-level backup API and a file copy (the fetched test
    /// binaries carry no `pg_basebackup`): `pg_backup_start`/`pg_start_backup`, copy the data
    /// directory, `pg_backup_stop`/`pg_stop_backup`, write the returned `backup_label`, copy the
    /// WAL written meanwhile, then start with `standby.signal` and `primary_conninfo`.
    pub async fn start_standby(&self) -> Result<Cluster, ClusterError> {
        let client = self.connect("postgres").await?;
        let sql_err = |step: &str| {
            let step = step.to_owned();
            move |e: tokio_postgres::Error| ClusterError::Sql {
                step,
                message: crate::db::error::describe(&e),
            }
        };
        // PostgreSQL 15 renamed the functions and removed the exclusive mode.
        let (start_sql, stop_sql) = if self.major() >= 15 {
            (
                "SELECT pg_backup_start('pgplan-standby', true)",
                "SELECT labelfile, spcmapfile FROM pg_backup_stop(false)",
            )
        } else {
            (
                "SELECT pg_start_backup('pgplan-standby', true, false)",
                "SELECT labelfile, spcmapfile FROM pg_stop_backup(false, false)",
            )
        };
        client
            .simple_query(start_sql)
            .await
            .map_err(sql_err("starting the base backup"))?;

        let base = clusters_base();
        let root = tempfile::Builder::new()
            .prefix(&format!("owner-{}-", std::process::id()))
            .tempdir_in(&base)
            .map_err(io_err("creating the standby directory"))?
            .keep();
        fs::set_permissions(&root, fs::Permissions::from_mode(0o755))
            .map_err(io_err("setting standby directory permissions"))?;
        let mut standby = Cluster {
            binaries: self.binaries.clone(),
            data_dir: root.join("data"),
            root,
            port: 0,
            tcp: self.tcp,
            postmaster: None,
            run_as: self.run_as,
            standby: true,
        };
        copy_data_dir(&self.data_dir, &standby.data_dir, false)?;
        let rows = client
            .query(stop_sql, &[])
            .await
            .map_err(sql_err("stopping the base backup"))?;
        let label: String = rows[0].get(0);
        let spcmap: Option<String> = rows[0].get(1);
        fs::write(standby.data_dir.join("backup_label"), label)
            .map_err(io_err("writing backup_label"))?;
        if let Some(map) = spcmap.filter(|m| !m.is_empty()) {
            fs::write(standby.data_dir.join("tablespace_map"), map)
                .map_err(io_err("writing tablespace_map"))?;
        }
        copy_data_dir(
            &self.data_dir.join("pg_wal"),
            &standby.data_dir.join("pg_wal"),
            true,
        )?;
        fs::write(standby.data_dir.join("standby.signal"), "")
            .map_err(io_err("writing standby.signal"))?;
        let mut auto = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(standby.data_dir.join("postgresql.auto.conf"))
            .map_err(io_err("opening postgresql.auto.conf"))?;
        writeln!(
            auto,
            "primary_conninfo = 'host={} port={} user=postgres application_name=pgplan_standby'\n\
             hot_standby = on",
            self.root.display(),
            self.port
        )
        .map_err(io_err("writing postgresql.auto.conf"))?;
        drop(auto);
        if let Some(who) = self.run_as {
            chown_tree(&standby.root, who)?;
        }
        standby.launch(Duration::from_secs(60))?;
        Ok(standby)
    }
}

fn first_line(sql: &str) -> &str {
    sql.trim().lines().next().unwrap_or("")
}

/// Copies a data directory for a base backup, leaving out what `pg_basebackup` leaves out: the
/// postmaster's pid and options files, WAL (copied separately after the backup stops), and
/// runtime-only directories whose contents must start empty.
fn copy_data_dir(from: &Path, to: &Path, wal: bool) -> Result<(), ClusterError> {
    const SKIP_FILES: &[&str] = &[
        "postmaster.pid",
        "postmaster.opts",
        "backup_label",
        "tablespace_map",
        "standby.signal",
    ];
    const EMPTY_DIRS: &[&str] = &[
        "pg_wal",
        "pg_replslot",
        "pg_stat_tmp",
        "pg_dynshmem",
        "pg_notify",
        "pg_serial",
        "pg_snapshots",
        "pg_subtrans",
    ];
    fs::create_dir_all(to).map_err(io_err(format!("creating {}", to.display())))?;
    fs::set_permissions(to, fs::Permissions::from_mode(0o700))
        .map_err(io_err(format!("chmod {}", to.display())))?;
    let entries = match fs::read_dir(from) {
        Ok(entries) => entries,
        Err(e) => return Err(io_err(format!("reading {}", from.display()))(e)),
    };
    for entry in entries {
        let entry = entry.map_err(io_err(format!("reading {}", from.display())))?;
        let name: OsString = entry.file_name();
        let name_str = name.to_string_lossy();
        let src = entry.path();
        let dst = to.join(&name);
        // Files can vanish while the server runs (temporary files, WAL recycling): skip them.
        let Ok(meta) = fs::symlink_metadata(&src) else {
            continue;
        };
        if meta.is_dir() {
            if !wal && EMPTY_DIRS.contains(&name_str.as_ref()) {
                fs::create_dir_all(&dst).map_err(io_err(format!("creating {}", dst.display())))?;
                fs::set_permissions(&dst, fs::Permissions::from_mode(0o700))
                    .map_err(io_err(format!("chmod {}", dst.display())))?;
                continue;
            }
            copy_data_dir(&src, &dst, wal)?;
        } else if meta.is_file() {
            if SKIP_FILES.contains(&name_str.as_ref()) || name_str.starts_with("pgsql_tmp") {
                continue;
            }
            match fs::copy(&src, &dst) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_err(format!("copying {}", src.display()))(e)),
            }
        }
    }
    Ok(())
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop_postmaster();
        let _ = fs::remove_dir_all(&self.root);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both hints name every place pgplan searches, the fetch script's cache included.
    #[test]
    fn the_binaries_hints_name_the_fetch_cache() {
        let cache = binaries_cache_dir().display().to_string();
        let not_found = ClusterError::BinariesNotFound {
            searched: "PATH".into(),
        }
        .to_string();
        let bad = ClusterError::BadBinDir {
            path: PathBuf::from("/nowhere"),
            reason: "no initdb".into(),
        }
        .to_string();
        for message in [not_found, bad] {
            assert!(message.contains("scripts/fetch-postgres.sh"), "{message}");
            assert!(message.contains(&cache), "{message}");
            assert!(message.contains(PG_CACHE_ENV), "{message}");
        }
    }

    /// A pid that was alive a moment ago and is not now (its owner "died").
    fn dead_pid() -> u32 {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    fn abandoned_dir(base: &Path, postmaster_pid: u32) -> PathBuf {
        let dir = base.join(format!("owner-{}-x", dead_pid()));
        fs::create_dir_all(dir.join("data")).unwrap();
        fs::write(
            dir.join("data/postmaster.pid"),
            format!("{postmaster_pid}\n"),
        )
        .unwrap();
        dir
    }

    /// The sweep signals the pid in an abandoned directory's postmaster.pid only when that
    /// process runs in the directory: a pid written there by someone else, or reused after a
    /// crash, is left alone.
    #[test]
    fn the_sweep_signals_only_the_directory_s_own_postmaster() {
        let base = tempfile::tempdir().unwrap();
        let mut bystander = Command::new("sleep").arg("30").spawn().unwrap();
        let dir = abandoned_dir(base.path(), bystander.id());
        sweep_abandoned(base.path());
        assert!(!dir.exists(), "the abandoned directory is removed");
        assert!(
            bystander.try_wait().unwrap().is_none(),
            "a process that is not the directory's server was signalled"
        );
        let _ = bystander.kill();
        let _ = bystander.wait();

        // A process whose working directory is the data directory stands for its postmaster.
        let base = tempfile::tempdir().unwrap();
        let dir = abandoned_dir(base.path(), 0);
        let server = Command::new("sleep")
            .arg("30")
            .current_dir(dir.join("data"))
            .spawn()
            .unwrap();
        fs::write(
            dir.join("data/postmaster.pid"),
            format!("{}\n", server.id()),
        )
        .unwrap();
        assert!(is_postmaster_of(server.id(), &dir.join("data")));
        let pid = server.id() as libc::pid_t;
        sweep_abandoned(base.path());
        assert!(!dir.exists());
        // stop_postmaster reaped it (it is this process's child): the pid is gone.
        // SAFETY: signal 0 only checks for existence.
        assert_ne!(
            unsafe { libc::kill(pid, 0) },
            0,
            "the directory's server was stopped"
        );
        drop(server);
    }
}
