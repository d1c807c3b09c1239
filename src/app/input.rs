//! Reading the files a command is given (a query, candidates, saved plans), or standard input
//! for `-`: bounded in size, UTF-8, a leading byte order mark skipped.

use std::io::{BufRead, Read};

use anyhow::{Context, Result};

/// The largest query or candidate file pgplan reads. PostgreSQL takes bigger statements, but no
/// query worth measuring is this long; a larger file is almost surely the wrong file.
pub const QUERY_LIMIT_BYTES: u64 = 64 * 1024 * 1024;

/// The largest plan pgplan reads: PostgreSQL cannot send a `json` value above 1 GB (its limit
/// for any field, `MaxAllocSize`), so no EXPLAIN it printed is larger.
pub const PLAN_LIMIT_BYTES: u64 = 1024 * 1024 * 1024;

/// Reads `arg` (a path, or `-` for standard input) as text of at most `limit` bytes. `what`
/// names it in errors ("the query", "the plan"). Returns the name to show for it and the text.
pub fn read_text(arg: &str, what: &str, limit: u64) -> Result<(String, String)> {
    let (name, bytes) = if arg == "-" {
        let bytes = read_bounded(std::io::stdin().lock(), limit)
            .with_context(|| format!("reading {what} from standard input"))?;
        ("standard input".to_owned(), bytes)
    } else {
        let file = std::fs::File::open(arg).with_context(|| format!("reading {arg}"))?;
        // A regular file's size says it is too large before a byte is read: refused at once,
        // not after reading up to the limit (1 GiB resident for a plan). A file that grows while
        // it is read is still stopped at the limit by the bounded read.
        if file
            .metadata()
            .is_ok_and(|m| m.is_file() && m.len() > limit)
        {
            return Err(too_large(arg, what, limit));
        }
        // Room for the whole file at once (a plan can be hundreds of megabytes): growing the
        // buffer by doubling would leave up to half of it allocated for nothing.
        let size = file.metadata().map_or(0, |m| m.len()).min(limit);
        let bytes = read_bounded_sized(file, limit, size as usize)
            .with_context(|| format!("reading {arg}"))?;
        (arg.to_owned(), bytes)
    };
    let Some(bytes) = bytes else {
        return Err(too_large(&name, what, limit));
    };
    Ok((name.clone(), text_of(&name, bytes)?))
}

fn too_large(name: &str, what: &str, limit: u64) -> anyhow::Error {
    anyhow::anyhow!(
        "{name}: {what} is larger than {}, more than pgplan reads{}",
        limit_text(limit),
        if limit == PLAN_LIMIT_BYTES {
            " (PostgreSQL cannot send a plan this large: is it the right file?)"
        } else {
            "; is it the right file?"
        }
    )
}

/// The plan file `arg` read without the white space between JSON's tokens, when it looks like
/// JSON as the server sent it (its first character after a byte order mark and white space opens
/// an array or an object). EXPLAIN indents its JSON two spaces a level, so most of a large
/// plan's bytes are indentation: held whole, the text of a deep plan was as large as the plan
/// read from it; compacted as it is read, it is a quarter to a third of that, and reads faster.
/// `None` for standard input, a file over [`PLAN_LIMIT_BYTES`] and anything else, which
/// [`read_text`] reads whole (and whose errors then point into the text as the user has it).
pub fn compact_json_file(arg: &str) -> Option<String> {
    if arg == "-" {
        return None;
    }
    let file = std::fs::File::open(arg).ok()?;
    let size = file.metadata().ok()?.len();
    if size > PLAN_LIMIT_BYTES {
        return None;
    }
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let head = reader.fill_buf().ok()?;
    let bom = if head.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    let first = head[bom..].iter().find(|b| !b.is_ascii_whitespace())?;
    if !matches!(first, b'[' | b'{') {
        return None;
    }
    reader.consume(bom);
    // Room for half the file: EXPLAIN's indented JSON compacts to a third of its size or less,
    // so the text is written once, never copied to a larger buffer as it grows.
    let mut compact = Compact {
        json: Vec::with_capacity(size as usize / 2),
        ..Compact::default()
    };
    loop {
        let chunk = reader.fill_buf().ok()?;
        if chunk.is_empty() {
            break;
        }
        let read = chunk.len();
        compact.push(chunk);
        reader.consume(read);
    }
    String::from_utf8(compact.json).ok()
}

