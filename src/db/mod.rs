//! The I/O shell: everything that talks to a PostgreSQL server or starts one.

pub mod catalog;
pub mod cluster;
pub mod error;
pub mod facts;
