//! What the audit benchmarks share: a throwaway PostgreSQL 15 server, the real `pgplan` run
//! from spawn to exit with its own CPU and peak memory, the server's CPU read from the server's
//! processes, and the machine's load, so `audit_scale` and `audit_databases` measure alike.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pgplan::db::cluster::{
    Cluster, ClusterOptions, PG_BIN_ENV, ServerBinaries, binaries_cache_dir,
};

pub const PGPLAN: &str = env!("CARGO_BIN_EXE_pgplan");

/// Another pgplan binary to run beside this one in the same rounds (an earlier build, for a
/// before-and-after comparison under the same load): `PGPLAN_BENCH_BEFORE=path/to/pgplan`.
pub const BEFORE_ENV: &str = "PGPLAN_BENCH_BEFORE";

/// The earlier binary named by [`BEFORE_ENV`], if any.
pub fn before_binary() -> Option<String> {
    std::env::var(BEFORE_ENV).ok().filter(|v| !v.is_empty())
}

/// PostgreSQL 15 binaries from the fetch cache, or `PGPLAN_PG_BIN`.
fn binaries() -> ServerBinaries {
    if let Some(dir) = std::env::var_os(PG_BIN_ENV).filter(|v| !v.is_empty()) {
        return ServerBinaries::at(dir).expect("PGPLAN_PG_BIN holds initdb and postgres");
    }
    ServerBinaries::at(binaries_cache_dir().join("15").join("bin")).unwrap_or_else(|e| {
        panic!("PostgreSQL 15 binaries missing ({e}); run scripts/fetch-postgres.sh 15")
    })
}

/// A throwaway server tuned for building large catalogs fast (no fsync, no autovacuum, no
/// JIT), and its postmaster's pid, whose reaped children's CPU is the server's CPU.
pub struct BenchServer {
    pub cluster: Cluster,
    pub postmaster: u32,
    /// The postmaster's children when no client is connected (checkpointer, background writer,
    /// WAL writer, launchers): any other child is a backend or a parallel worker still running.
    idle_children: Vec<u32>,
}

impl BenchServer {
    pub fn start(settings: &[(&str, &str)]) -> BenchServer {
        let mut options = ClusterOptions::new(binaries())
            .setting("fsync", "off")
            .setting("synchronous_commit", "off")
            .setting("full_page_writes", "off")
            .setting("autovacuum", "off")
            .setting("shared_buffers", "256MB")
            .setting("max_wal_size", "4GB")
            .setting("jit", "off");
        for (name, value) in settings {
            options = options.setting(name, *value);
        }
        let cluster = Cluster::start(options).expect("server starts");
        let postmaster: u32 = std::fs::read_to_string(cluster.data_dir().join("postmaster.pid"))
            .ok()
            .and_then(|pid| pid.lines().next().and_then(|l| l.trim().parse().ok()))
            .expect("postmaster.pid names the postmaster");
        // The auxiliary processes start with the server; give them a moment.
        std::thread::sleep(Duration::from_millis(500));
        let idle_children = children(postmaster);
        BenchServer {
            cluster,
            postmaster,
            idle_children,
        }
    }

