//! READDIR (RFC 8881 §18.23): lists the directory that is the current
//! filehandle, resuming after `cookie`, with the asked-for attributes of
//! each entry, in at most `maxcount` bytes of reply.
//!
//! The listing streams from the backend and stops as soon as the next entry
//! would not fit, so a reply never holds more than `maxcount` bytes however
//! large the directory. Cookies come from the backend and survive server
//! restarts, so the cookie verifier is constant.
//!
//! A pseudo directory lists its child pseudo directories and the roots of
//! the exports mounted on it that the client has a rule for (RFC 8881
//! §7.3); an export root is reported with its own fsid and the
//! mounted_on_fileid of the place it is mounted on.

use bytes::Bytes;
use proto::nfs4::*;

use crate::errors::from_errno;
use crate::exports::filehandle::parent_hint;
use crate::exports::filehandle::FhTarget;
use crate::exports::namespace::Child;
use crate::exports::Exports;
use crate::exports::COOKIEVERF;
use crate::instance::Server;
use crate::nfs4::attrs;
use crate::nfs4::check::need_dir;
use crate::nfs4::compound::context::Compound;

/// The fixed part of `READDIR4resok`: the verifier, the list's final
/// "no more entries" and `eof`.
const FIXED: usize = 8 + 4 + 4;

/// Room left for the rest of the COMPOUND reply (SEQUENCE, PUTFH and the
/// header) when the session's response size limits READDIR.
const COMPOUND_OVERHEAD: usize = 512;

pub async fn run(cx: &mut Compound, args: ReadDir4Args) -> ReadDir4Res {
    readdir(cx, args).await.into()
}

/// What one pass over the backend's listing produced.
struct Listing {
    entries: Vec<Entry4>,
    eof: bool,
    /// Not even the first entry fitted in `maxcount`.
    toosmall: bool,
}

/// A listing being filled within READDIR's `maxcount` and `dircount`.
struct Fill {
    out: Listing,
    used: usize,
    dirused: usize,
    budget: usize,
    dircount: usize,
    /// Stopped before the backend's listing ended.
    stopped: bool,
}

impl Fill {
    fn new(budget: usize, dircount: usize) -> Fill {
        Fill {
            out: Listing {
                entries: Vec::new(),
                eof: false,
                toosmall: false,
            },
            used: 0,
            dirused: 0,
            budget,
            dircount,
            stopped: false,
        }
    }

    /// Adds an entry if it fits; false (and stopped) if it does not.
    fn add(&mut self, cookie: u64, name: Bytes, attrs: Fattr4) -> bool {
        // dircount counts the cookie and the name (RFC 8881 §18.23.3).
        let dirlen = 8 + 4 + name.len() + xdr::pad_len(name.len());
        let entry = Entry4 {
            cookie,
            name,
            attrs,
        };
        let len = DirList4::entry_wire_len(&entry);
        if self.used + len > self.budget {
            self.out.toosmall = self.out.entries.is_empty();
            self.stopped = true;
            return false;
        }
        if self.dircount > 0
            && !self.out.entries.is_empty()
            && self.dirused + dirlen > self.dircount
        {
            self.stopped = true;
            return false;
        }
        self.used += len;
        self.dirused += dirlen;
        self.out.entries.push(entry);
        true
    }

    /// The listing, `reached` saying whether the backend's ended.
    fn finish(mut self, reached: bool) -> Listing {
        self.out.eof = reached && !self.stopped;
        self.out
    }
}

/// A READDIR asking at most for type and file id (`with_attrs` false, or
/// `from_dirents`), answered from a listing the backend keeps, on this
/// thread ([`vfs::Vfs::readdir_nowait`]); `None` to take the blocking path.
fn listed_nowait(
    cx: &Compound,
    export: u16,
    dir: &vfs::Handle,
    cookie: u64,
    want: &Bitmap4,
    budget: usize,
    dircount: usize,
) -> Option<Result<Listing, NfsStat4>> {
    let with_attrs = !want.is_empty();
    cx.vfs_nowait(export, |fs, c| {
        let mut fill = Fill::new(budget, dircount);
        let mut untyped = false;
        let reached = fs.readdir_nowait(c, dir, cookie, &mut |e| {
            let attrs = match (with_attrs, e.ftype) {
                (false, _) => Fattr4::default(),
                (true, Some(t)) => attrs::from_dirent(t, e.fileid, want),
                (true, None) => {
                    untyped = true;
                    return false;
                }
            };
            fill.add(e.cookie, e.name, attrs)
        })?;
        match reached {
            _ if untyped => None,
            // A cookie it cannot resume from: the blocking path says so.
            Err(vfs::Errno(libc::EINVAL)) if cookie != 0 => None,
            r => Some(r.map(|r| fill.finish(r))),
        }
    })
}

