//! Finding the few lines of a large text that end in a given character, without walking every
//! line: shared by the plan readers that look for psql's decorations.

/// The first byte of psql's unicode marks in UTF-8 (`↵` U+21B5, `│` U+2502, `║` U+2551).
pub(super) const UNICODE_MARK_BYTE: u8 = 0xE2;

/// The lines of `text`, without their trailing white space (as `lines()` and `trim_end()` give
/// them), whose last character starts with one of `first_bytes`: the decoration checks look at
/// how lines end, and a large plan's JSON has millions of lines, of which only the few holding
/// these characters are looked at (found with memchr). A line's end is found once, however many
/// of the characters it holds: a 1,000,000-character condition has 140,000 `)`, and finding
/// the end of the line again from each one was quadratic (0.4 s for that one line).
pub(super) fn lines_ending_in(text: &str, first_bytes: [u8; 3]) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let [a, b, c] = first_bytes;
    // Where the line holding the last hit ends, and where it ends once trimmed.
    let mut line: Option<(usize, usize)> = None;
    memchr::memchr3_iter(a, b, c, bytes).filter_map(move |at| {
        let trimmed_end = match line {
            Some((line_end, trimmed_end)) if at < line_end => trimmed_end,
            _ => {
                let line_end = memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |n| at + n);
                // Each byte sought starts a character (ASCII, or a three-byte lead byte), so
                // `at` is a character boundary, as is the newline.
                let trimmed_end = at + text.get(at..line_end)?.trim_end().len();
                line = Some((line_end, trimmed_end));
                trimmed_end
            }
        };
        // The character found is no white space: the line ends with it exactly when its
        // trimmed end is right after it.
        let width = if bytes[at] < 0x80 { 1 } else { 3 };
        let end = (at + width).min(bytes.len());
        if end != trimmed_end {
            return None;
        }
        let start = memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |n| n + 1);
        text.get(start..end)
    })
}
