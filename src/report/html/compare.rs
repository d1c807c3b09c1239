//! `pgplan compare --format html`: the verdict on top, the ranking, and for each candidate its
//! figures and the baseline's plan beside the candidate's, matched nodes aligned.

use std::fmt::Write as _;
use std::io::{self, Write};

use super::plan::comparison_body;
use super::{element, escape, page};
use crate::compare::{CompareReport, Figures, Verdict};
use crate::format::{bytes, change, count, ms};
use crate::plan::findings::node_label;
use crate::report::compare::time_change;

fn verdict_class(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pays => "pays",
        Verdict::DoesNotPay => "does_not_pay",
        Verdict::Unused => "unused",
    }
}

/// The body of the compare report, for a page of its own or the demo's.
pub fn compare_body(report: &CompareReport) -> String {
    let mut html = String::new();
    let _ = writeln!(
        html,
        "<h1>pgplan compare</h1>\n<p class=\"meta\">PostgreSQL {} · {} · min gain {}%</p>",
        escape(&report.server_version),
        if report.request.mode.is_estimate() {
            "estimates only: verdict on the estimated cost".to_owned()
        } else {
            format!(
                "EXPLAIN (ANALYZE, BUFFERS), 1 {} + {} warm run(s) per index (warm = median) · verdict on pages touched",
                if report.request.cold {
                    "cold run (the query's tables and indexes evicted from shared buffers first)"
                } else {
                    "first run (on the cache as it was)"
                },
                report.request.runs
            )
        },
        count(report.request.min_gain_percent)
    );
    match report.best() {
        Some(best) => {
            let _ = writeln!(
                html,
                "<div class=\"verdict good\" id=\"verdict\"><b>Best: {}</b> pays, pages touched {}<pre>{}</pre></div>",
                escape(report.name(best.index)),
                escape(&change(
                    best.warm.0.pages_touched,
                    best.warm.1.pages_touched,
                    "fewer",
                    "more"
                )),
                escape(&report.outcomes[best.index].spec.user_sql())
            );
        }
        None => {
            let _ = writeln!(
                html,
                "<div class=\"verdict bad\" id=\"verdict\"><b>No candidate pays</b>: none cuts {} by {}% or more.</div>",
                if report.request.mode.is_estimate() {
                    "the query's estimated cost"
                } else {
                    "the pages the query touches"
                },
                count(report.request.min_gain_percent)
            );
        }
    }
    let _ = writeln!(
        html,
        "<h2>Query</h2><p class=\"meta\">{}</p><pre class=\"query\">{}</pre>",
        escape(&report.request.query_source),
        escape(&report.request.query.text)
    );
    ranking(&mut html, report);
    for (i, judged) in report.ranking.iter().enumerate() {
        let name = report.name(judged.index);
        let _ = write!(
            html,
            "<details class=\"candidate\" id=\"candidate-{}\"{}><summary><h2 style=\"display:inline\">{}. ",
            judged.index + 1,
            if i == 0 { " open" } else { "" },
            i + 1
        );
        element(&mut html, "span", "", name);
        element(
            &mut html,
            "span",
            &format!("badge {}", verdict_class(judged.verdict)),
            judged.verdict.as_str(),
        );
        html.push_str("</h2></summary>\n");
        element(
            &mut html,
            "pre",
            "",
            &report.outcomes[judged.index].spec.user_sql(),
        );
        let _ = writeln!(
            html,
            "<p class=\"meta\">judged against {}</p>",
            escape(&report.baseline_label(judged))
        );
        figures_table(
            &mut html,
            judged.cold,
            judged.warm,
            report.request.cold,
            judged.time_within_noise,
        );
        // Each candidate's anchors are its own.
        comparison_body(
            &mut html,
            &judged.comparison,
            &format!("c{}-", judged.index + 1),
        );
        html.push_str("</details>\n");
    }
    let failed: Vec<_> = report
        .outcomes
        .iter()
        .filter_map(|o| o.result.as_ref().err().map(|e| (o, e)))
        .collect();
    if !failed.is_empty() {
        html.push_str("<h2>Candidates that could not be measured</h2>\n<ul>\n");
        for (outcome, error) in failed {
            let _ = writeln!(
                html,
                "<li><code>{}</code>: {}</li>",
                escape(&outcome.spec.user_sql()),
                escape(error)
            );
        }
        html.push_str("</ul>\n");
    }
    // The request's warnings are among the report's (the text report shows the same list).
    let notes = &report.warnings;
    if !notes.is_empty() {
        html.push_str("<h2>Notes</h2>\n<ul>\n");
        for note in notes {
            element(&mut html, "li", "", note);
        }
        html.push_str("</ul>\n");
    }
    html
}

/// `pgplan compare --format html`.
pub fn write_compare(out: &mut dyn Write, report: &CompareReport) -> io::Result<()> {
    page(
        out,
        &format!("pgplan compare · {}", report.request.query_source),
        &compare_body(report),
    )
}