async fn readdir(cx: &mut Compound, args: ReadDir4Args) -> Result<ReadDir4ResOk, NfsStat4> {
    let dir = cx.cfh()?.clone();
    let cookie = args.cookie;
    if cookie == 1 || cookie == 2 {
        return Err(NfsStat4::Nfs4errBadCookie);
    }
    if cookie != 0 && args.cookieverf != COOKIEVERF {
        return Err(NfsStat4::Nfs4errNotSame);
    }
    let want = args.attr_request;
    if want.contains(FATTR4_TIME_ACCESS_SET) || want.contains(FATTR4_TIME_MODIFY_SET) {
        return Err(NfsStat4::Nfs4errInval);
    }
    let mut maxcount = (args.maxcount as usize).min(cx.srv.cfg.max_response as usize);
    if let Some(s) = &cx.session {
        maxcount =
            maxcount.min((s.fore.maxresponsesize as usize).saturating_sub(COMPOUND_OVERHEAD));
    }
    if maxcount < FIXED {
        return Err(NfsStat4::Nfs4errToosmall);
    }
    let budget = maxcount - FIXED;
    let dircount = args.dircount as usize;
    if let Some(node) = dir.pseudo {
        return pseudo(cx, node, cookie, &want, budget, dircount).await;
    }
    let with_attrs = !want.is_empty();
    // Type and file id come with the listing (d_type, d_ino): no lookup
    // per entry, unless the file system leaves an entry's type out or an
    // export is mounted somewhere (found by handle).
    let from_dirents =
        with_attrs && attrs::dirent_only(&want) && cx.exports.ns.junctions.is_empty();
    let export = dir.export;
    let h = dir.handle.clone();
    let fast = if !with_attrs || from_dirents {
        listed_nowait(cx, export, &h, cookie, &want, budget, dircount)
    } else {
        None
    };
    let r = match fast {
        Some(r) => r?,
        None => listed(cx, export, h, cookie, want, budget, dircount, from_dirents).await?,
    };
    if r.toosmall {
        return Err(NfsStat4::Nfs4errToosmall);
    }
    Ok(ReadDir4ResOk {
        cookieverf: COOKIEVERF,
        reply: DirList4 {
            entries: r.entries,
            eof: r.eof,
        },
    })
}

/// A READDIR's listing from the backend on the blocking pool, each entry
/// described as asked (looked up where the listing does not say enough).
#[allow(clippy::too_many_arguments)]
async fn listed(
    cx: &Compound,
    export: u16,
    h: vfs::Handle,
    cookie: u64,
    want: Bitmap4,
    budget: usize,
    dircount: usize,
    from_dirents: bool,
) -> Result<Listing, NfsStat4> {
    let with_attrs = !want.is_empty();
    let with_fs = with_attrs && attrs::needs_fsstat(&want);
    let with_fh = want.contains(FATTR4_FILEHANDLE);
    let rdattr_error = want.contains(FATTR4_RDATTR_ERROR);
    let srv = cx.srv.clone();
    let snapshot = cx.exports.clone();
    let minorversion = cx.view();
    cx.vfs(export, move |fs, c| {
        need_dir(&fs.getattr(&h)?)?;
        let ex = snapshot.get(export).ok_or(vfs::Errno(libc::ESTALE))?;
        let fsstat = if with_fs { Some(fs.fsstat(&h)?) } else { None };
        let mut fill = Fill::new(budget, dircount);
        let mut failed = None;
        let reached = fs.readdir(c, &h, cookie, with_attrs && !from_dirents, &mut |e| {
            let listed = e.ftype.filter(|_| from_dirents);
            let attrs = if let Some(t) = listed {
                attrs::from_dirent(t, e.fileid, &want)
            } else if with_attrs {
                let obj = match e.obj {
                    Some(o) => Ok(o),
                    None => fs.lookup(c, &h, &e.name),
                };
                let got = match obj {
                    Ok((eh, _))
                        if !snapshot.ns.junctions.is_empty()
                            && snapshot.ns.junctions.contains_key(&(export, eh.clone())) =>
                    {
                        mounted(&srv, &snapshot, minorversion, export, &eh, &want, with_fs)
                    }
                    Ok((eh, ea)) => {
                        let wire = if with_fh {
                            srv.fh.encode(&FhTarget::Object {
                                export,
                                parent: parent_hint(fs, &ea, &h),
                                handle: eh,
                            })
                        } else {
                            Bytes::new()
                        };
                        Ok(attrs::build(
                            &srv,
                            minorversion,
                            ex,
                            &wire,
                            &ea,
                            fsstat.as_ref(),
                            &want,
                        ))
                    }
                    // Gone since the listing was read: leave it out.
                    Err(vfs::Errno(libc::ENOENT)) => return true,
                    Err(err) => Err(err),
                };
                match got {
                    Ok(attrs) => attrs,
                    Err(err) if rdattr_error => Attrs {
                        rdattr_error: Some(from_errno(err)),
                        ..Default::default()
                    }
                    .encode_only(&want),
                    Err(err) => {
                        failed = Some(err);
                        return false;
                    }
                }
            } else {
                Fattr4::default()
            };
            fill.add(e.cookie, e.name, attrs)
        });
        let reached = match reached {
            Ok(r) => r,
            // A cookie the backend cannot resume from.
            Err(vfs::Errno(libc::EINVAL)) if cookie != 0 => {
                return Ok(Err(NfsStat4::Nfs4errBadCookie));
            }
            Err(e) => return Err(e),
        };
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(Ok(fill.finish(reached)))
    })
    .await?
}

