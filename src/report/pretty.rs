//! The layout of pgplan's JSON: serde_json's pretty printing (two spaces a level), with each
//! line's indentation written at once.
//!
//! serde_json's own pretty formatter writes a line's indentation one level at a time, one write
//! per level: a node a hundred levels down a plan costs a hundred writes on every line of it,
//! and the JSON report of a deep plan is mostly such lines. The output is byte for byte the same.

use std::io::{self, Write};

use serde_json::ser::Formatter;

#[derive(Default)]
pub struct Indented {
    level: usize,
    has_value: bool,
    /// ",\n" and then two spaces for each level reached so far: each line's start is a slice.
    line_start: Vec<u8>,
}

impl Indented {
    /// `",\n"` (`"\n"` for the first) and the current level's indentation.
    fn new_line<W: ?Sized + Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        let end = 2 + 2 * self.level;
        if self.line_start.len() < end {
            if self.line_start.is_empty() {
                self.line_start.extend_from_slice(b",\n");
            }
            self.line_start.resize(end, b' ');
        }
        writer.write_all(&self.line_start[usize::from(first)..end])
    }

    fn begin<W: ?Sized + Write>(&mut self, writer: &mut W, open: &[u8]) -> io::Result<()> {
        self.level += 1;
        self.has_value = false;
        writer.write_all(open)
    }

    fn end<W: ?Sized + Write>(&mut self, writer: &mut W, close: &[u8]) -> io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.new_line(writer, true)?;
        }
        writer.write_all(close)
    }
}

impl Formatter for Indented {
    /// -0.0 as 0.0: a sum over nothing, or a difference of equal figures negated, is -0.0 in
    /// IEEE arithmetic, and "-0.0" in a report reads as a loss that did not happen.
    fn write_f64<W: ?Sized + Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        let value = if value == 0.0 { 0.0 } else { value };
        serde_json::ser::CompactFormatter.write_f64(writer, value)
    }

    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.begin(writer, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.end(writer, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.new_line(writer, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.begin(writer, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.end(writer, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.new_line(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    fn both<T: Serialize>(value: &T) -> (String, String) {
        let mut ours = Vec::new();
        let mut serializer = serde_json::Serializer::with_formatter(&mut ours, Indented::default());
        value.serialize(&mut serializer).unwrap();
        let theirs = serde_json::to_string_pretty(value).unwrap();
        (String::from_utf8(ours).unwrap(), theirs)
    }

    #[test]
    fn negative_zero_is_written_as_zero() {
        let (ours, theirs) = both(&[-0.0_f64, 0.0, -1.5, 2.25e-7, 1e300]);
        assert_eq!(ours, theirs.replace("-0.0", "0.0"));
        assert!(!ours.contains("-0.0"), "{ours}");
    }

    #[test]
    fn lays_out_json_as_serde_json_pretty_prints_it() {
        let value = serde_json::json!([
            {"Plan": {"Node Type": "Seq Scan", "Plans": [{"a": [], "b": {}, "c": [[1, [2]], {"d": null}]}]}},
            [], {}, "s", 1.5, true
        ]);
        let (ours, theirs) = both(&value);
        assert_eq!(ours, theirs);
        let mut deep = serde_json::json!(1);
        for level in 0..300 {
            deep = if level % 2 == 0 {
                serde_json::json!({ "k": deep, "n": level })
            } else {
                serde_json::json!([deep, level])
            };
        }
        let (ours, theirs) = both(&deep);
        assert_eq!(ours, theirs);
        assert_eq!(both(&Vec::<u8>::new()), ("[]".into(), "[]".into()));
    }
}
