//! The keys of a plan node that pgplan does not model (`Sort Key`, `Workers`, `Cache Hits`...),
//! held as the server sent them, in their order, in less memory than `serde_json::Value`.
//!
//! A `Value` object is an ordered hash map: its entries, an index over them and a `String` for
//! every key. A parallel plan's `Workers` are thousands of objects of twenty-odd keys each, and
//! held that way they were a fifth of a large plan's model. Here an object is a boxed slice of
//! its entries (EXPLAIN's objects are small: a scan finds a key as soon as hashing would), and
//! the keys EXPLAIN itself writes inside such objects are static strings, not allocations.
//! Written out, an `Extra` is exactly the JSON its `Value` would be.

use std::borrow::Cow;
use std::fmt;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Number, Value};

/// A key: one EXPLAIN writes (static) or any other (owned).
pub type Name = Cow<'static, str>;

/// One unmodelled JSON value.
#[derive(Debug, Clone, PartialEq)]
pub enum Extra {
    Null,
    Bool(bool),
    Number(Number),
    String(Box<str>),
    Array(Box<[Extra]>),
    Object(Extras),
}

/// An object's entries in their order, each key once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extras(Box<[(Name, Extra)]>);

static NULL: Extra = Extra::Null;

impl Extra {
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Extra::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Extra::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Extra]> {
        match self {
            Extra::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Extras> {
        match self {
            Extra::Object(entries) => Some(entries),
            _ => None,
        }
    }

    /// The value of `key` when this is an object that has it.
    pub fn get(&self, key: &str) -> Option<&Extra> {
        self.as_object()?.get(key)
    }
}

impl Extras {
    /// The entries in their order; a key given twice keeps its first place and its last value,
    /// as `serde_json::Map::insert` (and so `Value`) has it.
    pub fn from_entries(entries: Vec<(Name, Extra)>) -> Extras {
        // EXPLAIN's objects are small and never repeat a key: a scan of the keys before each
        // one is the cheapest check. An object of many keys (only hand-made input has them) is
        // checked through a hash set, so that no input makes the check quadratic.
        const SCANNED: usize = 32;
        let repeated = if entries.len() <= SCANNED {
            (1..entries.len()).any(|i| entries[..i].iter().any(|(k, _)| *k == entries[i].0))
        } else {
            let mut seen = foldhash::HashSet::with_capacity_and_hasher(
                entries.len(),
                foldhash::fast::RandomState::default(),
            );
            !entries.iter().all(|(k, _)| seen.insert(k.as_ref()))
        };
        if !repeated {
            return Extras(entries.into_boxed_slice());
        }
        let mut kept: Vec<(Name, Extra)> = Vec::with_capacity(entries.len());
        let mut places: foldhash::HashMap<String, usize> =
            foldhash::HashMap::with_capacity_and_hasher(
                entries.len(),
                foldhash::fast::RandomState::default(),
            );
        for (key, value) in entries {
            match places.get(key.as_ref()) {
                Some(&at) => kept[at].1 = value,
                None => {
                    places.insert(key.to_string(), kept.len());
                    kept.push((key, value));
                }
            }
        }
        Extras(kept.into_boxed_slice())
    }

    pub fn get(&self, key: &str) -> Option<&Extra> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Extra)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_ref())
    }

    pub fn values(&self) -> impl Iterator<Item = &Extra> {
        self.0.iter().map(|(_, v)| v)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// `extras["Sort Key"]`: the value, or null when the key is absent, as `Value` indexes.
impl std::ops::Index<&str> for Extras {
    type Output = Extra;
    fn index(&self, key: &str) -> &Extra {
        self.get(key).unwrap_or(&NULL)
    }
}

impl std::ops::Index<&str> for Extra {
    type Output = Extra;
    fn index(&self, key: &str) -> &Extra {
        self.get(key).unwrap_or(&NULL)
    }
}

impl std::ops::Index<usize> for Extra {
    type Output = Extra;
    fn index(&self, at: usize) -> &Extra {
        self.as_array().and_then(|a| a.get(at)).unwrap_or(&NULL)
    }
}

/// The key as a static string when it is one EXPLAIN writes: inside the objects it nests in a
/// node (a worker's figures, an Incremental Sort's group summaries, a JIT block), which repeat
/// in every such object, or as a node's own unmodelled key.
pub fn known_name(key: &str) -> Name {
    match KNOWN.binary_search_by(|k| by_length(k, key)) {
        Ok(at) => Cow::Borrowed(KNOWN[at]),
        Err(_) => Cow::Owned(key.to_owned()),
    }
}

/// Shorter first, then by bytes: most steps of the search are told apart by length alone.
fn by_length(a: &str, b: &str) -> std::cmp::Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// The keys [`known_name`] knows, in [`by_length`] order for its binary search (a unit test
/// checks the order).
const KNOWN: &[&str] = &[
    "JIT",
    "Total",
    "Timing",
    "Window",
    "Command",
    "Options",
    "Storage",
    "WAL FPI",
    "Workers",
    "Emission",
    "Hash Key",
    "Inlining",
    "Sort Key",
    "Cache Key",
    "Deforming",
    "Functions",
    "Group Key",
    "Hash Keys",
    "Sort Keys",
    "WAL Bytes",
    "Cache Hits",
    "Cache Mode",
    "Disk Usage",
    "Generation",
    "Group Keys",
    "Repeatable",
    "Actual Rows",
    "Expressions",
    "Group Count",
    "Single Copy",
    "Sort Method",
    "WAL Records",
    "Actual Loops",
    "Cache Misses",
    "Inner Unique",
    "Optimization",
    "Grouping Sets",
    "I/O Read Time",
    "Presorted Key",
    "Target Tables",
    "Worker Number",
    "I/O Write Time",
    "Tuples Deleted",
    "Tuples Skipped",
    "Tuples Updated",
    "Cache Evictions",
    "Cache Overflows",
    "HashAgg Batches",
    "Maximum Storage",
    "Sampling Method",
    "Sort Space Disk",
    "Sort Space Type",
    "Sort Space Used",
    "Tuples Inserted",
    "Full-sort Groups",
    "Local Hit Blocks",
    "Subplans Removed",
    "Temp Read Blocks",
    "Actual Total Time",
    "Local Read Blocks",
    "Peak Memory Usage",
    "Pre-sorted Groups",
    "Shared Hit Blocks",
    "Sort Methods Used",
    "Sort Space Memory",
    "Conflicting Tuples",
    "Planned Partitions",
    "Shared Read Blocks",
    "Temp I/O Read Time",
    "Actual Startup Time",
    "Conflict Resolution",
    "Local I/O Read Time",
    "Sampling Parameters",
    "Table Function Name",
    "Temp I/O Write Time",
    "Temp Written Blocks",
    "Local Dirtied Blocks",
    "Local I/O Write Time",
    "Local Written Blocks",
    "Peak Sort Space Used",
    "Shared I/O Read Time",
    "Shared Dirtied Blocks",
    "Shared I/O Write Time",
    "Shared Written Blocks",
    "Average Sort Space Used",
    "Conflict Arbiter Indexes",
];

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Extra::Null => s.serialize_unit(),
            Extra::Bool(b) => s.serialize_bool(*b),
            Extra::Number(n) => n.serialize(s),
            Extra::String(text) => s.serialize_str(text),
            Extra::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Extra::Object(entries) => entries.serialize(s),
        }
    }
}

