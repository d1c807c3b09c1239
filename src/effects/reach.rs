//! How far a query's calls reach through the user's own functions: the body of each SQL or
//! PL/pgSQL function is read for what it calls ([`super::body`]), followed transitively up to a
//! cap, and every path that ends in a function whose effects outlive the rollback is a chain,
//! named with the words of its refusal. What no body shows (dynamic SQL, a function in C or
//! another language, the cap) is said too.
//!
//! A statement that is only planned runs something too: the planner evaluates a call of an
//! IMMUTABLE function on constant arguments while it plans (`eval_const_expressions`), and a
//! STABLE one when it estimates a clause's selectivity (`estimate_expression_value`), whatever
//! the function really does; it also inlines a SQL function's body into the query, exposing
//! the body's calls to the same folding. A VOLATILE function is never run by planning.

use std::collections::{BTreeMap, HashSet};

use super::body::{BodyScan, scan_body};
use super::{Call, Effect, FunctionRow, classify, rows_for};

/// How many calls deep the walk follows the user's functions.
pub const MAX_DEPTH: usize = 8;
/// How many distinct user functions the walk reads the body of.
pub const MAX_FUNCTIONS: usize = 200;

/// Whether the statement judged is run, or only planned (`--hypothetical`, `--generic-plan`,
/// an estimate-only `explain -d`, a workload's query that is not run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    Executes,
    PlansOnly,
}

/// A path from a user function the query calls to a function whose effects outlive the
/// rollback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// The functions, `schema.name()`, from the one the query calls to the one that reaches
    /// outside.
    pub path: Vec<String>,
    /// What the last one does.
    pub reason: &'static str,
}

impl Chain {
    /// The function the query calls.
    pub fn head(&self) -> &str {
        &self.path[0]
    }

    /// The rest of the sentence after [`Chain::head`]: `calls public.relay(), which calls
    /// public.dblink_exec(): it runs SQL over another connection, ...`.
    pub fn rest(&self) -> String {
        let mut text = String::new();
        for (i, name) in self.path.iter().enumerate().skip(1) {
            text.push_str(if i == 1 { "calls " } else { ", which calls " });
            text.push_str(name);
        }
        format!("{text}: it {}", self.reason)
    }
}

/// What the walk found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    pub chains: Vec<Chain>,
    /// What the walk could not see through, one phrase each (`public.f() runs dynamic SQL
    /// ...`), sorted.
    pub unseen: Vec<String>,
    /// The walk stopped at [`MAX_DEPTH`] or [`MAX_FUNCTIONS`] with calls left to follow.
    pub capped: bool,
}

