//! Yielding to writers: when a session waiting on pgplan's lock has waited long enough that pgplan
//! gives its lock up, how often a candidate is tried again and after what pause, what a build
//! will cost the server, and which tables are too big to build on by accident.

use std::time::Duration;

/// `--max-writer-wait`'s default: a writer stalls at most this long (plus one poll) behind a
/// candidate's build or its measured runs.
pub const DEFAULT_MAX_WRITER_WAIT: Duration = Duration::from_millis(200);

/// `--max-build-size`'s default: 1 GB of table (heap, TOAST and free-space maps).
pub const DEFAULT_MAX_BUILD_BYTES: u64 = 1024 * 1024 * 1024;

/// How many times one candidate is tried before it is "not measured": the first try and two
/// retries.
pub const ATTEMPTS: u32 = 3;

/// How often the watcher looks for waiting writers: a quarter of the allowed wait, so a writer
/// is released within the wait plus one poll, and never faster than every 10 ms.
pub fn poll_interval(max_wait: Duration) -> Duration {
    (max_wait / 4).clamp(Duration::from_millis(10), Duration::from_millis(100))
}

/// How pgplan treats the writers it blocks, from `--max-writer-wait` and `--max-build-size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterPolicy {
    /// None: `--max-writer-wait off`, writers wait for the whole build and runs (a copy or a
    /// staging server).
    pub max_writer_wait: Option<Duration>,
    /// Candidates on tables larger than this are refused before anything is built.
    pub max_build_bytes: u64,
}

impl Default for WriterPolicy {
    fn default() -> Self {
        Self {
            max_writer_wait: Some(DEFAULT_MAX_WRITER_WAIT),
            max_build_bytes: DEFAULT_MAX_BUILD_BYTES,
        }
    }
}

/// A session that waited on a lock pgplan held.
#[derive(Debug, Clone, PartialEq)]
pub struct WriterWait {
    pub pid: i32,
    pub waited_ms: f64,
    /// The relation it waits to lock, when it waits on one.
    pub relation: Option<String>,
}

impl WriterWait {
    pub fn describe(&self) -> String {
        let on = self
            .relation
            .as_deref()
            .map(|r| format!(" on {r}"))
            .unwrap_or_default();
        format!("session {} waited {:.0} ms{on}", self.pid, self.waited_ms)
    }
}

/// The waiter pgplan must yield to now: the longest waiter, once it has waited `max_wait`.
pub fn must_yield(waits: &[WriterWait], max_wait: Duration) -> Option<&WriterWait> {
    let limit_ms = max_wait.as_secs_f64() * 1000.0;
    waits
        .iter()
        .filter(|w| w.waited_ms.is_finite())
        .max_by(|a, b| a.waited_ms.total_cmp(&b.waited_ms))
        .filter(|w| w.waited_ms >= limit_ms)
}

/// The pause before try `attempt` (1-based; the first try has none): 1 s, then 2 s, doubling up
/// to 8 s, so the writers that made pgplan yield have time to finish. None: no try left.
pub fn pause_before(attempt: u32) -> Option<Duration> {
    match attempt {
        0 | 1 => Some(Duration::ZERO),
        n if n <= ATTEMPTS => Some(Duration::from_secs(1 << (n - 2).min(3))),
        _ => None,
    }
}

/// What a candidate that never got measured says instead of a verdict.
pub fn not_measured(yields: &[WriterWait]) -> String {
    let last = yields
        .last()
        .map(|w| format!("; last: {}", w.describe()))
        .unwrap_or_default();
    format!(
        "not measured (yielded {} times to writers{last}); run it when the table is quieter, or \
         on a copy with --max-writer-wait off",
        yields.len()
    )
}

/// What building an index on a table costs the server, estimated before building.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BuildCost {
    pub table_bytes: u64,
    /// Heap pages the build reads (8 kB each).
    pub pages_to_read: u64,
    /// None when the index's width is unknown.
    pub index_bytes_estimate: Option<u64>,
    /// From the read rate measured on this server; None without one.
    pub expected_build_ms: Option<f64>,
}

/// The build's cost from the table's size, the tuples' count, the key's width in bytes and a
/// measured read rate in bytes per millisecond. A B-tree leaf entry is the key plus an 8-byte
/// index tuple header and a 4-byte line pointer, leaves filled to 90% (fillfactor).
pub fn build_cost(
    table_bytes: u64,
    tuples: Option<f64>,
    key_width_bytes: Option<f64>,
    rate_bytes_per_ms: Option<f64>,
) -> BuildCost {
    let index_bytes_estimate = match (tuples, key_width_bytes) {
        (Some(t), Some(w)) if t >= 0.0 && w >= 0.0 => {
            let per_entry = ((w.max(1.0) + 8.0) / 8.0).ceil() * 8.0 + 4.0;
            Some((t * per_entry / 0.9).ceil() as u64)
        }
        _ => None,
    };
    BuildCost {
        table_bytes,
        pages_to_read: table_bytes.div_ceil(8192),
        index_bytes_estimate,
        expected_build_ms: rate_bytes_per_ms
            .filter(|r| *r > 0.0)
            .map(|r| table_bytes as f64 / r),
    }
}

