//! Reading EXPLAIN's TEXT format (psql's default, auto_explain's default) into the same model the
//! JSON gives, figure for figure.
//!
//! The text is turned into the object EXPLAIN (FORMAT JSON) would have printed for the same run
//! (a `text_object::Obj`, its keys and strings borrowed from the text, not a `serde_json::Value`),
//! and that object goes through the JSON reader's own seeds and checks as a serde
//! `Deserializer`. What the TEXT format leaves out is put back where PostgreSQL's explain.c says
//! what it would have been: counts it suppresses when zero (`Rows Removed by Filter`, buffer and
//! WAL counters, `Heap Blocks`), defaults it never prints (`Join Type: Inner`, `Partial Mode:
//! Simple`, `Scan Direction: Forward`), and the `Parent Relationship` the JSON names and the text
//! shows only by position. Figures that only one PostgreSQL version prints and the text gives no
//! way to tell the version stay unset (`Async Capable` false, `Inner Unique` false without
//! VERBOSE).

use std::borrow::Cow;

use serde_json::Value;

use super::model::Plan;
use super::parse::{self, MAX_PLAN_DEPTH, PlanError};
use super::text_object::{Obj, Val};

/// Reads a TEXT plan whose decorations (psql's table, a log's prefixes) are already removed.
pub(super) fn parse_text(body: &str) -> Result<Plan, PlanError> {
    let body = join_broken_lines(body);
    // Tabs in pasted plans stand for the spaces an editor replaced. Expanded once for the whole
    // text, not line by line, so that what the reader keeps can borrow from it.
    let body = match body.contains('\t') {
        true => Cow::Owned(body.replace('\t', "    ")),
        false => body,
    };
    let mut reader = Reader::default();
    reader.read(&body)?;
    let depth = reader.max_depth;
    let subtree = reader.subtree;
    let value = reader.finish();
    // Two levels of JSON nesting per plan level, plus the top-level array and object.
    let mut plan = parse::plan_from_value(value, depth * 2 + 4)?;
    plan.subtree = subtree;
    Ok(plan)
}

/// Parentheses and single quotes counted along a line: EXPLAIN balances both on every line it
/// prints (a quote inside a literal is doubled), so a line left open was broken.
#[derive(Default)]
struct Balance {
    depth: usize,
    quoted: bool,
}

impl Balance {
    fn feed(&mut self, text: &str) {
        // Every line of the plan is fed: memchr skips to the three bytes that matter.
        for at in memchr::memchr3_iter(b'\'', b'(', b')', text.as_bytes()) {
            match text.as_bytes()[at] {
                b'\'' => self.quoted = !self.quoted,
                b'(' if !self.quoted => self.depth += 1,
                b')' if !self.quoted => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
        }
    }

    fn is_open(&self) -> bool {
        self.depth > 0 || self.quoted
    }
}

/// Lines a terminal or an editor broke at its width (`(actual time=0.5` then `24..0.525 rows=0
/// loops=1)` on the next line), joined again: a line of the tree that leaves a parenthesis or a
/// quote open is continued by the lines after it, up to one that starts a node, a property or a
/// summary line. A break between a figure and the next word (`0.532` / `rows=0`) lost the space
/// between them with the line's trailing blanks; it is put back.
fn join_broken_lines(body: &str) -> Cow<'_, str> {
    let open = |line: &str| {
        let mut balance = Balance::default();
        balance.feed(line);
        balance.is_open() || line.trim_end().ends_with(',')
    };
    // A node's name and its figures broken apart (`->  Index Scan using i on t` / `(cost=…`).
    let figures_alone = |content: &str| matches!(content.as_bytes(), [b'(', b'c' | b'a', ..]);
    // A node's name broken before its figures (`->  Index Scan using i on pgbenc` /
    // `h_branches  (cost=…`): figures on a line that is not a child's, after the first.
    let cost = memchr::memmem::Finder::new("  (cost=");
    let name_broken = |index: usize, line: &str, content: &str| {
        index > 0 && !content.starts_with("->") && cost.find(line.as_bytes()).is_some()
    };
    // The common case costs one pass over the bytes: no line is left open.
    if !body.lines().enumerate().any(|(index, line)| {
        let content = trim_start(line);
        open(line) || figures_alone(content) || name_broken(index, line, content)
    }) {
        return Cow::Borrowed(body);
    }
    let lines: Vec<&str> = body.lines().collect();
    let mut out = String::with_capacity(body.len());
    let mut tree_started = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_end();
        let start = i;
        out.push_str(line);
        i += 1;
        let node = is_node_line(line)
            || line
                .trim_start()
                .strip_prefix("->  ")
                .is_some_and(is_node_line);
        tree_started = tree_started || node;
        if node
            && figures_start(line.trim_start()) == line.trim_start().len()
            && let Some(next) = lines.get(i)
            && !starts_a_line(next.trim_start())
        {
            let next = next.trim();
            if next.starts_with("(cost=") || next.starts_with("(actual ") {
                out.push_str("  ");
                out.push_str(next);
                i += 1;
            } else if next.contains("  (cost=") {
                out.push_str(next);
                i += 1;
            }
        }
        let mut balance = Balance::default();
        balance.feed(&out[out.rfind('\n').map_or(0, |at| at + 1)..]);
        // A list property broken after one of its commas (`Output: a,` / ` b`) is open too.
        while tree_started && (balance.is_open() || out.ends_with(',')) && i < lines.len() {
            let next = lines[i].trim_end();
            if next.trim().is_empty() || starts_a_line(next.trim_start()) {
                break;
            }
            let glued = out.as_bytes().last().copied().unwrap_or(b' ');
            let first = next.as_bytes()[0];
            // EXPLAIN separates list items and arguments with `, `: a break right after the
            // comma took the space with the line's trailing blanks (inside a quoted literal,
            // `'{1,2}'`, there was none).
            let after_comma = glued == b',' && !balance.quoted;
            if ((glued.is_ascii_digit() || glued == b')')
                && (first.is_ascii_alphabetic() || first == b'('))
                || (after_comma && first != b' ')
            {
                out.push(' ');
            }
            out.push_str(next);
            balance.feed(next);
            i += 1;
        }
        out.push('\n');
        // An empty line for each line joined, so errors still name the input's line numbers.
        for _ in start + 1..i {
            out.push('\n');
        }
    }
    Cow::Owned(out)
}

/// Whether a line's content starts a line of EXPLAIN's own (a child node, a `Key: value`
/// property, a worker, a summary line) rather than continuing a broken one.
fn starts_a_line(content: &str) -> bool {
    if content.starts_with("->  ") || is_summary_line(content) || is_node_line(content) {
        return true;
    }
    // `Sort Key: a`, `Worker 0:  actual …`: capitalised words, then a colon.
    let Some((key, _)) = content.split_once(':') else {
        return false;
    };
    content.starts_with(|c: char| c.is_ascii_uppercase())
        && !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b' ' | b'-' | b'/'))
}

/// A child's line with one space after its arrow (`-> Seq Scan on t`): EXPLAIN prints two, so
/// the plan's runs of spaces were collapsed, and with them its indentation.
fn is_collapsed_child(content: &str) -> bool {
    content
        .strip_prefix("-> ")
        .is_some_and(|rest| !rest.starts_with(' ') && is_node_line(rest))
}

fn collapsed(number: usize) -> PlanError {
    bad(
        number,
        "the plan's runs of spaces were collapsed to one (`-> ` where EXPLAIN prints `->  `): \
         its indentation, which says which node holds which, is lost; paste the plan as \
         EXPLAIN printed it",
    )
}

/// An unnumbered subplan header (before PostgreSQL 9.0), which labels every child below it.
fn is_group_label(label: &str) -> bool {
    matches!(label, "InitPlan" | "SubPlan")
}

/// Whether a line is a plan node's first line (`Seq Scan on t  (cost=...)`, or a bare node name
/// under COSTS OFF), as opposed to a property line (`Sort Key: a`).
pub(super) fn is_node_line(line: &str) -> bool {
    let name = line.trim();
    let head = &name[..figures_start(name)];
    head_of(head.trim_end()).is_some()
}

/// The JSON keys whose values are booleans; the TEXT format prints them as `true`/`false`.
const BOOL_KEYS: [&str; 5] = [
    "Inner Unique",
    "Single Copy",
    "Disabled",
    "Async Capable",
    "Parallel Aware",
];

/// Keys whose values are expressions, names or words: text even when they read like a number or
/// a boolean (`One-Time Filter: false`, `Filter: true`).
pub(super) fn is_text_key(key: &str) -> bool {
    if key.starts_with("Rows Removed") {
        return false;
    }
    key.ends_with("Cond")
        || key.ends_with(" Name")
        || key.ends_with("Key")
        || key.ends_with("Filter")
        || key.ends_with("Condition")
        || matches!(
            key,
            "Cache Key"
                | "Cache Mode"
                | "Function Call"
                | "Table Function Call"
                | "Remote SQL"
                | "Relations"
                | "Order By"
                | "Window"
                | "Conflict Resolution"
                | "Repeatable Seed"
                | "Sampling Method"
                | "Storage"
                | "Query Text"
                | "Query Parameters"
                | "Node Type"
                | "Schema"
                | "Alias"
                | "Parent Relationship"
                | "Join Type"
                | "Strategy"
                | "Partial Mode"
                | "Scan Direction"
                | "Operation"
                | "Command"
                | "Sort Method"
                | "Sort Space Type"
                | "Relation"
                | "Format"
                | "Custom Plan Provider"
        )
}

/// Properties EXPLAIN prints as a list (`ExplainPropertyList`): `a, b, c` in the text.
pub(super) const LIST_KEYS: [&str; 7] = [
    "Output",
    "Sort Key",
    "Presorted Key",
    "Group Key",
    "Hash Key",
    "Conflict Arbiter Indexes",
    "Params Evaluated",
];

const BUFFER_KEYS: [&str; 10] = [
    "Shared Hit Blocks",
    "Shared Read Blocks",
    "Shared Dirtied Blocks",
    "Shared Written Blocks",
    "Local Hit Blocks",
    "Local Read Blocks",
    "Local Dirtied Blocks",
    "Local Written Blocks",
    "Temp Read Blocks",
    "Temp Written Blocks",
];

/// How the server that printed the plan names its I/O timings: the TEXT labels differ by
/// version, and so do the JSON keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum IoStyle {
    /// 13 and 14: `I/O Timings: read=… write=…` (shared only).
    Plain,
    /// 15 and 16: `shared/local read=…`, `temp read=…`.
    SharedLocal,
    /// 17 and later: `shared`, `local` and `temp` each on their own.
    Separate,
}

impl IoStyle {
    fn keys(self) -> &'static [&'static str] {
        match self {
            IoStyle::Plain => &["I/O Read Time", "I/O Write Time"],
            IoStyle::SharedLocal => &[
                "I/O Read Time",
                "I/O Write Time",
                "Temp I/O Read Time",
                "Temp I/O Write Time",
            ],
            IoStyle::Separate => &[
                "Shared I/O Read Time",
                "Shared I/O Write Time",
                "Local I/O Read Time",
                "Local I/O Write Time",
                "Temp I/O Read Time",
                "Temp I/O Write Time",
            ],
        }
    }
}

#[derive(Default)]
struct NodeBuild<'a> {
    map: Obj<'a>,
    node_type: &'static str,
    children: Vec<usize>,
    workers: Vec<Obj<'a>>,
    /// The column of the node's name; its properties and children start two further in.
    name_col: usize,
    depth: usize,
    /// Children without a subplan label so far (the first is Outer, the second Inner).
    plain_children: usize,
    analyzed: bool,
}

/// Where lines deeper than a property line go.
#[derive(Clone, Copy, PartialEq)]
enum Block {
    None,
    /// A `Worker N:` block of a node: its lines sit two columns deeper.
    Worker {
        node: usize,
        worker: usize,
        col: usize,
    },
    /// `JIT:` (the plan's, or a worker's) at `col`.
    Jit {
        worker: Option<(usize, usize)>,
        col: usize,
    },
    Planning,
    Serialization,
}

#[derive(Default)]
struct Reader<'a> {
    nodes: Vec<NodeBuild<'a>>,
    stack: Vec<usize>,
    pending_label: Option<(usize, String)>,
    top: Obj<'a>,
    planning: Obj<'a>,
    serialization: Option<Obj<'a>>,
    jit: Option<Obj<'a>>,
    settings: Option<Obj<'a>>,
    triggers: Vec<Val<'a>>,
    query_text: Option<String>,
    block: BlockState,
    tree_done: bool,
    max_depth: usize,
    timing: bool,
    buffers_seen: bool,
    wal_seen: bool,
    verbose: bool,
    io_style: Option<IoStyle>,
    /// A `(returns $0)` subplan label: PostgreSQL 16 or older, which tells 15–16's I/O timing
    /// keys from 17's when only `temp` timings were printed.
    version_16_or_older: bool,
    /// Signs of 17 or later: subplan labels without `(returns $0)`, `Serialization`, the
    /// planner's `Memory`, local I/O timings.
    version_17_or_newer: bool,
    version_18: bool,
    /// Whether the line after the root has said where the root's column is.
    root_placed: bool,
    /// Columns added to every indented line after the root (see `place_root`).
    shift: usize,
    /// The first node is a child (`->  …`): the plan was pasted from its middle.
    subtree: bool,
}

