//! The host list: `host`, `hostaddr` and `port` lists paired as libpq pairs them, Unix socket
//! directories, and the default socket directory.

use super::*;

/// libpq's `is_unixsock_path`: an absolute path, or `@` for Linux's abstract socket namespace.
pub(super) fn is_unix_socket_path(host: &str) -> bool {
    host.starts_with('/') || host.starts_with('@')
}

/// The default socket directory for `port`: the first candidate holding `.s.PGSQL.<port>`, else the
/// first that exists, else the first candidate. Every socket path looked at is recorded.
pub(super) fn default_socket_dir(
    port: u16,
    env: &Environment,
    tried: &mut Vec<PathBuf>,
) -> PathBuf {
    let socket_name = format!(".s.PGSQL.{port}");
    for dir in &env.socket_dirs {
        let socket = dir.join(&socket_name);
        if !tried.contains(&socket) {
            tried.push(socket);
        }
    }
    env.socket_dirs
        .iter()
        .find(|dir| std::fs::symlink_metadata(dir.join(&socket_name)).is_ok())
        .or_else(|| env.socket_dirs.iter().find(|dir| dir.is_dir()))
        .or_else(|| env.socket_dirs.first())
        .cloned()
        .unwrap_or_else(|| PathBuf::from("/tmp"))
}

/// A host slot before passwords are looked up, with the raw text the password file is matched
/// against.
pub(super) struct HostSlot {
    pub(super) spec: HostSpec,
    pub(super) hostaddr_text: String,
    pub(super) port_text: String,
    pub(super) host_defaulted: bool,
}

pub(super) fn split_list(text: &str) -> Vec<&str> {
    text.split(',').collect()
}

