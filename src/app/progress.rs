//! The one-line progress indicator on standard error, shown only when it is a terminal: what
//! the measurement engine says it is doing.

use std::io::{self, IsTerminal, Write};

use crate::measure::Observer;

/// A one-line progress indicator on stderr, only when stderr is a terminal.
pub struct Progress {
    enabled: bool,
}

impl Progress {
    pub fn new() -> Self {
        Self {
            enabled: io::stderr().is_terminal(),
        }
    }

    pub fn silent() -> Self {
        Self { enabled: false }
    }

    pub fn update(&self, message: &str) {
        if self.enabled {
            eprint!("\r\x1b[2K{message}");
            let _ = io::stderr().flush();
        }
    }

    pub fn clear(&self) {
        if self.enabled {
            eprint!("\r\x1b[2K");
            let _ = io::stderr().flush();
        }
    }
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

impl Observer for Progress {
    fn update(&self, message: &str) {
        Progress::update(self, message);
    }

    fn clear(&self) {
        Progress::clear(self);
    }
}
