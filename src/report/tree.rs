//! The plan as an indented tree: one row per node with the figures that matter, shared by the
//! text and Markdown renderers and by the textual diff of two plans; the lines and headline
//! figures the HTML report shows the same way.

use crate::plan::findings::node_label;
use crate::plan::{Analysis, Node, NodeId};

use crate::format::{count, ms, printable_owned};

/// One node's line in the tree and the detail lines under it.
#[derive(Debug, Clone)]
pub struct TreeRow {
    pub id: NodeId,
    /// Box-drawing prefix showing the node's place in the tree ("│  └─ ").
    pub prefix: String,
    /// Prefix for the node's detail lines, continuing the tree's vertical bars.
    pub detail_prefix: String,
    /// "Index Scan using events_idx on public.events".
    pub label: String,
    /// "InitPlan 1", "SubPlan 2", "CTE totals" when the node is one.
    pub subplan: Option<String>,
    /// Conditions and the figures worth a line of their own.
    pub details: Vec<String>,
    /// Numbers of the findings about this node (1-based, as listed under the plan).
    pub findings: Vec<usize>,
}

/// The rows of `analysis`'s plan in pre-order, one at a time, for a renderer that writes each
/// as it comes instead of holding a large plan's rows all at once; `with_details: false` leaves
/// out the detail lines, which the textual diff does not show.
pub fn tree_rows(analysis: &Analysis, with_details: bool) -> TreeRows<'_> {
    let mut finding_numbers: Vec<Vec<usize>> = vec![Vec::new(); analysis.plan.nodes.len()];
    for (i, f) in analysis.findings.iter().enumerate() {
        if let Some(n) = f.node {
            finding_numbers[n].push(i + 1);
        }
    }
    TreeRows {
        analysis,
        with_details,
        next: 0,
        open: Vec::new(),
        finding_numbers,
    }
}

/// The iterator of [`tree_rows`].
pub struct TreeRows<'a> {
    analysis: &'a Analysis,
    with_details: bool,
    next: NodeId,
    /// For each depth, whether the ancestor at that depth still has siblings to come (draw a bar).
    open: Vec<bool>,
    finding_numbers: Vec<Vec<usize>>,
}

impl Iterator for TreeRows<'_> {
    type Item = TreeRow;

    fn next(&mut self) -> Option<TreeRow> {
        let plan = &self.analysis.plan;
        let id = self.next;
        let node = plan.nodes.get(id)?;
        self.next += 1;
        let last = match node.parent {
            Some(p) => plan.nodes[p].children.last() == Some(&id),
            None => true,
        };
        let open = &mut self.open;
        open.truncate(node.depth);
        // A level's bar is at most five bytes ("│  "): sized once, not doubled level by level.
        let mut prefix = String::with_capacity(5 * node.depth + 4);
        let mut detail_prefix = String::with_capacity(5 * node.depth + 8);
        if node.depth > 0 {
            for &bar in &open[1..] {
                prefix.push_str(if bar { "│  " } else { "   " });
                detail_prefix.push_str(if bar { "│  " } else { "   " });
            }
            prefix.push_str(if last { "└─ " } else { "├─ " });
            detail_prefix.push_str(if last { "   " } else { "│  " });
        }
        open.push(!last);
        if !node.children.is_empty() {
            // Details of a node with children continue the bar down to the first child.
            detail_prefix.push_str("│ ");
        } else {
            detail_prefix.push_str("  ");
        }
        Some(TreeRow {
            id,
            prefix,
            detail_prefix,
            label: printable_owned(node_label(node)),
            subplan: subplan_name(node).map(printable_owned),
            details: if self.with_details {
                details(node, self.analysis, id)
                    .into_iter()
                    .map(printable_owned)
                    .collect()
            } else {
                Vec::new()
            },
            findings: std::mem::take(&mut self.finding_numbers[id]),
        })
    }
}

