//! CREATE (RFC 1813 §3.3.8): a regular file, UNCHECKED (an existing one is
//! opened, a size of 0 truncating it), GUARDED (NFS3ERR_EXIST if it
//! exists) or EXCLUSIVE (the verifier kept with the file, so that a
//! retransmission finds the file it made; the creator remembered as for
//! NFSv4, `conflicts::exclusive`).

use proto::nfs3::*;

use crate::v3::nfs3::{create_in, from_errno, sattr, Ctx};

pub async fn run(cx: &Ctx, args: Create3Args) -> Create3Res {
    let (mode, mut set) = match args.how {
        CreateHow3::Unchecked(s) => (vfs::CreateMode::Unchecked, sattr(&s)),
        CreateHow3::Guarded(s) => (vfs::CreateMode::Guarded, sattr(&s)),
        CreateHow3::Exclusive(v) => (vfs::CreateMode::Exclusive(v), vfs::SetAttr::default()),
    };
    set.mode.get_or_insert(0o644);
    // A truncation of an existing file recalls its NFSv4 delegations.
    if mode == vfs::CreateMode::Unchecked && set.size == Some(0) {
        if let Ok(dir) = cx.obj(&args.where_.dir) {
            if let Err(s) = cx.settle_name(&dir, &args.where_.name).await {
                return Res3::Fail(s, DirWcc3::default());
            }
        }
    }
    let srv = cx.srv.clone();
    let export = cx
        .obj(&args.where_.dir)
        .map(|o| o.export)
        .unwrap_or_default();
    let creator = v3_creator(cx.peer);
    create_in(cx, &args.where_, move |v, c, dir, name| {
        let exclusive = matches!(mode, vfs::CreateMode::Exclusive(_));
        let _name = exclusive.then(|| srv.exclusive.name_lock(export, dir, name));
        let (h, a, created) = v
            .create_file(c, dir, name, mode, &set)
            .map_err(from_errno)?;
        if a.ftype != vfs::FileType::Regular {
            return Err(NfsStat3::Exist);
        }
        if exclusive {
            if created {
                srv.exclusive.record(export, &h, creator);
            } else if !srv.exclusive.may_retransmit(export, &h, creator) {
                return Err(NfsStat3::Exist);
            }
        } else if !created && set.size == Some(0) && a.size != 0 {
            let trunc = vfs::SetAttr {
                size: Some(0),
                ..Default::default()
            };
            let a = v.setattr(c, &h, &trunc).map_err(from_errno)?;
            return Ok((h, a, false));
        }
        Ok((h, a, created))
    })
    .await
}

/// The exclusive creator an NFSv3 client stands for: its address (NFSv3
/// has no client ID; these never equal an NFSv4 one, whose high half is
/// the server's epoch).
fn v3_creator(peer: std::net::SocketAddr) -> proto::nfs4::ClientId4 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    peer.ip().hash(&mut h);
    0xffff_ffff_0000_0000 | (h.finish() & 0xffff_ffff)
}
