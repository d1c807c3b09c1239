//! The password file (`passfile=`, `PGPASSFILE`, `~/.pgpass`): libpq's permission rule, its line
//! format (`hostname:port:database:username:password`, `*` wildcards, `\` escapes, `#` comments)
//! and its first-match-wins lookup.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// What the password file amounted to when it was opened.
#[derive(Debug)]
pub enum PasswordFile {
    /// No such file: nothing to look up, and nothing worth a warning (libpq stays silent too).
    Missing,
    /// The file exists but libpq would not use it; the warning says why and what to do.
    Ignored { warning: String },
    /// A readable, private file and the lines in it that could ever match.
    Loaded { path: PathBuf, entries: Vec<Entry> },
}

/// One of the first four fields of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    /// A field that is exactly `*` (unescaped): matches anything.
    Any,
    /// Any other field, escapes removed: matches that text exactly.
    Exact(String),
}

impl Pattern {
    fn matches(&self, token: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Exact(text) => text == token,
        }
    }
}

/// One usable line of the file. `Debug` leaves the password out.
pub struct Entry {
    host: Pattern,
    port: Pattern,
    database: Pattern,
    user: Pattern,
    password: String,
    line: usize,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("database", &self.database)
            .field("user", &self.user)
            .field("password", &"********")
            .field("line", &self.line)
            .finish()
    }
}

/// The connection a password is wanted for, already in the form libpq matches against: the
/// hostname is `localhost` for the default socket directory or an empty host.
#[derive(Debug, Clone, Copy)]
pub struct LookupKey<'a> {
    pub host: &'a str,
    pub port: &'a str,
    pub database: &'a str,
    pub user: &'a str,
}

/// The first line that matched.
#[derive(Clone, PartialEq, Eq)]
pub struct Found {
    pub password: String,
    pub line: usize,
}

impl std::fmt::Debug for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Found")
            .field("password", &"********")
            .field("line", &self.line)
            .finish()
    }
}

/// Opens the password file, applying libpq's rules before reading a byte of it: it must be a
/// plain file, and on Unix it must not be group- or world-accessible (mode & 0o077 == 0);
/// otherwise libpq ignores it with a warning, and so do we.
pub fn load(path: &Path) -> PasswordFile {
    // stat(), not lstat(): libpq follows a symlink and judges the file it points at.
    let Ok(metadata) = fs::metadata(path) else {
        return PasswordFile::Missing;
    };
    if !metadata.is_file() {
        return PasswordFile::Ignored {
            warning: format!(
                "password file \"{}\" is not a plain file, so it was ignored (as libpq ignores it)",
                path.display()
            ),
        };
    }
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return PasswordFile::Ignored {
            warning: format!(
                "password file \"{}\" has group or world access (mode {mode:04o}), so it was ignored \
                 (as libpq ignores it); permissions should be u=rw (0600) or less: chmod 0600 {}",
                path.display(),
                path.display()
            ),
        };
    }
    match fs::read(path) {
        Ok(bytes) => PasswordFile::Loaded {
            path: path.to_path_buf(),
            entries: parse(&String::from_utf8_lossy(&bytes)),
        },
        // libpq silently gives up when fopen() fails; a warning costs nothing and says why no
        // password was found.
        Err(error) => PasswordFile::Ignored {
            warning: format!(
                "password file \"{}\" could not be read ({error}), so it was ignored",
                path.display()
            ),
        },
    }
}

impl PasswordFile {
    /// The first line matching `key`, as libpq: later lines are never consulted, even when the
    /// first match holds an empty password.
    pub fn find(&self, key: LookupKey<'_>) -> Option<Found> {
        let PasswordFile::Loaded { entries, .. } = self else {
            return None;
        };
        entries
            .iter()
            .find(|entry| {
                entry.host.matches(key.host)
                    && entry.port.matches(key.port)
                    && entry.database.matches(key.database)
                    && entry.user.matches(key.user)
            })
            .map(|entry| Found {
                password: entry.password.clone(),
                line: entry.line,
            })
    }
}

/// The lines that could ever match. A line with fewer than four unescaped `:` separators can never
/// match in libpq (each field must end at a `:`), so it is dropped here.
fn parse(text: &str) -> Vec<Entry> {
    let mut entries = Vec::new();
    for (index, raw_line) in text.split('\n').enumerate() {
        // libpq checks for `#` in the very first column, before stripping anything.
        if raw_line.starts_with('#') {
            continue;
        }
        // pg_strip_crlf: trailing CR and LF characters only.
        let line = raw_line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            continue;
        }
        if let Some(entry) = parse_line(line, index + 1) {
            entries.push(entry);
        }
    }
    entries
}

fn parse_line(line: &str, line_number: usize) -> Option<Entry> {
    let mut rest = line;
    let mut fields = Vec::with_capacity(4);
    for _ in 0..4 {
        let (pattern, after) = take_field(rest)?;
        fields.push(pattern);
        rest = after;
    }
    let password = unescape_password(rest);
    let mut fields = fields.into_iter();
    Some(Entry {
        host: fields.next()?,
        port: fields.next()?,
        database: fields.next()?,
        user: fields.next()?,
        password,
        line: line_number,
    })
}

/// One field up to its terminating unescaped `:`, and the text after that `:`. `None` when the
/// line ends first (libpq's pwdfMatchesString then fails to match).
fn take_field(text: &str) -> Option<(Pattern, &str)> {
    // Only a field that is exactly `*` is a wildcard; `\*` or `a*` are literal.
    if let Some(after) = text.strip_prefix("*:") {
        return Some((Pattern::Any, after));
    }
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((index, c)) = chars.next() {
        match c {
            '\\' => {
                // A backslash makes the next character literal, `:` and `\` included; a trailing
                // backslash leaves the field unterminated.
                let (_, escaped) = chars.next()?;
                value.push(escaped);
            }
            ':' => return Some((Pattern::Exact(value), &text[index + 1..])),
            other => value.push(other),
        }
    }
    None
}