/// The figures that matter on one line of a plan: rows against the estimate, loops, pages, rows
/// removed, heap fetches. No timings: these lines are also diffed, and timings differ every run.
pub fn figures(analysis: &Analysis, id: NodeId) -> Vec<String> {
    let node = &analysis.plan.nodes[id];
    let m = &analysis.metrics.nodes[id];
    let mut figures = Vec::new();
    if m.never_executed {
        figures.push("never executed".to_owned());
    } else if let Some(a) = node.actual {
        figures.push(format!(
            "rows {} (est {})",
            count(a.rows),
            count(node.plan_rows.unwrap_or(0.0))
        ));
        if a.loops != 1.0 {
            figures.push(format!("loops {}", count(a.loops)));
        }
    } else if let Some(est) = node.plan_rows {
        figures.push(format!("est rows {}", count(est)));
    }
    if let Some(b) = node.buffers {
        figures.push(format!("pages {}", count(b.pages_touched())));
    }
    if let Some(r) = m.rows_removed_by_filter_total.filter(|r| *r > 0.0) {
        figures.push(format!("removed {}", count(r)));
    }
    if let Some(h) = node.heap_fetches.filter(|h| *h > 0.0) {
        figures.push(format!("heap fetches {}", count(h)));
    }
    figures
}

/// "├─ [InitPlan 1] Index Scan using ... on ..." : the tree prefix, the subplan name and label.
/// A row's line with its [`figures`]: the line of the textual diff and of Markdown's tree.
pub fn figures_line(analysis: &Analysis, row: &TreeRow) -> String {
    let mut line = labelled(row);
    let figures = figures(analysis, row.id);
    if !figures.is_empty() {
        line.push_str("  ");
        line.push_str(&figures.join(", "));
    }
    line
}

pub fn labelled(row: &TreeRow) -> String {
    match &row.subplan {
        Some(sub) => format!("{}[{sub}] {}", row.prefix, row.label),
        None => format!("{}{}", row.prefix, row.label),
    }
}

fn subplan_name(node: &Node) -> Option<String> {
    let name = node.subplan_name.as_deref()?;
    // Before PostgreSQL 17, init plans were named "InitPlan 1 (returns $0)"; 17 dropped the
    // parameter list. Show both the same way.
    Some(match name.find(" (returns") {
        Some(at) => name[..at].to_owned(),
        None => name.to_owned(),
    })
}

/// The plan's headline figures, a piece each: execution and planning time, pages touched (hit
/// and read), temp blocks when there were any.
pub fn totals_parts(analysis: &Analysis) -> Vec<String> {
    let t = &analysis.metrics.totals;
    let mut parts = Vec::new();
    if let Some(v) = t.execution_ms {
        parts.push(format!("execution {}", ms(v)));
    }
    if let Some(v) = t.planning_ms {
        parts.push(format!("planning {}", ms(v)));
    }
    if let Some(v) = t.pages_touched {
        parts.push(format!(
            "pages touched {} ({} hit, {} read)",
            count(v),
            count(t.shared_hit_blocks.unwrap_or(0.0)),
            count(t.shared_read_blocks.unwrap_or(0.0))
        ));
    }
    if let Some(v) = t.temp_blocks.filter(|v| *v > 0.0) {
        parts.push(format!("temp blocks {}", count(v)));
    }
    parts
}

/// A node's conditions, a line each ("Index Cond: ..."), in the order EXPLAIN prints them.
pub fn condition_lines(node: &Node) -> impl Iterator<Item = String> + '_ {
    [
        ("Index Cond", &node.index_cond),
        ("Recheck Cond", &node.recheck_cond),
        ("Hash Cond", &node.hash_cond),
        ("Merge Cond", &node.merge_cond),
        ("Join Filter", &node.join_filter),
        ("Filter", &node.filter),
    ]
    .into_iter()
    .filter_map(|(name, value)| {
        // Sized once: format! would grow a long condition's line by doubling, holding up to
        // three times its length while it copies.
        value.as_ref().map(|v| {
            let mut line = String::with_capacity(name.len() + 2 + v.len());
            line.push_str(name);
            line.push_str(": ");
            line.push_str(v);
            line
        })
    })
}