impl Reach {
    /// The words for what was not seen, the cap included; `None` when everything was.
    pub fn unseen_words(&self) -> Option<String> {
        let mut parts = self.unseen.clone();
        if self.capped {
            parts.push(format!(
                "pgplan followed the user's functions {MAX_DEPTH} calls deep and {MAX_FUNCTIONS} \
                 functions wide and stopped there, so what lies beyond is not seen"
            ));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// Whether pgplan reads the body of `row`: the user's own function, not PostgreSQL's (judged
/// by name) nor an extension's (judged by the extension).
pub fn is_user_function(row: &FunctionRow) -> bool {
    row.extension.is_none() && row.schema != "pg_catalog" && row.schema != "information_schema"
}

/// The names called in the bodies of the user's functions among `rows` that are not in
/// `read` yet: what the next catalog read looks up. Sorted, without repeats.
pub fn names_to_read(rows: &[FunctionRow], read: &[String]) -> Vec<String> {
    let mut names: Vec<String> = rows
        .iter()
        .filter(|r| is_user_function(r))
        .filter_map(|r| r.body.as_deref())
        .flat_map(|body| scan_body(body).calls)
        .map(|c| c.name)
        .filter(|n| !read.contains(n))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The catalog rows a call in a function's body may mean: the function of that schema when
/// qualified; when not, every function of the name, since the body runs under the search path
/// of its caller's session or of its own `SET search_path`, not necessarily pgplan's.
fn body_rows_for(call: &Call, rows: &[FunctionRow]) -> Vec<usize> {
    (0..rows.len())
        .filter(|&i| rows[i].name == call.name)
        .filter(|&i| call.schema.as_ref().is_none_or(|s| &rows[i].schema == s))
        .collect()
}

/// How much of a call planning runs, in a statement that is only planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Exposure {
    /// The planner sees the call: it evaluates it if the function is not VOLATILE, and inlines
    /// it if it is a SQL function.
    Seen,
    /// The call runs: it is inside a function the planner evaluates (or the statement runs).
    Runs,
}

/// The walk from the user functions the query calls (as `calls` and `rows` resolve them) down
/// every body it can read, with the chains that reach a function whose effects outlive the
/// rollback (under `run`, only those planning runs).
pub fn reach(calls: &[Call], rows: &[FunctionRow], run: Run) -> Reach {
    let mut walk = Walk {
        rows,
        scans: BTreeMap::new(),
        seen: HashSet::new(),
        path: Vec::new(),
        reach: Reach::default(),
        unseen: Vec::new(),
    };
    let start = match run {
        Run::Executes => Exposure::Runs,
        Run::PlansOnly => Exposure::Seen,
    };
    for call in calls {
        for row in rows_for(call, rows) {
            let Some(i) = rows.iter().position(|r| std::ptr::eq(r, row)) else {
                continue;
            };
            if is_user_function(row) {
                // Each function the query calls gets its own chains, even through a function
                // another one reached first.
                walk.seen.clear();
                walk.visit(i, start, 0);
            }
        }
    }
    let mut reach = walk.reach;
    walk.unseen.sort();
    walk.unseen.dedup();
    reach.unseen = walk.unseen;
    reach
}

struct Walk<'a> {
    rows: &'a [FunctionRow],
    /// Each body read once, by row.
    scans: BTreeMap<usize, BodyScan>,
    seen: HashSet<(usize, Exposure)>,
    path: Vec<usize>,
    reach: Reach,
    unseen: Vec<String>,
}

impl Walk<'_> {
    fn visit(&mut self, i: usize, exposure: Exposure, depth: usize) {
        let row = &self.rows[i];
        // What of this function's body runs.
        let body = match exposure {
            Exposure::Runs => Exposure::Runs,
            Exposure::Seen if row.volatility != 'v' => Exposure::Runs,
            Exposure::Seen if row.language == "sql" => Exposure::Seen,
            // A VOLATILE function in another language: planning does not run it.
            Exposure::Seen => return,
        };
        if !self.seen.insert((i, body)) {
            return;
        }
        let shown = row.display();
        let Some(source) = row.body.as_deref() else {
            if body == Exposure::Runs {
                self.unseen.push(format!(
                    "{shown} is written in {}, whose body pgplan does not read",
                    row.language
                ));
            }
            return;
        };
        if !self.scans.contains_key(&i) {
            if self.scans.len() >= MAX_FUNCTIONS {
                self.reach.capped = true;
                return;
            }
            self.scans.insert(i, scan_body(source));
        }
        let scan = self.scans[&i].clone();
        if body == Exposure::Runs {
            if scan.dynamic {
                self.unseen.push(format!(
                    "{shown} runs dynamic SQL (EXECUTE of a string made at run time), which \
                     pgplan cannot read"
                ));
            }
            if scan.unreadable {
                self.unseen
                    .push(format!("{shown}'s body could not be read for its calls"));
            }
        }
        if scan.calls.is_empty() {
            return;
        }
        if depth >= MAX_DEPTH {
            self.reach.capped = true;
            return;
        }
        self.path.push(i);
        for call in &scan.calls {
            for j in body_rows_for(call, self.rows) {
                let callee = &self.rows[j];
                if is_user_function(callee) {
                    self.visit(j, body, depth + 1);
                    continue;
                }
                let Effect::Lasting(reason) = classify(callee) else {
                    continue;
                };
                let runs = body == Exposure::Runs || callee.volatility != 'v';
                if !runs {
                    continue;
                }
                let mut path: Vec<String> =
                    self.path.iter().map(|&k| self.rows[k].display()).collect();
                path.push(callee.display());
                let chain = Chain { path, reason };
                if !self
                    .reach
                    .chains
                    .iter()
                    .any(|c| c.head() == chain.head() && c.path.last() == chain.path.last())
                {
                    self.reach.chains.push(chain);
                }
            }
        }
        self.path.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, volatility: char, language: &str, body: &str) -> FunctionRow {
        FunctionRow {
            schema: "public".into(),
            name: name.into(),
            volatility,
            extension: None,
            visible: true,
            language: language.into(),
            body: Some(body.into()),
        }
    }

    fn built_in(name: &str) -> FunctionRow {
        FunctionRow {
            schema: "pg_catalog".into(),
            name: name.into(),
            volatility: 'v',
            extension: None,
            visible: true,
            language: "internal".into(),
            body: None,
        }
    }

    fn dblink_exec() -> FunctionRow {
        FunctionRow {
            extension: Some("dblink".into()),
            schema: "public".into(),
            language: "c".into(),
            ..built_in("dblink_exec")
        }
    }

    fn call(name: &str) -> Call {
        Call {
            schema: None,
            name: name.into(),
        }
    }

    #[test]
    fn a_chain_through_the_users_functions_is_named_to_the_function_that_reaches_outside() {
        let rows = [
            user("log_it", 'v', "plpgsql", "BEGIN PERFORM relay(); END"),
            user(
                "relay",
                'v',
                "sql",
                "SELECT dblink_exec('dbname=x', 'INSERT INTO t VALUES (1)')",
            ),
            dblink_exec(),
        ];
        let reach = reach(&[call("log_it")], &rows, Run::Executes);
        assert_eq!(reach.chains.len(), 1);
        assert_eq!(reach.chains[0].head(), "public.log_it()");
        assert_eq!(
            reach.chains[0].rest(),
            "calls public.relay(), which calls public.dblink_exec(): it runs SQL over another \
             connection, which commits on its own and outlives pgplan's rollback (a named \
             connection also stays open on this backend)"
        );
        assert_eq!(reach.unseen_words(), None);
        // The catalog reads that found them: the query's names, then each body's.
        assert_eq!(
            names_to_read(&rows[..1], &["log_it".into()]),
            vec!["relay".to_owned()]
        );
        assert_eq!(
            names_to_read(&rows[..2], &["log_it".into(), "relay".into()]),
            vec!["dblink_exec".to_owned()]
        );
        assert!(
            names_to_read(
                &rows,
                &["log_it".into(), "relay".into(), "dblink_exec".into()]
            )
            .is_empty()
        );
    }

    #[test]
    fn a_plan_runs_only_what_the_planner_evaluates() {
        let wrapper = |volatility| {
            user(
                "make_slot",
                volatility,
                "plpgsql",
                "BEGIN PERFORM pg_create_physical_replication_slot('s'); RETURN 1; END",
            )
        };
        let slot = built_in("pg_create_physical_replication_slot");
        // Volatile: planning never runs it; running the query does.
        let rows = [wrapper('v'), slot.clone()];
        assert!(
            reach(&[call("make_slot")], &rows, Run::PlansOnly)
                .chains
                .is_empty()
        );
        assert_eq!(
            reach(&[call("make_slot")], &rows, Run::Executes)
                .chains
                .len(),
            1
        );
        // Marked IMMUTABLE (or STABLE): the planner evaluates it on constants.
        for volatility in ['i', 's'] {
            let rows = [wrapper(volatility), slot.clone()];
            let chains = reach(&[call("make_slot")], &rows, Run::PlansOnly).chains;
            assert_eq!(
                chains[0].path,
                vec![
                    "public.make_slot()".to_owned(),
                    "pg_catalog.pg_create_physical_replication_slot()".to_owned()
                ]
            );
        }
        // A volatile SQL function is inlined, so an IMMUTABLE one in its body is evaluated.
        let rows = [
            user("outer_sql", 'v', "sql", "SELECT make_slot()"),
            wrapper('i'),
            slot.clone(),
        ];
        let chains = reach(&[call("outer_sql")], &rows, Run::PlansOnly).chains;
        assert_eq!(chains[0].path.len(), 3);
        // ... but a volatile PL/pgSQL one is not.
        let rows = [
            user("outer", 'v', "plpgsql", "BEGIN PERFORM make_slot(); END"),
            wrapper('i'),
            slot,
        ];
        assert!(
            reach(&[call("outer")], &rows, Run::PlansOnly)
                .chains
                .is_empty()
        );
    }

    #[test]
    fn what_no_body_shows_is_said() {
        let mut python = user("py", 'v', "plpython3u", "");
        python.body = None;
        let rows = [
            user(
                "top",
                'v',
                "plpgsql",
                "BEGIN EXECUTE format('SELECT %s', x); PERFORM py(); END",
            ),
            python,
        ];
        let reach = reach(&[call("top")], &rows, Run::Executes);
        assert!(reach.chains.is_empty());
        assert_eq!(
            reach.unseen_words().unwrap(),
            "public.py() is written in plpython3u, whose body pgplan does not read; public.top() \
             runs dynamic SQL (EXECUTE of a string made at run time), which pgplan cannot read"
        );
    }

    #[test]
    fn recursion_ends_and_a_chain_too_deep_hits_the_cap() {
        let rows = [user("r", 'v', "plpgsql", "BEGIN PERFORM r(); END")];
        let reach_r = reach(&[call("r")], &rows, Run::Executes);
        assert!(reach_r.chains.is_empty() && !reach_r.capped);

        // f0 calls f1 ... calls f9, which terminates a backend: beyond the cap.
        let mut rows: Vec<FunctionRow> = (0..10)
            .map(|i| {
                let next = if i == 9 {
                    "pg_terminate_backend(1)".to_owned()
                } else {
                    format!("f{}()", i + 1)
                };
                user(&format!("f{i}"), 'v', "sql", &format!("SELECT {next}"))
            })
            .collect();
        rows.push(built_in("pg_terminate_backend"));
        let deep = reach(&[call("f0")], &rows, Run::Executes);
        assert!(deep.chains.is_empty());
        assert!(deep.capped);
        assert!(deep.unseen_words().unwrap().contains("8 calls deep"));
        // Within the cap it is found.
        let shallow = reach(&[call("f3")], &rows, Run::Executes);
        assert_eq!(shallow.chains[0].path.len(), 8);
    }

    #[test]
    fn a_function_of_an_extension_or_of_postgresql_is_judged_by_name_not_read() {
        let mut ext = user(
            "ext_fn",
            'v',
            "plpgsql",
            "BEGIN PERFORM pg_cancel_backend(1); END",
        );
        ext.extension = Some("some_ext".into());
        let rows = [ext, built_in("pg_cancel_backend")];
        assert!(!is_user_function(&rows[0]));
        assert!(
            reach(&[call("ext_fn")], &rows, Run::Executes)
                .chains
                .is_empty()
        );
        assert!(names_to_read(&rows, &[]).is_empty());
    }
}
