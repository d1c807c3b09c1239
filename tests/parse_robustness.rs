//! Deterministic mutation testing of the plan reader: every recorded plan in `fixtures/`, broken
//! in many ways (truncated, characters flipped, numbers swapped for huge, negative or non-numbers,
//! keys deleted or renamed, nested deeply), must be read or rejected with a one-line message,
//! never a panic. A fast stand-in for the cargo-fuzz target in `fuzz/`, run by `cargo test`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use pgplan::plan::{Analysis, diff, parse_plan};

fn fixtures() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["plans", "story", "advise"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json" || e == "txt") {
                files.push(path);
            }
        }
    }
    // The TEXT, YAML and XML readers, and psql's table styles, on two versions' recordings.
    for entry in std::fs::read_dir(root.join("formats")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let format = path
            .extension()
            .is_some_and(|e| e == "txt" || e == "yaml" || e == "xml" || e == "log");
        if format && (name.contains(".pg13.") || name.contains(".pg18.")) {
            files.push(path);
        }
    }
    files.sort();
    assert!(
        files.len() >= 199,
        "fixtures missing: found {}",
        files.len()
    );
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// How many inputs were checked, to say so at the end.
static CHECKED: AtomicUsize = AtomicUsize::new(0);

/// Reads `input`; on success, figures, findings and a diff against the unmutated plan must not
/// panic either; on failure, the message must be one non-empty line (errors are printed as one).
fn check(fixture: &str, mutation: &str, input: &str, original: &Analysis) {
    CHECKED.fetch_add(1, Ordering::Relaxed);
    let outcome = catch_unwind(AssertUnwindSafe(|| match parse_plan(input) {
        Ok(plan) => {
            let analysis = Analysis::of(plan);
            diff(
                &original.plan,
                &original.metrics,
                &analysis.plan,
                &analysis.metrics,
            );
            Ok(())
        }
        Err(e) => Err(e.to_string()),
    }));
    match outcome {
        Err(_) => panic!("{fixture}, {mutation}: the reader panicked"),
        Ok(Err(message)) => {
            assert!(
                !message.trim().is_empty(),
                "{fixture}, {mutation}: empty error message"
            );
            assert!(
                !message.contains(['\n', '\r']),
                "{fixture}, {mutation}: a multi-line error message: {message:?}"
            );
        }
        Ok(Ok(())) => {}
    }
}

/// About `count` positions spread over `text`, moved back to a character boundary. `shift`
/// (the fixture's number) moves them, so that the fixtures of one query, recorded on six
/// versions, are cut in different places.
fn positions(text: &str, count: usize, shift: usize) -> Vec<usize> {
    let stride = (text.len() / count).max(1);
    let mut out: Vec<usize> = (shift.wrapping_mul(7_919) % stride..text.len())
        .step_by(stride)
        .map(|mut i| {
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        })
        .collect();
    out.dedup();
    out
}

