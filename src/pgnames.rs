//! PostgreSQL's naming of objects created without a name: makeObjectName's truncation to
//! NAMEDATALEN - 1 bytes and ChooseRelationName's numbering, shared by advise (which names the
//! indexes it proposes) and compare (which names unnamed candidates built apart).

/// NAMEDATALEN - 1: the longest name PostgreSQL keeps, in bytes.
pub const MAX_NAME_BYTES: usize = 63;

/// The longest start of `s` of at most `max` bytes that ends on a character (pg_mbcliplen).
pub fn clip(s: &str, max: usize) -> &str {
    let mut end = max.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// makeObjectName: `name1_name2_label` in at most 63 bytes, the longer of the two names cut
/// first (one byte at a time, name1 only while it is strictly the longer), each cut on a
/// character boundary.
pub fn make_object_name(name1: &str, name2: Option<&str>, label: &str) -> String {
    let overhead = usize::from(name2.is_some()) + label.len() + 1;
    let available = MAX_NAME_BYTES.saturating_sub(overhead);
    let mut chars1 = name1.len();
    let mut chars2 = name2.map_or(0, str::len);
    while chars1 + chars2 > available {
        if chars1 > chars2 {
            chars1 -= 1;
        } else {
            chars2 -= 1;
        }
    }
    let mut out = clip(name1, chars1).to_owned();
    if let Some(name2) = name2 {
        out.push('_');
        out.push_str(clip(name2, chars2));
    }
    out.push('_');
    out.push_str(label);
    out
}

/// ChooseRelationName: the first of `name1_name2_label`, `..._label1`, `..._label2`, ... that
/// `taken` does not hold. The number goes on the label before the parts are cut, so a long
/// name loses a byte of its table or columns for it, never of the label.
pub fn choose_relation_name(
    name1: &str,
    name2: Option<&str>,
    label: &str,
    taken: impl Fn(&str) -> bool,
) -> String {
    let mut name = make_object_name(name1, name2, label);
    let mut pass = 0u32;
    while taken(&name) {
        pass += 1;
        name = make_object_name(name1, name2, &format!("{label}{pass}"));
    }
    name
}
