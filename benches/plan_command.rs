//! `pgplan explain` and `pgplan diff` as users run them: the real binary, spawned on plan files,
//! timed from spawn to exit with its report written (to a file, and to a pipe a reader drains),
//! beside a floor built in this same harness: a process that reads the same files, parses them
//! into a `serde_json::Value` and writes that back out as pretty JSON through a buffer, which is
//! what any tool that reads and writes this much JSON pays. With `PGPLAN_BENCH_EXPLAINSQL` (or
//! `explainsql` on `PATH`), ExplainSQL's equivalent commands are timed in the same rounds.
//!
//! Plans: the synthetic pairs of `synthetic/` at 1k, 10k and 100k nodes (and the "before" plans
//! again in the TEXT format, `explain` of each beside `explain` of its JSON), and one-node plans
//! whose Filter is 16k to 256k characters long, in JSON and in TEXT. Runs are interleaved (each
//! round runs every command once), medians are reported; peak memory is the child's maximum
//! resident set (`wait4`, in a small spawner process: see [`spawn`]), for pgplan, the floor and
//! ExplainSQL, beside the budget: the input's size plus the report's.
//!
//! Goals: each command within 1.5× the floor at 10k and 100k nodes, at least 3× faster than
//! ExplainSQL at every size, `diff` at most 2× two `explain`s, `explain` of a TEXT plan at most
//! 2× `explain` of its JSON; peak memory at most the input plus the report; time linear in the
//! condition's length.
//!
//! `cargo bench --bench plan_command`; `PGPLAN_BENCH_SIZES=1000,10000` and
//! `PGPLAN_BENCH_ROUNDS=3` narrow it, `PGPLAN_BENCH_ONLY=text` runs only the TEXT-input and
//! long-condition tables; `PGPLAN_BENCH_WRITE_PLANS=DIR` writes the plans there and stops, to
//! profile a command by hand.

use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

#[allow(dead_code)] // the in-process benchmark uses the generator's other half
mod synthetic;

const PGPLAN: &str = env!("CARGO_BIN_EXE_pgplan");

/// Set to make this binary the floor process instead of the benchmark.
const FLOOR: &str = "PGPLAN_BENCH_VALUE_FLOOR";

/// Lengths of the long Filter, in characters: around the 65,535 where a table crate's 16-bit
/// widths gave out, and up to millions, where finding each line's end again from every `)` of
/// a TEXT plan was quadratic.
const LONG_CONDITIONS: [usize; 7] = [
    16_000, 64_000, 70_000, 128_000, 256_000, 1_024_000, 4_096_000,
];

/// Where a command's report goes.
#[derive(Clone, Copy, PartialEq)]
enum Sink {
    File,
    Pipe,
}

impl Sink {
    fn name(self) -> &'static str {
        match self {
            Sink::File => "file",
            Sink::Pipe => "pipe",
        }
    }
}

/// One measured process run.
#[derive(Clone, Copy)]
struct Run {
    seconds: f64,
    /// User plus system CPU time: on a shared machine, wall time also counts waiting for a core.
    cpu_seconds: f64,
    peak_bytes: u64,
    output_bytes: u64,
}

/// Set to a file's path, the bench runs as the spawner (see [`run`]) and writes its child's
/// resource usage there.
const SPAWN: &str = "PGPLAN_BENCH_SPAWN";