struct BlockState(Block);

impl Default for BlockState {
    fn default() -> Self {
        BlockState(Block::None)
    }
}

fn bad(line: usize, detail: impl Into<String>) -> PlanError {
    PlanError::BadLine {
        format: "TEXT",
        line,
        detail: one_line(&detail.into()),
    }
}

/// An error's detail on one line: the input it quotes may hold any character.
pub(super) fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_debug().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn leading_spaces(line: &str) -> usize {
    // Eight bytes at a time: a deep plan's lines start with hundreds of spaces, on every line.
    let bytes = line.as_bytes();
    let mut n = 0;
    while bytes.len() - n >= 8 && bytes[n..n + 8] == [b' '; 8] {
        n += 8;
    }
    n + bytes[n..].iter().take_while(|&&b| b == b' ').count()
}

/// `text.trim_start()`, with a plan's indentation (ASCII spaces) skipped byte by byte first.
fn trim_start(text: &str) -> &str {
    let rest = &text[leading_spaces(text)..];
    match rest.as_bytes().first() {
        // Printable ASCII is no whitespace; anything else is left to `trim_start`'s own rules.
        Some(b'!'..=b'~') | None => rest,
        Some(_) => rest.trim_start(),
    }
}

impl<'a> Reader<'a> {
    fn read(&mut self, body: &'a str) -> Result<(), PlanError> {
        let mut lines = body.lines().enumerate();
        while let Some((index, raw)) = lines.next() {
            let number = index + 1;
            let line = raw.trim_end();
            // Trimmed at its end, a line of blanks is empty.
            if line.is_empty() {
                continue;
            }
            let mut indent = leading_spaces(line);
            let content = &line[indent..];
            if self.nodes.is_empty() {
                self.before_root(content, indent, number)?;
                continue;
            }
            if !self.root_placed {
                self.root_placed = true;
                self.place_root(content, indent);
            }
            if indent > 0 {
                indent += self.shift;
            }
            let base = self.nodes[0].name_col;
            if is_collapsed_child(content) {
                return Err(collapsed(number));
            }
            if let Some(rest) = content.strip_prefix("->  ") {
                if self.tree_done {
                    return Err(bad(number, "a plan node after the plan's summary lines"));
                }
                self.child(rest, indent, number)?;
            } else if !self.tree_done && indent > base {
                self.node_line(content, indent, number)?;
            } else if indent <= base {
                self.tree_done = true;
                self.stack.clear();
                if !self.top_line(content, indent)? {
                    // Past the plan: what follows is not EXPLAIN's (psql's footer, a prompt)...
                    // unless the plan goes on below it: then the line broke the tree.
                    let mut after = lines
                        .by_ref()
                        .filter(|(_, l)| !l.trim().is_empty())
                        .peekable();
                    if after
                        .peek()
                        .is_some_and(|(_, l)| l.trim_start().starts_with("->  "))
                    {
                        return Err(bad(
                            number,
                            format!("{:?} belongs to no plan node", short(content)),
                        ));
                    }
                    // ...or its summary lines come after it (a property's continuation that
                    // psql or a copy broke off at the left margin): stopping here would drop
                    // them. What the line continued cannot be told (the break may have
                    // taken a space or split a name), so it is refused, not guessed.
                    let summary = after
                        .map(|(_, l)| trim_start(l.trim_end()))
                        .take_while(|l| !is_node_line(l))
                        .find(|l| is_summary_line(l));
                    if let Some(summary) = summary {
                        return Err(bad(
                            number,
                            format!(
                                "{:?} stands between the plan's nodes and its summary line {:?}: \
                                 a line broken off the one above (join it back)",
                                short(content),
                                short(summary)
                            ),
                        ));
                    }
                    break;
                }
            } else {
                self.block_line(content, indent, number)?;
            }
        }
        if self.nodes.is_empty() {
            return Err(bad(1, "no plan node found"));
        }
        Ok(())
    }

    /// EXPLAIN indents every line by an even number of columns from the root's: properties and
    /// children two in, summary lines (`Planning Time:`) at the root's own. A line after a root
    /// at column 0 that stands an odd number of columns in says the root lost its indentation
    /// when it was copied (psql's one-space margin, a `trim()`): its column is put back from
    /// that line, a summary line standing at it, a property or child two further in. A line at
    /// column 1 that is not a summary line says the rest lost one column more than the root:
    /// every indented line is moved one column in.
    fn place_root(&mut self, content: &'a str, indent: usize) {
        if self.nodes[0].name_col != 0 || indent.is_multiple_of(2) {
            return;
        }
        if is_summary_line(content) {
            self.nodes[0].name_col = indent;
        } else if indent >= 3 {
            self.nodes[0].name_col = indent - 2;
        } else {
            self.shift = 1;
        }
    }

    /// Lines before the root node: auto_explain's `Query Text:` (which may span lines) and
    /// `Query Parameters:`.
    fn before_root(
        &mut self,
        content: &'a str,
        indent: usize,
        number: usize,
    ) -> Result<(), PlanError> {
        if let Some(text) = content.strip_prefix("Query Text: ") {
            self.query_text = Some(text.to_owned());
            return Ok(());
        }
        if let Some(params) = content.strip_prefix("Query Parameters: ") {
            self.top.insert("Query Parameters", Val::str(params));
            return Ok(());
        }
        if is_node_line(content) {
            let id = self.new_node(content, indent, 0, number)?;
            self.stack.push(id);
            return Ok(());
        }
        if is_collapsed_child(content) {
            return Err(collapsed(number));
        }
        // A subtree copied out of a larger plan: its root is a child's line, whose name stands
        // four columns after the arrow (as `child` places it).
        if let Some(rest) = content.strip_prefix("->  ")
            && is_node_line(rest)
        {
            self.subtree = true;
            let id = self.new_node(rest, indent + 4, 0, number)?;
            self.stack.push(id);
            return Ok(());
        }
        match &mut self.query_text {
            Some(query) => {
                query.push('\n');
                query.push_str(&" ".repeat(indent));
                query.push_str(content);
                Ok(())
            }
            None => Err(bad(
                number,
                format!("expected a plan node, found {:?}", short(content)),
            )),
        }
    }

    fn new_node(
        &mut self,
        text: &'a str,
        name_col: usize,
        depth: usize,
        number: usize,
    ) -> Result<usize, PlanError> {
        if depth >= MAX_PLAN_DEPTH {
            return Err(PlanError::TooDeep);
        }
        self.max_depth = self.max_depth.max(depth);
        let mut node = NodeBuild {
            // EXPLAIN (ANALYZE, BUFFERS, VERBOSE) gives a node about 30 to 40 keys: room for
            // them from the start, not a copy of the entries at every doubling.
            map: Obj::with_capacity(40),
            name_col,
            depth,
            ..NodeBuild::default()
        };
        self.node_head(&mut node, text, number)?;
        self.nodes.push(node);
        Ok(self.nodes.len() - 1)
    }

    /// A `->  ` line: a child of the innermost open node whose properties sit at its column.
    fn child(&mut self, rest: &'a str, indent: usize, number: usize) -> Result<(), PlanError> {
        // A subtree's root has no siblings: a second node at its arrow's column (or left of it)
        // is another branch of the plan it was cut from, which no node of the paste holds.
        if self.subtree && indent + 4 <= self.nodes[0].name_col {
            return Err(bad(
                number,
                "a second node beside the pasted subtree's first (the paste starts inside a \
                 plan and holds several of its branches): paste from the node above them",
            ));
        }
        self.close_to(indent);
        // A child at or left of the root's own column: EXPLAIN never prints one, but a plan
        // whose root line was indented further when it was pasted (into a ticket, a test's
        // source) does; before the summary lines, every such child is the root's.
        if self.stack.is_empty() && !self.tree_done {
            self.stack.push(0);
        }
        let Some(&parent) = self.stack.last() else {
            return Err(bad(number, "a child node that no node above it can hold"));
        };
        let label = match self.pending_label.take() {
            Some((col, label)) if col + 2 == indent => {
                // Before 9.0, EXPLAIN printed one unnumbered `InitPlan` or `SubPlan` over all
                // of a node's subplans of that kind: it labels each child at its column.
                if is_group_label(&label) {
                    self.pending_label = Some((col, label.clone()));
                }
                Some(label)
            }
            // A grandchild inside such a group: the group goes on after it.
            Some((col, label)) if is_group_label(&label) && indent > col + 2 => {
                self.pending_label = Some((col, label));
                None
            }
            _ => None,
        };
        let depth = self.nodes[parent].depth + 1;
        let id = self.new_node(rest, indent + 4, depth, number)?;
        let relationship = match &label {
            Some(l) if l.starts_with("SubPlan") => "SubPlan",
            Some(_) => "InitPlan",
            None => {
                let p = &mut self.nodes[parent];
                let first = p.plain_children == 0;
                p.plain_children += 1;
                match p.node_type {
                    "Append" | "Merge Append" | "BitmapAnd" | "BitmapOr" | "Custom Scan" => {
                        "Member"
                    }
                    "Subquery Scan" => "Subquery",
                    _ if first => "Outer",
                    _ => "Inner",
                }
            }
        };
        match &label {
            Some(l) if l.contains("(returns $") => self.version_16_or_older = true,
            Some(l)
                if !is_group_label(l)
                    && (l.starts_with("InitPlan") || l.starts_with("SubPlan")) =>
            {
                self.version_17_or_newer = true
            }
            _ => {}
        }
        // JSON order: Node Type first, then these two.
        let map = &mut self.nodes[id].map;
        map.insert_at(1, "Parent Relationship", Val::str(relationship));
        if let Some(label) = label {
            map.insert_at(2, "Subplan Name", Val::str(label));
        }
        self.nodes[parent].children.push(id);
        self.stack.push(id);
        self.block.0 = Block::None;
        Ok(())
    }

    /// Closes the open nodes whose properties sit deeper than `indent`.
    fn close_to(&mut self, indent: usize) {
        while let Some(&top) = self.stack.last() {
            if self.nodes[top].name_col + 2 > indent {
                self.stack.pop();
                self.block.0 = Block::None;
            } else {
                break;
            }
        }
    }

    fn node_line(
        &mut self,
        content: &'a str,
        indent: usize,
        number: usize,
    ) -> Result<(), PlanError> {
        self.close_to(indent);
        // A line at a subplan group's own column or left of it ends the group.
        if self
            .pending_label
            .as_ref()
            .is_some_and(|(col, label)| is_group_label(label) && indent <= *col)
        {
            self.pending_label = None;
        }
        let Some(&owner) = self.stack.last() else {
            return Err(bad(number, "a line that belongs to no plan node"));
        };
        let props = self.nodes[owner].name_col + 2;
        if indent > props {
            return self.block_line(content, indent, number);
        }
        self.block.0 = Block::None;
        if let Some(rest) = content.strip_prefix("Worker ")
            && let Some((n, after)) = rest.split_once(':')
            && let Ok(n) = n.parse::<u64>()
        {
            let node = &mut self.nodes[owner];
            let mut worker = Obj::new();
            worker.insert("Worker Number", Val::U64(n));
            node.workers.push(worker);
            let w = node.workers.len() - 1;
            self.block.0 = Block::Worker {
                node: owner,
                worker: w,
                col: indent,
            };
            let first = after.trim_start();
            if !first.is_empty() {
                self.worker_item(owner, w, first, indent, number)?;
            }
            return Ok(());
        }
        if (content.starts_with("InitPlan")
            || content.starts_with("SubPlan")
            || content.starts_with("CTE "))
            && !content.contains(": ")
        {
            self.pending_label = Some((indent, content.to_owned()));
            return Ok(());
        }
        let mut map = std::mem::take(&mut self.nodes[owner].map);
        let result = self.property(&mut map, content, number);
        self.nodes[owner].map = map;
        result
    }

    fn worker_item(
        &mut self,
        node: usize,
        worker: usize,
        content: &'a str,
        col: usize,
        number: usize,
    ) -> Result<(), PlanError> {
        if content == "JIT:" {
            self.block.0 = Block::Jit {
                worker: Some((node, worker)),
                col,
            };
            self.nodes[node].workers[worker].insert("JIT", Val::Object(Obj::new()));
            return Ok(());
        }
        let mut map = std::mem::take(&mut self.nodes[node].workers[worker]);
        let result = if let Some(actual) = content.strip_prefix("actual ") {
            self.actual(&mut map, actual, number)
        } else {
            self.property(&mut map, content, number)
        };
        self.nodes[node].workers[worker] = map;
        result
    }

