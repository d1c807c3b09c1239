//! Synthetic plans for the plan benchmarks, generated deterministically in the shape and with
//! the keys PostgreSQL 18 emits for EXPLAIN (ANALYZE, BUFFERS, VERBOSE, FORMAT JSON), modelled on
//! the recorded `fixtures/plans/*.pg18.json`: two-space indentation, every buffer and I/O timing
//! key, `Output` lists, `Workers` arrays below a Gather. Relation names come from a pool, so
//! scans of one table recur and matching has duplicates to tell apart. The "after" plan of each
//! pair is the "before" plan with realistic edits: scans that change access method or index,
//! joins that change strategy or swap sides, partitions added to and removed from Appends,
//! children reordered, and figures that move.

use std::fmt::Write as _;

/// No node is generated deeper than this. Real plans rarely pass 30 levels, and it keeps the
/// JSON's nesting (2 per level) under serde_json's default recursion limit of 128, which the
/// `Value` baseline is subject to.
const MAX_DEPTH: usize = 24;

/// A small deterministic generator (Knuth's MMIX LCG); the high bits are the good ones.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() as f64) / ((1u64 << 31) as f64)
    }
}

const TABLE_WORDS: [&str; 16] = [
    "orders",
    "customers",
    "events",
    "line_items",
    "products",
    "invoices",
    "payments",
    "sessions",
    "accounts",
    "shipments",
    "tenants",
    "audit_log",
    "inventory",
    "reviews",
    "coupons",
    "regions",
];
const TABLE_SUFFIXES: [&str; 8] = [
    "", "_2024", "_2025", "_archive", "_eu", "_us", "_hot", "_cold",
];
const COLUMNS: [&str; 8] = [
    "id",
    "tenant_id",
    "customer_id",
    "status",
    "created_at",
    "amount",
    "note",
    "updated_at",
];

/// Table number `rel` of the relation pool, in two schemas: "orders", "events_2024", ... and,
/// past the first 128, partitions ("orders_p12").
fn table(rel: usize) -> String {
    let word = TABLE_WORDS[rel % TABLE_WORDS.len()];
    match rel / TABLE_WORDS.len() {
        n if n < TABLE_SUFFIXES.len() => format!("{word}{}", TABLE_SUFFIXES[n]),
        n => format!("{word}_p{n}"),
    }
}

/// The size of the relation pool for a plan of `nodes` nodes. It grows with the plan, as real
/// plans that big read partitions, so that each scan key (table and alias) recurs about twice
/// at every size: matching always has duplicates to tell apart, and the diff's output grows in
/// step with the plans rather than with the square of how often a key recurs.
fn relation_pool(nodes: usize) -> usize {
    (nodes / 16).max(TABLE_WORDS.len())
}

fn schema(rel: usize) -> &'static str {
    if rel.is_multiple_of(3) {
        "sales"
    } else {
        "public"
    }
}

/// Up to four aliases per table: self-joins give scans of one table different keys.
fn alias(rel: usize, alias: usize) -> String {
    let word = TABLE_WORDS[rel % TABLE_WORDS.len()];
    format!("{}{}", &word[..1], alias)
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    SeqScan,
    IndexScan,
    IndexOnlyScan,
    BitmapHeapScan,
    BitmapIndexScan,
    HashJoin,
    Hash,
    NestedLoop,
    MergeJoin,
    Aggregate,
    Sort,
    Gather,
    Limit,
    Append,
    Memoize,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::SeqScan => "Seq Scan",
            Kind::IndexScan => "Index Scan",
            Kind::IndexOnlyScan => "Index Only Scan",
            Kind::BitmapHeapScan => "Bitmap Heap Scan",
            Kind::BitmapIndexScan => "Bitmap Index Scan",
            Kind::HashJoin => "Hash Join",
            Kind::Hash => "Hash",
            Kind::NestedLoop => "Nested Loop",
            Kind::MergeJoin => "Merge Join",
            Kind::Aggregate => "Aggregate",
            Kind::Sort => "Sort",
            Kind::Gather => "Gather",
            Kind::Limit => "Limit",
            Kind::Append => "Append",
            Kind::Memoize => "Memoize",
        }
    }

    fn reads_relation(self) -> bool {
        matches!(
            self,
            Kind::SeqScan | Kind::IndexScan | Kind::IndexOnlyScan | Kind::BitmapHeapScan
        )
    }

    fn is_join(self) -> bool {
        matches!(self, Kind::HashJoin | Kind::NestedLoop | Kind::MergeJoin)
    }
}

/// One node of a generated plan, with the figures it will be written with.
#[derive(Clone)]
struct Spec {
    kind: Kind,
    /// Relation pool index (scans; also names indexes and conditions of other nodes).
    rel: usize,
    alias: usize,
    /// Which of a table's indexes an index scan uses.
    index: usize,
    /// Join type or aggregate strategy choice.
    variant: usize,
    /// Runs in parallel workers (below a Gather).
    parallel: bool,
    seed: u64,
    /// Multiplies the node's own buffer counts: the "after" plan moves some figures.
    pages_factor: f64,
    children: Vec<Spec>,
    // Filled in by `Spec::measure` from the seed and the children.
    plan_rows: f64,
    rows: f64,
    loops: f64,
    total_ms: f64,
    shared_hit: f64,
    shared_read: f64,
    temp: f64,
}