fn main() {
    if let Some(usage_file) = std::env::var_os(SPAWN) {
        spawn(Path::new(&usage_file));
        return;
    }
    if std::env::var_os(FLOOR).is_some() {
        let paths: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with("--"))
            .collect();
        floor(&paths).expect("the floor reads and writes the plans");
        return;
    }
    // `cargo bench` passes `--bench`; nothing else is taken from the command line.
    let sizes: Vec<usize> = std::env::var("PGPLAN_BENCH_SIZES")
        .map(|s| {
            s.split(',')
                .map(|n| n.trim().parse().expect("a size"))
                .collect()
        })
        .unwrap_or_else(|_| vec![1_000, 10_000, 100_000]);
    let rounds: usize = std::env::var("PGPLAN_BENCH_ROUNDS")
        .ok()
        .map(|r| r.parse().expect("a number of rounds"))
        .unwrap_or(5);
    // To profile one command by hand: write the plans and stop.
    if let Some(dir) = std::env::var_os("PGPLAN_BENCH_WRITE_PLANS") {
        let dir = PathBuf::from(dir);
        for &n in &sizes {
            let (before, after) = synthetic::plan_pair(n);
            std::fs::write(dir.join(format!("before-{n}.json")), before).unwrap();
            std::fs::write(dir.join(format!("after-{n}.json")), after).unwrap();
        }
        for chars in LONG_CONDITIONS {
            let plan = synthetic::long_condition_plan(chars);
            std::fs::write(dir.join(format!("long-{chars}.json")), plan).unwrap();
            let plan = synthetic::long_condition_text_plan(chars);
            std::fs::write(dir.join(format!("long-{chars}.txt")), plan).unwrap();
        }
        return;
    }
    let explainsql = explainsql();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let explainsql_note = explainsql
        .as_deref()
        .map(|p| format!("ExplainSQL: {}", p.display()))
        .unwrap_or_else(|| {
            "ExplainSQL: not found, its columns are empty (put `explainsql` on PATH or set \
             PGPLAN_BENCH_EXPLAINSQL)"
                .into()
        });
    eprintln!("pgplan {PGPLAN}\n{explainsql_note}");
    println!("{explainsql_note}\n");

    // `PGPLAN_BENCH_ONLY=text`: only the TEXT-input and long-condition tables.
    let commands = std::env::var("PGPLAN_BENCH_ONLY").map_or(true, |only| only != "text");
    if commands {
        println!(
            "| nodes | input | command | to | floor | pgplan | ÷ floor | ExplainSQL | ExplainSQL ÷ pgplan | pgplan peak | floor peak | ExplainSQL peak | input + report | report |"
        );
        println!("|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    }
    let mut diff_ratios = Vec::new();
    for &n in sizes.iter().filter(|_| commands) {
        let (before, after) = synthetic::plan_pair(n);
        let before_path = dir.path().join(format!("before-{n}.json"));
        let after_path = dir.path().join(format!("after-{n}.json"));
        std::fs::write(&before_path, &before).unwrap();
        std::fs::write(&after_path, &after).unwrap();
        let input_mb = before.len() as f64 / 1e6;
        let inputs_mb = (before.len() + after.len()) as f64 / 1e6;
        drop((before, after));
        let b = before_path.to_str().unwrap();
        let a = after_path.to_str().unwrap();
        let rounds = if n >= 100_000 { rounds.min(3) } else { rounds };

        struct Case {
            command: String,
            sink: Sink,
            pgplan: Vec<String>,
            floor: Vec<String>,
            explainsql: Option<Vec<String>>,
        }
        let mut cases = Vec::new();
        for sink in [Sink::File, Sink::Pipe] {
            for format in ["json", "text"] {
                cases.push(Case {
                    command: format!("explain --format {format}"),
                    sink,
                    pgplan: args(&["explain", "--format", format, "--color", "never", b]),
                    floor: args(&[b]),
                    explainsql: Some(args(&[
                        "--print", "--format", format, "--color", "never", b,
                    ])),
                });
                cases.push(Case {
                    command: format!("diff --format {format}"),
                    sink,
                    pgplan: args(&["diff", "--format", format, "--color", "never", b, a]),
                    floor: args(&[b, a]),
                    explainsql: Some(args(&[
                        "diff", "--format", format, "--color", "never", b, a,
                    ])),
                });
            }
        }
        let out = dir.path().join("report");
        let mut results: Vec<(Vec<Run>, Vec<Run>, Vec<Run>)> =
            cases.iter().map(|_| (vec![], vec![], vec![])).collect();
        for round in 0..rounds {
            for (case, result) in cases.iter().zip(&mut results) {
                result
                    .0
                    .push(run(Path::new(PGPLAN), &case.pgplan, &[], case.sink, &out));
                let me = std::env::current_exe().unwrap();
                result
                    .1
                    .push(run(&me, &case.floor, &[(FLOOR, "1")], case.sink, &out));
                if let (Some(tool), Some(esql)) = (&explainsql, &case.explainsql) {
                    result.2.push(run(tool, esql, &[], case.sink, &out));
                }
            }
            eprintln!("{n} nodes: round {} of {rounds} done", round + 1);
        }
        let mut explain_s = std::collections::HashMap::new();
        for (case, (pgplan, floor, esql)) in cases.iter().zip(&results) {
            let p = median(pgplan.iter().map(|r| r.seconds));
            let f = median(floor.iter().map(|r| r.seconds));
            let p_cpu = median(pgplan.iter().map(|r| r.cpu_seconds));
            let f_cpu = median(floor.iter().map(|r| r.cpu_seconds));
            let peak = median(pgplan.iter().map(|r| r.peak_bytes as f64));
            let floor_peak = median(floor.iter().map(|r| r.peak_bytes as f64));
            let report = pgplan[0].output_bytes as f64;
            let (esql_s, esql_ratio, esql_peak) = if esql.is_empty() {
                ("—".to_owned(), "—".to_owned(), "—".to_owned())
            } else {
                let e = median(esql.iter().map(|r| r.seconds));
                let e_cpu = median(esql.iter().map(|r| r.cpu_seconds));
                let e_peak = median(esql.iter().map(|r| r.peak_bytes as f64));
                (
                    format!("{} ({} CPU)", seconds(e), seconds(e_cpu)),
                    format!("**{:.1}×** ({:.1}× CPU)", e / p, e_cpu / p_cpu),
                    format!("{:.0} MB", e_peak / 1e6),
                )
            };
            let input = if case.command.starts_with("diff") {
                inputs_mb
            } else {
                input_mb
            };
            if case.command.starts_with("explain") {
                explain_s.insert((case.command.replace("explain", ""), case.sink.name()), p);
            } else if let Some(e) =
                explain_s.get(&(case.command.replace("diff", ""), case.sink.name()))
            {
                diff_ratios.push(format!(
                    "| {n} | `{}` | {} | **{:.2}×** |",
                    case.command,
                    case.sink.name(),
                    p / (2.0 * e)
                ));
            }
            println!(
                "| {n} | {input:.1} MB | `{}` | {} | {} ({} CPU) | {} ({} CPU) | **{:.2}×** ({:.2}× CPU) | {esql_s} | {esql_ratio} | {:.0} MB | {:.0} MB | {esql_peak} | {:.0} MB | {:.1} MB |",
                case.command,
                case.sink.name(),
                seconds(f),
                seconds(f_cpu),
                seconds(p),
                seconds(p_cpu),
                p / f,
                p_cpu / f_cpu,
                peak / 1e6,
                floor_peak / 1e6,
                input + report / 1e6,
                report / 1e6,
            );
        }
        let _ = std::fs::remove_file(&before_path);
        let _ = std::fs::remove_file(&after_path);
    }

    // Then the same plan read from its TEXT form and from its JSON, the report to a file: reading
    // text costs at most 2× reading JSON. Interleaved rounds, CPU time beside wall time.
    println!();
    if commands {
        println!("| nodes | command | to | diff ÷ two explains (wall) |");
        println!("|---:|---|---|---:|");
        for line in diff_ratios {
            println!("{line}");
        }
        println!();
    }

    println!(
        "| nodes | TEXT input | `explain` of the JSON | `explain` of the TEXT | TEXT ÷ JSON |"
    );
    println!("|---:|---:|---:|---:|---:|");
    for &n in &sizes {
        let json_path = dir.path().join(format!("before-{n}.json"));
        let text_path = dir.path().join(format!("before-{n}.txt"));
        std::fs::write(&json_path, synthetic::plan_pair(n).0).unwrap();
        let text = synthetic::text_plan(n);
        let text_mb = text.len() as f64 / 1e6;
        std::fs::write(&text_path, text).unwrap();
        let out = dir.path().join("report");
        let rounds = if n >= 100_000 { rounds.min(3) } else { rounds };
        let (mut json_runs, mut text_runs) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            for (path, runs) in [(&json_path, &mut json_runs), (&text_path, &mut text_runs)] {
                let a = explain_text_args(path.to_str().unwrap());
                runs.push(run(Path::new(PGPLAN), &a, &[], Sink::File, &out));
            }
        }
        let (j, t) = (
            median(json_runs.iter().map(|r| r.seconds)),
            median(text_runs.iter().map(|r| r.seconds)),
        );
        let (j_cpu, t_cpu) = (
            median(json_runs.iter().map(|r| r.cpu_seconds)),
            median(text_runs.iter().map(|r| r.cpu_seconds)),
        );
        println!(
            "| {n} | {text_mb:.1} MB | {} ({} CPU) | {} ({} CPU) | **{:.2}×** ({:.2}× CPU) |",
            seconds(j),
            seconds(j_cpu),
            seconds(t),
            seconds(t_cpu),
            t / j,
            t_cpu / j_cpu
        );
        let _ = std::fs::remove_file(&json_path);
        let _ = std::fs::remove_file(&text_path);
    }

    // What the process holds before it reads anything: its own code and libc's pages, which
    // every peak below includes.
    let bare = dir.path().join("bare");
    let bare_peak = median((0..rounds).map(|_| {
        run(
            Path::new(PGPLAN),
            &args(&["--version"]),
            &[],
            Sink::File,
            &bare,
        )
        .peak_bytes as f64
    }));
    println!();
    println!(
        "`pgplan --version`, the process alone: {:.1} MB resident at its peak.",
        bare_peak / 1e6
    );
    println!();
    println!(
        "| Filter length | explain text to a file | per 1,000 characters | from a TEXT plan | ExplainSQL | peak (JSON, TEXT) | input + report |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for chars in LONG_CONDITIONS {
        let path = dir.path().join(format!("long-{chars}.json"));
        std::fs::write(&path, synthetic::long_condition_plan(chars)).unwrap();
        let text_path = dir.path().join(format!("long-{chars}.txt"));
        std::fs::write(&text_path, synthetic::long_condition_text_plan(chars)).unwrap();
        let p = path.to_str().unwrap();
        let out = dir.path().join("report");
        let mut pgplan = Vec::new();
        let mut from_text = Vec::new();
        let mut esql = Vec::new();
        let mut peaks = (Vec::new(), Vec::new());
        let mut report_bytes = 0;
        for _ in 0..rounds {
            let a = explain_text_args(p);
            let r = run(Path::new(PGPLAN), &a, &[], Sink::File, &out);
            pgplan.push(r.seconds);
            peaks.0.push(r.peak_bytes as f64);
            report_bytes = r.output_bytes;
            let a = explain_text_args(text_path.to_str().unwrap());
            let r = run(Path::new(PGPLAN), &a, &[], Sink::File, &out);
            from_text.push(r.seconds);
            peaks.1.push(r.peak_bytes as f64);
            if let Some(tool) = &explainsql {
                let a = args(&["--print", "--format", "text", "--color", "never", p]);
                esql.push(run(tool, &a, &[], Sink::File, &out).seconds);
            }
        }
        let t = median(pgplan.into_iter());
        let input_bytes = std::fs::metadata(&path).unwrap().len();
        println!(
            "| {chars} | {} | {:.3} ms | {} | {} | {:.1} MB, {:.1} MB | {:.2} MB |",
            seconds(t),
            t * 1e3 / (chars as f64 / 1e3),
            seconds(median(from_text.into_iter())),
            if esql.is_empty() {
                "—".into()
            } else {
                seconds(median(esql.into_iter()))
            },
            median(peaks.0.into_iter()) / 1e6,
            median(peaks.1.into_iter()) / 1e6,
            (input_bytes + report_bytes) as f64 / 1e6,
        );
    }
}