    /// A line deeper than the property lines: inside a worker, JIT, Planning or Serialization
    /// block.
    fn block_line(
        &mut self,
        content: &'a str,
        indent: usize,
        number: usize,
    ) -> Result<(), PlanError> {
        match self.block.0 {
            Block::Worker { node, worker, col } if indent > col => {
                self.worker_item(node, worker, content, indent, number)?;
                // A JIT block opened inside the worker stays open; anything else keeps the worker.
                if !matches!(self.block.0, Block::Jit { .. }) {
                    self.block.0 = Block::Worker { node, worker, col };
                }
                Ok(())
            }
            Block::Jit { worker, col } if indent > col => {
                let target = match worker {
                    Some((n, w)) => self.nodes[n].workers[w]
                        .get_mut("JIT")
                        .and_then(Val::as_object_mut),
                    None => self.jit.as_mut(),
                };
                if let Some(map) = target {
                    jit_line(map, content);
                }
                Ok(())
            }
            Block::Jit {
                worker: Some((node, worker)),
                ..
            } => {
                // Back out of the worker's JIT block into the worker.
                let col = indent.saturating_sub(2);
                self.block.0 = Block::Worker { node, worker, col };
                self.block_line(content, indent, number)
            }
            Block::Planning => {
                let mut map = std::mem::take(&mut self.planning);
                let result = self.property(&mut map, content, number);
                self.planning = map;
                result
            }
            Block::Serialization => {
                let mut map = self.serialization.take().unwrap_or_default();
                let result = self.property(&mut map, content, number);
                self.serialization = Some(map);
                result
            }
            _ => {
                // An unexpected indentation: the innermost node's property, as psql would have
                // shown a continued value.
                if let Some(&owner) = self.stack.last() {
                    let mut map = std::mem::take(&mut self.nodes[owner].map);
                    let result = self.property(&mut map, content, number);
                    self.nodes[owner].map = map;
                    return result;
                }
                Err(bad(
                    number,
                    format!("cannot tell what {:?} belongs to", short(content)),
                ))
            }
        }
    }

    /// A line of the plan's summary (after the tree). `false` when it is not EXPLAIN's.
    fn top_line(&mut self, content: &'a str, indent: usize) -> Result<bool, PlanError> {
        self.block.0 = Block::None;
        match content {
            "Planning:" => {
                self.block.0 = Block::Planning;
                return Ok(true);
            }
            "JIT:" => {
                self.jit = Some(Obj::new());
                self.block.0 = Block::Jit {
                    worker: None,
                    col: indent,
                };
                return Ok(true);
            }
            _ => {}
        }
        let Some((key, value)) = content.split_once(": ") else {
            return Ok(false);
        };
        match key {
            // Before PostgreSQL 10: "Planning time", "Execution time"; before 9.4 the execution
            // time was "Total runtime" (JSON "Total Runtime").
            "Planning Time" | "Execution Time" | "Planning time" | "Execution time"
            | "Total runtime" => {
                let ms = value.strip_suffix(" ms").unwrap_or(value);
                let key = match key {
                    "Planning time" => "Planning Time",
                    "Execution time" => "Execution Time",
                    "Total runtime" => "Total Runtime",
                    key => key,
                };
                match number_val(ms) {
                    Some(n) => {
                        self.top.insert(key, n);
                    }
                    None => return Ok(false),
                }
            }
            "Settings" => self.settings = Some(settings(value)),
            "Serialization" => {
                self.version_17_or_newer = true;
                let mut map = Obj::new();
                for part in value.split("  ") {
                    if let Some(t) = part.strip_prefix("time=") {
                        insert_number(&mut map, "Time", t.trim_end_matches(" ms"));
                    } else if let Some(o) = part.strip_prefix("output=") {
                        insert_number(&mut map, "Output Volume", o.trim_end_matches("kB"));
                    } else if let Some(f) = part.strip_prefix("format=") {
                        map.insert("Format", Val::str(f));
                    }
                }
                self.serialization = Some(map);
                self.block.0 = Block::Serialization;
            }
            "Query Identifier" => {
                let v = number_val(value).unwrap_or_else(|| Val::str(value));
                self.top.insert(key, v);
            }
            _ if key.starts_with("Trigger ") => self.triggers.push(trigger(&key[8..], value)),
            _ => {
                if key.contains("  ") || key.is_empty() {
                    return Ok(false);
                }
                self.top.insert(key, typed_val(key, value));
            }
        }
        Ok(true)
    }

    /// `(cost=…) (actual …)` and the node's name, target and kind.
    fn node_head(
        &mut self,
        node: &mut NodeBuild<'a>,
        text: &'a str,
        number: usize,
    ) -> Result<(), PlanError> {
        let text = text.trim_end();
        let split = figures_start(text);
        let (name, figures) = text.split_at(split);
        let Some(head) = head_of(name.trim_end()) else {
            return Err(bad(number, format!("not a plan node: {:?}", short(text))));
        };
        node.node_type = head.node_type;
        let map = &mut node.map;
        map.insert("Node Type", Val::str(head.node_type));
        for (k, v) in head.keys {
            map.insert(*k, Val::str(*v));
        }
        if let Some(command) = head.command {
            map.insert("Command", Val::str(command));
        }
        if let Some(provider) = head.provider {
            map.insert("Custom Plan Provider", Val::str(provider));
        }
        map.insert("Parallel Aware", Val::Bool(head.parallel));
        if head.is_async {
            map.insert("Async Capable", Val::Bool(true));
        }
        target(map, head.node_type, head.rest, number)?;
        // The figures: `  (cost=a..b rows=r width=w)` then ` (actual …)` or ` (never executed)`.
        let mut rest = figures.trim_start();
        while !rest.is_empty() {
            let Some(inner) = rest.strip_prefix('(') else {
                return Err(bad(number, format!("cannot read {:?}", short(rest))));
            };
            let close = inner.find(')').ok_or_else(|| {
                bad(
                    number,
                    "a node's figures lack their closing parenthesis: the line is cut off \
                         (paste the plan whole)",
                )
            })?;
            let group = &inner[..close];
            rest = inner[close + 1..].trim_start();
            if let Some(cost) = group.strip_prefix("cost=") {
                self.costs(map, cost, number)?;
            } else if let Some(actual) = group.strip_prefix("actual ") {
                node.analyzed = true;
                self.actual(map, actual, number)?;
            } else if group == "never executed" {
                node.analyzed = true;
                map.insert("Actual Loops", Val::U64(0));
            } else {
                return Err(bad(number, format!("cannot read ({})", short(group))));
            }
        }
        Ok(())
    }

    fn costs(&mut self, map: &mut Obj<'a>, cost: &'a str, number: usize) -> Result<(), PlanError> {
        let mut words = cost.split(' ');
        let range = words.next().unwrap_or_default();
        let (startup, total) = range
            .split_once("..")
            .ok_or_else(|| bad(number, format!("cannot read cost={range}")))?;
        insert_checked(map, "Startup Cost", startup, number)?;
        insert_checked(map, "Total Cost", total, number)?;
        for word in words {
            match word.split_once('=') {
                Some(("rows", v)) => insert_checked(map, "Plan Rows", v, number)?,
                Some(("width", v)) => insert_checked(map, "Plan Width", v, number)?,
                _ => return Err(bad(number, format!("cannot read {word:?} in (cost=…)"))),
            }
        }
        Ok(())
    }

    /// `time=a..b rows=r loops=l` or, under TIMING OFF, `rows=r loops=l`.
    fn actual(
        &mut self,
        map: &mut Obj<'a>,
        actual: &'a str,
        number: usize,
    ) -> Result<(), PlanError> {
        for word in actual.split(' ').filter(|w| !w.is_empty()) {
            match word.split_once('=') {
                Some(("time", v)) => {
                    self.timing = true;
                    let (startup, total) = v
                        .split_once("..")
                        .ok_or_else(|| bad(number, format!("cannot read time={v}")))?;
                    insert_checked(map, "Actual Startup Time", startup, number)?;
                    insert_checked(map, "Actual Total Time", total, number)?;
                }
                Some(("rows", v)) => {
                    // PostgreSQL 18 prints actual rows with two decimals.
                    if v.contains('.') {
                        self.version_18 = true;
                    }
                    insert_checked(map, "Actual Rows", v, number)?;
                }
                Some(("loops", v)) => insert_checked(map, "Actual Loops", v, number)?,
                _ => return Err(bad(number, format!("cannot read {word:?} in (actual …)"))),
            }
        }
        Ok(())
    }

    /// One property line of a node, a worker, Planning or Serialization: `Key: value`, or several
    /// `Key: value` pairs two spaces apart (`Sort Method: quicksort  Memory: 25kB`).
    fn property(
        &mut self,
        map: &mut Obj<'a>,
        content: &'a str,
        number: usize,
    ) -> Result<(), PlanError> {
        let Some((key, value)) = content.split_once(": ") else {
            // `Update on public.part_1 p_1`: a ModifyTable with several target tables (or one
            // that is not the statement's own) names each, as JSON's "Target Tables" does.
            if map.get("Node Type").and_then(Val::as_str) == Some("ModifyTable")
                && let Some((_, on)) = [
                    "Insert",
                    "Update",
                    "Delete",
                    "Merge",
                    "Foreign Insert",
                    "Foreign Update",
                    "Foreign Delete",
                ]
                .iter()
                .find_map(|op| Some((op, content.strip_prefix(op)?.strip_prefix(' ')?)))
                && on.starts_with("on ")
            {
                let mut table = Obj::new();
                target(&mut table, "ModifyTable", &format!(" {on}"), number)?;
                map.insert_absent("Target Tables", || Val::Array(Vec::new()));
                if let Some(Val::Array(tables)) = map.get_mut("Target Tables") {
                    tables.push(Val::Object(table));
                }
                return Ok(());
            }
            // `...` or `…`: lines left out of an excerpt (documentation, a ticket). What they
            // held (nodes, figures) is not there to read: refused, not read as the whole plan.
            if content.chars().all(|c| matches!(c, '.' | '…')) {
                return Err(bad(
                    number,
                    format!(
                        "{content:?} marks lines left out of the plan (an excerpt): paste the \
                         plan whole"
                    ),
                ));
            }
            // Anything an extension prints without a colon: kept as a flag.
            let key = content.trim_end_matches(':');
            map.insert(key, Val::Null);
            return Ok(());
        };
        match key {
            _ if LIST_KEYS.contains(&key) => {
                if key == "Output" {
                    self.verbose = true;
                }
                map.insert(key, Val::Array(split_list(value)));
            }
            "Buffers" => {
                self.buffers_seen = true;
                buffers(map, value, number)?;
            }
            "I/O Timings" => self.io_timings(map, value, number)?,
            // MERGE's outcome (15+): `Tuples: inserted=1 updated=2`, zero counts left out.
            "Tuples" if map.get("Node Type").and_then(Val::as_str) == Some("ModifyTable") => {
                for (word, key) in [
                    ("inserted", "Tuples Inserted"),
                    ("updated", "Tuples Updated"),
                    ("deleted", "Tuples Deleted"),
                    ("skipped", "Tuples Skipped"),
                ] {
                    let n = value
                        .split(' ')
                        .find_map(|part| part.strip_prefix(word)?.strip_prefix('='))
                        .unwrap_or("0");
                    insert_checked(map, key, n, number)?;
                }
            }
            "WAL" => {
                self.wal_seen = true;
                wal(map, value, number)?;
            }
            "Heap Blocks" => {
                for part in value.split(' ') {
                    match part.split_once('=') {
                        Some(("exact", v)) => insert_checked(map, "Exact Heap Blocks", v, number)?,
                        Some(("lossy", v)) => insert_checked(map, "Lossy Heap Blocks", v, number)?,
                        _ => return Err(bad(number, format!("cannot read Heap Blocks: {value}"))),
                    }
                }
            }
            "Memory" => {
                // `Memory: used=12kB  allocated=16kB` (the MEMORY option, 17+).
                self.version_17_or_newer = true;
                for figure in value.split(' ').filter(|f| !f.is_empty()) {
                    match figure.split_once('=') {
                        Some(("used", v)) => {
                            insert_checked(map, "Memory Used", kilobytes(v), number)?
                        }
                        Some(("allocated", v)) => {
                            insert_checked(map, "Memory Allocated", kilobytes(v), number)?
                        }
                        _ => return Err(bad(number, format!("cannot read Memory: {value}"))),
                    }
                }
            }
            "Sort Method" | "Buckets" | "Batches" | "Planned Partitions" | "Hits" | "Storage" => {
                pairs(map, content, number)?
            }
            "Full-sort Groups" | "Pre-sorted Groups" => {
                map.insert(key, Val::Object(sort_groups(content, number)?));
            }
            "Estimates" => {
                // Memoize's estimates are PostgreSQL 18's.
                self.version_18 = true;
                estimates(map, value, number)?
            }
            "Index Searches" => {
                self.version_18 = true;
                map.insert(key, typed_val(key, value));
            }
            "Disabled" => {
                self.version_18 = true;
                map.insert(key, typed_val(key, value));
            }
            _ => {
                map.insert(key, typed_val(key, value));
            }
        }
        Ok(())
    }