/// The byte ranges of the JSON numbers in `text` (outside strings).
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let (mut i, mut in_string) = (0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
        } else if b == b'-' || b.is_ascii_digit() {
            let start = i;
            while i < bytes.len()
                && matches!(bytes[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
            {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

fn splice(text: &str, range: (usize, usize), with: &str) -> String {
    format!("{}{with}{}", &text[..range.0], &text[range.1..])
}

const NUMBER_SWAPS: [&str; 14] = [
    "1e400",
    "-1e400",
    "1e308",
    "-1",
    "-0",
    "0.0000000001",
    "18446744073709551616",
    "-9223372036854775809",
    "1e-400",
    "\"many\"",
    "null",
    "true",
    "[]",
    "{}",
];

const FLIPS: [&str; 14] = [
    "\"", "{", "}", "[", "]", ",", ":", "\\", "\\n", "0", "x", "\u{0}", "é", "\n",
];

/// Keys whose absence or odd values exercise the reader's and the figures' edge cases.
const KEYS: [&str; 14] = [
    "\"Plan\"",
    "\"Node Type\"",
    "\"Plans\"",
    "\"Actual Loops\"",
    "\"Actual Rows\"",
    "\"Plan Rows\"",
    "\"Relation Name\"",
    "\"Parent Relationship\"",
    "\"Shared Hit Blocks\"",
    "\"Workers\"",
    "\"Planning\"",
    "\"Triggers\"",
    "\"Settings\"",
    "\"Output\"",
];

/// Values of the wrong type for a key.
const ODD_VALUES: [&str; 6] = ["null", "7", "\"x\"", "[1]", "{\"a\": 1}", "[[[[]]]]"];

/// Local mutations of fixture number `index`: each fixture gets a different share of them.
fn mutate(index: usize, name: &str, text: &str, original: &Analysis) {
    // Truncation anywhere: a plan cut short by a copy and paste.
    for at in positions(text, 16, index) {
        check(name, &format!("truncated at {at}"), &text[..at], original);
    }
    // One character replaced by a structural or awkward one.
    for (n, at) in positions(text, 12, index).into_iter().enumerate() {
        let end = at + text[at..].chars().next().map_or(0, char::len_utf8);
        let flip = FLIPS[(n + index) % FLIPS.len()];
        check(
            name,
            &format!("{flip:?} at {at}"),
            &splice(text, (at, end), flip),
            original,
        );
    }
    // Numbers: every number at once, then single numbers, swapped for each odd value.
    let found = numbers(text);
    for swap in NUMBER_SWAPS {
        let mut all = text.to_owned();
        for &range in found.iter().rev() {
            all = splice(&all, range, swap);
        }
        check(name, &format!("every number {swap}"), &all, original);
    }
    let stride = (found.len() / 6).max(1);
    for (n, &range) in found
        .iter()
        .skip(index % stride)
        .step_by(stride)
        .enumerate()
    {
        let swap = NUMBER_SWAPS[(n + index) % NUMBER_SWAPS.len()];
        check(
            name,
            &format!("number at {} → {swap}", range.0),
            &splice(text, range, swap),
            original,
        );
    }
    // Keys: the first occurrence deleted (with its value when it is on one line), renamed with a
    // line break in it, or given a value of another type. Half the keys per fixture, in turn.
    for key in KEYS.iter().skip(index % 2).step_by(2) {
        let Some(at) = text.find(key) else { continue };
        let line_end = text[at..].find('\n').map_or(text.len(), |e| at + e);
        check(
            name,
            &format!("{key} line deleted"),
            &splice(text, (at, line_end), ""),
            original,
        );
        check(
            name,
            &format!("{key} renamed"),
            &splice(text, (at, at + key.len()), "\"Renamed\\nKey\""),
            original,
        );
        let value_at = at + key.len();
        if let Some(colon) = text[value_at..].find(':') {
            let v = value_at + colon + 1;
            for odd in ODD_VALUES.iter().cycle().skip(index % 3).step_by(3).take(2) {
                check(
                    name,
                    &format!("{key} value → {odd}"),
                    &splice(text, (v, v), &format!(" {odd}, \"Was\":")),
                    original,
                );
            }
        }
    }
}

/// Structural mutations of one plan, beyond what local edits reach.
fn nest(name: &str, text: &str, original: &Analysis) {
    let trimmed = text.trim();
    // The whole document wrapped in arrays, and as several plans.
    check(name, "wrapped", &format!("[{trimmed}]"), original);
    check(name, "twice", &format!("[{trimmed}, {trimmed}]"), original);
    let deep = 5_000;
    check(
        name,
        "wrapped deep",
        &format!("{}{trimmed}{}", "[".repeat(deep), "]".repeat(deep)),
        original,
    );
    // A deeply nested value under the first node's first key: deeper than any stack if read
    // recursively without bound.
    if let Some(at) = text.find("\"Node Type\"") {
        for depth in [100, 3_000, 200_000] {
            let value = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let input = splice(text, (at, at), &format!("\"Deep\": {value}, "));
            check(
                name,
                &format!("value nested {depth} deep"),
                &input,
                original,
            );
            let object = format!("{}1{}", "{\"k\": ".repeat(depth), "}".repeat(depth));
            let input = splice(text, (at, at), &format!("\"Deep\": {object}, "));
            check(
                name,
                &format!("object nested {depth} deep"),
                &input,
                original,
            );
        }
    }
}

#[test]
fn mutated_fixtures_never_panic_and_errors_are_one_line() {
    let fixtures = fixtures();
    let stand_in = Analysis::of(parse_plan(r#"{"Plan": {"Node Type": "Result"}}"#).unwrap());
    for (index, (name, text)) in fixtures.iter().enumerate() {
        // text_format fixtures are there to be rejected; they are mutated all the same.
        let original = parse_plan(text).map(Analysis::of);
        mutate(index, name, text, original.as_ref().unwrap_or(&stand_in));
    }
    // Structural mutations are costlier: a few fixtures cover them.
    for (name, text) in fixtures
        .iter()
        .filter(|(n, _)| n.contains(".pg18.") && n.ends_with(".json"))
        .take(6)
    {
        let original = Analysis::of(parse_plan(text).unwrap());
        nest(name, text, &original);
    }
    // A chain of nodes deeper than MAX_PLAN_DEPTH.
    let chain = format!(
        "{{\"Plan\": {}{{\"Node Type\": \"Result\"}}{}}}",
        "{\"Node Type\": \"Limit\", \"Plans\": [".repeat(1_100),
        "]}".repeat(1_100)
    );
    check("-", "1100-level chain", &chain, &stand_in);
    // The same as a TEXT plan: each level's arrow two columns further in.
    let mut text = String::from("Limit  (cost=0.00..1.00 rows=1 width=4)\n");
    for level in 0..1_100 {
        text.push_str(&" ".repeat(2 + 6 * level));
        text.push_str("->  Limit  (cost=0.00..1.00 rows=1 width=4)\n");
    }
    check("-", "1100-level TEXT chain", &text, &stand_in);
    assert_eq!(
        parse_plan(&text).unwrap_err().to_string(),
        pgplan::plan::PlanError::TooDeep.to_string()
    );
    eprintln!(
        "{} mutated inputs from {} fixtures",
        CHECKED.load(Ordering::Relaxed),
        fixtures.len()
    );
}
