//! `postgresql://` URLs as libpq's `conninfo_uri_parse_options` reads them: user info, several hosts,
//! IPv6 literals, percent-encoded socket directories and query parameters.

use super::*;

pub(super) enum DecodeError {
    BadEscape(usize),
    Nul(usize),
    NotUtf8,
}

/// libpq's `conninfo_uri_decode`: `%XY` with two hex digits, `%00` forbidden, `+` left alone.
pub(super) fn percent_decode(raw: &str) -> Result<String, DecodeError> {
    let bytes = raw.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            decoded.push(bytes[i]);
            i += 1;
            continue;
        }
        let hex = |offset: usize| {
            bytes
                .get(i + offset)
                .and_then(|b| (*b as char).to_digit(16))
        };
        let (Some(high), Some(low)) = (hex(1), hex(2)) else {
            return Err(DecodeError::BadEscape(i));
        };
        let byte = (high * 16 + low) as u8;
        if byte == 0 {
            return Err(DecodeError::Nul(i));
        }
        decoded.push(byte);
        i += 3;
    }
    String::from_utf8(decoded).map_err(|_| DecodeError::NotUtf8)
}

/// Decodes one part of `uri`; `position` maps an offset inside `raw` to a character position in
/// the whole URL.
pub(super) fn decode_part(
    uri: &str,
    raw: &str,
    part: UriPart,
    position: impl Fn(usize) -> usize,
) -> Result<String, ConnInfoError> {
    percent_decode(raw).map_err(|error| match error {
        DecodeError::BadEscape(at) => ConnInfoError::InvalidPercentEncoding {
            part,
            position: char_position(uri, position(at)),
        },
        DecodeError::Nul(at) => ConnInfoError::PercentEncodedNul {
            part,
            position: char_position(uri, position(at)),
        },
        DecodeError::NotUtf8 => ConnInfoError::PercentEncodedNotUtf8 {
            part,
            position: char_position(uri, position(0)),
        },
    })
}

/// A URL as libpq's `conninfo_uri_parse_options` reads it:
/// `postgresql://[user[:password]@][host][:port][,...][/dbname][?param=value&...]`.
pub(super) fn parse_uri(uri: &str) -> Result<Pairs, ConnInfoError> {
    let bytes = uri.as_bytes();
    let len = bytes.len();
    let start = uri_prefix_len(uri);
    let mut pairs = Pairs::new();

    // User credentials end at the first "@" before any "/" (libpq looks no further, so an "@"
    // in the query string after a "/" is not taken for one).
    let mut p = start;
    while p < len && bytes[p] != b'@' && bytes[p] != b'/' {
        p += 1;
    }
    if p < len && bytes[p] == b'@' {
        let at = p;
        let user_end = uri[start..at].find(':').map_or(at, |colon| start + colon);
        let user = &uri[start..user_end];
        if !user.is_empty() {
            let value = decode_part(uri, user, UriPart::User, |offset| start + offset)?;
            pairs.push(("user", value));
        }
        if user_end < at {
            let password_start = user_end + 1;
            let password = &uri[password_start..at];
            if !password.is_empty() {
                let value = decode_part(uri, password, UriPart::Password, |offset| {
                    password_start + offset
                })?;
                pairs.push(("password", value));
            }
        }
        p = at + 1;
    } else {
        p = start;
    }

    // host[:port] pairs separated by commas; hosts and ports are each collected into one
    // comma-separated list and decoded afterwards, as libpq does (so %2C in a host splits it).
    let netloc_start = p;
    let mut hosts = String::new();
    let mut ports = String::new();
    let mut terminator: Option<u8>;
    loop {
        let host_text;
        if p < len && bytes[p] == b'[' {
            let address_start = p + 1;
            let mut q = address_start;
            while q < len && bytes[q] != b']' {
                q += 1;
            }
            if q >= len {
                return Err(ConnInfoError::UriUnterminatedIpv6 {
                    uri: redact_user_info(uri),
                });
            }
            if q == address_start {
                return Err(ConnInfoError::UriEmptyIpv6 {
                    uri: redact_user_info(uri),
                });
            }
            host_text = &uri[address_start..q];
            p = q + 1;
            if p < len && !matches!(bytes[p], b':' | b'/' | b'?' | b',') {
                return Err(ConnInfoError::UriUnexpectedCharacter {
                    found: uri[p..].chars().next().unwrap_or('?'),
                    position: char_position(uri, p),
                    uri: redact_user_info(uri),
                });
            }
        } else {
            let host_start = p;
            while p < len && !matches!(bytes[p], b':' | b'/' | b'?' | b',') {
                p += 1;
            }
            host_text = &uri[host_start..p];
        }
        hosts.push_str(host_text);
        terminator = bytes.get(p).copied();
        if terminator == Some(b':') {
            p += 1;
            let port_start = p;
            while p < len && !matches!(bytes[p], b'/' | b'?' | b',') {
                p += 1;
            }
            ports.push_str(&uri[port_start..p]);
            terminator = bytes.get(p).copied();
        }
        if terminator != Some(b',') {
            break;
        }
        p += 1;
        hosts.push(',');
        ports.push(',');
    }
    // A raw "@" left in the host list is the rest of a user name or password that held one
    // (postgresql://u:p@ss@host): refused, so no part of it is echoed as a host name.
    if hosts.contains('@') {
        return Err(ConnInfoError::UriRawAtSign {
            uri: redact_user_info(uri),
        });
    }
    if !hosts.is_empty() {
        pairs.push((
            "host",
            decode_part(uri, &hosts, UriPart::Hosts, |_| netloc_start)?,
        ));
    }
    if !ports.is_empty() {
        pairs.push((
            "port",
            decode_part(uri, &ports, UriPart::Ports, |_| netloc_start)?,
        ));
    }

    if terminator == Some(b'/') {
        p += 1;
        let database_start = p;
        while p < len && bytes[p] != b'?' {
            p += 1;
        }
        terminator = bytes.get(p).copied();
        // An empty path sets nothing (so PGDATABASE still applies), as in libpq.
        let database = &uri[database_start..p];
        if !database.is_empty() {
            let value = decode_part(uri, database, UriPart::Database, |offset| {
                database_start + offset
            })?;
            pairs.push(("dbname", value));
        }
    }

    if terminator == Some(b'?') {
        parse_uri_parameters(uri, p + 1, &mut pairs)?;
    }
    Ok(pairs)
}

