//! Test helpers shared by the folder's unit tests: a hermetic environment in a temporary
//! directory, and short forms of requests and results.

use super::*;
use std::fs;

/// A hermetic environment rooted in a temp dir: home, socket candidates and sysconfdir all
/// live inside it.
pub(super) struct Fixture {
    pub(super) dir: tempfile::TempDir,
    pub(super) vars: HashMap<String, String>,
}

impl Fixture {
    pub(super) fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["home", "etc"] {
            fs::create_dir(dir.path().join(sub)).expect("mkdir");
        }
        Self {
            dir,
            vars: HashMap::new(),
        }
    }

    pub(super) fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    pub(super) fn home(&self) -> PathBuf {
        self.path("home")
    }

    pub(super) fn var(mut self, name: &str, value: &str) -> Self {
        self.vars.insert(name.to_string(), value.to_string());
        self
    }

    pub(super) fn env(&self) -> Environment {
        Environment {
            vars: self.vars.clone(),
            home: Some(self.home()),
            os_user: "alice".to_string(),
            socket_dirs: vec![
                self.path("sock-a"),
                self.path("sock-b"),
                self.path("sock-c"),
            ],
            sysconfdir: self.path("etc"),
        }
    }

    pub(super) fn write(&self, relative: &str, text: &str, mode: u32) -> PathBuf {
        let path = self.path(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("mkdir -p");
        }
        fs::write(&path, text).expect("write");
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
        path
    }

    pub(super) fn resolve(&self, request: &ConnRequest) -> Result<ConnParams, ConnInfoError> {
        resolve(request, &self.env())
    }

    pub(super) fn resolve_d(&self, dbname: &str) -> Result<ConnParams, ConnInfoError> {
        self.resolve(&ConnRequest {
            dbname: Some(dbname.to_string()),
            ..ConnRequest::default()
        })
    }
}

pub(super) fn ok(result: Result<ConnParams, ConnInfoError>) -> ConnParams {
    match result {
        Ok(params) => params,
        Err(error) => panic!("expected success, got: {error}"),
    }
}

pub(super) fn err(result: Result<ConnParams, ConnInfoError>) -> ConnInfoError {
    match result {
        Ok(params) => panic!("expected an error, got {}", params.redacted()),
        Err(error) => error,
    }
}

pub(super) fn flags(
    host: Option<&str>,
    port: Option<&str>,
    user: Option<&str>,
    dbname: Option<&str>,
) -> ConnRequest {
    ConnRequest {
        dbname: dbname.map(str::to_string),
        host: host.map(str::to_string),
        port: port.map(str::to_string),
        user: user.map(str::to_string),
    }
}

pub(super) fn pairs(text: &str) -> Vec<(&'static str, String)> {
    match parse_connection_string(text) {
        Ok(pairs) => pairs,
        Err(error) => panic!("{text:?} should parse: {error}"),
    }
}

pub(super) fn p(keyword: &'static str, value: &str) -> (&'static str, String) {
    (keyword, value.to_string())
}

/// A request for a TCP host: sslmode and the certificate files apply only to those.
pub(super) fn tcp_request() -> ConnRequest {
    ConnRequest {
        host: Some("db.example.com".into()),
        ..ConnRequest::default()
    }
}
