//! Fuzz target for the plan reader and everything that consumes what it reads: arbitrary bytes
//! (as lossy UTF-8, which is what reading a file with stray bytes gives) through `parse_plan`,
//! then figures, findings, a diff of the plan with itself, and the text renderers.
//! Nothing may panic; an error must be one line; a plan diffed with itself has no changes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pgplan::plan::{Analysis, Comparison, diff, parse_plan};
use pgplan::report::TextOptions;
use pgplan::report::text::{write_diff, write_explain};

fuzz_target!(|data: &[u8]| {
    let input = String::from_utf8_lossy(data);
    let plan = match parse_plan(&input) {
        Ok(plan) => plan,
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
    let analysis = Analysis::of(plan);
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

    // The input's length picks the options, so that a crash reproduces from the input alone.
    let options = TextOptions {
        color: data.len().is_multiple_of(2),
        width: data.len().is_multiple_of(3).then_some(60),
    };
    let mut out = Vec::new();
    write_explain(&mut out, "fuzz", &analysis, &options).expect("writing to a Vec");
    let comparison = Comparison::of(analysis.clone(), analysis);
    out.clear();
    write_diff(&mut out, ("before", "after"), &comparison, &options).expect("writing to a Vec");
});
