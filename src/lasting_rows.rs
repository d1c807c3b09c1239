//! Rows a trigger may have committed outside pgplan's rollback: the tables a run's writes could
//! reach through triggers (the written table and what its trigger functions write to), their
//! committed-change counters read before and after the run, and the notes for what grew.
//!
//! A trigger runs inside pgplan's transaction, so what it writes there is rolled back; but a
//! trigger that writes through dblink (or any other connection) commits on that connection,
//! and no rollback of pgplan's undoes it. pgplan cannot see inside such a call, so it counts
//! the rows committed to the tables the triggers name, before and after.
//!
//! The count is `n_mod_since_analyze`, not `n_tup_ins`/`n_tup_upd`/`n_tup_del`: PostgreSQL adds
//! a transaction's inserts, updates and deletes to those "regardless of commit/abort"
//! (pgstat_relation.c, AtEOXact_PgStat_Relations), so every rolled-back write of pgplan's own
//! runs would count there, while "an aborted xact generates no changed_tuple events": the
//! changes since the last ANALYZE grow only with committed rows. An ANALYZE during the run
//! (pgplan's `--analyze`, autovacuum) resets that counter, which `analyze_count` shows: that
//! table is then said to be unproved.

use crate::format::printable;
use crate::lasting_state::PREFIX;

/// A user trigger on a table the run may write, with its function's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trigger {
    /// The table it is on, as the catalog names it.
    pub table: String,
    pub name: String,
    /// The trigger function, as the catalog names it.
    pub function: String,
    /// The function's `prosrc` (a PL body, or a C symbol).
    pub source: String,
}

/// A table whose committed rows are counted, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    /// The name as regclass input: the catalog's name for a triggering table, the name as a
    /// function's source writes it otherwise (resolved through the reading session's
    /// search_path).
    pub name: String,
    /// Why it is watched (`it has trigger log_changes`, ...).
    pub why: Vec<String>,
}

/// A watched table's counters at one read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowCounter {
    /// The name it was read by (a [`Watched::name`]).
    pub name: String,
    /// The table as the catalog names it.
    pub table: String,
    /// `n_mod_since_analyze`: rows inserted, updated or deleted by committed transactions since
    /// the table was last analyzed.
    pub changed_rows: i64,
    /// `analyze_count + autoanalyze_count`: an ANALYZE resets `changed_rows`.
    pub analyzes: i64,
}

/// A word of a statement or function body, as written: a plain word, a double-quoted
/// identifier (quotes kept, so regclass reads it as the source meant), or a dot.
#[derive(Debug, PartialEq, Eq)]
enum Word<'a> {
    Plain(&'a str),
    Quoted(&'a str),
    Dot,
    /// Anything else (punctuation, a quote of a string literal), which ends a name.
    Other,
}

/// The words of `text`. String literals are not skipped: SQL sent through dblink is a string
/// literal in the function's body, and the tables it writes are exactly the ones to watch.
fn words(text: &str) -> Vec<Word<'_>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric()
                    || bytes[i] == b'_'
                    || bytes[i] == b'$'
                    || bytes[i] >= 0x80)
            {
                i += 1;
            }
            out.push(Word::Plain(&text[start..i]));
        } else if c == b'"' {
            let start = i;
            i += 1;
            loop {
                match bytes.get(i) {
                    None => break,
                    Some(b'"') if bytes.get(i + 1) == Some(&b'"') => i += 2,
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(_) => i += 1,
                }
            }
            out.push(Word::Quoted(&text[start..i]));
        } else if c == b'.' {
            out.push(Word::Dot);
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else {
            out.push(Word::Other);
            i += 1;
        }
    }
    out
}

/// Words that follow UPDATE without naming a table (`FOR UPDATE OF`, `DO UPDATE SET`,
/// `TG_OP = 'UPDATE' THEN`, `BEFORE UPDATE ON`, ...).
const NOT_A_TABLE: &[&str] = &[
    "set", "of", "then", "on", "or", "skip", "nowait", "else", "end", "when", "and", "is", "only",
    "from", "to", "as", "in",
];

