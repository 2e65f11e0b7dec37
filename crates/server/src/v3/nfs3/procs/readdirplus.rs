//! READDIRPLUS (RFC 1813 §3.3.17): READDIR with each entry's attributes
//! and filehandle, as many entries as fit in `dircount` bytes of names
//! and cookies and `maxcount` bytes of reply. The listing both share is
//! here ([`list`]).

use bytes::Bytes;
use proto::nfs3::*;

use crate::v3::nfs3::{fattr3, parent_of, Ctx, Obj};

/// The fixed part of a READDIR or READDIRPLUS reply: status, the
/// directory's post_op_attr at its largest, the verifier, the list's
/// end and eof.
pub const DIR_OK: usize = 4 + (4 + 84) + 8 + 4 + 4;

/// How much of the reply the entries may take.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Bytes of entries' names, cookies and file ids (READDIRPLUS's
    /// `dircount`).
    pub names: usize,
    /// Bytes of the whole reply (`count`, `maxcount`).
    pub total: usize,
    /// Bytes of the reply that are not entries.
    pub fixed: usize,
}

pub async fn run(cx: &Ctx, args: ReadDirPlus3Args) -> ReadDirPlus3Res {
    let dir = match cx.obj(&args.dir) {
        Ok(d) => d,
        Err(s) => return Res3::Fail(s, DirAttrFail3::default()),
    };
    let budget = Budget {
        names: args.dircount as usize,
        total: (args.maxcount as usize).min(cx.srv.cfg.max_io as usize),
        fixed: DIR_OK,
    };
    let r = list(cx, &dir, args.cookie, &args.cookieverf, budget, true).await;
    match r {
        Ok(l) => Res3::Ok(ReadDirPlus3ResOk {
            dir_attributes: l.dir_attributes,
            cookieverf: crate::exports::COOKIEVERF,
            reply: DirListPlus3 {
                entries: l.entries.into(),
                eof: l.eof,
            },
        }),
        Err(s) => Res3::Fail(
            s,
            DirAttrFail3 {
                dir_attributes: cx.post_op(&dir).await,
            },
        ),
    }
}

/// A page of a directory's listing.
pub struct Listed {
    pub entries: Vec<EntryPlus3>,
    pub eof: bool,
    /// The directory's, as it was listed.
    pub dir_attributes: PostOpAttr,
}

