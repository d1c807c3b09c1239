//! The connection service file (`pg_service.conf`): finding a `[name]` section the way libpq's
//! `parseServiceInfo` does and handing back its `key=value` lines with the file and line each
//! came from. Which keys are valid is the caller's business ([`super::conninfo`]).

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The file libpq reads first: `PGSERVICEFILE` when set (then it must exist), else
/// `~/.pg_service.conf` (skipped when missing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserServiceFile {
    /// Named by `PGSERVICEFILE`: libpq reports an error when it cannot be opened.
    Named(PathBuf),
    /// `~/.pg_service.conf`: libpq silently skips it when it does not exist.
    Home(PathBuf),
}

impl UserServiceFile {
    fn path(&self) -> &Path {
        match self {
            Self::Named(path) | Self::Home(path) => path,
        }
    }
}

/// One `key=value` line of the wanted section, split at the first `=` exactly as libpq splits it:
/// no trimming around the `=`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceEntry {
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// The section that defines a service, and the file it was found in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceDefinition {
    pub name: String,
    pub file: PathBuf,
    pub entries: Vec<ServiceEntry>,
}

/// What can go wrong while looking a service up. Messages never quote a value from the file, so a
/// password kept there cannot leak through an error.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error(
        "definition of service \"{name}\" not found (looked in: {})\n\
         hint: add a [{name}] section to ~/.pg_service.conf (or the file PGSERVICEFILE names), \
         or stop asking for it (service= in -d, PGSERVICE)",
        PathList(searched)
    )]
    NotFound {
        name: String,
        searched: Vec<PathBuf>,
    },
    #[error(
        "service file \"{}\" (named by PGSERVICEFILE) could not be read: {source}\n\
         hint: point PGSERVICEFILE at an existing file, or unset it to use ~/.pg_service.conf",
        file.display()
    )]
    Unreadable {
        file: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("syntax error in service file \"{}\", line {line}: {reason}", file.display())]
    Syntax {
        file: PathBuf,
        line: usize,
        reason: String,
    },
    #[error(
        "nested service specifications not supported in service file \"{}\", line {line}: \
         a service definition may not name another service",
        file.display()
    )]
    Nested { file: PathBuf, line: usize },
}

struct PathList<'a>(&'a [PathBuf]);

impl fmt::Display for PathList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("no service file exists");
        }
        for (i, path) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", path.display())?;
        }
        Ok(())
    }
}

/// Finds service `name`: the user file first, then `system_file`. The first file holding a
/// `[name]` section wins and the other is not read (libpq: "the user file takes precedence"),
/// even for keys the winning section does not set.
///
/// `is_keyword` decides which keys are connection options; libpq rejects any other key in the
/// wanted section as a syntax error, and does not look at other sections at all.
pub fn find(
    name: &str,
    user_file: Option<&UserServiceFile>,
    system_file: &Path,
    is_keyword: impl Fn(&str) -> bool,
) -> Result<ServiceDefinition, ServiceError> {
    let mut searched = Vec::new();
    if let Some(user_file) = user_file {
        let path = user_file.path();
        match fs::read(path) {
            Ok(bytes) => {
                searched.push(path.to_path_buf());
                if let Some(entries) = parse_section(path, &bytes, name, &is_keyword)? {
                    return Ok(ServiceDefinition {
                        name: name.to_string(),
                        file: path.to_path_buf(),
                        entries,
                    });
                }
            }
            Err(source) => match user_file {
                UserServiceFile::Named(file) => {
                    return Err(ServiceError::Unreadable {
                        file: file.clone(),
                        source,
                    });
                }
                // libpq only stat()s the home file; a missing one is simply skipped.
                UserServiceFile::Home(_) => {}
            },
        }
    }
    // The system file is skipped when it does not exist (libpq stat()s it first).
    if let Ok(bytes) = fs::read(system_file) {
        searched.push(system_file.to_path_buf());
        if let Some(entries) = parse_section(system_file, &bytes, name, &is_keyword)? {
            return Ok(ServiceDefinition {
                name: name.to_string(),
                file: system_file.to_path_buf(),
                entries,
            });
        }
    }
    Err(ServiceError::NotFound {
        name: name.to_string(),
        searched,
    })
}

/// C's isspace() in the "C" locale, which is what libpq's trimming uses.
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r')
}