impl Spec {
    fn new(kind: Kind, g: &mut Lcg, children: Vec<Spec>) -> Spec {
        // Reduced to the pool's size when written out.
        let rel = g.next() as usize;
        Spec {
            kind,
            rel,
            alias: g.below(4),
            index: g.below(3),
            variant: g.below(16),
            parallel: false,
            seed: g.next(),
            pages_factor: 1.0,
            children,
            plan_rows: 0.0,
            rows: 0.0,
            loops: 0.0,
            total_ms: 0.0,
            shared_hit: 0.0,
            shared_read: 0.0,
            temp: 0.0,
        }
    }

    fn count(&self) -> usize {
        1 + self.children.iter().map(Spec::count).sum::<usize>()
    }

    /// Sets rows, loops, time and inclusive buffers from the seed, bottom-up: a node's buffers
    /// include its children's, as the server reports them.
    fn measure(&mut self, loops: f64) {
        let mut g = Lcg(self.seed);
        self.loops = loops;
        self.plan_rows = (10f64.powi(1 + g.below(5) as i32) * (1.0 + g.unit() * 9.0)).round();
        // Mostly close estimates, some off by 10× to 1000× either way.
        let error = match g.below(20) {
            0 => 1000.0,
            1 | 2 => 30.0,
            3 => 0.01,
            _ => 0.5 + g.unit() * 1.5,
        };
        self.rows = (self.plan_rows * error).round();
        let inner_loops = self.rows.clamp(1.0, 50_000.0);
        for (i, child) in self.children.iter_mut().enumerate() {
            let child_loops = match self.kind {
                // The inner side of a nested loop runs once per outer row.
                Kind::NestedLoop if i == 1 => loops * inner_loops,
                Kind::Gather => 3.0,
                _ => loops,
            };
            child.measure(child_loops);
        }
        let own_pages = if self.kind.reads_relation() || self.kind == Kind::BitmapIndexScan {
            (g.below(5_000) as f64 + 1.0) * self.pages_factor
        } else {
            0.0
        };
        let read_share = if g.below(4) == 0 { g.unit() } else { 0.0 };
        self.shared_read = (own_pages * read_share).round();
        self.shared_hit = own_pages - self.shared_read;
        self.temp = if matches!(self.kind, Kind::Sort | Kind::Hash) && g.below(5) == 0 {
            g.below(2_000) as f64
        } else {
            0.0
        };
        let mut children_ms = 0.0;
        for child in &self.children {
            self.shared_hit += child.shared_hit;
            self.shared_read += child.shared_read;
            self.temp += child.temp;
            children_ms += child.total_ms * child.loops / loops.max(1.0);
        }
        self.total_ms = children_ms + g.unit() * 5.0 + 0.001;
    }
}

/// Builds a subtree of exactly `budget` nodes.
fn build(g: &mut Lcg, budget: usize, depth: usize, parallel: bool) -> Spec {
    let mut spec = build_inner(g, budget, depth, parallel);
    spec.parallel = parallel;
    spec
}

fn leaf_scan(g: &mut Lcg, parallel: bool) -> Spec {
    let kind = match g.below(10) {
        0..=4 => Kind::SeqScan,
        5..=8 => Kind::IndexScan,
        _ => Kind::IndexOnlyScan,
    };
    let mut spec = Spec::new(kind, g, Vec::new());
    spec.parallel = parallel;
    spec
}

/// Splits `total` (≥ 2) into two positive parts, between 20% and 80% each when there is room.
fn split(g: &mut Lcg, total: usize) -> (usize, usize) {
    let low = (total / 5).max(1);
    let high = (total - total / 5).max(low + 1).min(total - 1);
    let first = if high > low {
        low + g.below(high - low)
    } else {
        low
    };
    (first, total - first)
}

