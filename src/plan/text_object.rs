//! The object the TEXT reader builds in the shape of EXPLAIN's JSON, and the serde
//! `Deserializer` over it that lets the JSON reader's own seeds and checks read it.
//!
//! It stands in for a `serde_json::Value` tree: that allocated a `String` for every key and
//! hashed every key into an ordered map (serde_json's `preserve_order`), and most of the TEXT
//! reader's time went there. Here keys and most strings are borrowed from the input or static,
//! and an object is a `Vec` of its entries in order: EXPLAIN's objects hold a few dozen keys,
//! so a scan over a four-byte brief of each finds a key sooner than hashing it would.

use std::borrow::Cow;
use std::vec;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};
use serde_json::{Error, Map, Number, Value};

/// One JSON value, as serde_json's `Value` would hold it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Val<'a> {
    Null,
    Bool(bool),
    /// An integer ≥ 0 (serde_json's `PosInt`).
    U64(u64),
    /// A negative integer (serde_json's `NegInt`).
    I64(i64),
    /// A finite float.
    F64(f64),
    Str(Cow<'a, str>),
    Array(Vec<Val<'a>>),
    Object(Obj<'a>),
}

impl<'a> Val<'a> {
    pub(super) fn str(text: impl Into<Cow<'a, str>>) -> Val<'a> {
        Val::Str(text.into())
    }

    /// An integer, of the kind serde_json's `Number::from(i64)` gives.
    pub(super) fn int(n: i64) -> Val<'a> {
        match u64::try_from(n) {
            Ok(n) => Val::U64(n),
            Err(_) => Val::I64(n),
        }
    }

    /// A float, or null when it is not finite (as `serde_json::Number::from_f64` has it).
    pub(super) fn float(v: f64) -> Val<'a> {
        if v.is_finite() {
            Val::F64(v)
        } else {
            Val::Null
        }
    }

    pub(super) fn as_str(&self) -> Option<&str> {
        match self {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }

    pub(super) fn as_u64(&self) -> Option<u64> {
        match self {
            Val::U64(n) => Some(*n),
            _ => None,
        }
    }

    pub(super) fn as_object_mut(&mut self) -> Option<&mut Obj<'a>> {
        match self {
            Val::Object(o) => Some(o),
            _ => None,
        }
    }

    /// The same value holding its own strings, free of the text it was read from.
    pub(super) fn into_owned(self) -> Val<'static> {
        match self {
            Val::Null => Val::Null,
            Val::Bool(b) => Val::Bool(b),
            Val::U64(n) => Val::U64(n),
            Val::I64(n) => Val::I64(n),
            Val::F64(v) => Val::F64(v),
            Val::Str(s) => Val::Str(Cow::Owned(s.into_owned())),
            Val::Array(items) => Val::Array(items.into_iter().map(Val::into_owned).collect()),
            Val::Object(obj) => Val::Object(obj.into_owned()),
        }
    }

    /// What serde's errors call this value (as serde_json's `Value::unexpected`).
    fn unexpected(&self) -> Unexpected<'_> {
        match self {
            Val::Null => Unexpected::Unit,
            Val::Bool(b) => Unexpected::Bool(*b),
            Val::U64(n) => Unexpected::Unsigned(*n),
            Val::I64(n) => Unexpected::Signed(*n),
            Val::F64(n) => Unexpected::Float(*n),
            Val::Str(s) => Unexpected::Str(s),
            Val::Array(_) => Unexpected::Seq,
            Val::Object(_) => Unexpected::Map,
        }
    }

    fn invalid_type<E: de::Error>(&self, expected: &dyn de::Expected) -> E {
        E::invalid_type(self.unexpected(), expected)
    }
}

/// A string value against a string, as serde_json's `Value` compares them.
impl PartialEq<&str> for Val<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}

