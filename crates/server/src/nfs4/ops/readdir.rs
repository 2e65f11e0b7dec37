//! READDIR (RFC 8881 §18.23): lists the directory that is the current
//! filehandle, resuming after `cookie`, with the asked-for attributes of
//! each entry, in at most `maxcount` bytes of reply.
//!
//! The listing streams from the backend and stops as soon as the next entry
//! would not fit, so a reply never holds more than `maxcount` bytes however
//! large the directory. Cookies come from the backend and survive server
//! restarts, so the cookie verifier is constant.

use bytes::Bytes;
use proto::nfs4::*;

use super::lookup::need_dir;
use crate::nfs4::attrs;
use crate::nfs4::compound::Compound;
use crate::nfs4::errors::from_errno;
use crate::nfs4::filehandle::FhTarget;

/// The cookie verifier this server hands out (RFC 8881 §18.23.3).
const COOKIEVERF: Verifier4 = [0; NFS4_VERIFIER_SIZE];

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
    let with_attrs = !want.is_empty();
    let with_fs = with_attrs && attrs::needs_fsstat(&want);
    let with_fh = want.contains(FATTR4_FILEHANDLE);
    let rdattr_error = want.contains(FATTR4_RDATTR_ERROR);
    let srv = cx.srv.clone();
    let minorversion = cx.minorversion;
    let export = dir.export;
    let h = dir.handle.clone();
    let r = cx
        .vfs(export, move |fs, c| {
            need_dir(&fs.getattr(&h)?)?;
            let ex = srv.export(export).ok_or(vfs::Errno(libc::ESTALE))?;
            let fsstat = if with_fs { Some(fs.fsstat(&h)?) } else { None };
            let mut out = Listing {
                entries: Vec::new(),
                eof: false,
                toosmall: false,
            };
            let mut used = 0usize;
            let mut dirused = 0usize;
            let mut stopped = false;
            let mut failed = None;
            let reached = fs.readdir(c, &h, cookie, with_attrs, &mut |e| {
                let attrs = if with_attrs {
                    let obj = match e.obj {
                        Some(o) => Ok(o),
                        None => fs.lookup(c, &h, &e.name),
                    };
                    match obj {
                        Ok((eh, ea)) => {
                            let wire = if with_fh {
                                srv.fh.encode(&FhTarget::Object { export, handle: eh })
                            } else {
                                Bytes::new()
                            };
                            attrs::build(&srv, minorversion, ex, &wire, &ea, fsstat.as_ref(), &want)
                        }
                        // Gone since the listing was read: leave it out.
                        Err(vfs::Errno(libc::ENOENT)) => return true,
                        Err(err) if rdattr_error => Attrs {
                            rdattr_error: Some(from_errno(err)),
                            ..Default::default()
                        }
                        .encode_only(&want),
                        Err(err) => {
                            failed = Some(err);
                            stopped = true;
                            return false;
                        }
                    }
                } else {
                    Fattr4::default()
                };
                // dircount counts the cookie and the name (RFC 8881 §18.23.3).
                let dirlen = 8 + 4 + e.name.len() + xdr::pad_len(e.name.len());
                let entry = Entry4 {
                    cookie: e.cookie,
                    name: e.name,
                    attrs,
                };
                let len = DirList4::entry_wire_len(&entry);
                if used + len > budget {
                    out.toosmall = out.entries.is_empty();
                    stopped = true;
                    return false;
                }
                if dircount > 0 && !out.entries.is_empty() && dirused + dirlen > dircount {
                    stopped = true;
                    return false;
                }
                used += len;
                dirused += dirlen;
                out.entries.push(entry);
                true
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
            out.eof = reached && !stopped;
            Ok(Ok(out))
        })
        .await??;
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