fn build_inner(g: &mut Lcg, budget: usize, depth: usize, parallel: bool) -> Spec {
    match budget {
        0 => unreachable!("a subtree has at least one node"),
        1 => return leaf_scan(g, parallel),
        2 => {
            // A bitmap scan: the heap scan and the index scan that feeds it.
            let mut heap = Spec::new(Kind::BitmapHeapScan, g, Vec::new());
            let mut index = Spec::new(Kind::BitmapIndexScan, g, Vec::new());
            index.rel = heap.rel;
            index.parallel = parallel;
            heap.children.push(index);
            return heap;
        }
        _ => {}
    }
    // Near the depth limit, or often for a large subtree, fan out: a partitioned table or a
    // UNION ALL, the shape that makes real plans this big (and keeps them shallow).
    let fan_out = depth + 3 >= MAX_DEPTH || (budget > 300 && g.below(100) < 45);
    if fan_out {
        return append(g, budget, depth, parallel);
    }
    let roll = g.below(100);
    match roll {
        0..=34 if budget >= 4 => {
            // Hash Join: outer, Hash over inner.
            let (outer, inner) = split(g, budget - 2);
            let outer = build(g, outer, depth + 1, parallel);
            let inner = build(g, inner, depth + 2, parallel);
            let hash = Spec::new(Kind::Hash, g, vec![inner]);
            Spec::new(Kind::HashJoin, g, vec![outer, hash])
        }
        35..=49 => {
            // Nested Loop over an index lookup, memoized now and then.
            let outer = build(
                g,
                budget - 1 - if budget >= 4 { 2 } else { 1 },
                depth + 1,
                parallel,
            );
            let mut lookup = leaf_scan(g, parallel);
            lookup.kind = Kind::IndexScan;
            let inner = if budget >= 4 {
                Spec::new(Kind::Memoize, g, vec![lookup])
            } else {
                lookup
            };
            Spec::new(Kind::NestedLoop, g, vec![outer, inner])
        }
        50..=59 if budget >= 5 => {
            let (outer, inner) = split(g, budget - 3);
            let outer = unary(g, Kind::Sort, outer + 1, depth + 1, parallel);
            let inner = unary(g, Kind::Sort, inner + 1, depth + 1, parallel);
            Spec::new(Kind::MergeJoin, g, vec![outer, inner])
        }
        60..=71 => unary(g, Kind::Aggregate, budget, depth, parallel),
        72..=81 => unary(g, Kind::Sort, budget, depth, parallel),
        82..=89 if !parallel => unary(g, Kind::Gather, budget, depth, true),
        90..=95 => unary(g, Kind::Limit, budget, depth, parallel),
        _ => append(g, budget, depth, parallel),
    }
}

/// A node of `kind` over a subtree: `budget` nodes in all. Below a Gather, `parallel` is set.
fn unary(g: &mut Lcg, kind: Kind, budget: usize, depth: usize, parallel: bool) -> Spec {
    let child = build(g, budget - 1, depth + 1, parallel);
    Spec::new(kind, g, vec![child])
}

fn append(g: &mut Lcg, budget: usize, depth: usize, parallel: bool) -> Spec {
    let mut rest = budget - 1;
    let near_limit = depth + 3 >= MAX_DEPTH;
    let parts = if near_limit {
        rest
    } else {
        (2 + g.below(if budget > 300 { 60 } else { 8 })).min(rest)
    };
    let mut children = Vec::with_capacity(parts);
    for i in 0..parts {
        let left = parts - i;
        let size = if left == 1 {
            rest
        } else {
            // Uneven partitions: up to twice the fair share, leaving one node for each other.
            (1 + g.below((2 * rest / left).max(1))).min(rest - (left - 1))
        };
        children.push(build(g, size, depth + 1, parallel));
        rest -= size;
    }
    Spec::new(Kind::Append, g, children)
}

/// The "after" plan: the "before" plan with edits a new index or changed statistics cause.
fn edit(spec: &mut Spec, counter: &mut usize, g: &mut Lcg) {
    *counter += 1;
    let n = *counter;
    if spec.kind.reads_relation() {
        match n % 10 {
            // Access method changes.
            3 => {
                spec.kind = match spec.kind {
                    Kind::SeqScan => Kind::IndexScan,
                    Kind::IndexScan => Kind::SeqScan,
                    Kind::IndexOnlyScan => Kind::IndexScan,
                    other => other,
                }
            }
            // Another index of the same table.
            7 if spec.kind == Kind::IndexScan => spec.index = (spec.index + 1) % 3,
            _ => {}
        }
    }
    if spec.kind.is_join() {
        match n % 6 {
            1 => change_join_strategy(spec, g),
            // The planner swaps the sides of a join.
            4 if spec.kind == Kind::HashJoin => {
                let hash = spec.children.remove(1);
                let outer = spec.children.remove(0);
                let inner = hash
                    .children
                    .into_iter()
                    .next()
                    .expect("a Hash has a child");
                let hash = Spec::new(Kind::Hash, g, vec![outer]);
                spec.children = vec![inner, hash];
            }
            _ => {}
        }
    }
    if spec.kind == Kind::Append && spec.children.len() > 2 {
        match n % 5 {
            // Partition pruning removes a partition...
            2 => {
                spec.children.pop();
            }
            // ...or a new one appears.
            4 => {
                let added = leaf_scan(g, spec.parallel);
                spec.children.insert(0, added);
            }
            _ => {}
        }
        if n.is_multiple_of(7) {
            spec.children.reverse();
        }
    }
    if n.is_multiple_of(9) {
        spec.pages_factor = 20.0;
    }
    if n.is_multiple_of(13) {
        // Fresh statistics: a misestimate appears or vanishes.
        spec.seed = spec.seed.wrapping_add(1);
    }
    for child in &mut spec.children {
        edit(child, counter, g);
    }
}

