//! Benchmarks of the plan core on synthetic plans of 1k, 10k and 100k nodes: reading a plan
//! against serde_json reading the same bytes into a `Value`, reading plus figures and findings,
//! and diffing two analysed plans.
//!
//! The plans come from `synthetic/` (shared with the whole-command benchmark, `plan_command`):
//! PostgreSQL 18's EXPLAIN (ANALYZE, BUFFERS, VERBOSE, FORMAT JSON) in shape and keys, each
//! "after" plan the "before" one with realistic edits.
//!
//! The goals: reading plus figures within 2× of `serde_json::from_str::<Value>` on the same
//! bytes, and a diff that grows no worse than n log n.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pgplan::plan::{Analysis, diff, parse_plan};

#[allow(dead_code)] // the whole-command benchmark uses the long-condition plan
mod synthetic;

use synthetic::{plan_pair, text_plan};

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

fn benches(c: &mut Criterion) {
    let pairs: Vec<(usize, String, String)> = SIZES
        .iter()
        .map(|&n| {
            let (before, after) = plan_pair(n);
            (n, before, after)
        })
        .collect();

    // Check the inputs once and say what they are: a benchmark of inputs the parser rejects, or
    // of plans the diff finds nothing in, would measure nothing.
    for (n, before, after) in &pairs {
        let (b, a) = (
            Analysis::of(parse_plan(before).expect("the before plan reads")),
            Analysis::of(parse_plan(after).expect("the after plan reads")),
        );
        serde_json::from_str::<serde_json::Value>(before).expect("the baseline reads it too");
        let d = diff(&b.plan, &b.metrics, &a.plan, &a.metrics);
        let depth = b.plan.nodes.iter().map(|n| n.depth).max().unwrap_or(0);
        let mean_depth =
            b.plan.nodes.iter().map(|n| n.depth).sum::<usize>() as f64 / b.plan.nodes.len() as f64;
        eprintln!(
            "{n} nodes: before {} nodes, {:.1} MB, depth {depth} (mean {mean_depth:.1}); after {} nodes; {} findings; {} changes",
            b.plan.nodes.len(),
            before.len() as f64 / 1e6,
            a.plan.nodes.len(),
            b.findings.len(),
            d.changes.len(),
        );
    }

    // The TEXT form of each "before" plan reads as the same tree with the same figures.
    let texts: Vec<(usize, String)> = pairs.iter().map(|(n, _, _)| (*n, text_plan(*n))).collect();
    for ((n, before, _), (_, text)) in pairs.iter().zip(&texts) {
        let json = parse_plan(before).unwrap();
        let from_text = parse_plan(text).expect("the text plan reads");
        assert_eq!(json.nodes.len(), from_text.nodes.len(), "{n} nodes");
        for (j, t) in json.nodes.iter().zip(&from_text.nodes) {
            assert_eq!(
                (
                    j.parent,
                    &j.node_type,
                    j.plan_rows,
                    j.actual.map(|a| a.rows)
                ),
                (
                    t.parent,
                    &t.node_type,
                    t.plan_rows,
                    t.actual.map(|a| a.rows)
                )
            );
            assert_eq!(j.buffers, t.buffers);
        }
        eprintln!(
            "{n} nodes: TEXT {:.1} MB (JSON {:.1} MB)",
            text.len() as f64 / 1e6,
            before.len() as f64 / 1e6
        );
    }

    let configure = |group: &mut criterion::BenchmarkGroup<'_, _>, n: usize| {
        // The 100k plans take a large fraction of a second per read: ten samples are plenty.
        if n >= 100_000 {
            group
                .sample_size(10)
                .measurement_time(Duration::from_secs(20));
        } else {
            group
                .sample_size(20)
                .measurement_time(Duration::from_secs(5));
        }
    };

    let mut group = c.benchmark_group("value");
    for (n, before, _) in &pairs {
        configure(&mut group, *n);
        group.throughput(Throughput::Bytes(before.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), before, |b, json| {
            b.iter(|| serde_json::from_str::<serde_json::Value>(black_box(json)).unwrap())
        });
    }
    group.finish();

    let mut group = c.benchmark_group("parse");
    for (n, before, _) in &pairs {
        configure(&mut group, *n);
        group.throughput(Throughput::Bytes(before.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), before, |b, json| {
            b.iter(|| parse_plan(black_box(json)).unwrap())
        });
    }
    group.finish();

    // Reading the same plan from TEXT: the goal is at most 2× reading its JSON ("parse").
    let mut group = c.benchmark_group("parse_text");
    for (n, text) in &texts {
        configure(&mut group, *n);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), text, |b, text| {
            b.iter(|| parse_plan(black_box(text)).unwrap())
        });
    }
    group.finish();

    let mut group = c.benchmark_group("parse_figures");
    for (n, before, _) in &pairs {
        configure(&mut group, *n);
        group.throughput(Throughput::Bytes(before.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), before, |b, json| {
            b.iter(|| Analysis::of(parse_plan(black_box(json)).unwrap()))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("diff");
    for (n, before, after) in &pairs {
        configure(&mut group, *n);
        let b = Analysis::of(parse_plan(before).unwrap());
        let a = Analysis::of(parse_plan(after).unwrap());
        group.throughput(Throughput::Elements(
            (b.plan.nodes.len() + a.plan.nodes.len()) as u64,
        ));
        group.bench_function(BenchmarkId::from_parameter(n), |bench| {
            bench.iter(|| {
                diff(
                    black_box(&b.plan),
                    &b.metrics,
                    black_box(&a.plan),
                    &a.metrics,
                )
            })
        });
    }
    group.finish();
}

criterion_group!(plan, benches);
criterion_main!(plan);