/// The entries of the first `[name]` section of one file, or `None` when the file has none.
fn parse_section(
    file: &Path,
    bytes: &[u8],
    name: &str,
    is_keyword: &impl Fn(&str) -> bool,
) -> Result<Option<Vec<ServiceEntry>>, ServiceError> {
    let text = String::from_utf8_lossy(bytes);
    let mut in_wanted_section = false;
    let mut entries = Vec::new();
    for (index, raw_line) in text.split('\n').enumerate() {
        let line_number = index + 1;
        // libpq trims whitespace at both ends, then skips blank lines and `#` comments.
        let line = raw_line.trim_matches(is_c_space);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            if in_wanted_section {
                // The next section ends the wanted one; a later duplicate section is not read.
                return Ok(Some(entries));
            }
            // libpq compares the name as a prefix and then wants `]` right after it; whatever
            // follows the `]` is ignored.
            in_wanted_section = header
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(']'));
            continue;
        }
        if !in_wanted_section {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(ServiceError::Syntax {
                file: file.to_path_buf(),
                line: line_number,
                reason: "expected a keyword=value line".to_string(),
            });
        };
        if key == "service" {
            return Err(ServiceError::Nested {
                file: file.to_path_buf(),
                line: line_number,
            });
        }
        if !is_keyword(key) {
            let reason = if key != key.trim_matches(is_c_space) {
                format!(
                    "\"{key}\" is not a connection option (libpq allows no spaces around \"=\" in a service file)"
                )
            } else {
                format!("\"{key}\" is not a connection option")
            };
            return Err(ServiceError::Syntax {
                file: file.to_path_buf(),
                line: line_number,
                reason,
            });
        }
        entries.push(ServiceEntry {
            key: key.to_string(),
            value: value.to_string(),
            line: line_number,
        });
    }
    Ok(in_wanted_section.then_some(entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(key: &str) -> bool {
        matches!(key, "host" | "port" | "user" | "dbname" | "password")
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, text).expect("write test file");
        path
    }

    #[test]
    fn finds_section_and_skips_comments_blank_lines_and_whitespace() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = write(
            dir.path(),
            "svc.conf",
            "# comment\n\n[other]\nhost=wrong\n  [mydb]  \n  host=db.example \n# port=1\nport=5433\r\n[later]\nhost=x\n",
        );
        let found = find(
            "mydb",
            Some(&UserServiceFile::Named(file.clone())),
            &dir.path().join("none.conf"),
            known,
        )
        .expect("found");
        assert_eq!(found.file, file);
        let pairs: Vec<_> = found
            .entries
            .iter()
            .map(|e| (e.key.as_str(), e.value.as_str(), e.line))
            .collect();
        assert_eq!(pairs, vec![("host", "db.example", 6), ("port", "5433", 8)]);
    }

    #[test]
    fn header_name_must_be_followed_by_bracket() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = write(
            dir.path(),
            "s.conf",
            "[mydb2]\nhost=a\n[mydb] trailing\nhost=b\n",
        );
        let found = find(
            "mydb",
            Some(&UserServiceFile::Named(file)),
            &dir.path().join("none"),
            known,
        )
        .expect("found");
        assert_eq!(found.entries[0].value, "b");
    }

    #[test]
    fn user_file_wins_over_system_file_and_system_file_is_the_fallback() {
        let dir = tempfile::tempdir().expect("tempdir");
        let user = write(dir.path(), "user.conf", "[a]\nhost=user-a\n");
        let system = write(
            dir.path(),
            "pg_service.conf",
            "[a]\nhost=sys-a\n[b]\nhost=sys-b\n",
        );
        let user_file = UserServiceFile::Home(user.clone());
        let a = find("a", Some(&user_file), &system, known).expect("a");
        assert_eq!(
            (a.file.as_path(), a.entries[0].value.as_str()),
            (user.as_path(), "user-a")
        );
        let b = find("b", Some(&user_file), &system, known).expect("b");
        assert_eq!(
            (b.file.as_path(), b.entries[0].value.as_str()),
            (system.as_path(), "sys-b")
        );
    }

    #[test]
    fn missing_home_file_is_skipped_but_missing_named_file_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let system = write(dir.path(), "pg_service.conf", "[a]\nhost=sys\n");
        let home = UserServiceFile::Home(dir.path().join("absent"));
        assert!(find("a", Some(&home), &system, known).is_ok());
        let named = UserServiceFile::Named(dir.path().join("absent"));
        let err = find("a", Some(&named), &system, known).expect_err("unreadable");
        assert!(matches!(err, ServiceError::Unreadable { .. }), "{err}");
        assert!(err.to_string().contains("PGSERVICEFILE"), "{err}");
    }

    #[test]
    fn unknown_service_lists_the_files_searched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let system = write(dir.path(), "pg_service.conf", "[a]\nhost=sys\n");
        let err = find("x", None, &system, known).expect_err("not found");
        let text = err.to_string();
        assert!(
            text.starts_with("definition of service \"x\" not found"),
            "{text}"
        );
        assert!(text.contains(&system.display().to_string()), "{text}");
    }

    #[test]
    fn nested_service_unknown_keys_and_missing_equals_are_errors_with_line_numbers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let none = dir.path().join("none");
        let nested = write(dir.path(), "n.conf", "[a]\nhost=x\nservice=b\n");
        let err =
            find("a", Some(&UserServiceFile::Named(nested)), &none, known).expect_err("nested");
        assert!(matches!(err, ServiceError::Nested { line: 3, .. }), "{err}");

        let spaced = write(dir.path(), "s.conf", "[a]\nhost = x\n");
        let err =
            find("a", Some(&UserServiceFile::Named(spaced)), &none, known).expect_err("spaces");
        let text = err.to_string();
        assert!(
            text.contains("line 2") && text.contains("no spaces"),
            "{text}"
        );

        let bare = write(dir.path(), "b.conf", "[a]\npassword hunter2\n");
        let err = find("a", Some(&UserServiceFile::Named(bare)), &none, known).expect_err("no =");
        let text = err.to_string();
        assert!(text.contains("line 2"), "{text}");
        assert!(
            !text.contains("hunter2"),
            "error must not quote the line: {text}"
        );
    }

    #[test]
    fn other_sections_are_not_validated() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = write(
            dir.path(),
            "s.conf",
            "[broken]\nnonsense line\nbogus=1\n[a]\nhost=x\n",
        );
        assert!(
            find(
                "a",
                Some(&UserServiceFile::Named(file)),
                &dir.path().join("n"),
                known
            )
            .is_ok()
        );
    }

    #[test]
    fn first_value_in_section_is_kept_for_duplicates_by_the_caller() {
        // The entries keep file order; the caller fills only unset keys, so the first one wins
        // as in libpq.
        let dir = tempfile::tempdir().expect("tempdir");
        let file = write(dir.path(), "s.conf", "[a]\nhost=first\nhost=second\n");
        let found = find(
            "a",
            Some(&UserServiceFile::Named(file)),
            &dir.path().join("n"),
            known,
        )
        .expect("found");
        assert_eq!(found.entries.len(), 2);
        assert_eq!(found.entries[0].value, "first");
    }
}