/// JSON text with the white space outside its strings left out, built chunk by chunk.
#[derive(Default)]
struct Compact {
    json: Vec<u8>,
    in_string: bool,
    /// The previous byte inside a string was a backslash: the next one is escaped.
    escaped: bool,
}

impl Compact {
    fn push(&mut self, mut chunk: &[u8]) {
        // Worked on as a local, which the compiler keeps in registers, and reserved once: never
        // more than the chunk, so each byte below is a plain store.
        let mut json = std::mem::take(&mut self.json);
        json.reserve(chunk.len());
        while !chunk.is_empty() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    json.push(chunk[0]);
                    chunk = &chunk[1..];
                    continue;
                }
                // A string is copied as it is, up to its closing quote or its next escape.
                match memchr::memchr2(b'"', b'\\', chunk) {
                    Some(at) => {
                        json.extend_from_slice(&chunk[..=at]);
                        self.in_string = chunk[at] == b'\\';
                        self.escaped = chunk[at] == b'\\';
                        chunk = &chunk[at + 1..];
                    }
                    None => {
                        json.extend_from_slice(chunk);
                        chunk = &[];
                    }
                }
            } else {
                // Between strings: the bytes of tokens are kept, white space is not, up to the
                // next string's opening quote. (Tokens are a few bytes and the white space
                // between them long: byte by byte beats copying slices this short.)
                let mut rest = chunk.iter();
                while let Some(&byte) = rest.next() {
                    if byte == b'\n' {
                        // The next line's indentation, skipped eight spaces at a time: in a deep
                        // plan it is most of the file.
                        let spaces = rest.as_slice();
                        let words = spaces.chunks_exact(8).take_while(|w| *w == b"        ");
                        rest = spaces[words.count() * 8..].iter();
                    } else if !matches!(byte, b' ' | b'\r' | b'\t') {
                        json.push(byte);
                        if byte == b'"' {
                            self.in_string = true;
                            break;
                        }
                    }
                }
                chunk = rest.as_slice();
            }
        }
        self.json = json;
    }
}

/// "64 MiB", "1 GiB", "7 bytes".
fn limit_text(limit: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    match limit {
        l if l >= 1024 * MIB && l % (1024 * MIB) == 0 => format!("{} GiB", l / (1024 * MIB)),
        l if l >= MIB && l % MIB == 0 => format!("{} MiB", l / MIB),
        l => format!("{l} bytes"),
    }
}

/// At most `limit` bytes, or `None` when there is more: reading stops one byte past the limit,
/// so an endless input (`/dev/zero`) cannot exhaust memory.
fn read_bounded(reader: impl Read, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    read_bounded_sized(reader, limit, 0)
}