/// The same value as a `serde_json::Value`, for the readers that build those (YAML, XML).
impl From<Val<'_>> for Value {
    fn from(value: Val<'_>) -> Value {
        match value {
            Val::Null => Value::Null,
            Val::Bool(b) => Value::Bool(b),
            Val::U64(n) => Value::Number(n.into()),
            Val::I64(n) => Value::Number(n.into()),
            Val::F64(v) => Number::from_f64(v).map_or(Value::Null, Value::Number),
            Val::Str(s) => Value::String(s.into_owned()),
            Val::Array(items) => Value::Array(items.into_iter().map(Value::from).collect()),
            Val::Object(obj) => Value::Object(
                obj.entries
                    .into_iter()
                    .map(|(k, v)| (k.into_owned(), Value::from(v)))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }
}

/// A JSON object: its keys in order, each once (inserting a key again replaces its value in
/// place, as serde_json's ordered `Map` does).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Obj<'a> {
    entries: Vec<(Cow<'a, str>, Val<'a>)>,
    /// Each entry's key in brief (see [`fingerprint`]), in the same order: a lookup, which
    /// usually finds no such key, compares these and reads a key itself only where they match.
    fingerprints: Vec<u32>,
}

/// A key's length, first, middle and last byte: read in constant time, and different for
/// almost every two keys EXPLAIN prints.
fn fingerprint(key: &str) -> u32 {
    match key.as_bytes() {
        [] => 0,
        b => u32::from_le_bytes([b.len() as u8, b[0], b[b.len() / 2], b[b.len() - 1]]),
    }
}

impl<'a> Obj<'a> {
    pub(super) fn new() -> Obj<'a> {
        Obj::default()
    }

    pub(super) fn with_capacity(capacity: usize) -> Obj<'a> {
        Obj {
            entries: Vec::with_capacity(capacity),
            fingerprints: Vec::with_capacity(capacity),
        }
    }

    fn position(&self, key: &str) -> Option<usize> {
        let wanted = fingerprint(key);
        self.fingerprints
            .iter()
            .enumerate()
            .find(|&(at, &f)| f == wanted && self.entries[at].0 == key)
            .map(|(at, _)| at)
    }

    fn push(&mut self, key: Cow<'a, str>, value: Val<'a>) {
        self.fingerprints.push(fingerprint(&key));
        self.entries.push((key, value));
    }

    pub(super) fn insert(&mut self, key: impl Into<Cow<'a, str>>, value: Val<'a>) {
        let key = key.into();
        match self.position(&key) {
            Some(at) => self.entries[at].1 = value,
            None => self.push(key, value),
        }
    }

    /// Inserts `key` with the value `make` gives unless it is there already.
    pub(super) fn insert_absent(
        &mut self,
        key: impl Into<Cow<'a, str>>,
        make: impl FnOnce() -> Val<'a>,
    ) {
        let key = key.into();
        if self.position(&key).is_none() {
            self.push(key, make());
        }
    }

    /// Inserts `key` at `index`, moving the entries from there one place on. `key` is not in the
    /// object yet.
    pub(super) fn insert_at(&mut self, index: usize, key: &'a str, value: Val<'a>) {
        debug_assert!(self.position(key).is_none());
        let index = index.min(self.entries.len());
        self.fingerprints.insert(index, fingerprint(key));
        self.entries.insert(index, (key.into(), value));
    }

    pub(super) fn get(&self, key: &str) -> Option<&Val<'a>> {
        self.position(key).map(|at| &self.entries[at].1)
    }

    pub(super) fn get_mut(&mut self, key: &str) -> Option<&mut Val<'a>> {
        self.position(key).map(|at| &mut self.entries[at].1)
    }

    pub(super) fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// Removes `key`, the last entry taking its place: serde_json's ordered `Map::remove` does
    /// the same, and the keys a node does not model keep the order they always had.
    pub(super) fn remove(&mut self, key: &str) -> Option<Val<'a>> {
        let at = self.position(key)?;
        self.fingerprints.swap_remove(at);
        Some(self.entries.swap_remove(at).1)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn extend(&mut self, other: Obj<'a>) {
        for (k, v) in other.entries {
            self.insert(k, v);
        }
    }

    /// The same object holding its own keys and strings.
    pub(super) fn into_owned(self) -> Obj<'static> {
        let entries = self.entries.into_iter();
        Obj {
            entries: entries
                .map(|(k, v)| (Cow::Owned(k.into_owned()), v.into_owned()))
                .collect(),
            fingerprints: self.fingerprints,
        }
    }
}