/// Splits host, hostaddr and port into host slots (libpq's pqConnectOptions2): the number of
/// hostaddr entries, else of host entries, decides the count; one port applies to every host.
pub(super) fn build_hosts(
    gathered: &Gathered,
    env: &Environment,
    tried: &mut Vec<PathBuf>,
) -> Result<Vec<HostSlot>, ConnInfoError> {
    let hostaddr_given = gathered.nonempty("hostaddr");
    let host_given = gathered.nonempty("host");
    let port_given = gathered.nonempty("port");

    let hostaddrs: Vec<&str> = hostaddr_given
        .map(|g| split_list(&g.value))
        .unwrap_or_default();
    let hosts: Vec<&str> = host_given.map(|g| split_list(&g.value)).unwrap_or_default();
    let count = if !hostaddrs.is_empty() {
        hostaddrs.len()
    } else if !hosts.is_empty() {
        hosts.len()
    } else {
        1
    };
    if !hostaddrs.is_empty() && !hosts.is_empty() && hosts.len() != count {
        return Err(ConnInfoError::HostCountMismatch {
            hosts: hosts.len(),
            hostaddrs: count,
        });
    }
    let ports: Vec<&str> = match port_given {
        None => vec![""; count],
        Some(given) => {
            let ports = split_list(&given.value);
            if ports.len() == 1 {
                vec![ports[0]; count]
            } else if ports.len() == count {
                ports
            } else {
                return Err(ConnInfoError::PortCountMismatch {
                    ports: ports.len(),
                    hosts: count,
                });
            }
        }
    };

    let mut slots = Vec::with_capacity(count);
    for index in 0..count {
        let port_text = ports.get(index).copied().unwrap_or_default();
        let (port, port_source) = match (port_text.is_empty(), port_given) {
            (false, Some(given)) => {
                let port = parse_c_int(port_text)
                    .and_then(|number| u16::try_from(number).ok())
                    .filter(|number| *number >= 1)
                    .ok_or_else(|| ConnInfoError::InvalidPort {
                        value: port_text.to_string(),
                        origin: given.origin("port"),
                    })?;
                (port, given.source.clone())
            }
            _ => (DEFAULT_PORT, Source::Default),
        };

        let hostaddr_text = hostaddrs.get(index).copied().unwrap_or_default();
        let hostaddr = match (hostaddr_text.is_empty(), hostaddr_given) {
            (false, Some(given)) => Some(hostaddr_text.parse::<IpAddr>().map_err(|error| {
                ConnInfoError::InvalidHostaddr {
                    value: hostaddr_text.to_string(),
                    origin: given.origin("hostaddr"),
                    reason: error.to_string(),
                }
            })?),
            _ => None,
        };

        let host_text = hosts.get(index).copied().unwrap_or_default();
        let (host, is_socket, host_source, host_defaulted) =
            match (host_text.is_empty(), host_given) {
                (false, Some(given)) => (
                    Some(host_text.to_string()),
                    hostaddr.is_none() && is_unix_socket_path(host_text),
                    given.source.clone(),
                    false,
                ),
                _ => match (hostaddr, hostaddr_given) {
                    (Some(_), Some(given)) => (None, false, given.source.clone(), false),
                    _ => {
                        let dir = default_socket_dir(port, env, tried);
                        (
                            Some(dir.to_string_lossy().into_owned()),
                            true,
                            Source::Default,
                            true,
                        )
                    }
                },
            };
        slots.push(HostSlot {
            spec: HostSpec {
                host,
                hostaddr,
                port,
                is_socket,
                password: None,
                host_source,
                port_source,
            },
            hostaddr_text: hostaddr_text.to_string(),
            port_text: port_text.to_string(),
            host_defaulted,
        });
    }
    Ok(slots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::conninfo::testing::*;

    // --- multiple hosts -----------------------------------------------------------------------

    #[test]
    fn multiple_hosts_and_ports() {
        let fx = Fixture::new();
        let params = ok(fx.resolve_d("host=a,b,c port=6000"));
        assert!(params.hosts.iter().all(|h| h.port == 6000));
        assert_eq!(params.hosts.len(), 3);

        let params = ok(fx.resolve_d("host=a,,/sock port=1,2,3"));
        assert_eq!(params.hosts[0].host.as_deref(), Some("a"));
        // An empty entry is the default socket directory; a path is a socket.
        assert!(params.hosts[1].is_socket && params.hosts[1].host_source == Source::Default);
        assert!(params.hosts[2].is_socket && params.hosts[2].host.as_deref() == Some("/sock"));
        assert_eq!(
            params.hosts.iter().map(|h| h.port).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );

        let text = err(fx.resolve_d("host=a,b port=1,2,3")).to_string();
        assert!(
            text.starts_with("could not match 3 port numbers to 2 hosts"),
            "{text}"
        );
    }

    #[test]
    fn hostaddr_lists_and_errors() {
        let fx = Fixture::new();
        let params = ok(fx.resolve_d("host=db.example,other hostaddr=10.0.0.1,::1"));
        assert_eq!(params.hosts[0].hostaddr, "10.0.0.1".parse().ok());
        assert_eq!(params.hosts[1].hostaddr, "::1".parse().ok());
        assert_eq!(params.hosts[0].host.as_deref(), Some("db.example"));
        let params = ok(fx.resolve_d("hostaddr=127.0.0.1 host=/tmp"));
        // A hostaddr means TCP even when host looks like a socket directory.
        assert!(!params.hosts[0].is_socket);
        let params = ok(fx.resolve_d("hostaddr=127.0.0.1"));
        assert_eq!(
            (params.hosts[0].host.as_deref(), params.hosts[0].is_socket),
            (None, false)
        );

        let text = err(fx.resolve_d("host=a,b,c hostaddr=10.0.0.1,10.0.0.2")).to_string();
        assert!(
            text.starts_with("could not match 3 host names to 2 hostaddr values"),
            "{text}"
        );
        let text = err(fx.resolve_d("hostaddr=db.example")).to_string();
        assert!(
            text.starts_with("could not parse network address \"db.example\" in hostaddr"),
            "{text}"
        );
    }
}
