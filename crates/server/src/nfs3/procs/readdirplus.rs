//! READDIRPLUS (RFC 1813 §3.3.17): READDIR with each entry's attributes
//! and filehandle, as many entries as fit in `dircount` bytes of names
//! and cookies and `maxcount` bytes of reply. The listing both share is
//! here ([`list`]).

use bytes::Bytes;
use proto::nfs3::*;

use crate::nfs3::{fattr3, parent_of, parent_of_nowait, Ctx, Obj};

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
    let dir_attributes = cx.post_op(&dir).await;
    match r {
        Ok((entries, eof)) => Res3::Ok(ReadDirPlus3ResOk {
            dir_attributes,
            cookieverf: crate::nfs4::dirs::COOKIEVERF,
            reply: DirListPlus3 {
                entries: entries.into(),
                eof,
            },
        }),
        Err(s) => Res3::Fail(s, DirAttrFail3 { dir_attributes }),
    }
}

/// The entries of `dir` after `cookie` that fit `budget` ("." and ".."
/// first, cookies 1 and 2), with attributes and filehandles when `plus`,
/// and whether the listing ended. A `cookie` from a listing with another
/// verifier is NFS3ERR_BAD_COOKIE; no entry fitting is NFS3ERR_TOOSMALL.
pub async fn list(
    cx: &Ctx,
    dir: &Obj,
    cookie: u64,
    verf: &CookieVerf3,
    budget: Budget,
    plus: bool,
) -> Result<(Vec<EntryPlus3>, bool), NfsStat3> {
    if cookie != 0 && *verf != crate::nfs4::dirs::COOKIEVERF {
        return Err(NfsStat3::BadCookie);
    }
    let fsid = cx.export(dir.export)?.fsid;
    let total = budget.total;
    // The backend's listing, with "." and ".." before it: without a
    // thread hand-off when the backend keeps a current listing and needs
    // nothing else looked up (no attributes: READDIR), else on the pool.
    let fast = if plus {
        None
    } else {
        cx.vfs_nowait(dir.export, |v, c| {
            let h = &dir.handle;
            let a = match v.getattr_nowait(h)? {
                Ok(a) if a.ftype == vfs::FileType::Directory => a,
                Ok(_) => return Some(Err(vfs::Errno(libc::ENOTDIR))),
                Err(e) => return Some(Err(e)),
            };
            let parent = if cookie < 2 {
                match parent_of_nowait(v, c, h, a.clone())? {
                    Ok(p) => Some(p),
                    Err(e) => return Some(Err(e)),
                }
            } else {
                None
            };
            let mut missed = false;
            let r = gather(h, a, parent, cookie, total, |from, each| {
                v.readdir_nowait(c, h, from, each).unwrap_or_else(|| {
                    missed = true;
                    Ok(true)
                })
            });
            (!missed).then_some(r)
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
                    Some(parent_of(v, c, &h, a.clone())?)
                } else {
                    None
                };
                gather(&h, a, parent, cookie, total, |from, each| {
                    v.readdir(c, &h, from, plus, each)
                })
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
    let (all, mut eof) = listed;
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
    Ok((entries, eof))
}

/// "." and ".." of `h` (attributes `a`, its parent `parent`) as far as
/// they come after `cookie` (theirs are 1 and 2), then what `readdir`
/// lists from the backend's cookie until about `total` bytes of entries.
fn gather(
    h: &vfs::Handle,
    a: vfs::Attr,
    parent: Option<(vfs::Handle, vfs::Attr)>,
    cookie: u64,
    total: usize,
    readdir: impl FnOnce(u64, &mut dyn FnMut(vfs::DirEntry) -> bool) -> vfs::Result<bool>,
) -> vfs::Result<(Vec<vfs::DirEntry>, bool)> {
    let mut out: Vec<vfs::DirEntry> = Vec::new();
    let dots = [
        (Bytes::from_static(b"."), 1u64, Some((h.clone(), a))),
        (Bytes::from_static(b".."), 2, parent),
    ];
    for (name, k, obj) in dots {
        if let Some(obj) = obj.filter(|_| cookie < k) {
            out.push(vfs::DirEntry {
                name,
                cookie: k,
                fileid: obj.1.fileid,
                ftype: Some(vfs::FileType::Directory),
                obj: Some(obj),
            });
        }
    }
    let from = if cookie <= 2 { 0 } else { cookie };
    let mut used = 0usize;
    let eof = readdir(from, &mut |e| {
        // Enough to fill the reply at the smallest entry size.
        used += 24 + e.name.len();
        out.push(e);
        used < total
    })?;
    Ok((out, eof))
}