    /// `I/O Timings: read=… write=…` (13–14), or `shared read=…, local …, temp …` (15+). 15–16
    /// call the shared timings "I/O Read Time" in JSON, 17+ "Shared I/O Read Time"; they are
    /// read as the latter and renamed once the plan has shown its version (see `finish`).
    fn io_timings(
        &mut self,
        map: &mut Obj<'a>,
        value: &str,
        number: usize,
    ) -> Result<(), PlanError> {
        for group in value.split(", ") {
            let (label, figures) = match group.split_once(' ') {
                Some((label, rest)) if !label.contains('=') => (label, rest),
                _ => ("", group),
            };
            let ((read, write), style) = match label {
                "" => (("I/O Read Time", "I/O Write Time"), IoStyle::Plain),
                "shared/local" => (("I/O Read Time", "I/O Write Time"), IoStyle::SharedLocal),
                "shared" => (
                    ("Shared I/O Read Time", "Shared I/O Write Time"),
                    IoStyle::SharedLocal,
                ),
                "local" => {
                    // Local timings of their own: 17 or later.
                    self.version_17_or_newer = true;
                    (
                        ("Local I/O Read Time", "Local I/O Write Time"),
                        IoStyle::Separate,
                    )
                }
                "temp" => (
                    ("Temp I/O Read Time", "Temp I/O Write Time"),
                    IoStyle::SharedLocal,
                ),
                _ => return Err(bad(number, format!("cannot read I/O Timings: {value}"))),
            };
            self.io_style = Some(self.io_style.map_or(style, |seen| seen.max(style)));
            for figure in figures.split(' ') {
                let (key, v) = match figure.split_once('=') {
                    Some(("read", v)) => (read, v),
                    Some(("write", v)) => (write, v),
                    _ => return Err(bad(number, format!("cannot read I/O Timings: {value}"))),
                };
                insert_checked(map, key, v, number)?;
            }
        }
        Ok(())
    }

    /// The JSON object EXPLAIN would have printed.
    fn finish(mut self) -> Val<'a> {
        let analyzed = self.nodes.iter().any(|n| n.analyzed);
        // 15–16 and 17+ print the same labels; the JSON keys differ. Without a sign of the
        // version, the newer naming.
        let io_style = self.io_style.map(|style| match style {
            IoStyle::SharedLocal if self.version_17_or_newer || !self.version_16_or_older => {
                IoStyle::Separate
            }
            other => other,
        });
        if io_style == Some(IoStyle::SharedLocal) {
            let rename = |map: &mut Obj<'a>| {
                for (from, to) in [
                    ("Shared I/O Read Time", "I/O Read Time"),
                    ("Shared I/O Write Time", "I/O Write Time"),
                ] {
                    if let Some(v) = map.remove(from) {
                        map.insert(to, v);
                    }
                }
            };
            for node in &mut self.nodes {
                rename(&mut node.map);
                node.workers.iter_mut().for_each(rename);
            }
            rename(&mut self.planning);
            if let Some(s) = self.serialization.as_mut() {
                rename(s);
            }
        }
        let fill = Fill {
            buffers: self.buffers_seen,
            io: io_style,
            wal: self.wal_seen,
            wal_buffers_full: self.version_18,
        };
        let timing = self.timing;
        let verbose = self.verbose;
        let version_18 = self.version_18;
        let root_relation = self.nodes.first().and_then(|root| {
            (root.node_type == "ModifyTable")
                .then(|| root.map.get("Relation Name").cloned())
                .flatten()
        });
        for node in &mut self.nodes {
            complete_node(node, analyzed, timing, verbose, version_18, &fill);
        }
        // Children complete before their parents: pre-order ids grow downwards.
        let mut built: Vec<Option<Obj<'a>>> = Vec::with_capacity(self.nodes.len());
        let mut children_of = Vec::with_capacity(self.nodes.len());
        for node in self.nodes.iter_mut() {
            built.push(Some(std::mem::take(&mut node.map)));
            children_of.push(std::mem::take(&mut node.children));
        }
        for id in (0..built.len()).rev() {
            if children_of[id].is_empty() {
                continue;
            }
            let plans: Vec<Val> = children_of[id]
                .iter()
                .map(|&c| Val::Object(built[c].take().unwrap_or_default()))
                .collect();
            if let Some(map) = built[id].as_mut() {
                map.insert("Plans", Val::Array(plans));
            }
        }
        let root = built.into_iter().next().flatten().unwrap_or_default();

        let mut top = Obj::new();
        if let Some(query) = self.query_text.take() {
            top.insert("Query Text", Val::str(query));
        }
        top.insert("Plan", Val::Object(root));
        if let Some(settings) = self.settings.take() {
            top.insert("Settings", Val::Object(settings));
        }
        if fill.buffers || !self.planning.is_empty() {
            let mut planning = std::mem::take(&mut self.planning);
            if fill.buffers {
                fill_zero(&mut planning, &BUFFER_KEYS);
            }
            if let Some(style) = fill.io.filter(|_| fill.buffers) {
                fill_zero_float(&mut planning, style.keys());
            }
            top.insert("Planning", Val::Object(planning));
        }
        if let Some(ms) = self.top.remove("Planning Time") {
            top.insert("Planning Time", ms);
        }
        if let Some(mut serialization) = self.serialization.take() {
            if fill.buffers {
                fill_zero(&mut serialization, &BUFFER_KEYS);
                if let Some(style) = fill.io {
                    fill_zero_float(&mut serialization, style.keys());
                }
            }
            top.insert("Serialization", Val::Object(serialization));
        }
        if analyzed {
            let triggers = std::mem::take(&mut self.triggers)
                .into_iter()
                .map(|mut t| {
                    // Without several result relations the text leaves the relation out: it is
                    // the statement's target.
                    if let (Val::Object(map), Some(rel)) = (&mut t, &root_relation)
                        && !map.contains_key("Relation")
                    {
                        let mut with = Obj::new();
                        for (k, v) in std::mem::take(map) {
                            let is_time = k == "Time" || k == "Calls";
                            if is_time && !with.contains_key("Relation") {
                                with.insert("Relation", rel.clone());
                            }
                            with.insert(k, v);
                        }
                        *map = with;
                    }
                    t
                })
                .collect();
            top.insert("Triggers", Val::Array(triggers));
        }
        if let Some(jit) = self.jit.take() {
            top.insert("JIT", Val::Object(jit));
        }
        if let Some(ms) = self.top.remove("Execution Time") {
            top.insert("Execution Time", ms);
        }
        top.extend(std::mem::take(&mut self.top));
        Val::Array(vec![Val::Object(top)])
    }
}

struct Fill {
    buffers: bool,
    io: Option<IoStyle>,
    wal: bool,
    wal_buffers_full: bool,
}

fn fill_zero<'a>(map: &mut Obj<'a>, keys: &[&'a str]) {
    for key in keys {
        map.insert_absent(*key, || Val::U64(0));
    }
}

fn fill_zero_float<'a>(map: &mut Obj<'a>, keys: &[&'a str]) {
    for key in keys {
        map.insert_absent(*key, || Val::F64(0.0));
    }
}

/// Puts back what the TEXT format leaves out of one node (see the module's comment).
fn complete_node(
    node: &mut NodeBuild<'_>,
    analyzed: bool,
    timing: bool,
    verbose: bool,
    version_18: bool,
    fill: &Fill,
) {
    let map = &mut node.map;
    let zero = || Val::U64(0);
    match node.node_type {
        "Nested Loop" | "Hash Join" | "Merge Join" => {
            map.insert_absent("Join Type", || Val::str("Inner"));
            // VERBOSE prints "Inner Unique: true" only; without VERBOSE it says nothing.
            if verbose && !map.contains_key("Inner Unique") {
                map.insert("Inner Unique", Val::Bool(false));
            }
        }
        "Aggregate" => {
            map.insert_absent("Partial Mode", || Val::str("Simple"));
            let hashed = matches!(
                map.get("Strategy").and_then(Val::as_str),
                Some("Hashed" | "Mixed")
            );
            if hashed {
                if map.contains_key("Startup Cost") && !map.contains_key("Planned Partitions") {
                    map.insert("Planned Partitions", zero());
                }
                if analyzed
                    && map.contains_key("HashAgg Batches")
                    && !map.contains_key("Disk Usage")
                {
                    map.insert("Disk Usage", zero());
                }
                for worker in &mut node.workers {
                    if worker.contains_key("HashAgg Batches") && !worker.contains_key("Disk Usage")
                    {
                        worker.insert("Disk Usage", zero());
                    }
                }
            }
        }
        "Index Scan" | "Index Only Scan" => {
            map.insert_absent("Scan Direction", || Val::str("Forward"));
        }
        // explain.c's ExplainMissingMembers: TEXT shows the count only when some were pruned.
        "Append" | "Merge Append" => {
            map.insert_absent("Subplans Removed", zero);
        }
        "Gather" => {
            map.insert_absent("Single Copy", || Val::Bool(false));
        }
        _ => {}
    }
    if version_18 && !map.contains_key("Disabled") {
        map.insert("Disabled", Val::Bool(false));
    }
    if !analyzed {
        return;
    }
    if map.get("Actual Loops").and_then(Val::as_u64) == Some(0) && !map.contains_key("Actual Rows")
    {
        // "(never executed)": JSON gives zeros.
        let loops = map.remove("Actual Loops");
        if timing {
            map.insert("Actual Startup Time", Val::float(0.0));
            map.insert("Actual Total Time", Val::float(0.0));
        }
        map.insert(
            "Actual Rows",
            if version_18 { Val::float(0.0) } else { zero() },
        );
        map.insert("Actual Loops", loops.unwrap_or_else(zero));
    }
    // MERGE's outcome: TEXT prints its `Tuples` line only when some row was merged, JSON always
    // gives the four counts (explain.c's show_modifytable_info).
    if node.node_type == "ModifyTable"
        && map.get("Operation").and_then(Val::as_str) == Some("Merge")
    {
        for key in [
            "Tuples Inserted",
            "Tuples Updated",
            "Tuples Deleted",
            "Tuples Skipped",
        ] {
            map.insert_absent(key, zero);
        }
    }
    // Zero counts the TEXT format suppresses (explain.c's show_instrumentation_count).
    let removed = [
        ("Filter", "Rows Removed by Filter"),
        ("Join Filter", "Rows Removed by Join Filter"),
    ];
    for (condition, count) in removed {
        if map.contains_key(condition) && !map.contains_key(count) {
            map.insert(count, zero());
        }
    }
    let rechecked = match node.node_type {
        "Index Scan" | "Index Only Scan" => map.contains_key("Index Cond"),
        "Bitmap Heap Scan" => map.contains_key("Recheck Cond"),
        _ => false,
    };
    if rechecked && !map.contains_key("Rows Removed by Index Recheck") {
        map.insert("Rows Removed by Index Recheck", zero());
    }
    if node.node_type == "Bitmap Heap Scan" {
        fill_zero(map, &["Exact Heap Blocks", "Lossy Heap Blocks"]);
    }
    if fill.buffers {
        fill_zero(map, &BUFFER_KEYS);
    }
    if let Some(style) = fill.io {
        fill_zero_float(map, style.keys());
    }
    if fill.wal {
        fill_zero(map, &["WAL Records", "WAL FPI", "WAL Bytes"]);
        if fill.wal_buffers_full {
            fill_zero(map, &["WAL Buffers Full"]);
        }
    }
    if !node.workers.is_empty() {
        let workers = std::mem::take(&mut node.workers)
            .into_iter()
            .map(|mut w| {
                // A worker's buffers and I/O are shown with its timing (VERBOSE); without it, only
                // its sort or hash details.
                if !w.contains_key("Actual Loops") {
                    return Val::Object(w);
                }
                if fill.buffers {
                    fill_zero(&mut w, &BUFFER_KEYS);
                }
                if let Some(style) = fill.io {
                    fill_zero_float(&mut w, style.keys());
                }
                if fill.wal {
                    fill_zero(&mut w, &["WAL Records", "WAL FPI", "WAL Bytes"]);
                }
                Val::Object(w)
            })
            .collect();
        map.insert("Workers", Val::Array(workers));
    }
}

/// Where a node line's figures start: `  (cost=`, ` (actual ` or ` (never executed)`. EXPLAIN
/// puts two spaces before `(cost=`; a plan edited by hand or with its runs of spaces collapsed
/// has one, and a name cannot hold ` (cost=` followed by a figure (an alias with a space or a
/// parenthesis is printed quoted), so one space is enough.
fn figures_start(text: &str) -> usize {
    // A line broken inside its first figure (`Sort  (cos`, the rest on the next line).
    if let Some(at) = text.rfind("  (")
        && "cost=".starts_with(&text[at + 3..])
        && at + 3 < text.len()
    {
        return at;
    }
    let mut best = text.len();
    for pattern in [" (actual ", " (never executed)"] {
        if let Some(at) = text.find(pattern)
            && at < best
        {
            best = at;
        }
    }
    let cost = text.match_indices(" (cost=").find(|&(at, pattern)| {
        text[..at].ends_with(' ')
            || text
                .as_bytes()
                .get(at + pattern.len())
                .is_some_and(u8::is_ascii_digit)
    });
    if let Some((at, _)) = cost {
        // With EXPLAIN's two spaces, the name ends at the first.
        let at = if text[..at].ends_with(' ') {
            at - 1
        } else {
            at
        };
        best = best.min(at);
    }
    best
}

