//! Exit codes, the same for every command (documented in docs/exit-codes.md).

/// Success: the command ran and nothing crossed the user's threshold.
pub const SUCCESS: u8 = 0;
/// The command's findings or regressions crossed the threshold the user set (`--fail-on`, ...).
pub const FINDINGS: u8 = 1;
/// Usage, input or connection error (psql also exits 2 when it cannot connect).
pub const ERROR: u8 = 2;
/// Partial: a command that talks to several servers could not reach some of them.
pub const PARTIAL: u8 = 3;
/// The command ran, but the server's lasting state changed while it ran: a replication slot or
/// a prepared transaction appeared, or pgplan's session kept an advisory lock past the
/// rollback (the report's notes name each and the command that removes it). Takes precedence
/// over [`FINDINGS`], not over [`ERROR`].
pub const LEFT_BEHIND: u8 = 4;
/// Interrupted by Ctrl-C (SIGINT), after cancelling server work and rolling back: 128 + 2.
pub const INTERRUPTED: u8 = 130;
/// Terminated by SIGTERM (a service manager, `kill`, Kubernetes stopping a CronJob), after
/// cancelling server work and rolling back: 128 + 15, as a shell reports a process SIGTERM ended.
pub const TERMINATED: u8 = 143;

/// The signal that stopped pgplan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Interrupt,
    Terminate,
}

/// An error that ends the command with a specific exit code.
#[derive(Debug, thiserror::Error)]
pub enum Exit {
    /// Ctrl-C or SIGTERM, and what became of the work on the server.
    #[error("{}: {outcome}", match signal { Signal::Interrupt => "interrupted", Signal::Terminate => "terminated (SIGTERM)" })]
    Interrupted {
        signal: Signal,
        outcome: Interrupted,
    },
}

/// How far the server work had got when the user interrupted, so the message is true.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Interrupted {
    /// No connection of pgplan's own work had been accepted yet: nothing ran on a server (the
    /// demo's throwaway server is removed in any case).
    #[error("stopped before pgplan's work on the server began; nothing was left there")]
    BeforeConnecting,
    /// The running statement was cancelled and pgplan saw its transaction end.
    #[error(
        "the running statement was cancelled and the transaction rolled back; nothing was left on the server"
    )]
    RolledBack,
    /// pgplan stopped waiting (a second signal, or the rollback took too long): closing the
    /// connection makes the server roll the transaction back.
    #[error(
        "the running statement was cancelled; pgplan did not wait for the rollback, which the server \
         completes when the connection closes (nothing it built outlives that)"
    )]
    Abandoned,
}

impl Exit {
    pub fn code(&self) -> u8 {
        match self {
            Exit::Interrupted {
                signal: Signal::Interrupt,
                ..
            } => INTERRUPTED,
            Exit::Interrupted {
                signal: Signal::Terminate,
                ..
            } => TERMINATED,
        }
    }
}