    /// CPU time of the server's processes that have exited (backends and parallel workers), as
    /// the postmaster has reaped them: `/proc/<postmaster>/stat`'s cutime and cstime, in clock
    /// ticks of 10 ms. Nothing else running on the machine counts here.
    fn reaped_cpu(&self) -> Duration {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.postmaster)).unwrap_or_default();
        // Fields after the command name (which ends with the last ')'): state is field 3,
        // cutime 16 and cstime 17.
        let fields: Vec<u64> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .unwrap_or_default()
            .split_whitespace()
            .map(|v| v.parse().unwrap_or(0))
            .collect();
        let ticks = fields.get(13).copied().unwrap_or(0) + fields.get(14).copied().unwrap_or(0);
        Duration::from_millis(ticks * 10)
    }

    /// The reaped CPU once the last run's backends and workers have exited and been reaped:
    /// none of the postmaster's children is left but its idle ones (a backend that is still
    /// exiting would otherwise count towards the next run, which on a loaded machine happens).
    pub fn settled_cpu(&self) -> Duration {
        for _ in 0..500 {
            if children(self.postmaster)
                .iter()
                .all(|pid| self.idle_children.contains(pid))
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.reaped_cpu()
    }

    /// One `pgplan audit` run, spawn to exit, its report discarded; `args` follow `audit`. Exit
    /// codes 0 and 1 (findings) are runs; anything else fails the benchmark.
    pub fn pgplan_audit(&self, args: &[&str]) -> Run {
        self.audit_with(PGPLAN, args)
    }

    /// [`BenchServer::pgplan_audit`] with another pgplan binary.
    pub fn audit_with(&self, binary: &str, args: &[&str]) -> Run {
        let args = [&["audit"], args].concat();
        self.spawned(binary, &args, &[0, 1])
    }

    /// The floor the audit's speed goal is stated against: `psql` itself, spawn to exit, fetching
    /// the same join as [`floor_query`] in unaligned tuples-only output (psql's fastest) to
    /// /dev/null, with its own CPU counted as the client's. `None` when no `psql` is on the
    /// PATH (Debian's postgresql-client, or `PGPLAN_BENCH_PSQL`).
    #[allow(dead_code)] // audit_scale's floor; audit_databases compares with many at once
    pub fn psql_floor(&self, database: &str) -> Option<Run> {
        let psql = std::env::var("PGPLAN_BENCH_PSQL").unwrap_or_else(|_| "psql".into());
        Command::new(&psql)
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .ok()?;
        let conninfo = self.cluster.conninfo(database);
        let args = ["-X", "-A", "-t", "-c", FLOOR_SQL, "-d", conninfo.as_str()];
        Some(self.spawned(&psql, &args, &[0]))
    }

    /// One run of `binary`, spawn to exit, stdout discarded: its wall time, its own CPU and
    /// peak memory, the server's CPU for it. An exit code outside `ok_codes` fails the
    /// benchmark.
    // The child is reaped by wait4 below (std's wait does not return the child's own usage).
    #[allow(clippy::zombie_processes)]
    fn spawned(&self, binary: &str, args: &[&str], ok_codes: &[i32]) -> Run {
        let server = self.settled_cpu();
        let busy = machine_busy();
        let started = Instant::now();
        let mut child = Command::new(binary)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{binary} runs: {e}"));
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
        let (status, usage) = wait4(child.id());
        let wall = started.elapsed();
        let machine = machine_busy().saturating_sub(busy);
        assert!(
            libc::WIFEXITED(status) && ok_codes.contains(&libc::WEXITSTATUS(status)),
            "{binary} {} failed: {stderr}",
            args.first().unwrap_or(&"")
        );
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        Run {
            wall,
            exit_code: libc::WEXITSTATUS(status),
            client_cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
            // Linux reports ru_maxrss in KiB.
            client_peak_bytes: usage.ru_maxrss as u64 * 1024,
            server_cpu: self.settled_cpu().saturating_sub(server),
            machine_cpu: machine,
        }
    }
}

/// The join the floor queries fetch: every index's statistics, catalog row and relation.
const FLOOR_SQL: &str = "SELECT * FROM pg_stat_user_indexes s JOIN pg_index i ON i.indexrelid = \
                         s.indexrelid JOIN pg_class c ON c.oid = s.indexrelid";

/// The stricter floor: fetching every index's row of `pg_stat_user_indexes ⋈ pg_index ⋈
/// pg_class` as psql would (text, on a fresh connection, connecting included) but in this
/// process, so neither a process start nor psql's own handling of the rows counts, in each of
/// `databases` at once. Returns the run (no client CPU: the floor is the query) and the rows
/// fetched.
#[allow(dead_code)] // audit_scale's and audit_databases' floor; audit_sessions times statements
pub async fn floor_query(server: &BenchServer, databases: &[&str]) -> (Run, usize) {
    let server_before = server.settled_cpu();
    let started = Instant::now();
    let fetches = databases.iter().map(|database| async move {
        let (client, connection) = server
            .cluster
            .config(database)
            .connect(tokio_postgres::NoTls)
            .await
            .expect("connects");
        let task = tokio::spawn(async move {
            let _ = connection.await;
        });
        let rows = client.simple_query(FLOOR_SQL).await.expect("floor query");
        drop(client);
        let _ = task.await;
        rows.len()
    });
    let rows = futures_util::future::join_all(fetches)
        .await
        .into_iter()
        .sum();
    let run = Run {
        wall: started.elapsed(),
        server_cpu: server.settled_cpu().saturating_sub(server_before),
        ..Run::default()
    };
    (run, rows)
}