/// A node's name, split into what JSON reports in separate keys.
struct Head<'a> {
    node_type: &'static str,
    keys: &'static [(&'static str, &'static str)],
    parallel: bool,
    is_async: bool,
    command: Option<&'static str>,
    provider: Option<&'a str>,
    /// What follows the name: ` on t alias`, ` using idx on t`, ` Backward using …`.
    rest: &'a str,
}

/// Node names as explain.c's text format prints them, with the JSON keys each implies.
const SIMPLE_NODES: [&str; 34] = [
    "Result",
    "ProjectSet",
    "Append",
    "Merge Append",
    "Recursive Union",
    "BitmapAnd",
    "BitmapOr",
    "Seq Scan",
    "Sample Scan",
    "Gather Merge",
    "Gather",
    "Index Only Scan",
    "Index Scan",
    "Bitmap Index Scan",
    "Bitmap Heap Scan",
    "Tid Range Scan",
    "Tid Scan",
    "Subquery Scan",
    "Function Scan",
    "Table Function Scan",
    "Values Scan",
    "CTE Scan",
    "Named Tuplestore Scan",
    "WorkTable Scan",
    "Foreign Scan",
    "Materialize",
    "Memoize",
    "Incremental Sort",
    "Sort",
    "Group",
    "WindowAgg",
    "Unique",
    "LockRows",
    "Limit",
];

const JOIN_TYPES: [(&str, &[(&str, &str)]); 7] = [
    ("Left", &[("Join Type", "Left")]),
    ("Full", &[("Join Type", "Full")]),
    ("Right Semi", &[("Join Type", "Right Semi")]),
    ("Right Anti", &[("Join Type", "Right Anti")]),
    ("Right", &[("Join Type", "Right")]),
    ("Semi", &[("Join Type", "Semi")]),
    ("Anti", &[("Join Type", "Anti")]),
];

/// Whether `rest` may follow a node name: nothing, a target, or figures.
/// ` alias` after `Subquery Scan`: how PostgreSQL before 9.0 named it, without `on`.
fn is_bare_alias(rest: &str) -> bool {
    rest.strip_prefix(' ')
        .is_some_and(|alias| !alias.is_empty() && identifier(alias).1.is_empty())
}

fn name_ends(rest: &str) -> bool {
    rest.is_empty()
        || rest.starts_with(" on ")
        || rest.starts_with(" using ")
        || rest.starts_with(" Backward ")
}

/// The JSON keys a node name implies, as `(key, value)` pairs.
type ImpliedKeys = &'static [(&'static str, &'static str)];

/// What a node name says before its node type: "Parallel " and "Async ", in either order.
#[derive(Debug, Clone, Copy)]
struct NameModifiers {
    parallel: bool,
    is_async: bool,
}

impl NameModifiers {
    /// The modifiers at the start of `name`, and the name after them.
    fn strip(name: &str) -> (NameModifiers, &str) {
        let mut rest = name;
        let mut modifiers = NameModifiers {
            parallel: false,
            is_async: false,
        };
        loop {
            if let Some(r) = rest.strip_prefix("Parallel ") {
                modifiers.parallel = true;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("Async ") {
                modifiers.is_async = true;
                rest = r;
            } else {
                break;
            }
        }
        (modifiers, rest)
    }

    /// The head of a node of `node_type` with these modifiers, `rest` following its name.
    fn head<'a>(self, node_type: &'static str, keys: ImpliedKeys, rest: &'a str) -> Head<'a> {
        Head {
            node_type,
            keys,
            parallel: self.parallel,
            is_async: self.is_async,
            command: None,
            provider: None,
            rest,
        }
    }
}

/// The node type, the keys it implies and what follows, of a node's name as explain.c's text
/// format prints it; `None` when the name is not one PostgreSQL prints.
fn head_of(name: &str) -> Option<Head<'_>> {
    let (modifiers, rest) = NameModifiers::strip(name);
    // Joins: "Nested Loop[ <type> Join]", "Hash[ <type>] Join", "Merge[ <type>] Join".
    if let Some(r) = rest.strip_prefix("Nested Loop") {
        let (keys, after) = nested_loop_join(r)?;
        return Some(modifiers.head("Nested Loop", keys, after));
    }
    if let Some((node_type, keys, after)) = hash_or_merge_join(rest) {
        return Some(modifiers.head(node_type, keys, after));
    }
    // Aggregates: "[Partial |Finalize ]{Aggregate,GroupAggregate,HashAggregate,MixedAggregate}".
    let (partial, agg) = if let Some(r) = rest.strip_prefix("Partial ") {
        (Some("Partial"), r)
    } else if let Some(r) = rest.strip_prefix("Finalize ") {
        (Some("Finalize"), r)
    } else {
        (None, rest)
    };
    if let Some((keys, after)) = aggregate(partial, agg) {
        return Some(modifiers.head("Aggregate", keys, after));
    }
    if partial.is_some() {
        return None;
    }
    if let Some((keys, command, after)) = set_op(rest) {
        let mut h = modifiers.head("SetOp", keys, after);
        h.command = Some(command);
        return Some(h);
    }
    if let Some((node_type, keys, after)) = modify_table(rest) {
        return Some(modifiers.head(node_type, keys, after));
    }
    if let Some(after) = rest.strip_prefix("Custom Scan (") {
        let close = after.find(')')?;
        let r = &after[close + 1..];
        if !name_ends(r) {
            return None;
        }
        let mut h = modifiers.head("Custom Scan", &[], r);
        h.provider = Some(&after[..close]);
        return Some(h);
    }
    if let Some((node_type, keys, after)) = simple_node(rest) {
        return Some(modifiers.head(node_type, keys, after));
    }
    if rest == "Hash" {
        return Some(modifiers.head("Hash", &[], ""));
    }
    None
}

/// What follows "Nested Loop": nothing or " <type> Join", then the name's end.
fn nested_loop_join(r: &str) -> Option<(ImpliedKeys, &str)> {
    if name_ends(r) {
        return Some((&[], r));
    }
    JOIN_TYPES.into_iter().find_map(|(word, keys)| {
        r.strip_prefix(' ')
            .and_then(|r| r.strip_prefix(word))
            .and_then(|r| r.strip_prefix(" Join"))
            .filter(|after| name_ends(after))
            .map(|after| (keys, after))
    })
}

/// "Hash[ <type>] Join" and "Merge[ <type>] Join".
fn hash_or_merge_join(rest: &str) -> Option<(&'static str, ImpliedKeys, &str)> {
    for (prefix, node_type) in [("Hash ", "Hash Join"), ("Merge ", "Merge Join")] {
        if let Some(r) = rest.strip_prefix(prefix) {
            if let Some(after) = r.strip_prefix("Join")
                && name_ends(after)
            {
                return Some((node_type, &[], after));
            }
            for (word, keys) in JOIN_TYPES {
                if let Some(after) = r.strip_prefix(word).and_then(|r| r.strip_prefix(" Join"))
                    && name_ends(after)
                {
                    return Some((node_type, keys, after));
                }
            }
        }
    }
    None
}

/// An aggregate's name after its partial mode (`partial`, when the name had one): the
/// strategy and partial mode it implies.
fn aggregate<'a>(partial: Option<&str>, agg: &'a str) -> Option<(ImpliedKeys, &'a str)> {
    const AGGREGATES: [(&str, &str); 4] = [
        ("GroupAggregate", "Sorted"),
        ("HashAggregate", "Hashed"),
        ("MixedAggregate", "Mixed"),
        ("Aggregate", "Plain"),
    ];
    for (word, strategy) in AGGREGATES {
        if let Some(after) = agg.strip_prefix(word)
            && name_ends(after)
        {
            let keys: ImpliedKeys = match (strategy, partial) {
                ("Sorted", None) => &[("Strategy", "Sorted")],
                ("Sorted", Some("Partial")) => {
                    &[("Strategy", "Sorted"), ("Partial Mode", "Partial")]
                }
                ("Sorted", Some(_)) => &[("Strategy", "Sorted"), ("Partial Mode", "Finalize")],
                ("Hashed", None) => &[("Strategy", "Hashed")],
                ("Hashed", Some("Partial")) => {
                    &[("Strategy", "Hashed"), ("Partial Mode", "Partial")]
                }
                ("Hashed", Some(_)) => &[("Strategy", "Hashed"), ("Partial Mode", "Finalize")],
                ("Mixed", None) => &[("Strategy", "Mixed")],
                ("Mixed", Some("Partial")) => &[("Strategy", "Mixed"), ("Partial Mode", "Partial")],
                ("Mixed", Some(_)) => &[("Strategy", "Mixed"), ("Partial Mode", "Finalize")],
                (_, None) => &[("Strategy", "Plain")],
                (_, Some("Partial")) => &[("Strategy", "Plain"), ("Partial Mode", "Partial")],
                (_, Some(_)) => &[("Strategy", "Plain"), ("Partial Mode", "Finalize")],
            };
            return Some((keys, after));
        }
    }
    None
}

/// "[Hash]SetOp <command>": the strategy it implies, the command and what follows.
fn set_op(rest: &str) -> Option<(ImpliedKeys, &'static str, &str)> {
    for (word, keys) in [
        ("HashSetOp", &[("Strategy", "Hashed")] as ImpliedKeys),
        ("SetOp", &[("Strategy", "Sorted")]),
    ] {
        if let Some(after) = rest.strip_prefix(word) {
            for command in ["Intersect All", "Intersect", "Except All", "Except"] {
                if let Some(r) = after
                    .strip_prefix(' ')
                    .and_then(|r| r.strip_prefix(command))
                    && name_ends(r)
                {
                    return Some((keys, command, r));
                }
            }
        }
    }
    None
}

/// ModifyTable: "Insert on t", and postgres_fdw's direct modifications "Foreign Update on t".
fn modify_table(rest: &str) -> Option<(&'static str, ImpliedKeys, &str)> {
    for (word, node_type, keys) in [
        (
            "Insert",
            "ModifyTable",
            &[("Operation", "Insert")] as ImpliedKeys,
        ),
        ("Update", "ModifyTable", &[("Operation", "Update")]),
        ("Delete", "ModifyTable", &[("Operation", "Delete")]),
        ("Merge", "ModifyTable", &[("Operation", "Merge")]),
        ("Foreign Insert", "Foreign Scan", &[("Operation", "Insert")]),
        ("Foreign Update", "Foreign Scan", &[("Operation", "Update")]),
        ("Foreign Delete", "Foreign Scan", &[("Operation", "Delete")]),
    ] {
        if let Some(after) = rest.strip_prefix(word)
            && (after.starts_with(" on ") || (after.is_empty() && node_type == "Foreign Scan"))
        {
            return Some((node_type, keys, after));
        }
    }
    None
}

/// One of [`SIMPLE_NODES`], whose name implies no key but a Foreign Scan's operation.
fn simple_node(rest: &str) -> Option<(&'static str, ImpliedKeys, &str)> {
    for simple in SIMPLE_NODES {
        if let Some(after) = rest.strip_prefix(simple)
            && (name_ends(after) || (simple == "Subquery Scan" && is_bare_alias(after)))
        {
            let keys: ImpliedKeys = if simple == "Foreign Scan" {
                &[("Operation", "Select")]
            } else {
                &[]
            };
            return Some((simple, keys, after));
        }
    }
    None
}

/// The scan target after a node's name: ` Backward`, ` using index`, ` on [schema.]name [alias]`.
fn target(map: &mut Obj<'_>, node_type: &str, rest: &str, number: usize) -> Result<(), PlanError> {
    let mut rest = rest;
    if let Some(r) = rest.strip_prefix(" Backward") {
        map.insert("Scan Direction", Val::str("Backward"));
        rest = r;
    }
    if let Some(r) = rest.strip_prefix(" using ") {
        let (index, after) = identifier(r);
        map.insert("Index Name", Val::str(index));
        rest = after;
    }
    if node_type == "Subquery Scan" && is_bare_alias(rest) {
        map.insert("Alias", Val::str(identifier(&rest[1..]).0));
        return Ok(());
    }
    let Some(r) = rest.strip_prefix(" on ") else {
        if rest.trim().is_empty() {
            return Ok(());
        }
        return Err(bad(
            number,
            format!("cannot read {:?} after the node's name", short(rest)),
        ));
    };
    let tag = match node_type {
        "Bitmap Index Scan" => {
            let (index, _) = identifier(r.trim_start());
            map.insert("Index Name", Val::str(index));
            return Ok(());
        }
        "Function Scan" => Some("Function Name"),
        "Table Function Scan" => Some("Table Function Name"),
        "CTE Scan" | "WorkTable Scan" => Some("CTE Name"),
        "Named Tuplestore Scan" => Some("Tuplestore Name"),
        "Values Scan" | "Subquery Scan" => None,
        _ => Some("Relation Name"),
    };
    let r = r.trim_start();
    let (first, after) = identifier(r);
    let (schema, object) = match after.strip_prefix('.') {
        Some(after_dot) => {
            let (object, after_object) = identifier(after_dot);
            (Some(first), (object, after_object))
        }
        None => (None, (first, after)),
    };
    let (object, after) = object;
    let alias = after.trim_start();
    let alias = if alias.is_empty() {
        None
    } else {
        Some(identifier(alias).0)
    };
    match tag {
        Some(tag) => {
            map.insert(tag, Val::str(object.clone()));
            if let Some(schema) = schema {
                map.insert("Schema", Val::str(schema));
            }
            map.insert("Alias", Val::str(alias.unwrap_or(object)));
        }
        None => {
            map.insert("Alias", Val::str(object));
        }
    }
    Ok(())
}