fn change_join_strategy(spec: &mut Spec, g: &mut Lcg) {
    let mut sides: Vec<Spec> = std::mem::take(&mut spec.children)
        .into_iter()
        .map(|c| match c.kind {
            // Drop the Hash or Sort a strategy needs; the new strategy adds its own.
            Kind::Hash | Kind::Sort => c.children.into_iter().next().expect("has a child"),
            _ => c,
        })
        .collect();
    let inner = sides.pop().expect("a join has two sides");
    let outer = sides.pop().expect("a join has two sides");
    let (kind, children) = match spec.kind {
        Kind::HashJoin => (Kind::NestedLoop, vec![outer, inner]),
        Kind::NestedLoop => (
            Kind::HashJoin,
            vec![outer, Spec::new(Kind::Hash, g, vec![inner])],
        ),
        _ => (
            Kind::HashJoin,
            vec![outer, Spec::new(Kind::Hash, g, vec![inner])],
        ),
    };
    spec.kind = kind;
    spec.children = children;
}

/// Writes JSON the way PostgreSQL's EXPLAIN does: one key per line, two-space indentation.
struct Writer {
    out: String,
    first: bool,
    indent: usize,
    /// The relation pool's size.
    relations: usize,
}

impl Writer {
    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        self.out.push('\n');
        for _ in 0..self.indent {
            self.out.push(' ');
        }
        self.out.push('"');
        self.out.push_str(key);
        self.out.push_str("\": ");
    }

    fn text(&mut self, key: &str, value: &str) {
        self.key(key);
        self.out.push('"');
        for c in value.chars() {
            if c == '"' || c == '\\' {
                self.out.push('\\');
            }
            self.out.push(c);
        }
        self.out.push('"');
    }

    fn raw(&mut self, key: &str, value: impl std::fmt::Display) {
        self.key(key);
        write!(self.out, "{value}").expect("writing to a String");
    }

    fn fixed(&mut self, key: &str, value: f64, decimals: usize) {
        self.key(key);
        write!(self.out, "{value:.decimals$}").expect("writing to a String");
    }

    fn list(&mut self, key: &str, items: &[String]) {
        self.key(key);
        self.out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            write!(self.out, "\"{item}\"").expect("writing to a String");
        }
        self.out.push(']');
    }

    /// Opens an object as a value (`"key": {` or, in an array, `{`).
    fn open(&mut self, key: Option<&str>, bracket: char) {
        match key {
            Some(key) => self.key(key),
            None => {
                if !self.first {
                    self.out.push(',');
                }
                self.out.push('\n');
                for _ in 0..self.indent {
                    self.out.push(' ');
                }
            }
        }
        self.out.push(bracket);
        self.indent += 2;
        self.first = true;
    }

    fn close(&mut self, bracket: char) {
        self.indent -= 2;
        self.out.push('\n');
        for _ in 0..self.indent {
            self.out.push(' ');
        }
        self.out.push(bracket);
        self.first = false;
    }

    fn buffers_and_io(&mut self, hit: f64, read: f64, temp: f64) {
        self.raw("Shared Hit Blocks", hit);
        self.raw("Shared Read Blocks", read);
        self.raw("Shared Dirtied Blocks", 0);
        self.raw("Shared Written Blocks", 0);
        self.raw("Local Hit Blocks", 0);
        self.raw("Local Read Blocks", 0);
        self.raw("Local Dirtied Blocks", 0);
        self.raw("Local Written Blocks", 0);
        self.raw("Temp Read Blocks", (temp / 2.0).floor());
        self.raw("Temp Written Blocks", (temp / 2.0).ceil());
        self.fixed("Shared I/O Read Time", read * 0.004, 3);
        self.fixed("Shared I/O Write Time", 0.0, 3);
        self.fixed("Local I/O Read Time", 0.0, 3);
        self.fixed("Local I/O Write Time", 0.0, 3);
        self.fixed("Temp I/O Read Time", temp * 0.002, 3);
        self.fixed("Temp I/O Write Time", temp * 0.003, 3);
    }

    fn node(&mut self, spec: &Spec, relationship: Option<&str>) {
        let mut g = Lcg(spec.seed ^ 0x9e37_79b9);
        let rel_no = spec.rel % self.relations;
        let rel = table(rel_no);
        let alias = alias(rel_no, spec.alias);
        let column = COLUMNS[rel_no % COLUMNS.len()];
        let index = format!(
            "{rel}_{}_idx",
            COLUMNS[(rel_no + spec.index) % COLUMNS.len()]
        );
        let join_type = ["Inner", "Inner", "Inner", "Left", "Semi", "Anti"][spec.variant % 6];

        self.text("Node Type", spec.kind.name());
        if spec.kind == Kind::Aggregate {
            self.text("Strategy", ["Hashed", "Sorted", "Plain"][spec.variant % 3]);
            self.text("Partial Mode", "Simple");
        }
        if let Some(relationship) = relationship {
            self.text("Parent Relationship", relationship);
        }
        self.raw(
            "Parallel Aware",
            spec.parallel && spec.kind.reads_relation(),
        );
        self.raw("Async Capable", false);
        if spec.kind.is_join() {
            self.text("Join Type", join_type);
        }
        if matches!(spec.kind, Kind::IndexScan | Kind::IndexOnlyScan) {
            self.text("Scan Direction", "Forward");
        }
        if matches!(
            spec.kind,
            Kind::IndexScan | Kind::IndexOnlyScan | Kind::BitmapIndexScan
        ) {
            self.text("Index Name", &index);
        }
        if spec.kind.reads_relation() {
            self.text("Relation Name", &rel);
            self.text("Schema", schema(rel_no));
            self.text("Alias", &alias);
        }
        let startup_cost = g.unit() * 100.0;
        self.fixed("Startup Cost", startup_cost, 2);
        self.fixed("Total Cost", startup_cost + spec.plan_rows * 0.01, 2);
        self.raw("Plan Rows", spec.plan_rows);
        self.raw("Plan Width", 4 + g.below(120));
        self.fixed("Actual Startup Time", spec.total_ms * 0.1, 3);
        self.fixed("Actual Total Time", spec.total_ms, 3);
        self.fixed("Actual Rows", spec.rows, 2);
        self.raw("Actual Loops", spec.loops);
        self.raw("Disabled", false);
        if spec.kind != Kind::BitmapIndexScan && spec.kind != Kind::Append {
            let outputs: Vec<String> = COLUMNS[..1 + spec.variant % 5]
                .iter()
                .map(|c| format!("{alias}.{c}"))
                .collect();
            self.list("Output", &outputs);
        }
        match spec.kind {
            Kind::SeqScan => {
                if spec.variant.is_multiple_of(2) {
                    self.text("Filter", &format!("({alias}.{column} = 'shipped'::text)"));
                    self.raw("Rows Removed by Filter", (spec.rows * 9.0).round());
                }
            }
            Kind::IndexScan | Kind::IndexOnlyScan => {
                self.text("Index Cond", &format!("({alias}.{column} = $1)"));
                self.raw("Rows Removed by Index Recheck", 0);
                if spec.kind == Kind::IndexOnlyScan {
                    self.raw("Heap Fetches", g.below(3) * g.below(5_000));
                }
                self.raw("Index Searches", spec.loops);
            }
            Kind::BitmapHeapScan => {
                self.text("Recheck Cond", &format!("({alias}.{column} < 1000)"));
                self.raw("Rows Removed by Index Recheck", 0);
                self.raw("Exact Heap Blocks", g.below(5_000));
                self.raw(
                    "Lossy Heap Blocks",
                    if g.below(8) == 0 { g.below(900) } else { 0 },
                );
            }
            Kind::BitmapIndexScan => {
                self.text("Index Cond", &format!("({column} < 1000)"));
                self.raw("Index Searches", 1);
            }
            Kind::HashJoin | Kind::NestedLoop | Kind::MergeJoin => {
                self.raw("Inner Unique", spec.variant.is_multiple_of(2));
                let cond = format!("({alias}.{column} = x{}.{column})", spec.alias);
                match spec.kind {
                    Kind::HashJoin => self.text("Hash Cond", &cond),
                    Kind::MergeJoin => self.text("Merge Cond", &cond),
                    _ => {
                        if spec.variant % 4 == 1 {
                            self.text("Join Filter", &cond);
                            self.raw("Rows Removed by Join Filter", spec.rows * 3.0);
                        }
                    }
                }
            }
            Kind::Hash => {
                let batches = if spec.temp > 0.0 { 8 } else { 1 };
                self.raw("Hash Buckets", 1024 << g.below(6));
                self.raw("Original Hash Buckets", 1024);
                self.raw("Hash Batches", batches);
                self.raw("Original Hash Batches", batches);
                self.raw("Peak Memory Usage", 1 + g.below(4_000));
            }
            Kind::Aggregate => {
                self.list("Group Key", &[format!("{alias}.{column}")]);
                if spec.variant.is_multiple_of(3) {
                    self.raw("Planned Partitions", 0);
                    self.raw("HashAgg Batches", 1);
                    self.raw("Peak Memory Usage", 1 + g.below(4_000));
                    self.raw("Disk Usage", 0);
                }
            }
            Kind::Sort => {
                self.list(
                    "Sort Key",
                    &[format!("{alias}.{column} DESC"), format!("{alias}.id")],
                );
                if spec.temp > 0.0 {
                    self.text("Sort Method", "external merge");
                    self.raw("Sort Space Used", spec.temp * 8.0);
                    self.text("Sort Space Type", "Disk");
                } else {
                    self.text("Sort Method", "quicksort");
                    self.raw("Sort Space Used", 25 + g.below(4_000));
                    self.text("Sort Space Type", "Memory");
                }
            }
            Kind::Gather => {
                self.raw("Workers Planned", 2);
                self.raw("Workers Launched", 2 - (g.below(10) == 0) as u32);
            }
            Kind::Memoize => {
                self.list("Cache Key", &[format!("{alias}.{column}")]);
                self.text("Cache Mode", "logical");
                self.raw("Cache Hits", g.below(10_000));
                self.raw("Cache Misses", g.below(1_000));
                self.raw("Cache Evictions", 0);
                self.raw("Cache Overflows", 0);
                self.raw("Peak Memory Usage", 1 + g.below(400));
            }
            Kind::Append => self.raw("Subplans Removed", 0),
            Kind::Limit => {}
        }
        self.buffers_and_io(spec.shared_hit, spec.shared_read, spec.temp);
        if spec.parallel && spec.kind.reads_relation() {
            self.open(Some("Workers"), '[');
            for worker in 0..2 {
                self.open(None, '{');
                self.raw("Worker Number", worker);
                self.fixed("Actual Startup Time", spec.total_ms * 0.1, 3);
                self.fixed("Actual Total Time", spec.total_ms, 3);
                self.fixed("Actual Rows", spec.rows, 2);
                self.raw("Actual Loops", 1);
                let third = |v: f64| (v / 3.0).round();
                self.buffers_and_io(third(spec.shared_hit), third(spec.shared_read), 0.0);
                self.close('}');
            }
            self.close(']');
        }
        if !spec.children.is_empty() {
            self.open(Some("Plans"), '[');
            for (i, child) in spec.children.iter().enumerate() {
                let relationship = match spec.kind {
                    Kind::Append => "Member",
                    _ if i == 0 => "Outer",
                    _ => "Inner",
                };
                self.open(None, '{');
                self.node(child, Some(relationship));
                self.close('}');
            }
            self.close(']');
        }
    }
}