/// A process's children (Linux: `/proc/<pid>/task/<pid>/children`); a child leaves the list
/// once it has been reaped.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Waits for one child and takes its own resource usage (not every child's, as
/// `getrusage(RUSAGE_CHILDREN)` would: its maximum resident set is the largest child's ever).
fn wait4(pid: u32) -> (i32, libc::rusage) {
    let mut status = 0;
    // SAFETY: wait4 writes into the status and the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid as libc::pid_t, "wait4 on the child");
    (status, usage)
}

/// CPU time the whole machine has been busy (every core, all but idle and I/O wait), from
/// `/proc/stat`, in clock ticks of 10 ms: anything else running shows here.
fn machine_busy() -> Duration {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let busy: u64 = ticks
        .iter()
        .take(8)
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, v)| v)
        .sum();
    Duration::from_millis(busy * 10)
}

/// One timed run: spawn to exit, the CPU pgplan and the server used for it, pgplan's peak
/// resident memory, and the whole machine's busy time meanwhile.
#[derive(Clone, Copy, Debug, Default)]
pub struct Run {
    pub wall: Duration,
    /// pgplan's exit code (0 for a floor query).
    pub exit_code: i32,
    pub client_cpu: Duration,
    pub server_cpu: Duration,
    pub client_peak_bytes: u64,
    pub machine_cpu: Duration,
}

impl Run {
    /// The least wall time this run's own CPU work can take on the machine's cores.
    pub fn cpu_floor(&self) -> Duration {
        (self.client_cpu + self.server_cpu) / cores() as u32
    }

    /// How busy the whole machine was, as a share of wall × cores (others' work included).
    pub fn machine_share(&self) -> f64 {
        self.machine_cpu.as_secs_f64() / (self.wall.as_secs_f64() * cores() as f64)
    }
}

/// The medians of each figure over runs (each taken on its own).
pub fn medians(runs: &[Run]) -> Run {
    let of = |f: &dyn Fn(&Run) -> Duration| median(runs.iter().map(f).collect());
    let mut peaks: Vec<u64> = runs.iter().map(|r| r.client_peak_bytes).collect();
    peaks.sort();
    Run {
        wall: of(&|r| r.wall),
        exit_code: runs[0].exit_code,
        client_cpu: of(&|r| r.client_cpu),
        server_cpu: of(&|r| r.server_cpu),
        client_peak_bytes: peaks[peaks.len() / 2],
        machine_cpu: of(&|r| r.machine_cpu),
    }
}

/// The header of [`row`]'s table.
pub const TABLE_HEADER: &str = "| run | wall ms | pgplan CPU ms | server CPU ms | CPU floor ms | \
                                pgplan peak memory | machine busy |\n|---|---:|---:|---:|---:|---:|---:|";

/// One Markdown table row of the runs' medians; returns them.
pub fn row(label: &str, runs: &[Run]) -> Run {
    let m = medians(runs);
    println!(
        "| {label} | {:.1} | {:.0} | {:.0} | {:.0} | {} | {:.0}% |",
        ms(m.wall),
        ms(m.client_cpu),
        ms(m.server_cpu),
        ms(median_cpu_floor(runs)),
        if m.client_peak_bytes > 0 {
            format!("{:.1} MiB", m.client_peak_bytes as f64 / (1024.0 * 1024.0))
        } else {
            "–".into()
        },
        100.0 * m.machine_share()
    );
    m
}

/// The median of the runs' CPU floors (not the floor of the medians).
pub fn median_cpu_floor(runs: &[Run]) -> Duration {
    median(runs.iter().map(Run::cpu_floor).collect())
}

pub fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The 1, 5 and 15 minute load averages, to say how busy the machine was.
pub fn load_average() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