/// The `?keyword=value&...` part of a URL (libpq's `conninfo_uri_parse_params`), starting at byte
/// `start` of `uri`.
pub(super) fn parse_uri_parameters(
    uri: &str,
    start: usize,
    pairs: &mut Pairs,
) -> Result<(), ConnInfoError> {
    let mut offset = start;
    while offset < uri.len() {
        let rest = &uri[offset..];
        let piece_len = rest.find('&').unwrap_or(rest.len());
        let piece = &rest[..piece_len];
        let piece_start = offset;
        offset += piece_len + 1;

        let Some(equals) = piece.find('=') else {
            return Err(ConnInfoError::UriParameterMissingEquals {
                parameter: if is_secret_name(piece) {
                    REDACTED.to_string()
                } else {
                    piece.to_string()
                },
                position: char_position(uri, piece_start),
            });
        };
        let (raw_keyword, raw_value) = (&piece[..equals], &piece[equals + 1..]);
        if raw_value.contains('=') {
            return Err(ConnInfoError::UriParameterExtraEquals {
                keyword: raw_keyword.to_string(),
                position: char_position(uri, piece_start),
            });
        }
        let keyword = decode_part(uri, raw_keyword, UriPart::ParameterName, |at| {
            piece_start + at
        })?;
        let value_start = piece_start + equals + 1;
        let value = decode_part(uri, raw_value, UriPart::ParameterValue, |at| {
            value_start + at
        })?;

        // libpq accepts JDBC's ssl=true as sslmode=require (and nothing else for "ssl").
        if keyword == "ssl" && value == "true" {
            pairs.push(("sslmode", "require".to_string()));
            continue;
        }
        let position = char_position(uri, piece_start);
        store(pairs, &keyword, value, || {
            ConnInfoError::InvalidUriParameter {
                suggestion: keyword_suggestion(&keyword),
                keyword: keyword.clone(),
                position,
            }
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::conninfo::testing::*;

    // --- URLs -------------------------------------------------------------------------------

    #[test]
    fn full_url() {
        assert_eq!(
            pairs(
                "postgresql://us%40er:p%3Ass@db.example:6432/my%20db?sslmode=require&application_name=x%26y"
            ),
            vec![
                p("user", "us@er"),
                p("password", "p:ss"),
                p("host", "db.example"),
                p("port", "6432"),
                p("dbname", "my db"),
                p("sslmode", "require"),
                p("application_name", "x&y"),
            ]
        );
        assert_eq!(
            pairs("postgres://h/d"),
            vec![p("host", "h"), p("dbname", "d")]
        );
        assert_eq!(pairs("postgresql://"), vec![]);
        assert_eq!(pairs("postgresql:///"), vec![]);
        assert_eq!(pairs("postgresql:///db"), vec![p("dbname", "db")]);
        assert_eq!(pairs("postgresql://user@"), vec![p("user", "user")]);
        assert_eq!(pairs("postgresql://:5433"), vec![p("port", "5433")]);
        assert_eq!(pairs("postgresql://h?"), vec![p("host", "h")]);
        assert_eq!(
            pairs("postgresql://h/db?a%70plication_name=x&"),
            vec![
                p("host", "h"),
                p("dbname", "db"),
                p("application_name", "x")
            ]
        );
        // "+" is not a space in libpq's decoding.
        assert_eq!(pairs("postgresql:///a+b"), vec![p("dbname", "a+b")]);
    }

    #[test]
    fn url_ipv6_socket_dir_and_multiple_hosts() {
        assert_eq!(
            pairs("postgresql://[::1]:5433/db"),
            vec![p("host", "::1"), p("port", "5433"), p("dbname", "db")]
        );
        assert_eq!(
            pairs("postgresql://[fe80::1%25eth0]"),
            vec![p("host", "fe80::1%eth0")]
        );
        assert_eq!(
            pairs("postgresql://%2Fvar%2Frun%2Fpostgresql/db"),
            vec![p("host", "/var/run/postgresql"), p("dbname", "db")]
        );
        assert_eq!(
            pairs("postgresql://a:1,[::2]:2,c/db"),
            vec![p("host", "a,::2,c"), p("port", "1,2,"), p("dbname", "db")]
        );

        let fx = Fixture::new();
        let params = ok(fx.resolve_d("postgresql://a:5433,b/db"));
        let hosts: Vec<_> = params
            .hosts
            .iter()
            .map(|h| (h.host.as_deref(), h.port))
            .collect();
        // An empty port in the list means the default for that host.
        assert_eq!(hosts, vec![(Some("a"), 5433), (Some("b"), 5432)]);
        assert_eq!(params.hosts[1].port_source, Source::Default);

        let params = ok(fx.resolve_d("postgresql://%2Ftmp%2Fpg:5499/db"));
        assert!(params.hosts[0].is_socket);
        assert_eq!(params.hosts[0].host.as_deref(), Some("/tmp/pg"));
        assert_eq!(params.hosts[0].port, 5499);
    }

    #[test]
    fn url_query_parameters() {
        assert_eq!(
            pairs("postgresql://h?ssl=true"),
            vec![p("host", "h"), p("sslmode", "require")]
        );
        // Only ssl=true is JDBC-compatible; anything else for "ssl" is unknown.
        let text = parse_connection_string("postgresql://h?ssl=false")
            .expect_err("ssl=false")
            .to_string();
        assert!(
            text.starts_with("invalid URI query parameter \"ssl\""),
            "{text}"
        );
        // Query parameters override the path.
        assert_eq!(
            pairs("postgresql:///a?dbname=b&host=h"),
            vec![p("dbname", "a"), p("dbname", "b"), p("host", "h")]
        );
        let fx = Fixture::new();
        assert_eq!(
            ok(fx.resolve_d("postgresql:///a?dbname=b")).dbname.value,
            "b"
        );
    }

    #[test]
    fn url_errors() {
        let cases: &[(&str, &str)] = &[
            (
                "postgresql://[::1/db",
                "end of string reached when looking for matching \"]\"",
            ),
            ("postgresql://[]/db", "IPv6 host address may not be empty"),
            (
                "postgresql://[::1]x/db",
                "unexpected character \"x\" at position 19",
            ),
            (
                "postgresql://h/db?sslmode",
                "missing key/value separator \"=\" in URI query parameter \"sslmode\"",
            ),
            (
                "postgresql://h/db?a=b=c",
                "extra key/value separator \"=\" in URI query parameter \"a\"",
            ),
            (
                "postgresql://h/db?&a=b",
                "missing key/value separator \"=\" in URI query parameter \"\"",
            ),
            (
                "postgresql://h/db?bogus=1",
                "invalid URI query parameter \"bogus\" (character 19",
            ),
            (
                "postgresql://h/d%zz",
                "invalid percent-encoded token in the database name of the -d URL (character 17)",
            ),
            ("postgresql://h/d%4", "invalid percent-encoded token"),
            (
                "postgresql://h/d%00",
                "forbidden value %00 in the database name",
            ),
            ("postgresql://h/d%ff", "not UTF-8"),
        ];
        for (input, expected) in cases {
            let text = match parse_connection_string(input) {
                Ok(parsed) => panic!("{input} should fail, parsed {} pairs", parsed.len()),
                Err(error) => error.to_string(),
            };
            assert!(text.contains(expected), "{input}: {text}");
        }
    }
}