/// [`read_bounded`] into a buffer made for `expected` bytes (and one more, to see the end).
fn read_bounded_sized(
    reader: impl Read,
    limit: u64,
    expected: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::with_capacity(expected.saturating_add(1));
    reader.take(limit + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

/// UTF-8 text without a leading byte order mark (editors on Windows write one; it is not part of
/// the text, and left in it would be an invisible character in the first token).
fn text_of(name: &str, mut bytes: Vec<u8>) -> Result<String> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{name}: not UTF-8 text (invalid byte at offset {}); save it as UTF-8",
            e.utf8_error().valid_up_to()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_order_mark_is_skipped() {
        assert_eq!(
            text_of("q.sql", b"\xEF\xBB\xBFSELECT 1".to_vec()).unwrap(),
            "SELECT 1"
        );
        assert_eq!(text_of("q.sql", b"SELECT 1".to_vec()).unwrap(), "SELECT 1");
        let error = text_of("q.sql", b"SELECT \xff".to_vec()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "q.sql: not UTF-8 text (invalid byte at offset 7); save it as UTF-8"
        );
    }

    fn compacted(chunks: &[&str]) -> String {
        let mut compact = Compact::default();
        for chunk in chunks {
            compact.push(chunk.as_bytes());
        }
        String::from_utf8(compact.json).unwrap()
    }

    #[test]
    fn white_space_between_tokens_is_left_out_and_strings_kept_as_they_are() {
        let json = "[\n  {\n    \"Plan\": {\r\n\t\"Node Type\": \"Seq  Scan\",\n    \"Filter\": \
                    \"(a = ' \\\" x \\\\')\", \"Output\": [ \"a\" , \"b c\" ],\n \"Rows\": 1.50 } } ]\n";
        let expected = "[{\"Plan\":{\"Node Type\":\"Seq  Scan\",\"Filter\":\
                        \"(a = ' \\\" x \\\\')\",\"Output\":[\"a\",\"b c\"],\"Rows\":1.50}}]";
        assert_eq!(compacted(&[json]), expected);
        // Whatever the chunks' boundaries: inside an escape, a string, a run of spaces.
        for cut in 1..json.len() {
            if json.is_char_boundary(cut) {
                assert_eq!(
                    compacted(&[&json[..cut], &json[cut..]]),
                    expected,
                    "cut at {cut}"
                );
            }
        }
        // Indentation eight spaces at a time, and what is left of it.
        let deep = format!("[\n{0}{0}   1,\n{0}{0}{0}\"a  b\",\r\n{0} 2]", "        ");
        assert_eq!(compacted(&[&deep]), "[1,\"a  b\",2]");
        let parsed: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(expected).unwrap(),
            parsed
        );
    }

    #[test]
    fn every_recorded_json_plan_reads_the_same_compacted() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/plans");
        let mut compared = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path().display().to_string();
            let Some(json) = compact_json_file(&path) else {
                continue;
            };
            let whole = crate::plan::read_plan(&std::fs::read_to_string(&path).unwrap(), None);
            match (crate::plan::read_server_json(&json), whole) {
                (Ok(compacted), Ok(whole)) => {
                    assert_eq!(compacted, whole.plan, "{path}");
                    compared += 1;
                }
                // What the compacted text does not read as, the whole text is read as instead.
                (Err(_), _) => {}
                (Ok(_), Err(e)) => panic!("{path}: only compacted it reads: {e}"),
            }
        }
        assert!(compared > 100, "{compared} plans");
    }

    #[test]
    fn only_a_file_that_opens_like_json_is_compacted() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        };
        let bom = write("bom.json", b"\xEF\xBB\xBF \n[ {\"Plan\": 1} ]");
        assert_eq!(compact_json_file(&bom).as_deref(), Some("[{\"Plan\":1}]"));
        let table = write("table.txt", b" QUERY PLAN\n------\n [ ]\n(1 row)\n");
        assert_eq!(compact_json_file(&table), None);
        let latin1 = write("latin1.json", b"[\"\xe9\"]");
        assert_eq!(compact_json_file(&latin1), None);
        assert_eq!(compact_json_file("-"), None);
        assert_eq!(
            compact_json_file(&dir.path().join("missing").display().to_string()),
            None
        );
    }

    #[test]
    fn limits_read_in_binary_units() {
        assert_eq!(limit_text(QUERY_LIMIT_BYTES), "64 MiB");
        assert_eq!(limit_text(PLAN_LIMIT_BYTES), "1 GiB");
    }

    #[test]
    fn reading_stops_past_the_limit() {
        assert_eq!(read_bounded(&b"abcd"[..], 4).unwrap().unwrap(), b"abcd");
        assert!(read_bounded(std::io::repeat(0), 1024).unwrap().is_none());
    }

    #[test]
    fn files_over_the_limit_are_refused_with_their_size_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.sql");
        std::fs::write(&path, "SELECT 1").unwrap();
        let arg = path.display().to_string();
        assert_eq!(read_text(&arg, "the query", 8).unwrap().1, "SELECT 1");
        let error = read_text(&arg, "the query", 7).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "{arg}: the query is larger than 7 bytes, more than pgplan reads; is it the right file?"
            )
        );
    }
}
