//! Reading the files a command is given (a query, candidates, saved plans), or standard input
//! for `-`: bounded in size, UTF-8, a leading byte order mark skipped.

use std::io::Read;

use anyhow::{Context, Result, bail};

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
        // Room for the whole file at once (a plan can be hundreds of megabytes): growing the
        // buffer by doubling would leave up to half of it allocated for nothing.
        let size = file.metadata().map_or(0, |m| m.len()).min(limit);
        let bytes = read_bounded_sized(file, limit, size as usize)
            .with_context(|| format!("reading {arg}"))?;
        (arg.to_owned(), bytes)
    };
    let Some(bytes) = bytes else {
        bail!(
            "{name}: {what} is larger than {}, more than pgplan reads{}",
            limit_text(limit),
            if limit == PLAN_LIMIT_BYTES {
                " (PostgreSQL cannot send a plan this large: is it the right file?)"
            } else {
                "; is it the right file?"
            }
        );
    };
    Ok((name.clone(), text_of(&name, bytes)?))
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