/// The attributes of the root of the export mounted on `junction`, a
/// directory of `export` (read inside a backend call).
fn mounted(
    srv: &Server,
    exports: &Exports,
    minorversion: attrs::View,
    export: u16,
    junction: &vfs::Handle,
    want: &Bitmap4,
    with_fs: bool,
) -> vfs::Result<Fattr4> {
    let inner = exports
        .ns
        .junctions
        .get(&(export, junction.clone()))
        .and_then(|&id| exports.get(id))
        .ok_or(vfs::Errno(libc::ESTALE))?;
    export_root_attrs(srv, minorversion, inner, want, with_fs)
}

/// The attributes of an export's root as a directory entry of the place
/// it is mounted on (blocking).
fn export_root_attrs(
    srv: &Server,
    minorversion: attrs::View,
    e: &crate::exports::export::Export,
    want: &Bitmap4,
    with_fs: bool,
) -> vfs::Result<Fattr4> {
    let root = e.vfs.root();
    let a = e.vfs.getattr(&root)?;
    let fs = if with_fs {
        Some(e.vfs.fsstat(&root)?)
    } else {
        None
    };
    let wire = if want.contains(FATTR4_FILEHANDLE) {
        srv.fh.encode(&FhTarget::Object {
            export: e.id,
            handle: root,
            parent: None,
        })
    } else {
        Bytes::new()
    };
    Ok(attrs::build(
        srv,
        minorversion,
        e,
        &wire,
        &a,
        fs.as_ref(),
        want,
    ))
}

/// READDIR of pseudo directory `node`: entry k has cookie k + 3.
async fn pseudo(
    cx: &Compound,
    node: u16,
    cookie: u64,
    want: &Bitmap4,
    budget: usize,
    dircount: usize,
) -> Result<ReadDir4ResOk, NfsStat4> {
    let srv = cx.srv.clone();
    let n = cx.exports.ns.node(node).ok_or(NfsStat4::Nfs4errStale)?;
    if cookie > n.children.len() as u64 + 2 {
        return Err(NfsStat4::Nfs4errBadCookie);
    }
    let peer = cx.conn.peer().ip();
    let with_fs = attrs::needs_fsstat(want);
    let rdattr_error = want.contains(FATTR4_RDATTR_ERROR);
    let mut entries = Vec::new();
    let (mut used, mut dirused) = (0usize, 0usize);
    let mut eof = true;
    for (k, (name, child)) in n.children.iter().enumerate() {
        let c = k as u64 + 3;
        if c <= cookie || !cx.exports.visible(*child, peer) {
            continue;
        }
        let attrs = if want.is_empty() {
            Fattr4::default()
        } else {
            match *child {
                Child::Node(m) => {
                    let wire = srv.fh.encode(&FhTarget::Pseudo(m));
                    attrs::pseudo(cx, m, &wire, want).await?
                }
                // A referral (RFC 8881 §11.4.2): its locations if asked
                // for; else rdattr_error NFS4ERR_MOVED if asked for; else
                // the whole READDIR fails. Never a filehandle.
                Child::Referral(r) => {
                    let referral = cx.exports.ns.referral(r).ok_or(NfsStat4::Nfs4errStale)?;
                    let error = if attrs::asks_locations(want) {
                        NfsStat4::Nfs4Ok
                    } else if rdattr_error {
                        NfsStat4::Nfs4errMoved
                    } else {
                        return Err(NfsStat4::Nfs4errMoved);
                    };
                    attrs::absent_attrs(referral, r, error).encode_only(want)
                }
                Child::Export(id) => {
                    let e = cx.export(id)?;
                    let (s2, w2, minor) = (srv.clone(), want.clone(), cx.view());
                    let e2 = e.clone();
                    let r = cx
                        .blocking(e.vfs.clone(), vfs::Creds::root(), move |_, _| {
                            Ok(export_root_attrs(&s2, minor, &e2, &w2, with_fs))
                        })
                        .await?;
                    match r {
                        Ok(a) => a,
                        Err(err) if rdattr_error => Attrs {
                            rdattr_error: Some(from_errno(err)),
                            ..Default::default()
                        }
                        .encode_only(want),
                        Err(err) => return Err(from_errno(err)),
                    }
                }
            }
        };
        let dirlen = 8 + 4 + name.len() + xdr::pad_len(name.len());
        let entry = Entry4 {
            cookie: c,
            name: name.clone(),
            attrs,
        };
        let len = DirList4::entry_wire_len(&entry);
        if used + len > budget {
            if entries.is_empty() {
                return Err(NfsStat4::Nfs4errToosmall);
            }
            eof = false;
            break;
        }
        if dircount > 0 && !entries.is_empty() && dirused + dirlen > dircount {
            eof = false;
            break;
        }
        used += len;
        dirused += dirlen;
        entries.push(entry);
    }
    Ok(ReadDir4ResOk {
        cookieverf: COOKIEVERF,
        reply: DirList4 { entries, eof },
    })
}