/// Why a candidate on a table of `table_bytes` is not built, under `max_build_bytes`.
pub fn refuse_build(table: &str, table_bytes: u64, max_build_bytes: u64) -> Option<String> {
    (table_bytes > max_build_bytes).then(|| {
        format!(
            "not built: {table} is {} of table, over --max-build-size {}; building an index reads \
             all of it while writers wait; raise --max-build-size to measure it anyway",
            human_bytes(table_bytes),
            human_bytes(max_build_bytes)
        )
    })
}

/// A size as `88.0 kB`, `1.0 GB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// `--max-writer-wait` as given: None is `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxWriterWait(pub Option<Duration>);

/// Parses `--max-writer-wait` for the command line.
pub fn parse_max_writer_wait_arg(text: &str) -> Result<MaxWriterWait, String> {
    parse_max_writer_wait(text).map(MaxWriterWait)
}

/// Parses `--max-writer-wait`: `off`, or a duration (`200ms`, `1s`; a bare number is ms).
pub fn parse_max_writer_wait(text: &str) -> Result<Option<Duration>, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration or off (examples: 200ms, 1s, off)"))?;
    let ms = match unit.trim() {
        "" | "ms" => value,
        "s" => value * 1000.0,
        "min" => value * 60_000.0,
        other => {
            return Err(format!(
                "unknown unit {other:?} in {text:?}; use ms, s or min"
            ));
        }
    };
    if ms < 1.0 {
        return Err(format!(
            "{text:?} is below 1ms; give a wait of at least 1ms, or off to never yield"
        ));
    }
    if ms > 3_600_000.0 {
        return Err(format!(
            "{text:?} is over an hour; use off to let writers wait for the whole build"
        ));
    }
    Ok(Some(Duration::from_secs_f64(ms / 1000.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(pid: i32, waited_ms: f64) -> WriterWait {
        WriterWait {
            pid,
            waited_ms,
            relation: Some("public.events".into()),
        }
    }

    #[test]
    fn yields_to_the_longest_waiter_once_it_waited_the_limit() {
        let limit = Duration::from_millis(200);
        assert_eq!(must_yield(&[], limit), None);
        assert_eq!(must_yield(&[wait(1, 50.0), wait(2, 199.9)], limit), None);
        let waits = [wait(1, 50.0), wait(2, 350.0), wait(3, 200.0)];
        assert_eq!(must_yield(&waits, limit).map(|w| w.pid), Some(2));
        assert_eq!(must_yield(&[wait(1, f64::NAN)], limit), None);
    }

    #[test]
    fn retries_pause_longer_each_time_and_stop() {
        assert_eq!(pause_before(1), Some(Duration::ZERO));
        assert_eq!(pause_before(2), Some(Duration::from_secs(1)));
        assert_eq!(pause_before(3), Some(Duration::from_secs(2)));
        assert_eq!(pause_before(ATTEMPTS + 1), None);
    }

    #[test]
    fn polls_often_enough_to_release_within_one_poll() {
        assert_eq!(
            poll_interval(Duration::from_millis(200)),
            Duration::from_millis(50)
        );
        assert_eq!(
            poll_interval(Duration::from_millis(1)),
            Duration::from_millis(10)
        );
        assert_eq!(
            poll_interval(Duration::from_secs(60)),
            Duration::from_millis(100)
        );
    }

    #[test]
    fn not_measured_says_how_often_and_to_whom() {
        let text = not_measured(&[wait(7, 210.0), wait(8, 230.4)]);
        assert!(
            text.starts_with("not measured (yielded 2 times to writers"),
            "{text}"
        );
        assert!(
            text.contains("session 8 waited 230 ms on public.events"),
            "{text}"
        );
    }

    #[test]
    fn the_build_cost_comes_from_the_table_and_a_measured_rate() {
        let cost = build_cost(81920, Some(1000.0), Some(4.0), Some(1024.0));
        assert_eq!(cost.pages_to_read, 10);
        // 4-byte key + 8-byte header, aligned to 16, plus a 4-byte line pointer, at 90%.
        assert_eq!(cost.index_bytes_estimate, Some(22223));
        assert_eq!(cost.expected_build_ms, Some(80.0));
        let unknown = build_cost(1, None, Some(4.0), Some(0.0));
        assert_eq!(
            (unknown.pages_to_read, unknown.index_bytes_estimate),
            (1, None)
        );
        assert_eq!(unknown.expected_build_ms, None);
    }

    #[test]
    fn tables_over_the_limit_are_refused() {
        assert_eq!(refuse_build("t", 1024, 1024), None);
        let refusal = refuse_build(
            "public.big",
            500 * 1024 * 1024 * 1024,
            DEFAULT_MAX_BUILD_BYTES,
        )
        .expect("refused");
        assert!(refusal.contains("500.0 GB"), "{refusal}");
        assert!(refusal.contains("--max-build-size 1.0 GB"), "{refusal}");
    }

    #[test]
    fn max_writer_wait_parses_durations_and_off() {
        assert_eq!(parse_max_writer_wait("off"), Ok(None));
        assert_eq!(
            parse_max_writer_wait("200ms"),
            Ok(Some(Duration::from_millis(200)))
        );
        assert_eq!(
            parse_max_writer_wait("1.5s"),
            Ok(Some(Duration::from_millis(1500)))
        );
        assert_eq!(
            parse_max_writer_wait("50"),
            Ok(Some(Duration::from_millis(50)))
        );
        for bad in ["0", "0ms", "fast", "2h", "-1", "5d"] {
            assert!(parse_max_writer_wait(bad).is_err(), "{bad}");
        }
    }
}