/// One identifier as `quote_identifier` prints it: bare up to a space or a dot, or in double
/// quotes with inner quotes doubled. Returns it and what follows.
fn identifier(text: &str) -> (String, &str) {
    if let Some(inner) = text.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = inner.char_indices().peekable();
        while let Some((at, c)) = chars.next() {
            if c == '"' {
                if let Some((_, '"')) = chars.peek() {
                    chars.next();
                    out.push('"');
                    continue;
                }
                return (out, &inner[at + 1..]);
            }
            out.push(c);
        }
        return (out, "");
    }
    let end = text.find([' ', '.']).unwrap_or(text.len());
    (text[..end].to_owned(), &text[end..])
}

/// `a, b, c` at the top level: commas inside parentheses, brackets or quotes stay.
fn split_list(value: &str) -> Vec<Val<'_>> {
    let mut items = Vec::new();
    let bytes = value.as_bytes();
    let mut depth = 0i32;
    let mut quote: Option<u8> = None;
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) => {
                if b == q {
                    quote = None;
                }
            }
            None => match b {
                b'\'' | b'"' => quote = Some(b),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth -= 1,
                b',' if depth <= 0 && bytes.get(i + 1) == Some(&b' ') => {
                    items.push(Val::str(&value[start..i]));
                    start = i + 2;
                    i += 1;
                }
                _ => {}
            },
        }
        i += 1;
    }
    items.push(Val::str(&value[start..]));
    items
}

/// A number as EXPLAIN printed it, as a `serde_json::Value` (see [`number_val`]).
pub(super) fn number(text: &str) -> Option<Value> {
    number_val(text).map(Value::from)
}

/// A number as EXPLAIN printed it, of the JSON type its JSON would have had: `12` an integer,
/// `12.00` a float.
fn number_val(text: &str) -> Option<Val<'static>> {
    let bytes = text.as_bytes();
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    if digits.is_empty() || !digits[0].is_ascii_digit() {
        return None;
    }
    if !digits
        .iter()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    if !text.contains(['.', 'e', 'E']) {
        if let Ok(n) = text.parse::<u64>() {
            return Some(Val::U64(n));
        }
        if let Ok(n) = text.parse::<i64>() {
            return Some(Val::int(n));
        }
    }
    text.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(Val::F64)
}

fn insert_number<'a>(map: &mut Obj<'a>, key: &'a str, text: &str) {
    if let Some(n) = number_val(text) {
        map.insert(key, n);
    }
}

fn insert_checked<'a>(
    map: &mut Obj<'a>,
    key: &'a str,
    text: &str,
    line: usize,
) -> Result<(), PlanError> {
    match number_val(text) {
        Some(n) => {
            map.insert(key, n);
            Ok(())
        }
        None => Err(bad(
            line,
            format!("{key} is {:?}, not a number", short(text)),
        )),
    }
}

/// A property's value with the JSON type its key has, as a `serde_json::Value`.
pub(super) fn typed(key: &str, value: &str) -> Value {
    typed_val(key, value).into()
}

/// A property's value with the JSON type its key has.
fn typed_val<'a>(key: &str, value: &'a str) -> Val<'a> {
    if BOOL_KEYS.contains(&key) {
        match value {
            "true" => return Val::Bool(true),
            "false" => return Val::Bool(false),
            _ => {}
        }
    }
    if !is_text_key(key)
        && let Some(n) = number_val(value)
    {
        return n;
    }
    Val::str(value)
}

/// Whether a line is one of the summary lines EXPLAIN prints after the tree, at the root's
/// column.
fn is_summary_line(content: &str) -> bool {
    matches!(content, "Planning:" | "JIT:")
        || [
            "Planning Time: ",
            "Planning time: ",
            "Execution Time: ",
            "Execution time: ",
            "Total runtime: ",
            "Settings: ",
            "Query Identifier: ",
            "Serialization: ",
            "Trigger ",
        ]
        .iter()
        .any(|key| content.starts_with(key))
}

/// `shared hit=1 read=2 dirtied=3 written=4, local …, temp read=5 written=6`.
fn buffers(map: &mut Obj<'_>, value: &str, line: usize) -> Result<(), PlanError> {
    for group in value.split(", ") {
        let mut words = group.split(' ');
        // The JSON keys of each kind's hit, read, dirtied and written counts.
        let keys = match words.next() {
            Some("shared") => [
                "Shared Hit Blocks",
                "Shared Read Blocks",
                "Shared Dirtied Blocks",
                "Shared Written Blocks",
            ],
            Some("local") => [
                "Local Hit Blocks",
                "Local Read Blocks",
                "Local Dirtied Blocks",
                "Local Written Blocks",
            ],
            Some("temp") => [
                "Temp Hit Blocks",
                "Temp Read Blocks",
                "Temp Dirtied Blocks",
                "Temp Written Blocks",
            ],
            _ => return Err(bad(line, format!("cannot read Buffers: {value}"))),
        };
        for word in words {
            let (what, n) = word
                .split_once('=')
                .ok_or_else(|| bad(line, format!("cannot read Buffers: {value}")))?;
            let key = match what {
                "hit" => keys[0],
                "read" => keys[1],
                "dirtied" => keys[2],
                "written" => keys[3],
                _ => return Err(bad(line, format!("cannot read Buffers: {value}"))),
            };
            insert_checked(map, key, n, line)?;
        }
    }
    Ok(())
}

/// `records=1 fpi=0 bytes=100` (and 18's `buffers full=0`).
fn wal(map: &mut Obj<'_>, value: &str, line: usize) -> Result<(), PlanError> {
    let value_fixed = value.replace("buffers full=", "buffers_full=");
    for word in value_fixed.split(' ') {
        let (what, n) = word
            .split_once('=')
            .ok_or_else(|| bad(line, format!("cannot read WAL: {value}")))?;
        let key = match what {
            "records" => "WAL Records",
            "fpi" => "WAL FPI",
            "bytes" => "WAL Bytes",
            "buffers_full" => "WAL Buffers Full",
            _ => return Err(bad(line, format!("cannot read WAL: {value}"))),
        };
        insert_checked(map, key, n, line)?;
    }
    Ok(())
}

/// `12kB` → 12.
fn kilobytes(value: &str) -> &str {
    value.strip_suffix("kB").unwrap_or(value)
}

/// A line of `Key: value` pairs two spaces apart: sort, hash, hash aggregate, memoize, storage
/// and planner memory details.
fn pairs<'a>(map: &mut Obj<'a>, content: &'a str, line: usize) -> Result<(), PlanError> {
    // Before 13, `Sort Method:  quicksort` had two spaces after the colon.
    if content.contains(":  ") {
        let normalized = content.replace(":  ", ": ");
        let mut read = Obj::new();
        pairs_of(&mut read, &normalized, line)?;
        for (key, value) in read {
            map.insert(key.into_owned(), value.into_owned());
        }
        return Ok(());
    }
    pairs_of(map, content, line)
}

fn pairs_of<'a>(map: &mut Obj<'a>, content: &'a str, line: usize) -> Result<(), PlanError> {
    let mut first_key = None;
    for part in content.split("  ").filter(|p| !p.is_empty()) {
        let Some((key, value)) = part.split_once(": ") else {
            return Err(bad(line, format!("cannot read {:?}", short(content))));
        };
        let first = *first_key.get_or_insert(key);
        let (base, original) = match value.split_once(" (originally ") {
            Some((v, o)) => (v, Some(o.trim_end_matches(')'))),
            None => (value, None),
        };
        match (first, key) {
            ("Sort Method", "Sort Method") => {
                map.insert("Sort Method", Val::str(value));
            }
            ("Sort Method", "Memory" | "Disk") => {
                insert_checked(map, "Sort Space Used", kilobytes(value), line)?;
                map.insert("Sort Space Type", Val::str(key));
            }
            ("Buckets", "Buckets") => {
                insert_checked(map, "Hash Buckets", base, line)?;
                insert_checked(map, "Original Hash Buckets", original.unwrap_or(base), line)?;
            }
            ("Buckets", "Batches") => {
                insert_checked(map, "Hash Batches", base, line)?;
                insert_checked(map, "Original Hash Batches", original.unwrap_or(base), line)?;
            }
            (_, "Memory Usage") => {
                insert_checked(map, "Peak Memory Usage", kilobytes(value), line)?
            }
            (_, "Planned Partitions") => insert_checked(map, key, value, line)?,
            (_, "Batches") => insert_checked(map, "HashAgg Batches", value, line)?,
            (_, "Disk Usage") => insert_checked(map, "Disk Usage", kilobytes(value), line)?,
            ("Hits", "Hits") => insert_checked(map, "Cache Hits", value, line)?,
            ("Hits", "Misses") => insert_checked(map, "Cache Misses", value, line)?,
            ("Hits", "Evictions") => insert_checked(map, "Cache Evictions", value, line)?,
            ("Hits", "Overflows") => insert_checked(map, "Cache Overflows", value, line)?,
            ("Storage", "Storage") => {
                map.insert("Storage", Val::str(value));
            }
            ("Storage", "Maximum Storage") => {
                insert_checked(map, "Maximum Storage", kilobytes(value), line)?
            }
            _ => {
                map.insert(key, typed_val(key, value));
            }
        }
    }
    Ok(())
}

/// An incremental sort's `Full-sort Groups: 1  Sort Method: quicksort  Average Memory: 26kB  Peak
/// Memory: 26kB` as its JSON object.
fn sort_groups(content: &str, line: usize) -> Result<Obj<'_>, PlanError> {
    let mut group = Obj::new();
    let mut memory = Obj::new();
    let mut disk = Obj::new();
    for part in content.split("  ").filter(|p| !p.is_empty()) {
        let Some((key, value)) = part.split_once(": ") else {
            return Err(bad(line, format!("cannot read {:?}", short(content))));
        };
        match key {
            "Full-sort Groups" | "Pre-sorted Groups" => {
                insert_checked(&mut group, "Group Count", value, line)?
            }
            "Sort Method" | "Sort Methods" => {
                let methods = value.split(", ").map(Val::str).collect();
                group.insert("Sort Methods Used", Val::Array(methods));
            }
            "Average Memory" => insert_checked(
                &mut memory,
                "Average Sort Space Used",
                kilobytes(value),
                line,
            )?,
            "Peak Memory" => {
                insert_checked(&mut memory, "Peak Sort Space Used", kilobytes(value), line)?
            }
            "Average Disk" => {
                insert_checked(&mut disk, "Average Sort Space Used", kilobytes(value), line)?
            }
            "Peak Disk" => {
                insert_checked(&mut disk, "Peak Sort Space Used", kilobytes(value), line)?
            }
            _ => return Err(bad(line, format!("cannot read {key:?} in a sort group"))),
        }
    }
    if !memory.is_empty() {
        group.insert("Sort Space Memory", Val::Object(memory));
    }
    if !disk.is_empty() {
        group.insert("Sort Space Disk", Val::Object(disk));
    }
    Ok(group)
}

/// Memoize's `Estimates: capacity=N distinct keys=N lookups=N hit percent=N.NN%` (18+).
fn estimates(map: &mut Obj<'_>, value: &str, line: usize) -> Result<(), PlanError> {
    let fixed = value
        .replace("distinct keys=", "distinct_keys=")
        .replace("hit percent=", "hit_percent=");
    for word in fixed.split(' ') {
        let Some((what, n)) = word.split_once('=') else {
            return Err(bad(line, format!("cannot read Estimates: {value}")));
        };
        let key = match what {
            "capacity" => "Estimated Capacity",
            "distinct_keys" => "Estimated Distinct Lookup Keys",
            "lookups" => "Estimated Lookups",
            "hit_percent" => "Estimated Hit Percent",
            _ => return Err(bad(line, format!("cannot read Estimates: {value}"))),
        };
        insert_checked(map, key, n.trim_end_matches('%'), line)?;
    }
    Ok(())
}