/// The entries of `dir` after `cookie` that fit `budget` ("." and ".."
/// first, cookies 1 and 2), with attributes and filehandles when `plus`,
/// whether the listing ended, and the directory's attributes. A `cookie`
/// from a listing with another verifier is NFS3ERR_BAD_COOKIE; no entry
/// fitting is NFS3ERR_TOOSMALL.
pub async fn list(
    cx: &Ctx,
    dir: &Obj,
    cookie: u64,
    verf: &CookieVerf3,
    budget: Budget,
    plus: bool,
) -> Result<Listed, NfsStat3> {
    if cookie != 0 && *verf != crate::exports::COOKIEVERF {
        return Err(NfsStat3::BadCookie);
    }
    let fsid = cx.export(dir.export)?.fsid;
    let total = budget.total;
    // The backend's listing, with "." and ".." before it: without a
    // thread hand-off when the backend keeps a current listing and needs
    // nothing else looked up (no attributes: READDIR, whose ".." needs
    // only the parent's file id), else on the pool.
    let fast = if plus {
        None
    } else {
        cx.vfs_nowait(dir.export, |v, c| {
            let from = if cookie <= 2 { 0 } else { cookie };
            let mut out = Vec::new();
            let mut used = 0usize;
            let listed = match v.list_dir_nowait(c, &dir.handle, from, &mut |e| {
                take(&mut out, &mut used, total, e)
            })? {
                Ok(l) => l,
                // A cookie it cannot resume from: the blocking path says so.
                Err(vfs::Errno(libc::EINVAL)) => return None,
                Err(e) => return Some(Err(e)),
            };
            let parent = Dot {
                fileid: listed.parent_fileid,
                obj: None,
            };
            let mut all = dots(&dir.handle, &listed.attr, Some(parent), cookie);
            all.append(&mut out);
            Some(Ok((all, listed.eof, listed.attr)))
        })
    };
    let listed = match fast {
        Some(r) => r,
        None => {
            let h = dir.handle.clone();
            cx.vfs(dir.export, move |v, c| {
                let a = v.getattr(&h)?;
                if a.ftype != vfs::FileType::Directory {
                    return Err(vfs::Errno(libc::ENOTDIR));
                }
                // ".." is looked up only on the page that lists it.
                let parent = if cookie < 2 {
                    let (ph, pa) = parent_of(v, c, &h, a.clone())?;
                    Some(Dot {
                        fileid: pa.fileid,
                        obj: Some((ph, pa)),
                    })
                } else {
                    None
                };
                let mut all = dots(&h, &a, parent, cookie);
                let from = if cookie <= 2 { 0 } else { cookie };
                let mut used = 0usize;
                let eof = v.readdir(c, &h, from, plus, &mut |e| {
                    take(&mut all, &mut used, total, e)
                })?;
                Ok((all, eof, a))
            })
            .await
        }
    };
    let listed = listed.map_err(|s| {
        if s == NfsStat3::Inval {
            NfsStat3::BadCookie
        } else {
            s
        }
    })?;
    let (all, mut eof, dir_attr) = listed;
    let mut entries = Vec::new();
    let (mut names, mut total) = (0usize, budget.fixed);
    let n = all.len();
    for vfs::DirEntry {
        name,
        cookie,
        fileid,
        obj,
        ..
    } in all
    {
        let (name_attributes, name_handle) = match (plus, obj) {
            (true, Some((handle, a))) => (
                Some(fattr3(&a, fsid)),
                Some(cx.fh(dir.export, handle, &a, Some(&dir.handle))),
            ),
            _ => (None, None),
        };
        let e = EntryPlus3 {
            fileid,
            name,
            cookie,
            name_attributes,
            name_handle,
        };
        let size = if plus {
            e.wire_len()
        } else {
            Entry3 {
                fileid,
                name: e.name.clone(),
                cookie,
            }
            .wire_len()
        };
        let name_size = 8 + 4 + e.name.len() + xdr::pad_len(e.name.len()) + 8;
        if total + size > budget.total || names + name_size > budget.names {
            eof = false;
            break;
        }
        total += size;
        names += name_size;
        entries.push(e);
    }
    if entries.is_empty() && !(eof && n == 0) {
        return Err(NfsStat3::TooSmall);
    }
    Ok(Listed {
        entries,
        eof,
        dir_attributes: Some(fattr3(&dir_attr, fsid)),
    })
}

/// ".." of a directory: its parent's file id, and handle and attributes
/// where READDIRPLUS needs them.
struct Dot {
    fileid: u64,
    obj: Option<(vfs::Handle, vfs::Attr)>,
}

/// "." and ".." of `h` (attributes `a`, its parent `parent`) as far as
/// they come after `cookie` (theirs are 1 and 2).
fn dots(h: &vfs::Handle, a: &vfs::Attr, parent: Option<Dot>, cookie: u64) -> Vec<vfs::DirEntry> {
    let this = Dot {
        fileid: a.fileid,
        obj: Some((h.clone(), a.clone())),
    };
    [
        (Bytes::from_static(b"."), 1u64, Some(this)),
        (Bytes::from_static(b".."), 2, parent),
    ]
    .into_iter()
    .filter_map(|(name, k, dot)| {
        let dot = dot.filter(|_| cookie < k)?;
        Some(vfs::DirEntry {
            name,
            cookie: k,
            fileid: dot.fileid,
            ftype: Some(vfs::FileType::Directory),
            obj: dot.obj,
        })
    })
    .collect()
}

/// Adds a backend entry to `out`; false once about `total` bytes of
/// entries (at the smallest entry size) are there, to stop the listing.
fn take(out: &mut Vec<vfs::DirEntry>, used: &mut usize, total: usize, e: vfs::DirEntry) -> bool {
    *used += 24 + e.name.len();
    out.push(e);
    *used < total
}