/// "Sort: external merge, 2048 kB disk" for a node that sorted.
pub fn sort_line(node: &Node) -> Option<String> {
    let method = node.sort_method.as_ref()?;
    let space = match (node.sort_space_used_kb, node.sort_space_type.as_deref()) {
        (Some(kb), Some(kind)) => format!(", {} kB {}", count(kb), kind.to_lowercase()),
        _ => String::new(),
    };
    Some(format!("Sort: {method}{space}"))
}

fn details(node: &Node, analysis: &Analysis, id: NodeId) -> Vec<String> {
    let m = &analysis.metrics.nodes[id];
    let mut out: Vec<String> = condition_lines(node).collect();
    if let Some(removed) = m.rows_removed_by_filter_total.filter(|r| *r > 0.0) {
        out.push(format!("Rows Removed by Filter: {} in all", count(removed)));
    }
    if let Some(removed) = m.rows_removed_by_join_filter_total.filter(|r| *r > 0.0) {
        out.push(format!(
            "Rows Removed by Join Filter: {} in all",
            count(removed)
        ));
    }
    if let Some(removed) = m.rows_removed_by_index_recheck_total.filter(|r| *r > 0.0) {
        out.push(format!(
            "Rows Removed by Index Recheck: {} in all",
            count(removed)
        ));
    }
    if let Some(fetches) = node.heap_fetches {
        out.push(format!("Heap Fetches: {}", count(fetches)));
    }
    if node.exact_heap_blocks.is_some() || node.lossy_heap_blocks.is_some() {
        out.push(format!(
            "Heap Blocks: exact {}, lossy {}",
            count(node.exact_heap_blocks.unwrap_or(0.0)),
            count(node.lossy_heap_blocks.unwrap_or(0.0))
        ));
    }
    if let Some(searches) = node.index_searches {
        out.push(format!("Index Searches: {}", count(searches)));
    }
    out.extend(sort_line(node));
    if let Some(batches) = node.hash_batches {
        out.push(format!(
            "Hash: {} buckets, {} batch{}, peak {} kB",
            count(node.hash_buckets.unwrap_or(0.0)),
            count(batches),
            if batches == 1.0 { "" } else { "es" },
            count(node.peak_memory_usage_kb.unwrap_or(0.0))
        ));
    }
    if let Some(batches) = node.hashagg_batches.filter(|b| *b > 1.0) {
        out.push(format!(
            "HashAgg: {} batches, {} kB on disk",
            count(batches),
            count(node.disk_usage_kb.unwrap_or(0.0))
        ));
    }
    // Without ANALYZE the plan only says how many workers were planned: nothing was launched.
    if let Some(planned) = node.workers_planned {
        out.push(match node.workers_launched {
            Some(launched) => format!(
                "Workers: {} launched of {} planned",
                count(launched),
                count(planned)
            ),
            None => format!("Workers: {} planned", count(planned)),
        });
    }
    if let Some(temp) = m
        .exclusive_buffers
        .map(|b| b.temp_blocks())
        .filter(|t| *t > 0.0)
    {
        out.push(format!("Temp: {} blocks", count(temp)));
    }
    if node.disabled == Some(true) {
        out.push("Disabled: the settings disabled this kind of node".into());
    }
    out
}

/// Context lines kept around each change of the tree diff: enough that a plan's whole tree
/// shows, as reviewers read a plan change in its tree.
const DIFF_CONTEXT: usize = 1000;

/// One line of a unified diff: kept, removed (a before line) or added (an after line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Keep(usize, usize),
    Remove(usize),
    Add(usize),
}

