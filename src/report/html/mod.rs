//! HTML reports (`--format html`): one self-contained file per report, inline CSS and SVG, no
//! script and nothing fetched, that opens in any browser, prints cleanly and attaches to a
//! ticket. Every string from a plan, the catalog or the user is escaped.

mod audit;
mod compare;
mod plan;

use std::fmt::Write as _;
use std::io::{self, Write};

pub use audit::{audit_body, write_audit};
pub use compare::{compare_body, write_compare};
pub use plan::{write_diff, write_explain, write_explain_with_notes};

use crate::plan::Severity;

/// Escapes text for an HTML element or a quoted attribute.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters (an escape sequence in a relation name) are shown, not sent to
            // the browser as they are.
            c if c.is_control() && c != '\n' && c != '\t' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

const CSS: &str = r#"
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bg: #ffffff; --panel: #f6f8fa;
  --pages: #0969da; --time: #8250df; --good: #1a7f37; --bad: #cf222e; --warn: #9a6700;
  --info: #0550ae; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  background: var(--bg); margin: 0 auto; padding: 24px; max-width: 1400px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.meta, .muted { color: var(--muted); }
pre, code { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px;
  white-space: pre-wrap; word-break: break-word; margin: 6px 0; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; background: var(--panel); }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.verdict { border: 1px solid var(--line); border-left: 6px solid var(--muted); border-radius: 6px;
  padding: 10px 14px; margin: 12px 0 16px; background: var(--panel); font-size: 15px; }
.verdict.good { border-left-color: var(--good); } .verdict.bad { border-left-color: var(--bad); }
.verdict.neutral { border-left-color: var(--info); }
.badge { display: inline-block; border-radius: 10px; padding: 0 7px; font-size: 12px; font-weight: 600;
  border: 1px solid currentColor; margin-left: 4px; white-space: nowrap; text-decoration: none; }
.critical { color: var(--bad); } .warning { color: var(--warn); } .info { color: var(--info); }
.pays { color: var(--good); } .does_not_pay { color: var(--warn); } .unused { color: var(--muted); }
.spill { color: var(--bad); } .est { color: var(--warn); } .never { color: var(--muted); }
.node-label { white-space: nowrap; }
details > summary { cursor: pointer; }
details.node > summary { list-style: none; } details.node > summary::-webkit-details-marker { display: none; }
details.node > summary::before { content: "▸ "; color: var(--muted); }
details.node[open] > summary::before { content: "▾ "; }
details.node .more { margin: 2px 0 4px 14px; color: var(--muted); font-size: 12.5px; }
.bar { display: inline-block; vertical-align: middle; margin-left: 6px; }
.bar rect.track { fill: var(--panel); stroke: var(--line); stroke-width: 0.5; }
.bar.pages rect.fill { fill: var(--pages); } .bar.time rect.fill { fill: var(--time); }
tr.changed-better td.delta, span.better { color: var(--good); font-weight: 600; }
tr.changed-worse td.delta, span.worse { color: var(--bad); font-weight: 600; }
table.side-by-side td.node-label { white-space: normal; min-width: 12em; }
table.side-by-side svg.bar { width: 48px; }
table.side-by-side td.after-first { border-left: 2px solid var(--line); }
td.empty { background: repeating-linear-gradient(45deg, transparent 0 6px, var(--panel) 6px 12px); }
td.better { background: #dafbe1; } td.worse { background: #ffebe9; }
.finding { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
.finding h4 { margin: 0 0 4px; font-size: 14px; }
dl.evidence { display: grid; grid-template-columns: max-content 1fr; gap: 0 12px; margin: 6px 0; }
dl.evidence dt { color: var(--muted); } dl.evidence dd { margin: 0; font-variant-numeric: tabular-nums; }
.legend { font-size: 12px; color: var(--muted); margin: 4px 0; }
.legend i { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 10px; vertical-align: middle; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
@media print {
  body { padding: 0; max-width: none; font-size: 11px; }
  details { page-break-inside: avoid; }
  /* On paper every node's details show: nothing to click there. */
  details::details-content { content-visibility: visible; display: block; }
  details:not([open]) > *:not(summary) { display: block; }
  .finding, tr { page-break-inside: avoid; }
  a { color: inherit; text-decoration: none; }
  .bar rect.fill { print-color-adjust: exact; -webkit-print-color-adjust: exact; }
}
"#;

/// The document around a report's body.
pub(crate) fn page(out: &mut dyn Write, title: &str, body: &str) -> io::Result<()> {
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}<footer>pgplan {}</footer>\n</body>\n</html>\n",
        escape(title),
        env!("CARGO_PKG_VERSION")
    )
}

/// Writes several reports' bodies into one page (the demo: its compare, then its audit).
pub fn write_sections(out: &mut dyn Write, title: &str, bodies: &[String]) -> io::Result<()> {
    page(out, title, &bodies.concat())
}

/// A horizontal bar, `value` of `total`, as inline SVG.
pub(crate) fn bar(kind: &str, value: Option<f64>, total: Option<f64>) -> String {
    bar_of(kind, value, total, "the plan")
}

/// A bar scaled to `total`, which is `of` ("the plan", "the larger plan").
pub(crate) fn bar_of(kind: &str, value: Option<f64>, total: Option<f64>, of: &str) -> String {
    const WIDTH: f64 = 90.0;
    let (Some(value), Some(total)) = (value, total) else {
        return String::new();
    };
    let share = if total > 0.0 {
        (value / total).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let fill = (share * WIDTH).max(if value > 0.0 { 1.0 } else { 0.0 });
    format!(
        "<svg class=\"bar {kind}\" width=\"{w}\" height=\"10\" viewBox=\"0 0 {w} 10\" role=\"img\" \
         aria-label=\"{pct:.1}% of {of}\" data-share=\"{share:.4}\"><title>{pct:.1}% of the {kind} of {of}</title>\
         <rect class=\"track\" x=\"0\" y=\"0\" width=\"{w}\" height=\"10\"/>\
         <rect class=\"fill\" x=\"0\" y=\"0\" width=\"{fill:.1}\" height=\"10\"/></svg>",
        w = WIDTH,
        pct = share * 100.0,
    )
}

pub(crate) fn severity_class(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical => "critical",
        Severity::Warning => "warning",
        Severity::Info => "info",
    }
}

/// Pushes `<tag class>text</tag>` with the text escaped.
pub(crate) fn element(html: &mut String, tag: &str, class: &str, text: &str) {
    if class.is_empty() {
        let _ = write!(html, "<{tag}>{}</{tag}>", escape(text));
    } else {
        let _ = write!(html, "<{tag} class=\"{class}\">{}</{tag}>", escape(text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_quotes_and_control_characters() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(escape("a\u{1b}[31mb"), "a\\u{1b}[31mb");
        assert_eq!(escape("line\nnext"), "line\nnext");
    }

    #[test]
    fn bars_are_scaled_to_the_total() {
        let half = bar("pages", Some(50.0), Some(100.0));
        assert!(half.contains("width=\"45.0\""), "{half}");
        assert!(half.contains("data-share=\"0.5000\""), "{half}");
        // A sliver of work still shows; none shows none; no total, no bar.
        assert!(bar("time", Some(0.001), Some(100.0)).contains("width=\"1.0\""));
        assert!(
            bar("time", Some(0.0), Some(100.0))
                .contains("class=\"fill\" x=\"0\" y=\"0\" width=\"0.0\"")
        );
        assert_eq!(bar("time", Some(1.0), None), "");
    }
}