/// EXPLAIN (ANALYZE, BUFFERS, VERBOSE, FORMAT JSON) text of the plan.
fn render(root: &Spec, relations: usize) -> String {
    let mut w = Writer {
        out: String::with_capacity(root.count() * 1600),
        first: true,
        indent: 0,
        relations,
    };
    w.out.push('[');
    w.indent = 2;
    w.open(None, '{');
    w.open(Some("Plan"), '{');
    w.node(root, None);
    w.close('}');
    w.open(Some("Planning"), '{');
    w.buffers_and_io(120.0, 3.0, 0.0);
    w.close('}');
    w.fixed("Planning Time", 1.234, 3);
    w.key("Triggers");
    w.out.push_str("[\n    ]");
    w.fixed("Execution Time", root.total_ms + 0.5, 3);
    w.close('}');
    w.out.push_str("\n]");
    w.out
}

/// A before/after pair of about `nodes` nodes each.
pub fn plan_pair(nodes: usize) -> (String, String) {
    let mut g = Lcg(nodes as u64);
    // A typical top: a Limit over a Sort over an aggregate of the join tree.
    let body = build(&mut g, nodes - 3, 3, false);
    let aggregate = Spec::new(Kind::Aggregate, &mut g, vec![body]);
    let sort = Spec::new(Kind::Sort, &mut g, vec![aggregate]);
    let mut before = Spec::new(Kind::Limit, &mut g, vec![sort]);
    let mut after = before.clone();
    edit(&mut after, &mut 0, &mut g);
    before.measure(1.0);
    after.measure(1.0);
    let relations = relation_pool(nodes);
    (render(&before, relations), render(&after, relations))
}

