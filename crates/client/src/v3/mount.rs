//! MOUNT v3 calls (RFC 1813 Appendix I), each on a connection of its own
//! that is closed afterwards.

use std::net::SocketAddr;

use bytes::Bytes;
use proto::mount::*;
use rpc::{Connection, OpaqueAuth};
use xdr::{Pack, Unpack};

use super::{Error, Result};

async fn call<A: Pack, R: Unpack>(
    addr: SocketAddr,
    auth: &rpc::Auth,
    proc_: u32,
    args: &A,
) -> Result<R> {
    let conn = rpc::connect(addr, None, rpc::ConnConfig::default()).await?;
    let r = call_on(&conn, &auth.to_opaque(), proc_, args).await;
    conn.close();
    r
}

async fn call_on<A: Pack, R: Unpack>(
    conn: &Connection,
    cred: &OpaqueAuth,
    proc_: u32,
    args: &A,
) -> Result<R> {
    let mut d = conn
        .call_with(MOUNT_PROGRAM, MOUNT_V3, proc_, cred, args)
        .await?;
    Ok(R::unpack(&mut d)?)
}

/// The export's path as a `dirpath`.
pub fn dirpath(path: &str) -> DirPath {
    DirPath(Bytes::copy_from_slice(path.as_bytes()))
}

/// MOUNTPROC3_MNT: the root file handle of the export at `path` and the
/// authentication flavors it accepts.
pub async fn mnt(addr: SocketAddr, path: &str, auth: &rpc::Auth) -> Result<MountRes3Ok> {
    match call(addr, auth, MOUNTPROC3_MNT, &dirpath(path)).await? {
        MountRes3::Ok(ok) => Ok(ok),
        MountRes3::Err(status) => Err(Error::Mount {
            path: path.to_owned(),
            status,
        }),
    }
}

/// MOUNTPROC3_UMNT: forgets the mount of `path` (no result).
pub async fn umnt(addr: SocketAddr, path: &str, auth: &rpc::Auth) -> Result<()> {
    call(addr, auth, MOUNTPROC3_UMNT, &dirpath(path)).await
}

/// MOUNTPROC3_UMNTALL: forgets every mount of this client.
pub async fn umntall(addr: SocketAddr, auth: &rpc::Auth) -> Result<()> {
    call(addr, auth, MOUNTPROC3_UMNTALL, &()).await
}

/// MOUNTPROC3_DUMP: the mounts the server knows of.
pub async fn dump(addr: SocketAddr, auth: &rpc::Auth) -> Result<Vec<MountBody>> {
    Ok(call::<_, MountList>(addr, auth, MOUNTPROC3_DUMP, &())
        .await?
        .0)
}

/// MOUNTPROC3_EXPORT: the exports and who may mount them.
pub async fn exports(addr: SocketAddr, auth: &rpc::Auth) -> Result<Vec<ExportNode>> {
    Ok(call::<_, Exports>(addr, auth, MOUNTPROC3_EXPORT, &())
        .await?
        .0)
}

/// MOUNTPROC3_NULL.
pub async fn null(addr: SocketAddr, auth: &rpc::Auth) -> Result<()> {
    call(addr, auth, MOUNTPROC3_NULL, &()).await
}
