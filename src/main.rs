//! The pgplan binary: parse arguments, run, report errors on stderr, exit with a documented code.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = pgplan::cli::Cli::parse();
    match pgplan::app::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            // The reader went away (`pgplan ... | head`): stop quietly, as other Unix tools do.
            let broken_pipe = error.chain().any(|cause| {
                cause
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            // writeln! rather than eprintln!: with stderr closed too (`2>&1 | head`), reporting
            // the error must not panic; the exit code still says what happened.
            let mut stderr = std::io::stderr();
            if let Some(exit) = error.downcast_ref::<pgplan::exit::Exit>() {
                let _ = writeln!(stderr, "pgplan: {exit}");
                return ExitCode::from(exit.code());
            }
            let _ = writeln!(stderr, "pgplan: {}", pgplan::app::render_error(&error));
            ExitCode::from(pgplan::exit::ERROR)
        }
    }
}