/// The same plan as EXPLAIN (ANALYZE, BUFFERS, VERBOSE) prints it in the TEXT format
/// (PostgreSQL 18's layout), for the TEXT reader's benchmark.
fn render_text(root: &Spec, relations: usize) -> String {
    let mut out = String::with_capacity(root.count() * 700);
    text_node(&mut out, root, 0, true, relations);
    out.push_str("Planning:\n  Buffers: shared hit=120 read=3\n  I/O Timings: shared read=0.012\n");
    out.push_str("Planning Time: 1.234 ms\n");
    writeln!(out, "Execution Time: {:.3} ms", root.total_ms + 0.5).expect("writing to a String");
    out
}

fn text_buffers(out: &mut String, pad: &str, hit: f64, read: f64, temp: f64) {
    let mut parts = Vec::new();
    let mut shared = Vec::new();
    if hit > 0.0 {
        shared.push(format!("hit={hit}"));
    }
    if read > 0.0 {
        shared.push(format!("read={read}"));
    }
    if !shared.is_empty() {
        parts.push(format!("shared {}", shared.join(" ")));
    }
    if temp > 0.0 {
        parts.push(format!(
            "temp read={} written={}",
            (temp / 2.0).floor(),
            (temp / 2.0).ceil()
        ));
    }
    if !parts.is_empty() {
        writeln!(out, "{pad}Buffers: {}", parts.join(", ")).expect("writing to a String");
    }
    let mut io = Vec::new();
    if read > 0.0 {
        io.push(format!("shared read={:.3}", read * 0.004));
    }
    if temp > 0.0 {
        io.push(format!(
            "temp read={:.3} write={:.3}",
            temp * 0.002,
            temp * 0.003
        ));
    }
    if !io.is_empty() {
        writeln!(out, "{pad}I/O Timings: {}", io.join(", ")).expect("writing to a String");
    }
}