impl Serialize for Extras {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k.as_ref(), v)?;
        }
        map.end()
    }
}

impl From<Extra> for Value {
    fn from(extra: Extra) -> Value {
        match extra {
            Extra::Null => Value::Null,
            Extra::Bool(b) => Value::Bool(b),
            Extra::Number(n) => Value::Number(n),
            Extra::String(s) => Value::String(s.into()),
            Extra::Array(items) => {
                Value::Array(items.into_vec().into_iter().map(Value::from).collect())
            }
            Extra::Object(entries) => Value::Object(entries.into()),
        }
    }
}

impl From<Extras> for Map<String, Value> {
    fn from(extras: Extras) -> Map<String, Value> {
        extras
            .0
            .into_vec()
            .into_iter()
            .map(|(k, v)| (k.into_owned(), Value::from(v)))
            .collect()
    }
}

impl From<&Extra> for Value {
    fn from(extra: &Extra) -> Value {
        Value::from(extra.clone())
    }
}

/// Compared as the `Value` it would be.
impl PartialEq<Value> for Extra {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Extra::Null, Value::Null) => true,
            (Extra::Bool(a), Value::Bool(b)) => a == b,
            (Extra::Number(a), Value::Number(b)) => a == b,
            (Extra::String(a), Value::String(b)) => **a == **b,
            (Extra::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
            }
            (Extra::Object(a), Value::Object(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| v == w))
            }
            _ => false,
        }
    }
}

