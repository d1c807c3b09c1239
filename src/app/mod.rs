//! Orchestration: turns validated requests into work on the core and the I/O shell, one module
//! per command, and decides the exit code.

pub mod advise;
pub mod audit;
pub mod check;
pub mod compare;
pub mod demo;
pub mod docs;
pub mod info;
pub mod input;
pub mod live;
pub mod live_explain;
pub mod offline;
pub mod output;
pub mod probe_guard;
pub mod progress;
pub mod stats;
pub mod workload;
pub mod writers;

use std::io::{self, IsTerminal};

use anyhow::Result;

use crate::cli::{Cli, ColorChoice, Command};
use crate::report::TextOptions;

/// Runs the command and returns its exit code; errors are reported by the caller (exit 2).
pub fn run(cli: Cli) -> Result<u8> {
    let text = text_options(cli.color);
    live::set_verbosity(cli.verbose);
    match cli.command {
        Command::Explain(args) if args.live() => live_explain::explain(*args, &text),
        Command::Explain(args) => offline::explain(*args, &text),
        Command::Diff(args) => offline::diff(args, &text),
        Command::Info(args) => info::info(args, cli.verbose, &text),
        Command::Compare(args) => compare::compare(*args, &text),
        Command::Demo(args) => demo::demo(args, &text),
        Command::Audit(args) => audit::audit_command(args, &text),
        Command::Advise(args) => advise::advise(*args, &text),
        Command::Check(args) => check::check(*args, &text),
        Command::Stats(args) => stats::stats(args),
        Command::Completions(args) => docs::completions(args),
        Command::Man(args) => docs::man(args),
    }
}

/// Decides colour and width once: colour only for a terminal unless forced, never with NO_COLOR
/// (<https://no-color.org>: set and not empty).
pub fn text_options(choice: ColorChoice) -> TextOptions {
    let terminal = io::stdout().is_terminal();
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let color = match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && !no_color,
    };
    TextOptions {
        color,
        width: if terminal { terminal_width() } else { None },
    }
}

fn terminal_width() -> Option<u16> {
    // SAFETY: TIOCGWINSZ fills a winsize struct for a terminal file descriptor.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(size.ws_col)
}

/// An error and its causes, one clause each, without repeating what an outer context already says.
pub fn render_error(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}
