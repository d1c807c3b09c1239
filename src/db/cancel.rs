//! Cancel requests sent as libpq sends them: to the host and port the connection was made to,
//! then waiting until the other end closes the socket before closing it.
//!
//! tokio-postgres's own `cancel_query` closes its socket as soon as the request is written.
//! PostgreSQL does not mind, but PgBouncer before 1.19 can: when the client of a cancel request
//! is gone before PgBouncer has finished forwarding it, PgBouncer exits with "FATAL …
//! disconnect_client(): bad client state" (pgbouncer/pgbouncer#801), taking every pooled
//! connection with it. libpq's `PQcancel` writes the request and then reads until the server
//! closes; so does this.

use std::io;
use std::net::IpAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_postgres::CancelToken;
use tokio_postgres::tls::{MakeTlsConnect, NoTls, TlsConnect};

use super::conninfo::HostSpec;
use super::tls::MakeTls;

/// Set once the user interrupts. Signals are process-wide, so this is too: work that runs
/// several transactions checks it between statements ([`stop_requested`]) and starts no new
/// one after a cancel.
static STOP_REQUESTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the user has interrupted pgplan: start no new server work.
pub fn stop_requested() -> bool {
    STOP_REQUESTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// Records that the user interrupted, before the running statements are cancelled.
pub fn request_stop() {
    STOP_REQUESTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// How long a cancel request may take, connecting and the server's close included. A request
/// that cannot be delivered in that time changes nothing that matters: pgplan closes its
/// connection next, and the server rolls the transaction back when it sees that.
const CANCEL_WITHIN: Duration = Duration::from_secs(5);

/// Where a connection's cancel request goes: where the connection itself was made.
#[derive(Debug, Clone)]
pub enum CancelTarget {
    Tcp {
        /// The host name (resolved again for the request, as libpq does) or address.
        host: Option<String>,
        /// A numeric address that replaces name resolution.
        hostaddr: Option<IpAddr>,
        port: u16,
    },
    Socket {
        path: PathBuf,
    },
}

impl CancelTarget {
    pub fn of(host: &HostSpec) -> Self {
        if host.is_socket {
            let dir = host.host.as_deref().unwrap_or("/tmp");
            CancelTarget::Socket {
                path: PathBuf::from(dir).join(format!(".s.PGSQL.{}", host.port)),
            }
        } else {
            CancelTarget::Tcp {
                host: host.host.clone(),
                hostaddr: host.hostaddr,
                port: host.port,
            }
        }
    }
}

/// Sends `token`'s cancel request to `target` (over TLS when `tls` is given and the
/// connection's sslmode asked for it) and waits for the server to close the socket.
pub async fn send(
    token: &CancelToken,
    tls: Option<&MakeTls>,
    target: &CancelTarget,
) -> io::Result<()> {
    let attempt = async {
        match target {
            CancelTarget::Socket { path } => {
                request(token, UnixStream::connect(path).await?, NoTls).await
            }
            CancelTarget::Tcp {
                host,
                hostaddr,
                port,
            } => {
                let stream = connect_tcp(host.as_deref(), *hostaddr, *port).await?;
                stream.set_nodelay(true)?;
                match tls {
                    None => request(token, stream, NoTls).await,
                    Some(make) => {
                        let name = host
                            .clone()
                            .or_else(|| hostaddr.map(|a| a.to_string()))
                            .unwrap_or_default();
                        let connect =
                            <MakeTls as MakeTlsConnect<Lingering<TcpStream>>>::make_tls_connect(
                                &mut make.clone(),
                                &name,
                            )
                            .map_err(io::Error::other)?;
                        request(token, stream, connect).await
                    }
                }
            }
        }
    };
    tokio::time::timeout(CANCEL_WITHIN, attempt)
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "the cancel request timed out"))?
}

/// The first address of `host` (or `hostaddr`) that accepts a connection on `port`.
async fn connect_tcp(
    host: Option<&str>,
    hostaddr: Option<IpAddr>,
    port: u16,
) -> io::Result<TcpStream> {
    if let Some(addr) = hostaddr {
        return TcpStream::connect((addr, port)).await;
    }
    let name = host.unwrap_or("localhost");
    let mut last = io::Error::new(io::ErrorKind::NotFound, format!("{name} has no address"));
    for addr in tokio::net::lookup_host((name, port)).await? {
        match TcpStream::connect(addr).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Writes the request through tokio-postgres (which negotiates TLS as the connection did),
/// then reads the bare socket until the server closes it.
async fn request<S, T>(token: &CancelToken, stream: S, tls: T) -> io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: TlsConnect<Lingering<S>>,
{
    let kept = Arc::new(Mutex::new(None));
    let lingering = Lingering {
        inner: Some(stream),
        kept: kept.clone(),
    };
    token
        .cancel_query_raw(lingering, tls)
        .await
        .map_err(io::Error::other)?;
    let stream = kept.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(mut stream) = stream {
        let mut buf = [0u8; 256];
        while stream.read(&mut buf).await? != 0 {}
    }
    Ok(())
}

/// A socket that outlives the stream tokio-postgres writes the request to: dropped, it hands the
/// socket back instead of closing it, and its shutdown does not half-close it (PgBouncer takes
/// the end of the client's stream for the client leaving, which is what must not happen early).
pub struct Lingering<S> {
    inner: Option<S>,
    kept: Arc<Mutex<Option<S>>>,
}

impl<S> Lingering<S> {
    fn stream(&mut self) -> &mut S {
        self.inner
            .as_mut()
            .expect("the socket is only taken when the stream is dropped")
    }
}

impl<S> Drop for Lingering<S> {
    fn drop(&mut self) {
        if let Some(stream) = self.inner.take() {
            *self.kept.lock().unwrap_or_else(|p| p.into_inner()) = Some(stream);
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Lingering<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(self.stream()).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Lingering<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(self.stream()).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.stream()).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(self.stream()).poll_flush(cx)
    }
}
