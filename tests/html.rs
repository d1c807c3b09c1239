//! `--format html`: snapshots of the explain and diff pages over recorded plans (timings
//! redacted), every string escaped, and each kind of report (explain, diff, compare, audit)
//! rendered by a real browser, headless Chromium: the DOM it builds has the node labels, the
//! bars and the verdict, and its screenshot is not blank.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{TestDb, for_each_version, pgplan_bin};
use pgplan::plan::{Analysis, Comparison, read_plan};
use pgplan::report::html;

fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(path)
}

fn analyse_text(content: &str) -> Analysis {
    Analysis::of(read_plan(content, None).unwrap().plan)
}

fn analyse(path: &str) -> Analysis {
    analyse_text(&std::fs::read_to_string(fixture(path)).unwrap())
}

/// Durations differ on every run: their text, their bars and the rows and cells that judge them.
/// The stylesheet is left out.
fn html_filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"(?s)<style>.*?</style>", "<style>[stylesheet]</style>"),
        (
            r#"(?s)<tr class="time[^"]*">.*?</tr>"#,
            "<tr>[time row]</tr>",
        ),
        (
            r#"(?s)<td class="num time[^"]*">.*?</td>"#,
            "<td>[time]</td>",
        ),
        (r"[\d,.]+ ms", "[ms]"),
    ]
}

fn page_of(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    write(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

const EXPLAINED: [&str; 6] = [
    "story/before.pg16.json",
    "plans/sort_spill.pg17.json",
    "plans/hash_join_batches.pg17.json",
    "plans/never_executed.pg17.json",
    "plans/estimate_only.pg17.json",
    "plans/cte_materialized.pg18.json",
];

#[test]
fn explain_html_snapshots() {
    for path in EXPLAINED {
        let analysis = analyse(path);
        let out = page_of(|w| html::write_explain(w, path, &analysis));
        insta::with_settings!({
            snapshot_path => "snapshots/html",
            prepend_module_to_snapshot => false,
            filters => html_filters(),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(format!("explain__{}", path.replace('/', "__")), out);
        });
    }
}

#[test]
fn diff_html_snapshots() {
    for v in [13, 16, 18] {
        let before = analyse(&format!("story/before.pg{v}.json"));
        let after = analyse(&format!("story/partial_index.pg{v}.json"));
        let comparison = Comparison::of(before, after);
        let out = page_of(|w| html::write_diff(w, ("before.json", "after.json"), &comparison));
        insta::with_settings!({
            snapshot_path => "snapshots/html",
            prepend_module_to_snapshot => false,
            filters => html_filters(),
            omit_expression => true,
        }, {
            insta::assert_snapshot!(format!("diff__story.pg{v}"), out);
        });
    }
}

#[test]
fn every_string_from_the_plan_is_escaped() {
    let content = std::fs::read_to_string(fixture("plans/seq_scan_filter.pg17.json")).unwrap();
    let hostile = r#"<script>alert(1)</script>\"&'"#;
    let content = content.replace("\"orders\"", &format!("\"{hostile}\""));
    assert!(content.contains("<script>"), "the fixture names orders");
    let analysis = analyse_text(&content);
    let out = page_of(|w| html::write_explain(w, "<b>title</b>", &analysis));
    assert!(!out.contains("<script"), "{out}");
    assert!(!out.contains("<b>title"), "{out}");
    assert!(
        out.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{out}"
    );
    // Self-contained: no script, nothing fetched.
    for forbidden in ["<script", "src=", "href=\"http", "@import", "url("] {
        assert!(!out.contains(forbidden), "{forbidden} in {out}");
    }
}

/// Headless Chromium (Debian's `chromium`; scripts/test.sh installs it): the DOM it builds from
/// `page`, and a screenshot of it.
fn render(page: &Path) -> (String, Vec<u8>) {
    let profile = tempfile::tempdir().unwrap();
    let shot = profile.path().join("shot.png");
    let common_args = |c: &mut Command| {
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()));
    };
    let url = format!("file://{}", page.display());
    let mut dom = Command::new("chromium");
    common_args(&mut dom);
    let out = dom
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap_or_else(|e| panic!("chromium: {e}; install it (Debian: apt-get install chromium)"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut screenshot = Command::new("chromium");
    common_args(&mut screenshot);
    let run = screenshot
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1280,1000")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        std::fs::read(&shot).unwrap(),
    )
}

/// A screenshot with something drawn: many colours, and a fair share of pixels not background.
fn assert_not_blank(png_bytes: &[u8]) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buffer).unwrap();
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = buffer[..info.buffer_size()].chunks(channels).collect();
    let background = pixels[0];
    let drawn = pixels.iter().filter(|p| **p != background).count();
    let colours: std::collections::HashSet<&[u8]> = pixels.iter().copied().collect();
    assert!(
        drawn * 100 > pixels.len() && colours.len() > 20,
        "blank screenshot: {drawn} of {} pixels drawn, {} colours",
        pixels.len(),
        colours.len()
    );
}