fn ranking(html: &mut String, report: &CompareReport) {
    html.push_str(
        "<h2>Candidates, best first</h2>\n<table class=\"ranking\"><thead><tr><th>#</th><th>index</th><th>verdict</th><th>used by</th>\
         <th class=\"num\">pages touched (warm)</th><th class=\"num\">time (warm)</th><th class=\"num\">size</th><th class=\"num\">build</th></tr></thead><tbody>\n",
    );
    for (i, judged) in report.ranking.iter().enumerate() {
        let run = report.outcomes[judged.index].result.as_ref().ok();
        let uses: Vec<String> = judged
            .uses
            .iter()
            .map(|u| format!("{} (node {})", u.node_type, u.node))
            .collect();
        let (b, a) = (&judged.warm.0, &judged.warm.1);
        let _ = write!(
            html,
            "<tr><td>{}</td><td><a href=\"#candidate-{}\">{}</a></td><td><span class=\"badge {}\">{}</span></td><td>{}</td>",
            i + 1,
            judged.index + 1,
            escape(report.name(judged.index)),
            verdict_class(judged.verdict),
            judged.verdict.as_str(),
            escape(&if uses.is_empty() {
                "no".to_owned()
            } else {
                uses.join(", ")
            })
        );
        let _ = writeln!(
            html,
            "<td class=\"num\">{} → {} ({})</td><td class=\"num\">{} → {} ({})</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&b.pages_touched.map(count).unwrap_or_default()),
            escape(&a.pages_touched.map(count).unwrap_or_default()),
            escape(&change(b.pages_touched, a.pages_touched, "fewer", "more")),
            escape(&b.execution_ms.map(ms).unwrap_or_default()),
            escape(&a.execution_ms.map(ms).unwrap_or_default()),
            escape(&time_change(
                b.execution_ms,
                a.execution_ms,
                judged.time_within_noise.warm,
                judged.time_within_noise.one_run
            )),
            escape(
                &run.and_then(|r| r.size_bytes)
                    .map(bytes)
                    .unwrap_or_default()
            ),
            escape(&run.and_then(|r| r.build_ms).map(ms).unwrap_or_default()),
        );
    }
    html.push_str("</tbody></table>\n");
    // The index-using nodes, named, for the reader who does not count nodes.
    for judged in &report.ranking {
        for u in &judged.uses {
            let plan = &judged.comparison.after.plan;
            if let Some(node) = plan.nodes.get(u.node) {
                let _ = writeln!(
                    html,
                    "<p class=\"legend\">{}: node {} is {}</p>",
                    escape(report.name(judged.index)),
                    u.node,
                    escape(&node_label(node))
                );
            }
        }
    }
}

/// A figure's name, before, after, whether it is a time, and the words for less and more.
type FigureRow = (
    &'static str,
    Option<f64>,
    Option<f64>,
    bool,
    &'static str,
    &'static str,
);

/// `evicted`: the first run was truly cold (`--cold`); otherwise it is the first run.
fn figures_table(
    html: &mut String,
    cold: (Figures, Figures),
    warm: (Figures, Figures),
    evicted: bool,
    noise: crate::compare::TimeNoise,
) {
    html.push_str(
        "<table class=\"figures\"><thead><tr><th></th><th></th><th class=\"num\">before</th><th class=\"num\">after</th><th class=\"num\">change</th></tr></thead><tbody>\n",
    );
    let first = if evicted { "cold" } else { "first" };
    for (run, (b, a), within) in [(first, cold, noise.cold), ("warm", warm, noise.warm)] {
        let undecided = within || noise.one_run;
        let rows: [FigureRow; 4] = [
            (
                "execution",
                b.execution_ms,
                a.execution_ms,
                true,
                "faster",
                "slower",
            ),
            (
                "pages touched",
                b.pages_touched,
                a.pages_touched,
                false,
                "fewer",
                "more",
            ),
            (
                "pages read",
                b.shared_read_blocks,
                a.shared_read_blocks,
                false,
                "fewer",
                "more",
            ),
            (
                "temp blocks",
                b.temp_blocks,
                a.temp_blocks,
                false,
                "fewer",
                "more",
            ),
        ];
        for (k, (name, before, after, time, fewer, more)) in rows.into_iter().enumerate() {
            let show = |v: Option<f64>| {
                v.map(|v| if time { ms(v) } else { count(v) })
                    .unwrap_or_default()
            };
            let class = match (before, after) {
                _ if time && undecided => "",
                (Some(x), Some(y)) if y < x => "changed-better",
                (Some(x), Some(y)) if y > x => "changed-worse",
                _ => "",
            };
            let class = if time {
                format!("time {class}")
            } else {
                class.to_owned()
            };
            let _ = writeln!(
                html,
                "<tr class=\"{class}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num delta\">{}</td></tr>",
                if k == 0 { run } else { "" },
                escape(name),
                escape(&show(before)),
                escape(&show(after)),
                escape(&if time {
                    time_change(before, after, within, noise.one_run)
                } else {
                    change(before, after, fewer, more)
                })
            );
        }
    }
    html.push_str("</tbody></table>\n");
}