/// `enable_seqscan = 'off', search_path = '"$user", public'`: each value runs to the quote that
/// is followed by `, name = '` or the end (PostgreSQL does not escape quotes inside).
fn settings(value: &str) -> Obj<'_> {
    let mut map = Obj::new();
    let mut rest = value;
    while let Some((name, after)) = rest.split_once(" = '") {
        let mut end = None;
        let mut search = 0;
        while let Some(at) = after[search..].find('\'') {
            let at = search + at;
            let tail = &after[at + 1..];
            if tail.is_empty() {
                end = Some((at, ""));
                break;
            }
            // Only the next name's own characters are looked at, so that a value full of
            // quotes and commas stays linear to read.
            if let Some(next) = tail.strip_prefix(", ") {
                let name_len = next
                    .bytes()
                    .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.')
                    .count();
                if name_len > 0 && next[name_len..].starts_with(" = '") {
                    end = Some((at, next));
                    break;
                }
            }
            search = at + 1;
        }
        let (at, next) = end.unwrap_or((after.len(), ""));
        map.insert(name.trim(), Val::str(&after[..at]));
        rest = next;
        if rest.is_empty() {
            break;
        }
    }
    map
}

/// `Trigger name[ for constraint c][ on rel]: time=1.234 calls=5`.
fn trigger<'a>(head: &'a str, value: &str) -> Val<'a> {
    let mut map = Obj::new();
    let (name_part, relation) = match head.rsplit_once(" on ") {
        Some((n, r)) => (n, Some(r)),
        None => (head, None),
    };
    // Without VERBOSE a constraint trigger is printed by its constraint alone:
    // "Trigger for constraint c" (explain.c's report_triggers).
    let (name, constraint) = match name_part.strip_prefix("for constraint ") {
        Some(c) => (None, Some(c)),
        None => match name_part.split_once(" for constraint ") {
            Some((n, c)) => (Some(n), Some(c)),
            None => (Some(name_part), None),
        },
    };
    if let Some(name) = name {
        map.insert("Trigger Name", Val::str(name));
    }
    if let Some(c) = constraint {
        map.insert("Constraint Name", Val::str(c));
    }
    if let Some(r) = relation {
        map.insert("Relation", Val::str(r));
    }
    for word in value.split(' ') {
        match word.split_once('=') {
            Some(("time", v)) => insert_number(&mut map, "Time", v),
            Some(("calls", v)) => insert_number(&mut map, "Calls", v),
            _ => {}
        }
    }
    Val::Object(map)
}

/// A line of a `JIT:` block.
fn jit_line<'a>(map: &mut Obj<'a>, content: &'a str) {
    let Some((key, value)) = content.split_once(": ") else {
        return;
    };
    match key {
        "Functions" => insert_number(map, "Functions", value),
        "Options" => {
            let mut options = Obj::new();
            for option in value.split(", ") {
                if let Some((name, flag)) = option.rsplit_once(' ') {
                    options.insert(name, Val::Bool(flag == "true"));
                }
            }
            map.insert("Options", Val::Object(options));
        }
        "Timing" => {
            let mut timing = Obj::new();
            for part in value.split(", ") {
                let Some((name, rest)) = part.split_once(' ') else {
                    continue;
                };
                let (total, deform) = match rest.split_once(" ms (Deform ") {
                    Some((t, d)) => (t, Some(d.trim_end_matches(" ms)"))),
                    None => (rest.trim_end_matches(" ms"), None),
                };
                match deform {
                    Some(d) => {
                        let mut g = Obj::new();
                        insert_number(&mut g, "Deform", d);
                        insert_number(&mut g, "Total", total);
                        timing.insert(name, Val::Object(g));
                    }
                    None => insert_number(&mut timing, name, total),
                }
            }
            map.insert("Timing", Val::Object(timing));
        }
        _ => {
            map.insert(key, typed_val(key, value));
        }
    }
}