/// `object["key"]`, as on serde_json's `Map`: the key must be there.
impl<'a> std::ops::Index<&str> for Obj<'a> {
    type Output = Val<'a>;

    fn index(&self, key: &str) -> &Val<'a> {
        self.get(key).expect("no entry found for key")
    }
}

impl<'a> IntoIterator for Obj<'a> {
    type Item = (Cow<'a, str>, Val<'a>);
    type IntoIter = vec::IntoIter<(Cow<'a, str>, Val<'a>)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

/// Reads the value the way serde_json's `Deserializer for Value` does: the same visits, the same
/// errors for a value of the wrong type, so the JSON reader's checks say the same things.
impl<'de> Deserializer<'de> for Val<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Val::Null => visitor.visit_unit(),
            Val::Bool(b) => visitor.visit_bool(b),
            Val::U64(n) => visitor.visit_u64(n),
            Val::I64(n) => visitor.visit_i64(n),
            Val::F64(v) => visitor.visit_f64(v),
            Val::Str(Cow::Borrowed(s)) => visitor.visit_borrowed_str(s),
            Val::Str(Cow::Owned(s)) => visitor.visit_string(s),
            Val::Array(items) => visit_array(items, visitor),
            Val::Object(obj) => visit_object(obj, visitor),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Val::Bool(b) => visitor.visit_bool(b),
            other => Err(other.invalid_type(&visitor)),
        }
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.number(visitor)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.number(visitor)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.number(visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.number(visitor)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.number(visitor)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.number(visitor)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.number(visitor)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.number(visitor)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.number(visitor)
    }
    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.number(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }
    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Val::Str(_) => self.deserialize_any(visitor),
            other => Err(other.invalid_type(&visitor)),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_byte_buf(visitor)
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Val::Str(_) | Val::Array(_) => self.deserialize_any(visitor),
            other => Err(other.invalid_type(&visitor)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Val::Null => visitor.visit_none(),
            other => visitor.visit_some(other),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Val::Null => visitor.visit_unit(),
            other => Err(other.invalid_type(&visitor)),
        }
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Val::Array(items) => visit_array(items, visitor),
            other => Err(other.invalid_type(&visitor)),
        }
    }
    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Val::Object(obj) => visit_object(obj, visitor),
            other => Err(other.invalid_type(&visitor)),
        }
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self {
            Val::Array(items) => visit_array(items, visitor),
            Val::Object(obj) => visit_object(obj, visitor),
            other => Err(other.invalid_type(&visitor)),
        }
    }

    // No seed of the JSON reader reads an enum; a value read as one is read as what it holds.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        drop(self);
        visitor.visit_unit()
    }
}

impl<'de> Val<'de> {
    fn number<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Val::U64(_) | Val::I64(_) | Val::F64(_) => self.deserialize_any(visitor),
            other => Err(other.invalid_type(&visitor)),
        }
    }
}

fn visit_array<'de, V: Visitor<'de>>(items: Vec<Val<'de>>, visitor: V) -> Result<V::Value, Error> {
    let len = items.len();
    let mut seq = Items(items.into_iter());
    let value = visitor.visit_seq(&mut seq)?;
    if seq.0.len() == 0 {
        Ok(value)
    } else {
        Err(de::Error::invalid_length(len, &"fewer elements in array"))
    }
}

fn visit_object<'de, V: Visitor<'de>>(obj: Obj<'de>, visitor: V) -> Result<V::Value, Error> {
    let len = obj.entries.len();
    let mut map = Entries {
        entries: obj.entries.into_iter(),
        value: None,
    };
    let value = visitor.visit_map(&mut map)?;
    if map.entries.len() == 0 {
        Ok(value)
    } else {
        Err(de::Error::invalid_length(len, &"fewer elements in map"))
    }
}

