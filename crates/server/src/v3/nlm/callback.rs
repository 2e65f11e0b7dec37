//! Calls from the server to a client's RPC services: its port mapper
//! (where its lock manager and status monitor listen), NLM_GRANTED and the
//! `_RES` answers to `_MSG` calls (XNFS ch. 10), SM_NOTIFY (ch. 11). Over
//! TCP, each on a connection of its own, each bounded in time.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use proto::portmap::{Mapping, IPPROTO_TCP, PMAPPROC_GETPORT, PMAP_PROG, PMAP_VERS};
use rpc::{Auth, ConnConfig};
use xdr::{Decoder, Pack, Unpack};

/// How long one call to a client may take, connecting included.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a call to a client failed.
#[derive(Debug, thiserror::Error)]
pub enum CallbackError {
    #[error("{0} not registered with the port mapper")]
    NotRegistered(&'static str),
    #[error("connecting: {0}")]
    Connect(std::io::Error),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("call failed: {0}")]
    Call(#[from] rpc::CallError),
    #[error("bad result: {0}")]
    Garbage(#[from] xdr::Error),
}

/// Calls `proc_` of `prog`/`vers` at `addr` with `args` as this server
/// (AUTH_SYS root, machine name `machine`): the decoder at the results.
pub async fn call<A: Pack>(
    addr: SocketAddr,
    prog: u32,
    vers: u32,
    proc_: u32,
    machine: &str,
    args: &A,
) -> Result<Decoder, CallbackError> {
    let go = async {
        let conn = rpc::connect(addr, None, ConnConfig::default())
            .await
            .map_err(CallbackError::Connect)?;
        let cred = Auth::sys(0, 0, Vec::new(), machine).to_opaque();
        let r = conn.call_with(prog, vers, proc_, &cred, args).await;
        conn.close();
        Ok(r?)
    };
    tokio::time::timeout(CALL_TIMEOUT, go)
        .await
        .map_err(|_| CallbackError::Timeout(CALL_TIMEOUT))?
}

/// Calls `proc_` of `prog`/`vers` (`name`, for errors) at `host`, found
/// through the host's port mapper on `pmap_port`: the decoder at the
/// results.
#[allow(clippy::too_many_arguments)]
pub async fn call_host<A: Pack>(
    host: IpAddr,
    pmap_port: u16,
    prog: u32,
    vers: u32,
    proc_: u32,
    name: &'static str,
    machine: &str,
    args: &A,
) -> Result<Decoder, CallbackError> {
    let at = port_of(host, pmap_port, prog, vers, name, machine).await?;
    call(at, prog, vers, proc_, machine, args).await
}

/// Where `prog`/`vers` listens on TCP at `host`, asked of its port mapper
/// on `pmap_port` (RFC 1833 §3.2 PMAPPROC_GETPORT).
async fn port_of(
    host: IpAddr,
    pmap_port: u16,
    prog: u32,
    vers: u32,
    name: &'static str,
    machine: &str,
) -> Result<SocketAddr, CallbackError> {
    let m = Mapping {
        prog,
        vers,
        prot: IPPROTO_TCP,
        port: 0,
    };
    let mut d = call(
        SocketAddr::new(host, pmap_port),
        PMAP_PROG,
        PMAP_VERS,
        PMAPPROC_GETPORT,
        machine,
        &m,
    )
    .await?;
    let port = u32::unpack(&mut d)?;
    match u16::try_from(port) {
        Ok(p) if p != 0 => Ok(SocketAddr::new(host, p)),
        _ => Err(CallbackError::NotRegistered(name)),
    }
}
