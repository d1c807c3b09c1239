//! The last layer between every report and its reader: whatever a renderer writes passes through
//! [`Guarded`], which escapes every control character but the line break, so no report (a new
//! one included) can let a catalog name or a query text move the cursor, retitle the terminal
//! or ring its bell.
//!
//! PostgreSQL lets a quoted identifier hold any character but NUL (`CREATE TABLE "a<ESC>]0;x"`),
//! and a query text or a comment holds what its author typed. Renderers escape the names they
//! print ([`crate::format::printable`]) so that a newline in a name cannot break a line either;
//! this layer is what holds when one of them forgets.

use std::io::{self, Write};

/// A writer that writes control characters escaped (`\u001b`, `\t`, `\r`), except the newline
/// every renderer ends its lines with. The escapes are JSON's own: in a JSON report the only raw
/// control characters are DEL and C1 inside strings (serde_json escapes C0 itself and writes
/// the rest as they are), and `\u007f` there is still valid JSON that reads back the same string.
/// With colour on, the Select Graphic Rendition sequences the renderers colour with
/// (`ESC [ 1;31 m`) pass as they are; any other escape sequence is escaped.
pub struct Guarded<W: Write> {
    inner: W,
    color: bool,
    /// The end of the last write when it may be the start of something the next write completes
    /// (a C1 character's first byte, an SGR sequence cut in two).
    carry: Vec<u8>,
}

/// Longest SGR sequence passed as one: `ESC [ 38;2;255;255;255;48;2;255;255;255 m` is 38 bytes.
const SGR_LIMIT_BYTES: usize = 64;

impl<W: Write> Guarded<W> {
    pub fn new(inner: W, color: bool) -> Self {
        Self {
            inner,
            color,
            carry: Vec::new(),
        }
    }

    /// Writes `bytes`, escaped; what may continue in the next write stays in `carry` unless
    /// `last`.
    fn pass(&mut self, bytes: &[u8], last: bool) -> io::Result<()> {
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if !suspect(b) {
                i += 1;
                continue;
            }
            let taken = match self.classify(&bytes[i..], last) {
                Some(taken) => taken,
                None => {
                    // Incomplete: kept for the next write.
                    self.inner.write_all(&bytes[start..i])?;
                    self.carry.extend_from_slice(&bytes[i..]);
                    return Ok(());
                }
            };
            match taken {
                Piece::Plain(n) => i += n,
                Piece::Control(n, c) => {
                    self.inner.write_all(&bytes[start..i])?;
                    write_escaped(&mut self.inner, c)?;
                    i += n;
                    start = i;
                }
            }
        }
        self.inner.write_all(&bytes[start..])
    }

    /// What the bytes at the start of `rest` (a suspect byte first) are, or `None` when the
    /// next write may change the answer.
    fn classify(&self, rest: &[u8], last: bool) -> Option<Piece> {
        match rest[0] {
            0xc2 => match rest.get(1) {
                Some(0x80..=0x9f) => Some(Piece::Control(2, char::from(rest[1]))),
                Some(_) => Some(Piece::Plain(1)),
                None if last => Some(Piece::Plain(1)),
                None => None,
            },
            0x1b if self.color => match sgr_length(rest) {
                Sgr::Complete(n) => Some(Piece::Plain(n)),
                Sgr::Incomplete if !last => None,
                _ => Some(Piece::Control(1, '\u{1b}')),
            },
            b => Some(Piece::Control(1, char::from(b))),
        }
    }
}

/// `c` as an escape that reads the same in text and is valid inside a JSON string.
fn write_escaped(out: &mut impl Write, c: char) -> io::Result<()> {
    match c {
        '\t' => out.write_all(b"\\t"),
        '\r' => out.write_all(b"\\r"),
        _ => write!(out, "\\u{:04x}", u32::from(c)),
    }
}

enum Piece {
    /// Bytes passed as they are.
    Plain(usize),
    /// Bytes that are one control character, written escaped.
    Control(usize, char),
}