/// `extra["Actual Rows"] == 3`, as a `Value` compares with a Rust number, boolean or string.
macro_rules! compared_as_value {
    ($($t:ty => $as:expr),*) => {$(
        impl PartialEq<$t> for Extra {
            fn eq(&self, other: &$t) -> bool {
                $as(self, other)
            }
        }
        impl PartialEq<$t> for &Extra {
            fn eq(&self, other: &$t) -> bool {
                $as(*self, other)
            }
        }
    )*};
}
compared_as_value!(
    i32 => |e: &Extra, o: &i32| number(e).and_then(Number::as_i64) == Some(i64::from(*o)),
    i64 => |e: &Extra, o: &i64| number(e).and_then(Number::as_i64) == Some(*o),
    u64 => |e: &Extra, o: &u64| number(e).and_then(Number::as_u64) == Some(*o),
    f64 => |e: &Extra, o: &f64| e.as_f64() == Some(*o),
    bool => |e: &Extra, o: &bool| matches!(e, Extra::Bool(b) if b == o),
    &str => |e: &Extra, o: &&str| e.as_str() == Some(*o)
);

fn number(extra: &Extra) -> Option<&Number> {
    match extra {
        Extra::Number(n) => Some(n),
        _ => None,
    }
}

impl fmt::Display for Extra {
    /// Compact JSON, as `Value`'s `Display` writes it.
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(entries: &[(&str, Extra)]) -> Extras {
        Extras::from_entries(
            entries
                .iter()
                .map(|(k, v)| (known_name(k), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn written_and_compared_as_the_value_it_stands_for() {
        let worker = object(&[
            ("Worker Number", Extra::Number(0.into())),
            ("Odd Key", Extra::String("x\"y".into())),
            (
                "Flags",
                Extra::Array(vec![Extra::Bool(true), Extra::Null].into()),
            ),
        ]);
        let extra = Extra::Array(vec![Extra::Object(worker)].into());
        let value = json!([{"Worker Number": 0, "Odd Key": "x\"y", "Flags": [true, null]}]);
        assert_eq!(serde_json::to_string(&extra).unwrap(), value.to_string());
        assert_eq!(
            serde_json::to_string_pretty(&extra).unwrap(),
            serde_json::to_string_pretty(&value).unwrap()
        );
        assert_eq!(extra, value);
        assert_eq!(Value::from(extra.clone()), value);
        assert_eq!(extra[0]["Worker Number"], json!(0));
        assert_eq!(extra[0]["Missing"], Value::Null);
        assert_eq!(extra.to_string(), value.to_string());
    }

    #[test]
    fn a_repeated_key_keeps_its_first_place_and_its_last_value() {
        let extras = object(&[
            ("a", Extra::Number(1.into())),
            ("b", Extra::Number(2.into())),
            ("a", Extra::Number(3.into())),
        ]);
        let mut map = Map::new();
        map.insert("a".into(), json!(1));
        map.insert("b".into(), json!(2));
        map.insert("a".into(), json!(3));
        assert_eq!(Map::from(extras.clone()), map);
        assert_eq!(extras.keys().collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn many_keys_are_checked_in_linear_time_with_the_same_rule() {
        // 200,000 distinct keys and then each again: a scan of the keys before each one would
        // take 10^10 steps.
        let n = 200_000;
        let entries: Vec<(Name, Extra)> = (0..2 * n)
            .map(|i| (Cow::Owned(format!("k{}", i % n)), Extra::Number(i.into())))
            .collect();
        let extras = Extras::from_entries(entries);
        assert_eq!(extras.len(), n);
        assert_eq!(extras["k0"], n as u64);
        assert_eq!(extras.keys().nth(7), Some("k7"));
        let distinct: Vec<(Name, Extra)> = (0..n)
            .map(|i| (Cow::Owned(format!("k{i}")), Extra::Null))
            .collect();
        assert_eq!(Extras::from_entries(distinct).len(), n);
    }

    #[test]
    fn keys_explain_writes_are_not_allocated() {
        assert!(matches!(known_name("Worker Number"), Cow::Borrowed(_)));
        assert!(matches!(known_name("Some Future Key"), Cow::Owned(_)));
        assert!(
            KNOWN.windows(2).all(|w| by_length(w[0], w[1]).is_lt()),
            "KNOWN is sorted"
        );
        assert!(
            KNOWN
                .iter()
                .all(|k| matches!(known_name(k), Cow::Borrowed(_)))
        );
    }
}
