//! Fuzz target for the TEXT, YAML and XML readers: arbitrary bytes read as a plan body, with a
//! root node line put in front of input that does not start like a plan, so that mutations reach
//! the property, worker, subplan and summary lines instead of stopping at format detection.
//! Nothing may panic; an error must be one line; a plan read must render and diff with itself
//! to no changes; choosing a plan past the last one is an error, not a panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pgplan::plan::{Analysis, Comparison, diff, read_plan};
use pgplan::report::TextOptions;
use pgplan::report::text::{write_diff, write_explain};

const ROOT: &str = "Seq Scan on t  (cost=0.00..1.00 rows=1 width=4) (actual time=0.010..0.020 rows=1 loops=1)\n";

fuzz_target!(|data: &[u8]| {
    let raw = String::from_utf8_lossy(data);
    let first = raw.trim_start();
    let input = if first.starts_with(['[', '{', '<', '-']) || first.contains("plan:") {
        raw.into_owned()
    } else {
        format!("{ROOT}{raw}")
    };
    let choice = (data.len() % 3 == 0).then_some(data.len() % 5);
    let read = match read_plan(&input, choice) {
        Ok(read) => read,
        Err(e) => {
            let message = e.to_string();
            assert!(!message.trim().is_empty(), "an empty error");
            assert!(
                !message.contains(['\n', '\r']),
                "a multi-line error: {message:?}"
            );
            return;
        }
    };
    assert!(read.number >= 1 && read.number <= read.count);
    let analysis = Analysis::of(read.plan);
    let itself = diff(
        &analysis.plan,
        &analysis.metrics,
        &analysis.plan,
        &analysis.metrics,
    );
    assert!(
        itself.changes.is_empty(),
        "a plan differs from itself: {:?}",
        itself.changes
    );
    let options = TextOptions {
        color: false,
        width: data.len().is_multiple_of(3).then_some(60),
    };
    let mut out = Vec::new();
    write_explain(&mut out, "fuzz", &analysis, &options).expect("writing to a Vec");
    let comparison = Comparison::of(analysis.clone(), analysis);
    out.clear();
    write_diff(&mut out, ("before", "after"), &comparison, &options).expect("writing to a Vec");
});