enum Sgr {
    Complete(usize),
    Incomplete,
    Not,
}

/// `ESC [ (digits ; :)* m` at the start of `bytes`.
fn sgr_length(bytes: &[u8]) -> Sgr {
    for (i, b) in bytes.iter().enumerate().skip(1) {
        match (i, b) {
            (1, b'[') => {}
            (1, _) => return Sgr::Not,
            (_, b'm') => return Sgr::Complete(i + 1),
            (_, b'0'..=b'9' | b';' | b':') if i < SGR_LIMIT_BYTES => {}
            _ => return Sgr::Not,
        }
    }
    Sgr::Incomplete
}

/// A byte that starts a control character: C0 but the newline, DEL, or the lead byte of a C1
/// character in UTF-8 (U+0080..U+009F are `C2 80`..`C2 9F`).
fn suspect(b: u8) -> bool {
    (b < 0x20 && b != b'\n') || b == 0x7f || b == 0xc2
}

impl<W: Write> Write for Guarded<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.carry.is_empty() {
            // The common case, a line of plain text, is passed in one call.
            match buf.iter().position(|b| suspect(*b)) {
                None => self.inner.write_all(buf)?,
                Some(_) => self.pass(buf, false)?,
            }
        } else {
            let mut joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(buf);
            self.pass(&joined, false)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.carry.is_empty() {
            let rest = std::mem::take(&mut self.carry);
            self.pass(&rest, true)?;
        }
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::Guarded;

    fn guarded(color: bool, pieces: &[&[u8]]) -> String {
        let mut out = Guarded::new(Vec::new(), color);
        for piece in pieces {
            out.write_all(piece).unwrap();
        }
        out.flush().unwrap();
        String::from_utf8(out.inner).unwrap()
    }

    #[test]
    fn control_characters_are_escaped_and_lines_kept() {
        assert_eq!(
            guarded(false, &[b"a\x1b]0;x\x07b\tc\r\nd\x7f\n"]),
            "a\\u001b]0;x\\u0007b\\tc\\r\nd\\u007f\n"
        );
        assert_eq!(guarded(false, &["plain é ü\n".as_bytes()]), "plain é ü\n");
    }

    #[test]
    fn c1_characters_are_escaped_even_when_split_between_writes() {
        assert_eq!(guarded(false, &["x\u{9b}31m".as_bytes()]), "x\\u009b31m");
        assert_eq!(guarded(false, &[b"x\xc2", b"\x9by"]), "x\\u009by");
        // U+00E9 (C3 A9) and U+00A0 (C2 A0) are not controls.
        assert_eq!(guarded(false, &[b"\xc2", b"\xa0\xc3\xa9"]), "\u{a0}é");
    }

    #[test]
    fn json_stays_valid_and_reads_back_the_same_strings() {
        let name = "idx\u{7f}\u{85}\u{1b}<script>";
        let json = serde_json::to_string(&serde_json::json!({ "name": name })).unwrap();
        let out = guarded(false, &[json.as_bytes()]);
        assert!(!out.chars().any(char::is_control), "{out:?}");
        let back: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back["name"], name);
    }

    #[test]
    fn colour_passes_only_sgr_and_only_when_on() {
        let red = b"\x1b[1;31mred\x1b[0m\n";
        assert_eq!(guarded(true, &[red]), "\u{1b}[1;31mred\u{1b}[0m\n");
        assert_eq!(guarded(false, &[red]), "\\u001b[1;31mred\\u001b[0m\n");
        // Split across writes, still one sequence.
        assert_eq!(guarded(true, &[b"\x1b[3", b"1mx"]), "\u{1b}[31mx");
        // Cursor movement, a title, and a sequence never finished are escaped.
        assert_eq!(
            guarded(true, &[b"\x1b[2J\x1b]0;t\x07"]),
            "\\u001b[2J\\u001b]0;t\\u0007"
        );
        assert_eq!(guarded(true, &[b"x\x1b[31"]), "x\\u001b[31");
    }
}