/// A unified diff of two plans' lines (one per node, in pre-order), aligned by the node
/// matching rather than by a text diff: a node's line is kept, or removed and added when its
/// figures changed, where it was matched to a node of the other plan; any other line is removed
/// or added. Matched pairs that crossed (children reordered) cannot all be aligned: the longest
/// run of them in the order of both plans is, the others show as removed and added. Linear in
/// the plans' size (n log n for that run), where a text diff grows with the square of the
/// changed lines, and every ancestor of a changed node changes too.
///
/// The output is what `diff -U1000` prints: `--- before`/`+++ after`, then hunks; nothing at
/// all when the lines are equal.
pub fn unified_diff(
    before: &[String],
    after: &[String],
    before_to_after: &[Option<NodeId>],
) -> String {
    let mut out = String::new();
    let written: std::io::Result<()> =
        write_unified_diff(before, after, before_to_after, &mut |line| {
            out.push_str(line);
            out.push('\n');
            Ok(())
        });
    written.expect("writing to a String cannot fail");
    out
}

/// [`unified_diff`] line by line, each line given to `line` without its newline as it is made:
/// the diff of two large plans is as long as their trees, and a renderer writes it as it comes.
pub fn write_unified_diff(
    before: &[String],
    after: &[String],
    before_to_after: &[Option<NodeId>],
    line: &mut dyn FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let anchors = increasing_run(before_to_after.iter().enumerate().filter_map(|(b, a)| {
        a.filter(|a| *a < after.len() && b < before.len())
            .map(|a| (b, a))
    }));
    let mut ops = Vec::with_capacity(before.len().max(after.len()));
    let (mut b, mut a) = (0, 0);
    let mut removed = Vec::new();
    let mut added = Vec::new();
    // A run of changes lists its removed lines, then its added ones, as `diff` does.
    fn flush(ops: &mut Vec<Op>, removed: &mut Vec<usize>, added: &mut Vec<usize>) {
        ops.extend(removed.drain(..).map(Op::Remove));
        ops.extend(added.drain(..).map(Op::Add));
    }
    for (anchor_b, anchor_a) in anchors.into_iter().chain([(before.len(), after.len())]) {
        removed.extend(b..anchor_b);
        added.extend(a..anchor_a);
        if anchor_b == before.len() {
            break;
        }
        if before[anchor_b] == after[anchor_a] {
            flush(&mut ops, &mut removed, &mut added);
            ops.push(Op::Keep(anchor_b, anchor_a));
        } else {
            removed.push(anchor_b);
            added.push(anchor_a);
        }
        (b, a) = (anchor_b + 1, anchor_a + 1);
    }
    flush(&mut ops, &mut removed, &mut added);

    let changes: Vec<usize> = (0..ops.len())
        .filter(|&i| !matches!(ops[i], Op::Keep(..)))
        .collect();
    let Some(&first) = changes.first() else {
        return Ok(());
    };
    // Where each op stands in the before and after lines, to number the hunks.
    let mut at = Vec::with_capacity(ops.len() + 1);
    let (mut ob, mut oa) = (0, 0);
    for op in &ops {
        at.push((ob, oa));
        match op {
            Op::Keep(..) => (ob, oa) = (ob + 1, oa + 1),
            Op::Remove(_) => ob += 1,
            Op::Add(_) => oa += 1,
        }
    }
    at.push((ob, oa));
    let mut hunks = Vec::new();
    let (mut start, mut end) = (first, first);
    for &c in &changes[1..] {
        if c - end - 1 > 2 * DIFF_CONTEXT {
            hunks.push((start, end));
            start = c;
        }
        end = c;
    }
    hunks.push((start, end));

    line("--- before")?;
    line("+++ after")?;
    let mut text = String::new();
    for (start, end) in hunks {
        let lo = start.saturating_sub(DIFF_CONTEXT);
        let hi = (end + DIFF_CONTEXT + 1).min(ops.len());
        let range = |from: usize, to: usize| {
            if to - from == 1 {
                format!("{}", from + 1)
            } else if to == from {
                format!("{from},0")
            } else {
                format!("{},{}", from + 1, to - from)
            }
        };
        line(&format!(
            "@@ -{} +{} @@",
            range(at[lo].0, at[hi].0),
            range(at[lo].1, at[hi].1)
        ))?;
        for op in &ops[lo..hi] {
            let (mark, tree_line) = match *op {
                Op::Keep(b, _) => (' ', &before[b]),
                Op::Remove(b) => ('-', &before[b]),
                Op::Add(a) => ('+', &after[a]),
            };
            text.clear();
            text.push(mark);
            text.push_str(tree_line);
            line(&text)?;
        }
    }
    Ok(())
}