fn text_node(out: &mut String, spec: &Spec, col: usize, root: bool, relations: usize) {
    let mut g = Lcg(spec.seed ^ 0x9e37_79b9);
    let rel_no = spec.rel % relations;
    let rel = table(rel_no);
    let alias = alias(rel_no, spec.alias);
    let column = COLUMNS[rel_no % COLUMNS.len()];
    let index = format!(
        "{rel}_{}_idx",
        COLUMNS[(rel_no + spec.index) % COLUMNS.len()]
    );
    let join_type = ["Inner", "Inner", "Inner", "Left", "Semi", "Anti"][spec.variant % 6];
    // Properties sit two columns in from the node's name; a child's name follows its `->  `.
    let pad = if root {
        " ".repeat(col + 2)
    } else {
        out.push_str(&" ".repeat(col));
        out.push_str("->  ");
        " ".repeat(col + 6)
    };
    if spec.parallel && spec.kind.reads_relation() {
        out.push_str("Parallel ");
    }
    let target = format!("{}.{rel} {alias}", schema(rel_no));
    match spec.kind {
        Kind::Aggregate => {
            out.push_str(["HashAggregate", "GroupAggregate", "Aggregate"][spec.variant % 3])
        }
        Kind::HashJoin | Kind::MergeJoin | Kind::NestedLoop => {
            let base = match spec.kind {
                Kind::HashJoin => "Hash",
                Kind::MergeJoin => "Merge",
                _ => "Nested Loop",
            };
            out.push_str(base);
            if join_type != "Inner" {
                write!(out, " {join_type} Join").expect("writing to a String");
            } else if spec.kind != Kind::NestedLoop {
                out.push_str(" Join");
            }
        }
        Kind::IndexScan | Kind::IndexOnlyScan => {
            write!(out, "{} using {index} on {target}", spec.kind.name())
                .expect("writing to a String")
        }
        Kind::BitmapIndexScan => {
            write!(out, "Bitmap Index Scan on {index}").expect("writing to a String")
        }
        Kind::SeqScan | Kind::BitmapHeapScan => {
            write!(out, "{} on {target}", spec.kind.name()).expect("writing to a String")
        }
        other => out.push_str(other.name()),
    }
    let startup_cost = g.unit() * 100.0;
    writeln!(
        out,
        "  (cost={startup_cost:.2}..{:.2} rows={} width={}) (actual time={:.3}..{:.3} rows={:.2} loops={})",
        startup_cost + spec.plan_rows * 0.01,
        spec.plan_rows,
        4 + g.below(120),
        spec.total_ms * 0.1,
        spec.total_ms,
        spec.rows,
        spec.loops
    )
    .expect("writing to a String");
    if spec.kind != Kind::BitmapIndexScan && spec.kind != Kind::Append {
        let outputs: Vec<String> = COLUMNS[..1 + spec.variant % 5]
            .iter()
            .map(|c| format!("{alias}.{c}"))
            .collect();
        writeln!(out, "{pad}Output: {}", outputs.join(", ")).expect("writing to a String");
    }
    let w = |out: &mut String, line: String| {
        out.push_str(&pad);
        out.push_str(&line);
        out.push('\n');
    };
    match spec.kind {
        Kind::SeqScan => {
            if spec.variant.is_multiple_of(2) {
                w(out, format!("Filter: ({alias}.{column} = 'shipped'::text)"));
                let removed = (spec.rows * 9.0).round();
                if removed > 0.0 {
                    w(out, format!("Rows Removed by Filter: {removed}"));
                }
            }
        }
        Kind::IndexScan | Kind::IndexOnlyScan => {
            w(out, format!("Index Cond: ({alias}.{column} = $1)"));
            if spec.kind == Kind::IndexOnlyScan {
                w(
                    out,
                    format!("Heap Fetches: {}", g.below(3) * g.below(5_000)),
                );
            }
            w(out, format!("Index Searches: {}", spec.loops));
        }
        Kind::BitmapHeapScan => {
            w(out, format!("Recheck Cond: ({alias}.{column} < 1000)"));
            let exact = g.below(5_000);
            let lossy = if g.below(8) == 0 { g.below(900) } else { 0 };
            w(out, format!("Heap Blocks: exact={exact} lossy={lossy}"));
        }
        Kind::BitmapIndexScan => {
            w(out, format!("Index Cond: ({column} < 1000)"));
            w(out, "Index Searches: 1".into());
        }
        Kind::HashJoin | Kind::NestedLoop | Kind::MergeJoin => {
            if spec.variant.is_multiple_of(2) {
                w(out, "Inner Unique: true".into());
            }
            let cond = format!("({alias}.{column} = x{}.{column})", spec.alias);
            match spec.kind {
                Kind::HashJoin => w(out, format!("Hash Cond: {cond}")),
                Kind::MergeJoin => w(out, format!("Merge Cond: {cond}")),
                _ => {
                    if spec.variant % 4 == 1 {
                        w(out, format!("Join Filter: {cond}"));
                        w(
                            out,
                            format!("Rows Removed by Join Filter: {}", spec.rows * 3.0),
                        );
                    }
                }
            }
        }
        Kind::Hash => {
            let batches = if spec.temp > 0.0 { 8 } else { 1 };
            w(
                out,
                format!(
                    "Buckets: {} (originally 1024)  Batches: {batches}  Memory Usage: {}kB",
                    1024 << g.below(6),
                    1 + g.below(4_000)
                ),
            );
        }
        Kind::Aggregate => {
            w(out, format!("Group Key: {alias}.{column}"));
            if spec.variant.is_multiple_of(3) {
                w(
                    out,
                    format!("Batches: 1  Memory Usage: {}kB", 1 + g.below(4_000)),
                );
            }
        }
        Kind::Sort => {
            w(out, format!("Sort Key: {alias}.{column} DESC, {alias}.id"));
            if spec.temp > 0.0 {
                w(
                    out,
                    format!("Sort Method: external merge  Disk: {}kB", spec.temp * 8.0),
                );
            } else {
                w(
                    out,
                    format!("Sort Method: quicksort  Memory: {}kB", 25 + g.below(4_000)),
                );
            }
        }
        Kind::Gather => {
            w(out, "Workers Planned: 2".into());
            w(
                out,
                format!("Workers Launched: {}", 2 - (g.below(10) == 0) as u32),
            );
        }
        Kind::Memoize => {
            w(out, format!("Cache Key: {alias}.{column}"));
            w(out, "Cache Mode: logical".into());
            w(
                out,
                format!(
                    "Hits: {}  Misses: {}  Evictions: 0  Overflows: 0  Memory Usage: {}kB",
                    g.below(10_000),
                    g.below(1_000),
                    1 + g.below(400)
                ),
            );
        }
        Kind::Append | Kind::Limit => {}
    }
    text_buffers(out, &pad, spec.shared_hit, spec.shared_read, spec.temp);
    if spec.parallel && spec.kind.reads_relation() {
        for worker in 0..2 {
            w(
                out,
                format!(
                    "Worker {worker}:  actual time={:.3}..{:.3} rows={:.2} loops=1",
                    spec.total_ms * 0.1,
                    spec.total_ms,
                    spec.rows
                ),
            );
            let third = |v: f64| (v / 3.0).round();
            text_buffers(
                out,
                &format!("{pad}  "),
                third(spec.shared_hit),
                third(spec.shared_read),
                0.0,
            );
        }
    }
    for child in &spec.children {
        text_node(out, child, pad.len(), false, relations);
    }
}