/// `pgplan explain --format text` of `plan`, colour off: the command of the TEXT tables.
fn explain_text_args(plan: &str) -> Vec<String> {
    args(&["explain", "--format", "text", "--color", "never", plan])
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

/// ExplainSQL's binary: `PGPLAN_BENCH_EXPLAINSQL`, else `explainsql` on `PATH`.
fn explainsql() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PGPLAN_BENCH_EXPLAINSQL") {
        return Some(PathBuf::from(path));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join("explainsql"))
        .find(|p| p.is_file())
}

/// The spawner: runs the program its arguments name, with this process's standard streams, and
/// writes the child's CPU time and peak memory to `usage_file`. The bench measures through it
/// because a process's peak memory (`ru_maxrss`) counts the memory of the process it was
/// spawned from, which it keeps until exec: spawned straight from the bench, which held the
/// plans it made, every command's peak was at least the bench's own.
// The child is reaped by wait4, which also gives its peak memory, not by Child::wait.
#[allow(clippy::zombie_processes)]
fn spawn(usage_file: &Path) {
    let mut args = std::env::args_os().skip(1);
    let program = args.next().expect("the spawner is given a program");
    let child = Command::new(&program)
        .args(args)
        .env_remove(SPAWN)
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", Path::new(&program).display()));
    let (status, usage) = wait4(child.id() as libc::pid_t);
    let cpu = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    std::fs::write(
        usage_file,
        format!(
            "{} {}",
            cpu(usage.ru_utime) + cpu(usage.ru_stime),
            // ru_maxrss is in kilobytes on Linux.
            usage.ru_maxrss as u64 * 1024
        ),
    )
    .unwrap();
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        1
    };
    std::process::exit(code);
}

