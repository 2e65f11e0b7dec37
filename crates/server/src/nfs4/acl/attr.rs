//! The `acl` attribute as GETATTR reads it (RFC 8881 §6.2.1, §5.6): the
//! object's POSIX ACLs (its mode's, when it has none or the file system
//! keeps none) as NFSv4 ACEs, users and groups by name or by number.

use proto::nfs4::Nfsace4;
use vfs::acl::PosixAcl;

use super::{from_posix, to_wire, Ace, Who};
use crate::instance::Server;

/// The ACEs of the object with attributes `a`, its POSIX ACLs as `get`
/// gives them (`true`: a directory's default ACL).
fn aces<E>(
    a: &vfs::Attr,
    mut get: impl FnMut(bool) -> Result<Option<PosixAcl>, E>,
) -> Result<Vec<Ace>, E> {
    let dir = a.ftype == vfs::FileType::Directory;
    let access = get(false)?.unwrap_or_else(|| PosixAcl::from_mode(a.mode));
    let default = if dir { get(true)? } else { None };
    Ok(from_posix(&access, default.as_ref(), dir))
}

/// The ACL of the object with attributes `a`, read from the backend
/// (blocking: on the pool), named (`names`) or numbered.
pub fn read(
    srv: &Server,
    names: bool,
    v: &dyn vfs::Vfs,
    c: &vfs::Creds,
    h: &vfs::Handle,
    a: &vfs::Attr,
) -> vfs::Result<Vec<Nfsace4>> {
    let aces = aces(a, |default| match v.get_acl(c, h, default) {
        Ok(acl) => Ok(acl),
        Err(vfs::Errno(libc::EOPNOTSUPP)) => Ok(None),
        Err(e) => Err(e),
    })?;
    Ok(on_wire(srv, names, &aces))
}

/// [`read`] without blocking: the ACL when the backend still knows the
/// object's POSIX ACLs unchanged ([`vfs::Vfs::get_acl_nowait`]) and no
/// user or group needs a name looked up; None when only the pool can say.
pub fn known(
    srv: &Server,
    names: bool,
    v: &dyn vfs::Vfs,
    h: &vfs::Handle,
    a: &vfs::Attr,
) -> Option<Vec<Nfsace4>> {
    let aces = aces(a, |default| v.get_acl_nowait(h, default, a).ok_or(())).ok()?;
    let named = |x: &Ace| matches!(x.who, Who::User(_) | Who::GroupId(_));
    if names && aces.iter().any(named) {
        return None;
    }
    Some(on_wire(srv, names, &aces))
}

/// ACEs as sent, users and groups named (a look-up that may block) or
/// numbered.
fn on_wire(srv: &Server, names: bool, aces: &[Ace]) -> Vec<Nfsace4> {
    let name = |w: Who| match w {
        Who::User(u) if names => srv.ids.owner_name(u),
        Who::GroupId(g) if names => srv.ids.group_owner_name(g),
        Who::User(id) | Who::GroupId(id) => id.to_string(),
        _ => String::new(),
    };
    aces.iter().map(|x| to_wire(x, name)).collect()
}