/// The longest run of pairs increasing in both coordinates, from pairs given in increasing
/// order of the first (patience sorting, n log n).
fn increasing_run(pairs: impl Iterator<Item = (usize, usize)>) -> Vec<(usize, usize)> {
    let pairs: Vec<(usize, usize)> = pairs.collect();
    // tails[k]: the pair ending the best run of length k + 1 found so far (its index).
    let mut tails: Vec<usize> = Vec::new();
    let mut previous: Vec<Option<usize>> = vec![None; pairs.len()];
    for (i, &(_, a)) in pairs.iter().enumerate() {
        let k = tails.partition_point(|&t| pairs[t].1 < a);
        previous[i] = k.checked_sub(1).map(|k| tails[k]);
        if k == tails.len() {
            tails.push(i);
        } else {
            tails[k] = i;
        }
    }
    let mut run = Vec::with_capacity(tails.len());
    let mut next = tails.last().copied();
    while let Some(i) = next {
        run.push(pairs[i]);
        next = previous[i];
    }
    run.reverse();
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn matched_lines_that_changed_are_removed_then_added_with_their_run() {
        let before = lines("Limit  rows 50\nSort\nSeq Scan on t  pages 10");
        let after = lines("Limit  rows 50\nIndex Scan on t  pages 2");
        let diff = unified_diff(&before, &after, &[Some(0), None, Some(1)]);
        assert_eq!(
            diff,
            "--- before\n+++ after\n@@ -1,3 +1,2 @@\n Limit  rows 50\n-Sort\n-Seq Scan on t  pages 10\n+Index Scan on t  pages 2\n"
        );
    }

    #[test]
    fn equal_plans_have_no_diff() {
        let same = lines("a\nb");
        assert_eq!(unified_diff(&same, &same, &[Some(0), Some(1)]), "");
    }

    #[test]
    fn crossed_matches_keep_the_longest_run_in_order() {
        let before = lines("root\nx\ny");
        let after = lines("root\ny\nx");
        let diff = unified_diff(&before, &after, &[Some(0), Some(2), Some(1)]);
        assert_eq!(
            diff,
            "--- before\n+++ after\n@@ -1,3 +1,3 @@\n root\n-x\n y\n+x\n"
        );
    }

    /// Far-apart changes make separate hunks, each with its context and its own numbering,
    /// as `diff -U1000` numbers them (one line: no length; none: the line before, length 0).
    #[test]
    fn hunks_split_past_twice_the_context() {
        let n = 2 * DIFF_CONTEXT + 10;
        let before: Vec<String> = (0..n).map(|i| format!("line {i}")).collect();
        let mut after = before.clone();
        after[0] = "changed first".into();
        after[n - 1] = "changed last".into();
        let matching: Vec<Option<usize>> = (0..n).map(Some).collect();
        let diff = unified_diff(&before, &after, &matching);
        let headers: Vec<&str> = diff.lines().filter(|l| l.starts_with("@@")).collect();
        let tail = n - 1 - DIFF_CONTEXT;
        assert_eq!(
            headers,
            [
                format!("@@ -1,{0} +1,{0} @@", DIFF_CONTEXT + 1),
                format!("@@ -{0},{1} +{0},{1} @@", tail + 1, DIFF_CONTEXT + 1)
            ]
        );
        let only_added = unified_diff(&[], &lines("a"), &[]);
        assert_eq!(only_added, "--- before\n+++ after\n@@ -0,0 +1 @@\n+a\n");
    }
}