/// The "before" plan of `plan_pair(nodes)` in the TEXT format.
pub fn text_plan(nodes: usize) -> String {
    let mut g = Lcg(nodes as u64);
    let body = build(&mut g, nodes - 3, 3, false);
    let aggregate = Spec::new(Kind::Aggregate, &mut g, vec![body]);
    let sort = Spec::new(Kind::Sort, &mut g, vec![aggregate]);
    let mut before = Spec::new(Kind::Limit, &mut g, vec![sort]);
    before.measure(1.0);
    render_text(&before, relation_pool(nodes))
}

/// A plan of one sequential scan whose `Filter` is about `chars` characters long: a long `OR`
/// list as PostgreSQL prints one (`((t.id = 1000000) OR (t.id = 1000007) OR ...)`), to time
/// rendering a very wide cell.
pub fn long_condition_plan(chars: usize) -> String {
    let filter = long_filter(chars);
    format!(
        r#"[{{"Plan": {{"Node Type": "Seq Scan", "Parallel Aware": false, "Async Capable": false,
  "Relation Name": "t", "Schema": "public", "Alias": "t", "Startup Cost": 0.00,
  "Total Cost": 1693.00, "Plan Rows": 10, "Plan Width": 8, "Actual Startup Time": 0.010,
  "Actual Total Time": 12.345, "Actual Rows": 10.00, "Actual Loops": 1, "Output": ["id"],
  "Filter": "{filter}", "Rows Removed by Filter": 99990, "Shared Hit Blocks": 443,
  "Shared Read Blocks": 0, "Shared Dirtied Blocks": 0, "Shared Written Blocks": 0,
  "Local Hit Blocks": 0, "Local Read Blocks": 0, "Local Dirtied Blocks": 0,
  "Local Written Blocks": 0, "Temp Read Blocks": 0, "Temp Written Blocks": 0}},
  "Planning Time": 0.5, "Triggers": [], "Execution Time": 12.9}}]"#
    )
}

/// `long_condition_plan(chars)` in the TEXT format, as PostgreSQL 18 prints it.
pub fn long_condition_text_plan(chars: usize) -> String {
    format!(
        "Seq Scan on public.t  (cost=0.00..1693.00 rows=10 width=8) (actual time=0.010..12.345 rows=10.00 loops=1)
  Output: id
  Filter: {}
  Rows Removed by Filter: 99990
  Buffers: shared hit=443
Planning Time: 0.500 ms
Execution Time: 12.900 ms
",
        long_filter(chars)
    )
}

fn long_filter(chars: usize) -> String {
    let mut filter = String::from("(");
    let mut n = 0u64;
    while filter.len() + 22 < chars {
        if n > 0 {
            filter.push_str(" OR ");
        }
        write!(filter, "(t.id = {})", 1_000_000 + n * 7).unwrap();
        n += 1;
    }
    filter.push(')');
    filter
}
