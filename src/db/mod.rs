//! The I/O shell: everything that talks to a PostgreSQL server or starts one, and fetches the
//! server builds `pgplan demo` starts.

pub mod advise;
pub mod buffercache;
pub mod build_cache;
pub mod cancel;
pub mod catalog;
pub mod check;
pub mod cluster;
pub mod connect;
pub mod conninfo;
pub mod drop_target;
pub mod effects;
pub mod error;
pub mod explain;
pub mod facts;
pub mod fetch;
pub mod live;
pub mod lock_holders;
pub mod pgpass;
pub mod retry;
pub mod service;
pub mod session;
pub mod settings;
pub mod stats;
pub mod tls;
pub mod workload;
pub mod write_probe;
pub mod writers;
pub mod x509;