/// The name starting at `words[i]`, as written: `table` or `schema.table` (of
/// `database.schema.table`, the last two: regclass input refuses a database's name before 16,
/// where another one's is an error rather than NULL).
fn name_at(words: &[Word<'_>], mut i: usize) -> Option<String> {
    let mut parts = Vec::new();
    loop {
        match words.get(i)? {
            Word::Plain(w)
                if parts.is_empty() && NOT_A_TABLE.contains(&w.to_lowercase().as_str()) =>
            {
                return None;
            }
            Word::Plain(w) => parts.push(*w),
            // An empty or unterminated quoted name is no name (regclass input would refuse it).
            Word::Quoted(w) if w.len() > 2 && w.ends_with('"') => parts.push(*w),
            _ => return None,
        }
        if parts.len() < 3 && words.get(i + 1) == Some(&Word::Dot) {
            i += 2;
        } else {
            let from = parts.len().saturating_sub(2);
            return Some(parts[from..].join("."));
        }
    }
}

/// The tables `text` (a statement, or a function's body) writes, as written: the targets of
/// `INSERT INTO`, `UPDATE [ONLY]`, `DELETE FROM [ONLY]` and `MERGE INTO [ONLY]`, wherever they
/// appear (a WITH's statement, a PL/pgSQL body, a string sent through dblink). A word that
/// merely looks like a target is harmless: a name that resolves to no table is not watched.
pub fn written_tables(text: &str) -> Vec<String> {
    let words = words(text);
    let is = |i: usize, keyword: &str| matches!(words.get(i), Some(Word::Plain(w)) if w.eq_ignore_ascii_case(keyword));
    let mut out: Vec<String> = Vec::new();
    for i in 0..words.len() {
        let into = (is(i, "insert") || is(i, "merge")) && is(i + 1, "into");
        let from = is(i, "delete") && is(i + 1, "from");
        let mut at = if into || from {
            i + 2
        } else if is(i, "update")
            && !(i > 0 && (is(i - 1, "for") || is(i - 1, "do") || is(i - 1, "key")))
        {
            i + 1
        } else {
            continue;
        };
        if is(at, "only") {
            at += 1;
        }
        if let Some(name) = name_at(&words, at)
            && !out.contains(&name)
        {
            out.push(name);
        }
    }
    out
}

/// The tables to watch for `triggers`: each triggering table (a trigger that writes the row
/// it fired on through another connection commits there too) and every table its function's
/// source writes.
pub fn watch_list(triggers: &[Trigger]) -> Vec<Watched> {
    let mut out: Vec<Watched> = Vec::new();
    let mut add = |name: String, why: String| match out.iter_mut().find(|w| w.name == name) {
        Some(w) if !w.why.contains(&why) => w.why.push(why),
        Some(_) => {}
        None => out.push(Watched {
            name,
            why: vec![why],
        }),
    };
    for t in triggers {
        add(
            t.table.clone(),
            format!("it has trigger {}", printable(&t.name)),
        );
        for target in written_tables(&t.source) {
            add(
                target,
                format!(
                    "trigger {} on {} writes to it in {}",
                    printable(&t.name),
                    printable(&t.table),
                    printable(&t.function)
                ),
            );
        }
    }
    out
}

/// Whether any watched table's counters moved between `before` and `after` (an ANALYZE
/// counts: it may hide rows): the reader stops waiting for late counters then.
pub fn moved(before: &[RowCounter], after: &[RowCounter]) -> bool {
    after.iter().any(|a| {
        before.iter().any(|b| {
            b.table == a.table && (b.changed_rows, b.analyzes) != (a.changed_rows, a.analyzes)
        })
    })
}

/// Why the table the catalog names `table` is watched: the reasons of every watched name the
/// counters resolved to it.
fn reasons(table: &str, watched: &[Watched], counters: &[RowCounter]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in counters.iter().filter(|c| c.table == table) {
        for w in watched.iter().filter(|w| w.name == c.name) {
            for why in &w.why {
                if !out.contains(why) {
                    out.push(why.clone());
                }
            }
        }
    }
    out
}

/// The notes for the watched tables' rows committed between `before` and `after`: each table
/// that grew is possibly left behind (a note starting with [`PREFIX`]); one an ANALYZE reset
/// during the run is said to be unproved.
pub fn row_notes(watched: &[Watched], before: &[RowCounter], after: &[RowCounter]) -> Vec<String> {
    let mut notes = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for a in after {
        // Two names may resolve to one table: it is one note.
        if seen.contains(&a.table.as_str()) {
            continue;
        }
        seen.push(&a.table);
        // A table made during the run has no "before"; none of pgplan's runs commits one.
        let Some(b) = before.iter().find(|b| b.table == a.table) else {
            continue;
        };
        let table = printable(&a.table);
        let reasons = reasons(&a.table, watched, after).join("; ");
        if a.analyzes != b.analyzes {
            // An ANALYZE resets the counter, and counts still on their way from another backend
            // (sent or flushed up to a second late) may land after the reset: what it holds now
            // is no measure of the run, either way.
            notes.push(format!(
                "rows of {table} ({reasons}) could not be counted: an ANALYZE ran on it during \
                 the run (pgplan's --analyze, or autovacuum) and reset n_mod_since_analyze (now \
                 {}), so rows a trigger committed outside the rollback may not show; look at \
                 the table's newest rows",
                a.changed_rows
            ));
            continue;
        }
        let grew = a.changed_rows - b.changed_rows;
        if grew > 0 {
            notes.push(format!(
                "{PREFIX}rows of {table} ({reasons}): {grew} row(s) were inserted, updated or \
                 deleted by committed transactions while pgplan ran (n_mod_since_analyze {} → \
                 {}); pgplan's own runs are rolled back and never count there, but a trigger \
                 that writes through dblink or another connection commits on its own (a \
                 concurrent writer to the table shows the same); look at the table's newest \
                 rows and delete those pgplan's runs made",
                b.changed_rows, a.changed_rows
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_targets_of_every_kind_of_write_are_found_as_written() {
        let body = r#"
            BEGIN
              IF TG_OP = 'UPDATE' THEN
                INSERT INTO audit.log (id) VALUES (NEW.id);
              END IF;
              UPDATE ONLY "Counts" SET n = n + 1;
              delete from public.old_rows WHERE id = OLD.id;
              PERFORM dblink_exec('dbname=app', 'insert into remote_log values (1)');
              MERGE INTO m USING s ON true WHEN MATCHED THEN UPDATE SET x = 1;
              SELECT 1 FROM t FOR UPDATE OF t;
              INSERT INTO c VALUES (1) ON CONFLICT (id) DO UPDATE SET v = 2;
              INSERT INTO audit.log (id) VALUES (2);
              RETURN NULL;
            END"#;
        assert_eq!(
            written_tables(body),
            [
                "audit.log",
                "\"Counts\"",
                "public.old_rows",
                "remote_log",
                "m",
                "c"
            ]
        );
        assert_eq!(
            written_tables("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d"),
            ["t"]
        );
        assert!(written_tables("SELECT * FROM t WHERE v = 1").is_empty());
        assert!(written_tables("count_call").is_empty());
        assert_eq!(
            written_tables("INSERT INTO app.public.t VALUES (1)"),
            ["public.t"]
        );
        assert!(written_tables("INSERT INTO \"\" VALUES (1); DELETE FROM \"open").is_empty());
    }

    #[test]
    fn each_triggering_table_and_what_its_functions_write_are_watched() {
        let triggers = [
            Trigger {
                table: "public.t".into(),
                name: "log_changes".into(),
                function: "public.log_it()".into(),
                source: "BEGIN INSERT INTO log VALUES (1); RETURN NULL; END".into(),
            },
            Trigger {
                table: "public.t".into(),
                name: "again".into(),
                function: "public.log_it()".into(),
                source: "BEGIN INSERT INTO log VALUES (1); RETURN NULL; END".into(),
            },
        ];
        let list = watch_list(&triggers);
        assert_eq!(list.len(), 2, "{list:?}");
        assert_eq!(list[0].name, "public.t");
        assert_eq!(
            list[0].why,
            ["it has trigger log_changes", "it has trigger again"]
        );
        assert_eq!(list[1].name, "log");
        assert_eq!(
            list[1].why[0],
            "trigger log_changes on public.t writes to it in public.log_it()"
        );
    }

    fn counter(table: &str, changed_rows: i64, analyzes: i64) -> RowCounter {
        RowCounter {
            name: table.into(),
            table: table.into(),
            changed_rows,
            analyzes,
        }
    }

    fn watched(names: &[&str]) -> Vec<Watched> {
        names
            .iter()
            .map(|n| Watched {
                name: (*n).into(),
                why: vec!["trigger log_changes on public.t writes to it".into()],
            })
            .collect()
    }

    #[test]
    fn committed_rows_are_left_behind_and_an_analyze_is_said() {
        let watched = watched(&["public.log", "public.t", "public.other"]);
        let before = [
            counter("public.log", 3, 1),
            counter("public.t", 0, 1),
            counter("public.other", 5, 1),
        ];
        let after = [
            counter("public.log", 15, 1),
            counter("public.t", 0, 1),
            counter("public.other", 0, 2),
        ];
        assert!(moved(&before, &after));
        let notes = row_notes(&watched, &before, &after);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].starts_with(
                "left behind: rows of public.log (trigger log_changes on public.t writes to \
                 it): 12 row(s) were inserted, updated or deleted by committed transactions"
            ),
            "{}",
            notes[0]
        );
        assert!(
            notes[0].contains("n_mod_since_analyze 3 → 15"),
            "{}",
            notes[0]
        );
        assert!(
            notes[1].starts_with("rows of public.other (")
                && notes[1].contains("could not be counted"),
            "{}",
            notes[1]
        );
        // After an ANALYZE, the counter proves nothing either way.
        let notes = row_notes(&watched, &before, &[counter("public.other", 4, 2)]);
        assert!(
            !notes[0].starts_with(PREFIX) && notes[0].contains("(now 4)"),
            "{notes:?}"
        );
        assert!(row_notes(&watched, &before, &before).is_empty());
        assert!(!moved(&before, &before));
    }

    #[test]
    fn two_names_of_one_table_are_one_note_with_both_reasons() {
        let watched = vec![
            Watched {
                name: "public.log".into(),
                why: vec!["it has trigger a".into()],
            },
            Watched {
                name: "log".into(),
                why: vec!["trigger b on public.t writes to it in public.f()".into()],
            },
        ];
        let read = |changed_rows| {
            ["public.log", "log"].map(|name| RowCounter {
                name: name.into(),
                table: "public.log".into(),
                changed_rows,
                analyzes: 0,
            })
        };
        let notes = row_notes(&watched, &read(0), &read(2));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0]
                .contains("(it has trigger a; trigger b on public.t writes to it in public.f())"),
            "{}",
            notes[0]
        );
    }

    #[test]
    fn a_hostile_table_name_is_escaped() {
        let name = "public.\"l\u{1b}[2J\"";
        let notes = row_notes(
            &watched(&[name]),
            &[counter(name, 0, 0)],
            &[counter(name, 1, 0)],
        );
        assert!(!notes[0].contains('\u{1b}'), "{}", notes[0]);
    }
}
