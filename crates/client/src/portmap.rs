//! Port mapper client (RFC 1833 §3, version 2): where an RPC program
//! listens. NFSv3 clients use it to find MOUNT and NLM when they are not
//! told their ports.
//!
//! Each call opens a TCP connection of its own, sends one procedure with
//! AUTH_NONE and closes it.

use std::net::SocketAddr;
use std::time::Duration;

use proto::portmap::*;
use rpc::OpaqueAuth;

use crate::v3::{Error, Result};

/// How long one port mapper call (connect included) may take before it
/// fails with [`std::io::ErrorKind::TimedOut`].
pub const PMAP_TIMEOUT: Duration = Duration::from_secs(10);

/// PMAPPROC_GETPORT over TCP: the TCP port of `program` version `version`
/// as registered with the port mapper at `addr` (normally port
/// [`PMAP_PORT`]), or `None` if it is not registered (the answer 0).
pub async fn getport(addr: SocketAddr, program: u32, version: u32) -> Result<Option<u16>> {
    let m = Mapping {
        prog: program,
        vers: version,
        prot: IPPROTO_TCP,
        port: 0,
    };
    let port: u32 = call(addr, PMAPPROC_GETPORT, &m).await?;
    match port {
        0 => Ok(None),
        p => u16::try_from(p)
            .map(Some)
            .map_err(|_| Error::Unexpected(format!("GETPORT answered port {p}"))),
    }
}

/// PMAPPROC_DUMP: every mapping the port mapper at `addr` holds.
pub async fn dump(addr: SocketAddr) -> Result<Vec<Mapping>> {
    Ok(call::<_, PmapList>(addr, PMAPPROC_DUMP, &()).await?.0)
}

/// PMAPPROC_NULL.
pub async fn null(addr: SocketAddr) -> Result<()> {
    call(addr, PMAPPROC_NULL, &()).await
}

async fn call<A: xdr::Pack, R: xdr::Unpack>(addr: SocketAddr, proc_: u32, args: &A) -> Result<R> {
    let once = async {
        let conn = rpc::connect(addr, None, rpc::ConnConfig::default()).await?;
        let r = conn
            .call_with(PMAP_PROG, PMAP_VERS, proc_, &OpaqueAuth::none(), args)
            .await;
        conn.close();
        let mut d = r?;
        Ok::<R, Error>(R::unpack(&mut d)?)
    };
    match tokio::time::timeout(PMAP_TIMEOUT, once).await {
        Ok(r) => r,
        Err(_) => Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("port mapper at {addr}: no answer in {PMAP_TIMEOUT:?}"),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rpc::{Call, Programs, Reply, ReplyFuture, Service};
    use tokio::net::TcpListener;
    use xdr::Unpack;

    use super::*;

    /// Knows NLM 4 on TCP at 4045, and a broken program 7 at port 70000.
    struct FakePmap;

    impl Service for FakePmap {
        fn call(&self, mut call: Call) -> ReplyFuture {
            Box::pin(async move {
                match call.proc_ {
                    PMAPPROC_NULL => Reply::success(&()),
                    PMAPPROC_GETPORT => match Mapping::unpack(&mut call.args) {
                        Ok(m) => Reply::success(&match (m.prog, m.vers, m.prot) {
                            (100021, 4, IPPROTO_TCP) => 4045u32,
                            (7, _, _) => 70000,
                            _ => 0,
                        }),
                        Err(_) => Reply::Error(rpc::ReplyError::GarbageArgs),
                    },
                    PMAPPROC_DUMP => Reply::success(&PmapList::from(vec![Mapping {
                        prog: 100021,
                        vers: 4,
                        prot: IPPROTO_TCP,
                        port: 4045,
                    }])),
                    _ => Reply::Error(rpc::ReplyError::ProcUnavail),
                }
            })
        }
    }

    #[tokio::test]
    async fn getport_and_dump_against_a_fake_portmapper() {
        let programs = Programs::new().add(PMAP_PROG, 2, 2, Arc::new(FakePmap));
        let addr = crate::serve_loopback(programs).await;
        null(addr).await.unwrap();
        assert_eq!(getport(addr, 100021, 4).await.unwrap(), Some(4045));
        assert_eq!(getport(addr, 100021, 3).await.unwrap(), None);
        assert!(matches!(
            getport(addr, 7, 1).await,
            Err(Error::Unexpected(_))
        ));
        assert_eq!(dump(addr).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn nobody_listening_is_an_error() {
        // Bind, learn the port, close: nothing listens there any more.
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        assert!(matches!(getport(addr, 100021, 4).await, Err(Error::Io(_))));
    }
}