/// The password is the rest of the line up to the next unescaped `:` (anything after it is
/// ignored); a backslash at the very end of the line stays a backslash.
fn unescape_password(text: &str) -> String {
    let mut password = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            ':' => break,
            '\\' => match chars.next() {
                Some(escaped) => password.push(escaped),
                None => password.push('\\'),
            },
            other => password.push(other),
        }
    }
    password
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private_file(dir: &Path, text: &str) -> PathBuf {
        let path = dir.join("pgpass");
        fs::write(&path, text).expect("write pgpass");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).expect("chmod");
        path
    }

    fn key<'a>(host: &'a str, port: &'a str, database: &'a str, user: &'a str) -> LookupKey<'a> {
        LookupKey {
            host,
            port,
            database,
            user,
        }
    }

    fn lookup(text: &str, k: LookupKey<'_>) -> Option<String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = load(&private_file(dir.path(), text));
        file.find(k).map(|found| found.password)
    }

    #[test]
    fn exact_match_and_first_line_wins() {
        let text = "db.example:5432:app:alice:first\ndb.example:5432:app:alice:second\n";
        assert_eq!(
            lookup(text, key("db.example", "5432", "app", "alice")).as_deref(),
            Some("first")
        );
        assert_eq!(
            lookup(text, key("db.example", "5433", "app", "alice")),
            None
        );
    }

    #[test]
    fn star_matches_anything_only_as_a_whole_field() {
        let text = "*:*:*:alice:any\n";
        assert_eq!(
            lookup(text, key("h", "1", "d", "alice")).as_deref(),
            Some("any")
        );
        assert_eq!(lookup(text, key("h", "1", "d", "bob")), None);
        // `a*` and `\*` are literal text.
        assert_eq!(lookup("db*:*:*:*:x\n", key("db1", "1", "d", "u")), None);
        assert_eq!(
            lookup("db*:*:*:*:x\n", key("db*", "1", "d", "u")).as_deref(),
            Some("x")
        );
        assert_eq!(lookup("\\*:*:*:*:x\n", key("h", "1", "d", "u")), None);
        assert_eq!(
            lookup("\\*:*:*:*:x\n", key("*", "1", "d", "u")).as_deref(),
            Some("x")
        );
    }

    #[test]
    fn escapes_in_fields_and_password() {
        // An IPv6 host needs its colons escaped; the password may contain \: and \\.
        let text = "\\:\\:1:5432:d:u:pa\\:ss\\\\word:ignored extra\n";
        assert_eq!(
            lookup(text, key("::1", "5432", "d", "u")).as_deref(),
            Some("pa:ss\\word")
        );
        // A trailing backslash in the password is kept.
        assert_eq!(
            lookup("h:1:d:u:end\\\n", key("h", "1", "d", "u")).as_deref(),
            Some("end\\")
        );
    }

    #[test]
    fn comments_blank_lines_crlf_and_short_lines() {
        let text = "# h:1:d:u:commented\n\nh:1:d\nh:1:d:u\r\n h:1:d:u:leading-space-host\nh:1:d:u:real\r\n";
        assert_eq!(
            lookup(text, key("h", "1", "d", "u")).as_deref(),
            Some("real")
        );
        // A `#` after leading whitespace is not a comment: the host field is then " h".
        assert_eq!(
            lookup(text, key(" h", "1", "d", "u")).as_deref(),
            Some("leading-space-host")
        );
    }

    #[test]
    fn empty_password_still_ends_the_search() {
        let text = "h:1:d:u:\nh:1:d:u:later\n";
        assert_eq!(lookup(text, key("h", "1", "d", "u")).as_deref(), Some(""));
    }

    #[test]
    fn group_or_world_access_is_ignored_with_a_warning() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = private_file(dir.path(), "*:*:*:*:secret-pw\n");
        for mode in [0o640, 0o604, 0o610, 0o601] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
            match load(&path) {
                PasswordFile::Ignored { warning } => {
                    assert!(warning.contains("group or world access"), "{warning}");
                    assert!(warning.contains("chmod 0600"), "{warning}");
                    assert!(!warning.contains("secret-pw"));
                }
                other => panic!("mode {mode:o} should be ignored, got {other:?}"),
            }
        }
        for mode in [0o600, 0o400, 0o700] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
            assert!(
                matches!(load(&path), PasswordFile::Loaded { .. }),
                "mode {mode:o}"
            );
        }
    }

    #[test]
    fn directory_is_not_a_plain_file_and_missing_file_is_silent() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).expect("mkdir");
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o700)).expect("chmod");
        assert!(
            matches!(load(&sub), PasswordFile::Ignored { warning } if warning.contains("not a plain file"))
        );
        assert!(matches!(
            load(&dir.path().join("absent")),
            PasswordFile::Missing
        ));
    }

    #[test]
    fn symlink_is_judged_by_its_target() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = private_file(dir.path(), "*:*:*:*:via-link\n");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let file = load(&link);
        assert_eq!(
            file.find(key("h", "1", "d", "u"))
                .map(|f| f.password)
                .as_deref(),
            Some("via-link")
        );
    }

    #[test]
    fn debug_output_hides_passwords() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = load(&private_file(dir.path(), "*:*:*:*:hidden-pw\n"));
        assert!(!format!("{file:?}").contains("hidden-pw"));
        let found = file.find(key("h", "1", "d", "u")).expect("found");
        assert!(!format!("{found:?}").contains("hidden-pw"));
    }
}