/// A short quote of the input for an error.
fn short(text: &str) -> String {
    let mut s: String = text.chars().take(60).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const COST: &str = "(cost=0.00..1.00 rows=1 width=4)";
    const ACTUAL: &str = "(actual time=0.010..0.020 rows=1 loops=1)";

    fn read(text: &str) -> Plan {
        crate::plan::read_plan(text, None)
            .unwrap_or_else(|e| panic!("{e}\n{text}"))
            .plan
    }

    #[test]
    fn a_root_copied_with_psqls_margin_keeps_its_summary_lines() {
        let plan = read(&format!(
            " Seq Scan on t  {COST}\n   Filter: (a > 1)\n Planning Time: 0.100 ms\n"
        ));
        assert_eq!(plan.root().filter.as_deref(), Some("(a > 1)"));
        assert_eq!(plan.planning_ms, Some(0.1));
    }

    #[test]
    fn a_root_that_lost_its_margin_takes_it_back_from_the_next_line() {
        // The first line trimmed, the rest as psql printed it.
        let plan = read(&format!(
            "Nested Loop  {COST}\n   ->  Seq Scan on a  {COST}\n   ->  Seq Scan on b  {COST}\n Settings: work_mem = '8MB'\n Execution Time: 2.000 ms\n"
        ));
        assert_eq!(plan.nodes.len(), 3);
        assert_eq!(plan.settings, [("work_mem".to_owned(), "8MB".to_owned())]);
        // A summary line right below the root.
        let plan = read(&format!(
            "Seq Scan on t  {COST}\n Settings: work_mem = '8MB'\n Planning Time: 0.5 ms\n"
        ));
        assert_eq!(plan.planning_ms, Some(0.5));
        // Everything below the root one column further out than the root: moved back in.
        let plan = read(&format!(
            "Result  {COST}\n CTE c\n   ->  Result  {COST}\n ->  Append  {COST}\n       ->  CTE Scan on c  {COST}\nTotal runtime: 1.500 ms\n"
        ));
        assert_eq!(plan.nodes.len(), 4);
        assert_eq!(plan.nodes[1].subplan_name.as_deref(), Some("CTE c"));
        assert_eq!(plan.nodes[3].parent, Some(2));
        assert_eq!(plan.execution_ms, Some(1.5));
    }

    #[test]
    fn a_child_left_of_an_indented_root_is_the_roots() {
        let plan = read(&format!(
            "     Delete on t  {COST} {ACTUAL}\n     ->  Seq Scan on t  {COST} {ACTUAL}\n   Planning time: 1.000 ms\n   Trigger for constraint fk: time=1.000 calls=2\n   Execution time: 3.000 ms\n"
        ));
        assert_eq!(plan.nodes.len(), 2);
        assert_eq!(plan.nodes[1].parent, Some(0));
        assert_eq!(
            (plan.planning_ms, plan.execution_ms),
            (Some(1.0), Some(3.0))
        );
        assert_eq!(plan.triggers.len(), 1);
        assert_eq!(plan.triggers[0].calls, Some(2.0));
        // Without VERBOSE the text names the constraint, not the trigger.
        assert_eq!(plan.triggers[0].name, None);
        assert_eq!(plan.triggers[0].constraint.as_deref(), Some("fk"));
    }

    #[test]
    fn lines_broken_at_a_terminals_width_join_again() {
        let plan = read(
            " Sort  (cos\nt=1.00..2.00 rows=3 wid\nth=4) (actual time=0.5\n24..0.600\nrows=2 loops=1)\n   Sort Key: a\n   ->  Index Scan using i on some_ta\nble  (cost=0.14..48.64 rows=10 width=364)\n         Index Cond: ((a = 1) AND\n (b = 2))\n         Output: a,\n b\n   ->  Index Scan using j on t\n  (cost=0.1..0.2 rows=1 width=4)\n Planning Time: 0.1 ms\n",
        );
        let root = plan.root();
        assert_eq!((root.startup_cost, root.total_cost), (Some(1.0), Some(2.0)));
        assert_eq!((root.plan_rows, root.plan_width), (Some(3.0), Some(4.0)));
        let actual = root.actual.unwrap();
        assert_eq!(
            (actual.startup_ms, actual.total_ms),
            (Some(0.524), Some(0.6))
        );
        assert_eq!((actual.rows, actual.loops), (2.0, 1.0));
        assert_eq!(plan.nodes[1].relation_name.as_deref(), Some("some_table"));
        assert_eq!(
            plan.nodes[1].index_cond.as_deref(),
            Some("((a = 1) AND (b = 2))")
        );
        assert_eq!(plan.nodes[1].output, ["a", "b"]);
        assert_eq!(plan.nodes[2].total_cost, Some(0.2));
        assert_eq!(plan.planning_ms, Some(0.1));
    }

    #[test]
    fn a_line_that_breaks_the_tree_is_an_error_not_the_plans_end() {
        let err = crate::plan::read_plan(
            &format!("Nested Loop  {COST}\n   ->  Seq Scan on a  {COST}\nsomething else\n   ->  Seq Scan on b  {COST}\n"),
            None,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 3 of the TEXT plan: \"something else\" belongs to no plan node"
        );
    }

    #[test]
    fn each_target_table_of_a_modify_table_reads_as_jsons_target_tables() {
        let plan = read(&format!(
            "Update on public.t  {COST}\n  Update on public.t_1 t_1\n  Update on public.t_2\n  ->  Append  {COST}\n        ->  Seq Scan on public.t_1  {COST}\n        ->  Seq Scan on public.t_2  {COST}\n"
        ));
        assert_eq!(
            plan.root().extra["Target Tables"],
            serde_json::json!([
                {"Relation Name": "t_1", "Schema": "public", "Alias": "t_1"},
                {"Relation Name": "t_2", "Schema": "public", "Alias": "t_2"}
            ])
        );
        assert_eq!(plan.nodes.len(), 4);
        let plan = read(&format!(
            "Merge on t  {COST} {ACTUAL}\n  Tuples: inserted=3 updated=2\n  ->  Seq Scan on s  {COST} {ACTUAL}\n"
        ));
        let merge = &plan.root().extra;
        assert_eq!(
            [
                &merge["Tuples Inserted"],
                &merge["Tuples Updated"],
                &merge["Tuples Deleted"],
                &merge["Tuples Skipped"]
            ],
            [3, 2, 0, 0]
        );
        // A MERGE that merged nothing has no `Tuples` line; JSON says four zeros. Without
        // ANALYZE neither gives counts.
        let plan = read(&format!(
            "Merge on t  {COST} {ACTUAL}\n  ->  Seq Scan on s  {COST} {ACTUAL}\n"
        ));
        let merge = &plan.root().extra;
        let counts = [
            "Tuples Inserted",
            "Tuples Updated",
            "Tuples Deleted",
            "Tuples Skipped",
        ];
        assert_eq!(counts.map(|k| &merge[k]), [0, 0, 0, 0]);
        let plan = read(&format!(
            "Merge on t  {COST}\n  ->  Seq Scan on s  {COST}\n"
        ));
        assert!(counts.iter().all(|k| !plan.root().extra.contains_key(k)));
    }

    #[test]
    fn older_spellings_read_as_todays() {
        // Before 9.0: `Subquery Scan alias`; before 9.4: `Total runtime`.
        let plan = read(&format!(
            "Subquery Scan s  {COST}\n  ->  Seq Scan on t  {COST}\nTotal runtime: 0.500 ms\n"
        ));
        assert_eq!(plan.root().node_type, "Subquery Scan");
        assert_eq!(plan.root().alias.as_deref(), Some("s"));
        assert_eq!(plan.execution_ms, Some(0.5));
    }

    #[test]
    fn one_space_before_the_costs_still_ends_the_nodes_name() {
        // A hand-edited or collapsed line: `on a (cost=…` is no alias.
        let plan = read(&format!(
            "Seq Scan on a {COST} {ACTUAL}\n  Filter: (x > 1)\n"
        ));
        let root = plan.root();
        assert_eq!(root.relation_name.as_deref(), Some("a"));
        assert_eq!(root.alias.as_deref(), Some("a"));
        assert_eq!((root.startup_cost, root.total_cost), (Some(0.0), Some(1.0)));
        assert_eq!((root.plan_rows, root.plan_width), (Some(1.0), Some(4.0)));
        assert_eq!(root.actual.unwrap().rows, 1.0);
        assert_eq!(root.filter.as_deref(), Some("(x > 1)"));
        // An alias, then one space.
        let plan = read(&format!(
            "Index Scan using i on t x {COST}\n  ->  Seq Scan on u {COST}\n"
        ));
        assert_eq!(plan.root().alias.as_deref(), Some("x"));
        assert_eq!(plan.root().index_name.as_deref(), Some("i"));
        assert_eq!(plan.nodes[1].total_cost, Some(1.0));
    }

    #[test]
    fn a_plan_whose_spaces_were_all_collapsed_says_so() {
        // Every run of spaces one space: the indentation that places each node is gone.
        let err = crate::plan::read_plan(
            &format!("Nested Loop {COST}\n -> Seq Scan on a {COST}\n -> Seq Scan on b {COST}\n"),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("line 2 of the TEXT plan: the plan's runs of spaces were collapsed"),
            "{err}"
        );
        assert!(!err.contains("first line"), "{err}");
    }

    #[test]
    fn a_stray_line_before_the_summary_is_refused_not_the_plans_end() {
        // A wrapped `Output:` broken off at the margin, the summary lines after it.
        for summary in [
            "Planning Time: 0.100 ms",
            "Trigger t: time=0.100 calls=1",
            "JIT:",
            "Execution Time: 0.200 ms",
        ] {
            let text = format!(
                "Seq Scan on public.t  {COST} {ACTUAL}\n  Output: a, b, c\nd, e\n{summary}\n"
            );
            let err = crate::plan::read_plan(&text, None).unwrap_err().to_string();
            assert!(
                err.starts_with("line 3 of the TEXT plan: \"d, e\" stands between the plan's nodes and its summary line"),
                "{err}"
            );
        }
        // Broken after a comma, the continuation is joined back and nothing is lost.
        let plan = read(&format!(
            "Seq Scan on public.t  {COST} {ACTUAL}\n  Output: a, b,\nc\nPlanning Time: 0.100 ms\nExecution Time: 0.200 ms\n"
        ));
        assert_eq!(plan.root().output, ["a", "b", "c"]);
        assert_eq!(
            (plan.planning_ms, plan.execution_ms),
            (Some(0.1), Some(0.2))
        );
        // What follows the plan and is not EXPLAIN's, with no summary line after it, ends it.
        let plan = read(&format!(
            "Seq Scan on t  {COST}\n(1 row)\n\npostgres=# \\q\n"
        ));
        assert_eq!(plan.nodes.len(), 1);
        // A second plan after the first's footer is not the first's summary.
        let plan = read(&format!(
            "Seq Scan on t  {COST}\n(1 row)\n\nResult  {COST}\nPlanning Time: 0.1 ms\n"
        ));
        assert_eq!(plan.planning_ms, None);
    }

    #[test]
    fn an_unnumbered_subplan_header_labels_every_child_under_it() {
        // Before 9.0 one `InitPlan` (or `SubPlan`) header stood over all of a node's subplans of
        // its kind, its own children deeper, the node's outer and inner after it.
        let plan = read(&format!(
            "Nested Loop  {COST}\n  InitPlan\n    ->  Limit  {COST}\n          ->  Seq Scan on u  {COST}\n    ->  Seq Scan on v  {COST}\n  SubPlan\n    ->  Seq Scan on w  {COST}\n    ->  Seq Scan on x  {COST}\n  ->  Seq Scan on a  {COST}\n  ->  Seq Scan on b  {COST}\n"
        ));
        // Each node: what it reads, how it hangs from its parent, under what label, which.
        type Row<'p> = (&'p str, Option<&'p str>, Option<&'p str>, Option<usize>);
        let got: Vec<Row> = plan
            .nodes
            .iter()
            .map(|n| {
                (
                    n.relation_name.as_deref().unwrap_or(&n.node_type),
                    n.parent_relationship.as_deref(),
                    n.subplan_name.as_deref(),
                    n.parent,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("Nested Loop", None, None, None),
                ("Limit", Some("InitPlan"), Some("InitPlan"), Some(0)),
                ("u", Some("Outer"), None, Some(1)),
                ("v", Some("InitPlan"), Some("InitPlan"), Some(0)),
                ("w", Some("SubPlan"), Some("SubPlan"), Some(0)),
                ("x", Some("SubPlan"), Some("SubPlan"), Some(0)),
                ("a", Some("Outer"), None, Some(0)),
                ("b", Some("Inner"), None, Some(0)),
            ]
        );
        // A numbered header still labels its one child only.
        let plan = read(&format!(
            "Seq Scan on t  {COST}\n  InitPlan 1 (returns $0)\n    ->  Result  {COST}\n    ->  Result  {COST}\n"
        ));
        assert_eq!(plan.nodes[2].subplan_name, None);
    }

    #[test]
    fn an_excerpts_elision_is_quoted_whole_in_the_error() {
        let excerpt =
            format!("Hash Join  {COST}\n  ->  Seq Scan on a  {COST}\n...\n  ->  Hash  {COST}\n");
        // As it stands, in psql's table (the other lines with its margin, `...` without), and
        // among a node's properties.
        for (text, line) in [
            (excerpt.clone(), 3),
            (
                format!(
                    "   QUERY PLAN\n--------------\n Hash Join  {COST}\n   ->  Seq Scan on a  {COST}\n...\n   ->  Hash  {COST}\n(4 rows)\n"
                ),
                3,
            ),
            (
                format!("Hash Join  {COST}\n  ->  Seq Scan on a  {COST}\n        ...\n"),
                3,
            ),
        ] {
            let err = crate::plan::read_plan(&text, None).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("line {line} of the TEXT plan: \"...\" ")),
                "{err}\n{text}"
            );
        }
    }

    #[test]
    fn a_plan_pasted_from_its_middle_reads_as_a_subtree_and_says_so() {
        // Its figures are not the statement's: the plan says it is a subtree.
        let plan = read(&format!(
            "   ->  Parallel Seq Scan on t  {COST} {ACTUAL}\n         Filter: (a > 1)\n         Rows Removed by Filter: 3\n"
        ));
        assert!(plan.subtree);
        let root = plan.root();
        assert_eq!(root.node_type, "Seq Scan");
        assert!(root.parallel_aware);
        assert_eq!(root.parent_relationship, None);
        assert_eq!(root.filter.as_deref(), Some("(a > 1)"));
        assert_eq!(root.rows_removed_by_filter, Some(3.0));
        assert_eq!(root.actual.unwrap().total_ms, Some(0.02));
        // A sibling of the pasted node belongs to no node of the paste: refused, not made its
        // child.
        let err = crate::plan::read_plan(
            &format!(
                "   ->  Seq Scan on t  {COST}\n         Filter: (a > 1)\n   ->  Hash  {COST}\n"
            ),
            None,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("line 3 of the TEXT plan: a second node beside the pasted subtree's"),
            "{err}"
        );
        // Children below the pasted node are its own, at their columns.
        let plan = read(&format!(
            "->  Hash Join  {COST}\n      Hash Cond: (a.x = b.x)\n      ->  Seq Scan on a  {COST}\n      ->  Hash  {COST}\n            ->  Seq Scan on b  {COST}\n"
        ));
        assert!(plan.subtree);
        assert_eq!(plan.nodes.len(), 4);
        assert_eq!(plan.root().hash_cond.as_deref(), Some("(a.x = b.x)"));
        assert_eq!(plan.nodes[3].parent, Some(2));
        // A whole plan is no subtree.
        assert!(!read(&format!("Hash  {COST}\n  ->  Seq Scan on b  {COST}\n")).subtree);
        // Below other lines, a child's line is what is left of a plan whose start was not
        // recognised: still refused.
        let err = crate::plan::read_plan(
            &format!("Some Node  {COST}\n  ->  Seq Scan on a  {COST}\n"),
            None,
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("\"Some Node\" is not one PostgreSQL prints"),
            "{err}"
        );
    }

    #[test]
    fn node_lines_and_property_lines() {
        assert!(is_node_line(
            "Seq Scan on t  (cost=0.00..1.00 rows=1 width=4)"
        ));
        assert!(is_node_line(
            "Hash Right Anti Join  (cost=1.00..2.00 rows=1 width=4)"
        ));
        assert!(is_node_line("Finalize GroupAggregate"));
        assert!(is_node_line("Sort"));
        assert!(is_node_line("Hash"));
        assert!(!is_node_line("Sort Key: a"));
        assert!(!is_node_line("Hash Cond: (a = b)"));
        assert!(!is_node_line("Group Key: a"));
    }

    #[test]
    fn lists_split_at_top_level_commas_only() {
        let items = split_list("a, f(b, c), 'x, y'::text, ARRAY[1, 2]");
        assert_eq!(items.len(), 4);
        assert_eq!(items[1], "f(b, c)");
    }

    #[test]
    fn settings_with_commas_in_values() {
        let map = settings("search_path = '\"$user\", public', work_mem = '8MB'");
        assert_eq!(map["search_path"], "\"$user\", public");
        assert_eq!(map["work_mem"], "8MB");
    }

    #[test]
    fn identifiers_are_unquoted() {
        assert_eq!(
            identifier("\"Order \"\"Items\"\"\" oi").0,
            "Order \"Items\""
        );
        let mut map = Obj::new();
        target(&mut map, "Seq Scan", " on \"My Schema\".orders o", 1).unwrap();
        assert_eq!(map["Schema"], "My Schema");
        assert_eq!(map["Relation Name"], "orders");
        assert_eq!(map["Alias"], "o");
    }

    #[test]
    fn a_plan_reads_with_suppressed_zeros_put_back() {
        let text = "Seq Scan on t  (cost=0.00..1.00 rows=1 width=4) (actual time=0.010..0.020 rows=1 loops=1)\n  Filter: (a > 1)\n  Buffers: shared hit=3\nPlanning Time: 0.1 ms\nExecution Time: 0.2 ms\n";
        let plan = parse_text(text).unwrap();
        let root = plan.root();
        assert_eq!(root.rows_removed_by_filter, Some(0.0));
        assert_eq!(root.buffers.unwrap().shared_hit_blocks, 3.0);
        assert_eq!(root.buffers.unwrap().temp_read_blocks, 0.0);
        assert_eq!(plan.execution_ms, Some(0.2));
    }

    #[test]
    fn jit_in_workers_and_in_the_summary() {
        // The layout explain.c gives a worker's JIT block (PostgreSQL 13+, VERBOSE): inside the
        // worker's lines, with the worker's buffers after it.
        let text = "\
Gather  (cost=1000.00..2000.00 rows=10 width=4) (actual time=10.000..20.000 rows=10 loops=1)
  Workers Planned: 1
  Workers Launched: 1
  Buffers: shared hit=10
  ->  Parallel Seq Scan on public.t  (cost=0.00..900.00 rows=5 width=4) (actual time=5.000..9.000 rows=5 loops=2)
        Output: a
        Buffers: shared hit=10
        Worker 0:  actual time=4.000..8.000 rows=4 loops=1
          JIT:
            Functions: 3
            Options: Inlining false, Optimization false, Expressions true, Deforming true
            Timing: Generation 0.300 ms (Deform 0.100 ms), Inlining 0.000 ms, Optimization 0.200 ms, Emission 2.000 ms, Total 2.500 ms
          Buffers: shared hit=4
Planning Time: 0.100 ms
JIT:
  Functions: 6
  Options: Inlining false, Optimization false, Expressions true, Deforming true
  Timing: Generation 0.600 ms, Inlining 0.000 ms, Optimization 0.400 ms, Emission 4.000 ms, Total 5.000 ms
Execution Time: 21.000 ms
";
        let plan = parse_text(text).unwrap();
        let scan = &plan.nodes[1];
        let worker = &scan.extra["Workers"][0];
        assert_eq!(worker["Worker Number"], 0);
        assert_eq!(worker["JIT"]["Functions"], 3);
        assert_eq!(worker["JIT"]["Options"]["Deforming"], true);
        assert_eq!(worker["JIT"]["Timing"]["Generation"]["Deform"], 0.1);
        assert_eq!(worker["Shared Hit Blocks"], 4);
        assert_eq!(plan.extra["JIT"]["Functions"], 6);
        assert_eq!(plan.extra["JIT"]["Timing"]["Total"], 5.0);
        assert_eq!(plan.execution_ms, Some(21.0));
    }

    #[test]
    fn subplans_ctes_and_relationships() {
        let text = "\
Nested Loop Left Join  (cost=1.00..9.00 rows=1 width=4)
  Join Filter: (a.x = b.x)
  InitPlan 1 (returns $0)
    ->  Result  (cost=0.00..0.01 rows=1 width=4)
  ->  Seq Scan on a  (cost=0.00..1.00 rows=1 width=4)
        Filter: (y = $0)
  ->  Append  (cost=0.00..2.00 rows=2 width=4)
        ->  Seq Scan on b1 b_1  (cost=0.00..1.00 rows=1 width=4)
        ->  Seq Scan on b2 b_2  (cost=0.00..1.00 rows=1 width=4)
  SubPlan 2
    ->  Result  (cost=0.00..0.01 rows=1 width=4)
";
        let plan = parse_text(text).unwrap();
        let kinds: Vec<(&str, Option<&str>, Option<&str>)> = plan
            .nodes
            .iter()
            .map(|n| {
                (
                    n.node_type.as_str(),
                    n.parent_relationship.as_deref(),
                    n.subplan_name.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("Nested Loop", None, None),
                ("Result", Some("InitPlan"), Some("InitPlan 1 (returns $0)")),
                ("Seq Scan", Some("Outer"), None),
                ("Append", Some("Inner"), None),
                ("Seq Scan", Some("Member"), None),
                ("Seq Scan", Some("Member"), None),
                ("Result", Some("SubPlan"), Some("SubPlan 2")),
            ]
        );
        assert_eq!(plan.nodes[0].join_type.as_deref(), Some("Left"));
        assert_eq!(plan.nodes[4].alias.as_deref(), Some("b_1"));
        assert_eq!(plan.nodes[4].relation_name.as_deref(), Some("b1"));
    }

    #[test]
    fn a_long_filter_reads_in_linear_time() {
        let filter: String = (0..20_000).map(|i| format!("a = {i} OR ")).collect();
        let text =
            format!("Seq Scan on t  (cost=0.00..1.00 rows=1 width=4)\n  Filter: ({filter}true)\n");
        let plan = parse_text(&text).unwrap();
        assert!(plan.root().filter.as_ref().unwrap().len() > 100_000);
    }
}