struct Items<'de>(vec::IntoIter<Val<'de>>);

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0.next().map(|v| seed.deserialize(v)).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Entries<'de> {
    entries: vec::IntoIter<(Cow<'de, str>, Val<'de>)>,
    value: Option<Val<'de>>,
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        match key {
            Cow::Borrowed(k) => seed.deserialize(BorrowedStrDeserializer::new(k)),
            Cow::Owned(k) => seed.deserialize(StringDeserializer::new(k)),
        }
        .map(Some)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(value),
            None => Err(de::Error::custom("value is missing")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn keys_keep_the_order_serde_jsons_ordered_map_gives() {
        let mut obj = Obj::new();
        let mut map = Map::new();
        for (key, n) in [("a", 1), ("b", 2), ("c", 3), ("a", 4), ("d", 5)] {
            obj.insert(key, Val::U64(n));
            map.insert(key.to_owned(), Value::from(n));
        }
        obj.insert_absent("b", || Val::U64(9));
        obj.insert_absent("e", || Val::U64(6));
        map.entry("e").or_insert(Value::from(6));
        assert_eq!(obj.remove("b"), Some(Val::U64(2)));
        assert_eq!(map.remove("b"), Some(Value::from(2)));
        assert_eq!(obj.remove("zz"), None);
        obj.insert_at(1, "p", Val::Null);
        assert_eq!(obj.get("p"), Some(&Val::Null));
        map.shift_insert(1, "p".to_owned(), Value::Null);
        // serde_json's maps compare equal in any order: the keys are compared in order.
        let keys = |value: Value| match value {
            Value::Object(map) => map.into_iter().collect::<Vec<_>>(),
            _ => unreachable!(),
        };
        assert_eq!(
            keys(Value::from(Val::Object(obj))),
            keys(Value::Object(map))
        );
    }

    #[test]
    fn keys_alike_in_brief_are_still_told_apart() {
        // Same length, first, middle and last byte.
        let mut obj = Obj::new();
        obj.insert("Shared Written Blocks", Val::U64(1));
        obj.insert("Shared Dirtied Blocks", Val::U64(2));
        assert_eq!(obj["Shared Written Blocks"], Val::U64(1));
        assert_eq!(obj["Shared Dirtied Blocks"], Val::U64(2));
        assert!(!obj.contains_key("Shared Xritten Blocks"));
    }

    fn sample() -> Val<'static> {
        let mut inner = Obj::new();
        inner.insert("x", Val::F64(1.5));
        inner.insert(String::from("owned key"), Val::str(String::from("owned")));
        let mut obj = Obj::new();
        obj.insert("Node Type", Val::str("Seq Scan"));
        obj.insert("Parallel Aware", Val::Bool(false));
        obj.insert("Plan Rows", Val::U64(10));
        obj.insert("Offset", Val::int(-3));
        obj.insert("Flag", Val::Null);
        obj.insert("Output", Val::Array(vec![Val::str("a"), Val::str("b")]));
        obj.insert("Inner", Val::Object(inner));
        Val::Object(obj)
    }

    #[test]
    fn reads_as_serde_json_reads_the_same_value() {
        let read = Value::deserialize(sample()).unwrap();
        assert_eq!(read, Value::from(sample()));
        assert_eq!(read["Offset"], Value::from(-3));
        assert_eq!(Value::from(Val::int(3)), Value::from(3u64));
        assert_eq!(Value::from(Val::float(f64::NAN)), Value::Null);
    }

    /// The error reading `value` as a `T` gives, from this object and from serde_json's `Value`.
    fn errors<T: Deserialize<'static>>(value: Val<'static>) -> (String, String) {
        let theirs = T::deserialize(Value::from(value.clone())).err();
        let ours = T::deserialize(value).err();
        (ours.unwrap().to_string(), theirs.unwrap().to_string())
    }

    #[test]
    fn a_value_of_the_wrong_type_gets_serde_jsons_own_error() {
        let (ours, theirs) = errors::<f64>(Val::str("abc"));
        assert_eq!(ours, theirs);
        let (ours, theirs) = errors::<String>(Val::U64(1));
        assert_eq!(ours, theirs);
        let (ours, theirs) = errors::<bool>(Val::F64(0.5));
        assert_eq!(ours, theirs);
        let (ours, theirs) = errors::<Map<String, Value>>(Val::Array(vec![Val::U64(1)]));
        assert_eq!(ours, theirs);
    }
}
