//! `keyword = value` connection strings as libpq's `conninfo_parse` reads them.

use super::*;

/// `keyword = value` pairs as libpq's `conninfo_parse` reads them: whitespace around `=` allowed;
/// a value is single-quoted (`\'` and `\\` escapes inside) or runs to the next whitespace (with
/// backslash escapes too); a later duplicate overrides an earlier one.
pub(super) fn parse_keyword_value(text: &str) -> Result<Pairs, ConnInfoError> {
    let chars: Vec<char> = text.chars().collect();
    let len = chars.len();
    let mut pairs = Pairs::new();
    let mut i = 0;
    while i < len {
        if is_c_space(chars[i]) {
            i += 1;
            continue;
        }
        let word_start = i;
        while i < len && chars[i] != '=' && !is_c_space(chars[i]) {
            i += 1;
        }
        let word: String = chars[word_start..i].iter().collect();
        while i < len && is_c_space(chars[i]) {
            i += 1;
        }
        if i >= len || chars[i] != '=' {
            // A word with no "=" right after a password is most likely the rest of a password
            // that contains a space; never echo it.
            let follows_secret = pairs
                .last()
                .is_some_and(|(keyword, _)| is_secret_name(keyword));
            return Err(ConnInfoError::MissingEquals {
                word: if follows_secret {
                    REDACTED.to_string()
                } else {
                    word
                },
                position: word_start + 1,
            });
        }
        i += 1;
        while i < len && is_c_space(chars[i]) {
            i += 1;
        }
        let mut value = String::new();
        if i < len && chars[i] == '\'' {
            let quote_at = i;
            i += 1;
            loop {
                match chars.get(i) {
                    None => {
                        return Err(ConnInfoError::UnterminatedQuote {
                            keyword: word,
                            position: quote_at + 1,
                        });
                    }
                    Some('\\') => {
                        // An escaped character is taken literally; a backslash at the very end
                        // leaves the quote open.
                        if let Some(&escaped) = chars.get(i + 1) {
                            value.push(escaped);
                        }
                        i += 2;
                    }
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some(&c) => {
                        value.push(c);
                        i += 1;
                    }
                }
            }
        } else {
            while i < len {
                let c = chars[i];
                if is_c_space(c) {
                    i += 1;
                    break;
                }
                if c == '\\' {
                    if let Some(&escaped) = chars.get(i + 1) {
                        value.push(escaped);
                    }
                    i += 2;
                } else {
                    value.push(c);
                    i += 1;
                }
            }
        }
        let position = word_start + 1;
        store(&mut pairs, &word, value, || ConnInfoError::InvalidOption {
            suggestion: keyword_suggestion(&word),
            keyword: word.clone(),
            position,
        })?;
    }
    Ok(pairs)
}

/// 1-based character position of a byte offset (always at a character boundary here: every
/// offset used is the start of the text or of an ASCII delimiter).
pub(super) fn char_position(text: &str, byte_offset: usize) -> usize {
    text.get(..byte_offset)
        .map_or(byte_offset, |head| head.chars().count())
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::conninfo::testing::*;

    // --- connection strings ---------------------------------------------------------------

    #[test]
    fn keyword_value_syntax() {
        assert_eq!(
            pairs("host = db   port=5433\tdbname='my db' user=o\\'brien"),
            vec![
                p("host", "db"),
                p("port", "5433"),
                p("dbname", "my db"),
                p("user", "o'brien")
            ]
        );
        assert_eq!(
            pairs(r"password='it\'s \\ here' options='-c a=b'"),
            vec![p("password", r"it's \ here"), p("options", "-c a=b")]
        );
        // A quoted value may be followed directly by the next keyword, as in libpq.
        assert_eq!(
            pairs("host='a'port=1"),
            vec![p("host", "a"), p("port", "1")]
        );
        // Blanks after "=" are skipped, so an empty value must be quoted.
        assert_eq!(pairs("host= dbname=x"), vec![p("host", "dbname=x")]);
        assert_eq!(
            pairs("host='' dbname=x"),
            vec![p("host", ""), p("dbname", "x")]
        );
        assert_eq!(pairs("host="), vec![p("host", "")]);
        assert_eq!(pairs("host=a\\ b"), vec![p("host", "a b")]);
        assert_eq!(pairs("host=''"), vec![p("host", "")]);
        assert_eq!(pairs("requiressl=1 "), vec![p("sslmode", "require")]);
        assert_eq!(pairs("requiressl=0"), vec![p("sslmode", "prefer")]);
    }

    #[test]
    fn later_duplicates_override_earlier_ones() {
        let fx = Fixture::new();
        let params = ok(fx.resolve_d("dbname=a dbname=b"));
        assert_eq!(params.dbname.value, "b");
    }

    #[test]
    fn keyword_value_errors_say_where() {
        let error = parse_connection_string("host=a port").expect_err("missing =");
        assert_eq!(
            error.to_string().lines().next(),
            Some(
                "missing \"=\" after \"port\" in connection info string (character 8 of the -d value)"
            )
        );
        let error = parse_connection_string("host=a dbname='oops").expect_err("unterminated");
        let text = error.to_string();
        assert!(
            text.contains("character 15") && text.contains("\"dbname\""),
            "{text}"
        );
        let error = parse_connection_string("host=a sslmod=require").expect_err("bad keyword");
        let text = error.to_string();
        assert!(
            text.starts_with("invalid connection option \"sslmod\" (character 8"),
            "{text}"
        );
        assert!(text.contains("did you mean \"sslmode\""), "{text}");
        let error = parse_connection_string("=x").expect_err("empty keyword");
        assert!(
            error
                .to_string()
                .starts_with("invalid connection option \"\""),
            "{error}"
        );
        // A trailing backslash inside quotes leaves them open.
        assert!(parse_connection_string("host='a\\").is_err());
    }
}