fn assert_bars(dom: &str) {
    assert!(dom.contains("<svg class=\"bar pages\""), "no pages bars");
    assert!(dom.contains("class=\"fill\""), "no bar fill");
}

fn write_page(dir: &Path, name: &str, page: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, page).unwrap();
    path
}

#[test]
fn chromium_renders_explain_and_diff() {
    let dir = tempfile::tempdir().unwrap();
    let before = analyse("story/before.pg16.json");
    let after = analyse("story/partial_index.pg16.json");
    let explain = page_of(|w| html::write_explain(w, "before.pg16.json", &before));
    let (dom, shot) = render(&write_page(dir.path(), "explain.html", &explain));
    assert!(dom.contains("Parallel Seq Scan on public.events"), "{dom}");
    assert!(dom.contains("Gather Merge"), "{dom}");
    assert_bars(&dom);
    // Details are in the DOM, behind a <details> that needs no script.
    assert!(
        dom.contains("Filter: (events.status = 'pending'::text)"),
        "{dom}"
    );
    assert!(!dom.contains("<script"), "{dom}");
    assert_not_blank(&shot);

    let comparison = Comparison::of(before, after);
    let diff = page_of(|w| html::write_diff(w, ("before", "after"), &comparison));
    let (dom, shot) = render(&write_page(dir.path(), "diff.html", &diff));
    assert!(dom.contains("id=\"verdict\""), "{dom}");
    assert!(dom.contains("1,841× fewer"), "{dom}");
    assert!(
        dom.contains("Index Scan using events_pending_created_at_idx on public.events"),
        "{dom}"
    );
    // The scan that became an index scan sits on one row, its pages judged better.
    let row = dom
        .split("<tr class=\"matched\">")
        .skip(1)
        .find(|r| r.contains("Parallel Seq Scan"))
        .unwrap_or_else(|| panic!("{dom}"));
    assert!(row.contains("Index Scan using"), "{row}");
    assert!(row.contains("class=\"num better\""), "{row}");
    assert_bars(&dom);
    assert_not_blank(&shot);
}

const SETUP: &str = "
CREATE TABLE events (id bigint PRIMARY KEY, tenant_id int NOT NULL, status text NOT NULL, created_at timestamptz NOT NULL);
INSERT INTO events SELECT i, i % 50, CASE WHEN i % 10 < 7 THEN 'pending' ELSE 'done' END,
  timestamptz '2026-01-01' + i * interval '1 second' FROM generate_series(1, 60000) i;
CREATE INDEX events_status_idx ON events (status);
CREATE INDEX events_status_again_idx ON events (status);
VACUUM (ANALYZE) events;
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_renders_live_compare_and_audit_reports() {
    // The newest version the tests run: one browser run per report kind is the point, not the
    // matrix (the reports' values are tested on every version elsewhere).
    let Some(newest) = common::versions().into_iter().max() else {
        return;
    };
    for_each_version("html_live", move |major| async move {
        if major != newest {
            return;
        }
        let db = TestDb::create(major, "html_live").await;
        db.run(SETUP).await;
        let dir = tempfile::tempdir().unwrap();
        let query = dir.path().join("query.sql");
        std::fs::write(
            &query,
            "SELECT id FROM events WHERE status = 'pending' ORDER BY created_at DESC LIMIT 20",
        )
        .unwrap();
        let page = dir.path().join("compare.html");
        let out = Command::new(pgplan_bin())
            .args(["compare", "-d", &db.conninfo(), "--format", "html", "-o"])
            .arg(&page)
            .args([
                "--index",
                "CREATE INDEX ON events (created_at DESC) WHERE status = 'pending'",
                "--index",
                "CREATE INDEX ON events (tenant_id)",
            ])
            .arg(&query)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (dom, shot) = render(&page);
        assert!(dom.contains("id=\"verdict\""), "{dom}");
        assert!(dom.contains("Best: events_created_at_idx"), "{dom}");
        assert!(
            dom.contains("<span class=\"badge pays\">pays</span>"),
            "{dom}"
        );
        assert!(
            dom.contains("<span class=\"badge unused\">unused</span>"),
            "{dom}"
        );
        assert!(
            dom.contains("Index Scan using events_created_at_idx on public.events"),
            "{dom}"
        );
        assert_bars(&dom);
        assert_not_blank(&shot);

        let page = dir.path().join("audit.html");
        let out = Command::new(pgplan_bin())
            .args(["audit", "-d", &db.conninfo(), "--format", "html", "-o"])
            .arg(&page)
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (dom, shot) = render(&page);
        assert!(dom.contains("id=\"verdict\""), "{dom}");
        assert!(
            dom.contains("<h2 class=\"warning\" id=\"warning\">Warning"),
            "{dom}"
        );
        assert!(dom.contains("duplicate_index"), "{dom}");
        assert!(
            dom.contains("DROP INDEX CONCURRENTLY public.events_status"),
            "{dom}"
        );
        assert_not_blank(&shot);
    })
    .await;
}
