//! Turning driver and server errors into messages a person can act on, with the server's own
//! SQLSTATE, DETAIL and HINT.

use std::fmt::Write as _;

/// One line for the error, then the server's DETAIL, HINT and CONTEXT lines when it sent them.
pub fn describe(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        let mut text = format!(
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        );
        if let Some(detail) = db.detail() {
            let _ = write!(text, "\nDETAIL: {detail}");
        }
        if let Some(hint) = db.hint() {
            let _ = write!(text, "\nHINT: {hint}");
        }
        if let Some(context) = db.where_() {
            let _ = write!(text, "\nCONTEXT: {context}");
        }
        return text;
    }
    // The driver's own errors nest their cause; show the whole chain on one line.
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            let _ = write!(text, ": {cause_text}");
        }
        source = cause.source();
    }
    text
}

/// The SQLSTATE of a server error, if the error came from the server.
pub fn sqlstate(error: &tokio_postgres::Error) -> Option<&str> {
    error.code().map(|c| c.code())
}
