//! Renderers: each report value written as text (for a terminal), JSON (the documented contract)
//! Markdown (for a pull request or a ticket) or a self-contained HTML page, and the audit also as Prometheus metrics, to any
//! `io::Write`.

pub mod advise;
pub mod audit;
pub mod check;
pub mod check_junit;
pub mod check_markdown;
pub mod check_sarif;
pub mod compare;
pub mod guard;
pub mod html;
pub mod info;
pub mod markdown;
pub mod pretty;
pub mod skipped;
pub mod text;
pub mod tree;
pub mod wire;
pub mod wire_audit;
pub mod workload;

use std::io::{self, Write};

use anstyle::{AnsiColor, Style};

/// An output format a command can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Markdown,
    /// One self-contained HTML file (inline CSS and SVG, no script, nothing fetched).
    Html,
}

/// How text output looks. Colour is decided once, at the edge (terminal, `--color`, `NO_COLOR`).
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    pub color: bool,
    /// The terminal's width, when writing to one; tables wrap to it.
    pub width: Option<u16>,
}

/// Writes `value` as pretty-printed JSON followed by a newline.
pub fn write_json<T: serde::Serialize>(out: &mut dyn io::Write, value: &T) -> io::Result<()> {
    // io::Error::from keeps an I/O failure's kind (a closed pipe stays BrokenPipe, which the
    // binary treats as the reader having gone away), and wraps anything else.
    // Written through a buffer of its own, so that serde_json's many small writes (a key, a
    // quote, a comma) are calls the compiler sees through, not calls through `dyn Write`.
    let mut buffered = io::BufWriter::with_capacity(1 << 16, &mut *out);
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut buffered, pretty::Indented::default());
    value.serialize(&mut serializer).map_err(io::Error::from)?;
    buffered.write_all(b"\n")?;
    buffered.flush()
}

/// Colours for text output, or none at all.
#[derive(Debug, Clone, Copy)]
pub struct Paint {
    on: bool,
}

impl Paint {
    pub fn new(on: bool) -> Self {
        Self { on }
    }

    fn apply(&self, style: Style, text: &str) -> String {
        if self.on && !text.is_empty() {
            format!("{}{text}{}", style.render(), style.render_reset())
        } else {
            text.to_owned()
        }
    }

    pub fn bold(&self, text: &str) -> String {
        self.apply(Style::new().bold(), text)
    }

    pub fn dim(&self, text: &str) -> String {
        self.apply(Style::new().dimmed(), text)
    }

    pub fn good(&self, text: &str) -> String {
        self.apply(AnsiColor::Green.on_default(), text)
    }

    pub fn bad(&self, text: &str) -> String {
        self.apply(AnsiColor::Red.on_default(), text)
    }

    pub fn warn(&self, text: &str) -> String {
        self.apply(AnsiColor::Yellow.on_default(), text)
    }

    pub fn accent(&self, text: &str) -> String {
        self.apply(AnsiColor::Cyan.on_default(), text)
    }

    /// A severity word in its colour.
    pub fn severity(&self, severity: crate::plan::Severity, text: &str) -> String {
        match severity {
            crate::plan::Severity::Critical => self.apply(AnsiColor::Red.on_default().bold(), text),
            crate::plan::Severity::Warning => self.warn(text),
            crate::plan::Severity::Info => self.accent(text),
        }
    }
}