/// Runs `program` to completion with its standard output going to `sink`, and measures it: the
/// wall time from spawn to exit, and, through the spawner, the program's own CPU time and peak
/// memory.
// The child is reaped by wait4 (for its status), not by Child::wait.
#[allow(clippy::zombie_processes)]
fn run(program: &Path, args: &[String], env: &[(&str, &str)], sink: Sink, file: &Path) -> Run {
    let usage_file = file.with_extension("usage");
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .arg(program)
        .args(args)
        .env(SPAWN, &usage_file)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    for (k, v) in env {
        command.env(k, v);
    }
    command.stdout(match sink {
        Sink::File => Stdio::from(std::fs::File::create(file).unwrap()),
        Sink::Pipe => Stdio::piped(),
    });
    let start = Instant::now();
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    // The reader drains the pipe as fast as it fills, as `| jq` or `| less` would.
    let reader = child.stdout.take().map(|mut pipe| {
        std::thread::spawn(move || {
            let mut buffer = vec![0u8; 1 << 16];
            let mut total = 0u64;
            loop {
                match pipe.read(&mut buffer) {
                    Ok(0) | Err(_) => break total,
                    Ok(n) => total += n as u64,
                }
            }
        })
    });
    let (status, _) = wait4(child.id() as libc::pid_t);
    let seconds = start.elapsed().as_secs_f64();
    let piped = reader.map(|r| r.join().unwrap());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{} {args:?} failed: {status}",
        program.display()
    );
    let output_bytes = piped.unwrap_or_else(|| std::fs::metadata(file).unwrap().len());
    assert!(
        output_bytes > 0,
        "{} {args:?} wrote nothing",
        program.display()
    );
    let usage = std::fs::read_to_string(&usage_file).unwrap();
    let (cpu_seconds, peak_bytes) = usage.split_once(' ').unwrap();
    Run {
        seconds,
        cpu_seconds: cpu_seconds.parse().unwrap(),
        peak_bytes: peak_bytes.parse().unwrap(),
        output_bytes,
    }
}

/// Waits for the child and takes its resource usage: std's `wait` gives the status only.
fn wait4(pid: libc::pid_t) -> (libc::c_int, libc::rusage) {
    let mut status = 0;
    // SAFETY: rusage is plain data the kernel fills in; the pid is our own child's.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return (status, usage);
        }
        let error = io::Error::last_os_error();
        assert_eq!(error.kind(), io::ErrorKind::Interrupted, "wait4: {error}");
    }
}

/// The floor: read each file, parse it into a `serde_json::Value`, write it back as pretty JSON.
fn floor(paths: &[String]) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    for path in paths {
        let text = std::fs::read_to_string(path)?;
        let mut reader = serde_json::Deserializer::from_str(&text);
        reader.disable_recursion_limit();
        let value: serde_json::Value = serde::Deserialize::deserialize(&mut reader)?;
        serde_json::to_writer_pretty(&mut out, &value)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

fn seconds(s: f64) -> String {
    if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}
