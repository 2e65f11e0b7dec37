//! OPEN (RFC 8881 §18.16).
//!
//! Claims: CLAIM_NULL (a name in the current directory, possibly created),
//! CLAIM_FH (the current filehandle), CLAIM_PREVIOUS (a reclaim in the
//! grace period after a restart, by a client recorded before it: the
//! current filehandle is the file, as with CLAIM_FH), and CLAIM_DELEGATE_CUR
//! and CLAIM_DELEG_CUR_FH (an open under a delegation the client holds, by
//! name or by the current filehandle). Delegations are not kept across a
//! restart: a CLAIM_PREVIOUS reclaim of an open that had a delegation gets
//! one again if it can (§10.2.1). Across a client's own restart the server
//! keeps its delegations a lease, unless a conflict comes first
//! (`state::Tables::keep_prev_delegs`): CLAIM_DELEGATE_PREV (by name) and
//! CLAIM_DELEG_PREV_FH open the file and get a delegation again;
//! NFS4ERR_RECLAIM_BAD when none was kept.
//!
//! Delegations (§10.2, §10.4): an open for reading may be granted a read
//! delegation, one for writing a write delegation
//! (`state::Tables::grant_deleg` decides), if the client's back channel
//! works and it did not ask for none (OPEN4_SHARE_ACCESS_WANT_* with
//! why_no_deleg, §18.16.3). An open first recalls the delegations of the
//! file it conflicts with (`nfs4::deleg::settle_open`): for writing, or
//! denying reads, any other; for reading, a write delegation.

use proto::nfs4::*;

use crate::conflicts::directories;
use crate::nfs4::attrs;
use crate::nfs4::check::{regular, share_bits};
use crate::nfs4::compound::context::{check_name, Compound};
use crate::nfs4::deleg;
use crate::nfs4::dirdeleg;
use crate::nfs4::dirs::pseudo_child;
use crate::stable::durable;

pub async fn run(cx: &mut Compound, args: Open4Args) -> Open4Res {
    open(cx, args).await.into()
}

/// The file an OPEN settled on, before state is attached.
struct Target {
    handle: vfs::Handle,
    attr: vfs::Attr,
    /// Attributes set (at creation, or the size of a truncation).
    attrset: Bitmap4,
    cinfo: ChangeInfo4,
    /// Truncate the existing file once the open is granted.
    truncate: bool,
    /// This OPEN made the file (no local process can hold a lock on it).
    created: bool,
}

async fn open(cx: &mut Compound, args: Open4Args) -> Result<Open4ResOk, NfsStat4> {
    let client = cx.clientid()?;
    // NFSv4.0 has the first four claims only (RFC 7530 §16.16.1).
    if cx.minorversion == 0
        && matches!(
            args.claim,
            OpenClaim4::Fh | OpenClaim4::DelegCurFh(_) | OpenClaim4::DelegPrevFh
        )
    {
        return Err(NfsStat4::Nfs4errBadxdr);
    }
    let (access, deny) = share_bits(args.share_access, args.share_deny, cx.minorversion)?;
    let want = args.share_access & OPEN4_SHARE_ACCESS_WANT_DELEG_MASK;
    let fh = cx.cfh()?.clone();
    // Reclaims only in the grace period, by clients recorded before the
    // restart; new opens only after it, and after the client's
    // RECLAIM_COMPLETE (RFC 8881 §8.4.2.1, §18.51.3).
    let reclaim = matches!(args.claim, OpenClaim4::Previous(_));
    // A reclaim of an open that had a delegation asks it back.
    let reclaims_deleg = matches!(
        args.claim,
        OpenClaim4::Previous(
            OpenDelegationType4::OpenDelegateRead
                | OpenDelegationType4::OpenDelegateWrite
                | OpenDelegationType4::OpenDelegateReadAttrsDeleg
                | OpenDelegationType4::OpenDelegateWriteAttrsDeleg
        )
    );
    // A client reclaiming, after its own restart, a delegation the server
    // kept for it (§10.2.1): before its RECLAIM_COMPLETE, outside any
    // grace period (`state::Tables::take_prev_deleg` checks).
    let prev_claim = matches!(
        args.claim,
        OpenClaim4::DelegatePrev(_) | OpenClaim4::DelegPrevFh
    );
    if !prev_claim {
        cx.srv.state().may_take_state(client, reclaim)?;
    }
    let creates = matches!(
        (&args.claim, &args.openhow),
        (OpenClaim4::Null(_), OpenFlag4::Create(_))
    );
    if let Some(node) = fh.pseudo {
        // Pseudo directories hold only directories (RFC 8881 §7.4).
        return Err(match args.claim {
            OpenClaim4::Null(_) if creates => NfsStat4::Nfs4errRofs,
            OpenClaim4::Null(name) => {
                let name = check_name(&name)?;
                pseudo_child(cx, node, &name)?;
                NfsStat4::Nfs4errIsdir
            }
            _ => NfsStat4::Nfs4errIsdir,
        });
    }
    // A read-only export (or rule) refuses creation and opens for
    // writing, as the Linux server does.
    if creates || access & OPEN4_SHARE_ACCESS_WRITE != 0 {
        cx.check_writable(&fh)?;
    }
    let by_name_claim = matches!(
        args.claim,
        OpenClaim4::Null(_) | OpenClaim4::DelegateCur(_) | OpenClaim4::DelegatePrev(_)
    );
    // An open under the client's own delegation (§18.16.3).
    let under_deleg = match &args.claim {
        OpenClaim4::DelegateCur(d) => Some(d.delegate_stateid),
        OpenClaim4::DelegCurFh(sid) => Some(*sid),
        _ => None,
    };
    // An existing file opened for reading is often settled from the
    // backend's caches, without a thread hand-off.
    let read_only = access == OPEN4_SHARE_ACCESS_READ;
    let target = match args.claim {
        OpenClaim4::Null(name) => {
            let name = check_name(&name)?;
            let fast = match (read_only, &args.openhow) {
                (true, OpenFlag4::NoCreate) => existing_nowait(cx, &fh, Some(&name)),
                _ => None,
            };
            match fast {
                Some(t) => t?,
                None if creates => {
                    // Other clients' delegations of the directory (§10.9).
                    let dir = fh.key();
                    directories::settle(dirdeleg::by(cx), &dir, NotifyType4::AddEntry).await?;
                    let _order = directories::order(dirdeleg::by(cx), &[&dir]).await;
                    let t = by_name(cx, &fh, name.clone(), &args.openhow, access).await?;
                    if t.cinfo.before != t.cinfo.after {
                        directories::added(dirdeleg::by(cx), &dir, &name);
                    }
                    t
                }
                None => by_name(cx, &fh, name, &args.openhow, access).await?,
            }
        }
        OpenClaim4::DelegateCur(d) => {
            let name = check_name(&d.file)?;
            let named = by_name(cx, &fh, name, &OpenFlag4::NoCreate, access).await;
            // The name is the one the client knew (an NFSv4.0 client has
            // no CLAIM_DELEG_CUR_FH): a local process may have renamed or
            // removed the file since, which recalled the delegation. The
            // stateid says which file it is; that one is opened.
            let held = cx
                .resolve_stateid(&d.delegate_stateid)
                .ok()
                .and_then(|s| cx.srv.state().delegation_file(client, &s))
                .filter(|k| k.0 == fh.export);
            match (named, held) {
                (Ok(t), Some(k)) if t.handle.0 != k.1 => {
                    by_fh(cx, &cx.make_fh(k.0, vfs::Handle(k.1)), access).await?
                }
                (Err(_), Some(k)) => by_fh(cx, &cx.make_fh(k.0, vfs::Handle(k.1)), access).await?,
                (named, _) => named?,
            }
        }
        OpenClaim4::DelegatePrev(name) => {
            let name = check_name(&name)?;
            by_name(cx, &fh, name, &OpenFlag4::NoCreate, access).await?
        }
        OpenClaim4::Fh
        | OpenClaim4::Previous(_)
        | OpenClaim4::DelegCurFh(_)
        | OpenClaim4::DelegPrevFh => {
            match read_only.then(|| existing_nowait(cx, &fh, None)).flatten() {
                Some(t) => t?,
                None => by_fh(cx, &fh, access).await?,
            }
        }
    };
    let key = (fh.export, target.handle.0.clone());
    if prev_claim {
        cx.srv.state().has_prev_delegation(client, &key)?;
    }
    if let Some(sid) = under_deleg {
        let sid = cx.resolve_stateid(&sid)?;
        cx.srv.state().check_delegation(client, &sid, &key)?;
    }
    // Writing, or denying others reads, conflicts with other clients'
    // delegations (§10.4.6), reading with write delegations: they are
    // recalled first.
    // A truncation (a create of an existing file with size 0) writes.
    let truncates = target.truncate && target.attr.size != 0;
    let reads =
        access & OPEN4_SHARE_ACCESS_WRITE == 0 && deny & OPEN4_SHARE_DENY_READ == 0 && !truncates;
    // Two clients reclaiming conflicting share reservations: one of them
    // is wrong (RFC 8881 §15.1.9.5).
    let denied = || match reclaim {
        true => NfsStat4::Nfs4errReclaimConflict,
        false => NfsStat4::Nfs4errShareDenied,
    };
    // An open the share reservations held refuse anyway recalls nothing
    // (looked at only while some delegation exists: OPEN refuses it below
    // otherwise, without a second look at the tables).
    let state = cx.srv.state();
    if state.delegations_outstanding() && state.share_denied(client, &key, access, deny) {
        return Err(denied());
    }
    deleg::settle_open(cx, &key, &args.owner.owner, reads).await?;
    let stateid = cx
        .srv
        .state()
        .open(client, &args.owner.owner, &key, access, deny)
        .map_err(|e| match e {
            NfsStat4::Nfs4errShareDenied => denied(),
            e => e,
        })?;
    let mut attrset = target.attrset;
    if target.truncate && target.attr.size != 0 {
        let handle = target.handle.clone();
        let set = vfs::SetAttr {
            size: Some(0),
            ..Default::default()
        };
        if let Err(e) = cx
            .vfs(fh.export, move |v, c| v.setattr(c, &handle, &set))
            .await
        {
            // Undo a fresh open; an upgrade of an older one stays.
            if stateid.seqid == 1 {
                let _ = cx.srv.state().close(client, &stateid, &key);
            }
            return Err(e);
        }
        durable::barrier(cx.export(fh.export)?, &target.handle).await?;
        attrset.insert(FATTR4_SIZE);
    }
    // Opened by name: the file's handle, naming the directory; by
    // filehandle: the one the client gave (RFC 8881 §18.16.3).
    let created = target.created;
    let file = if by_name_claim {
        cx.make_child_fh(fh.export, target.handle, &target.attr, &fh.handle)
    } else {
        fh.clone()
    };
    let wire = file.wire.clone();
    cx.set_cfh(file);
    cx.cur_stateid = Some(stateid);
    // The kept delegation is taken once the open stands; its kind is
    // granted again.
    let kept = prev_claim
        .then(|| cx.srv.state().take_prev_delegation(client, &key).ok())
        .flatten();
    let offer = match (reclaim, under_deleg) {
        _ if prev_claim => kept.map_or(Offer::No, Offer::Kept),
        (_, Some(_)) => Offer::No,
        (true, None) if reclaims_deleg => Offer::Reclaim,
        (true, None) => Offer::No,
        (false, None) => Offer::New,
    };
    // RFC 9754 §5: an NFSv4.2 client may ask for the file's times with it.
    let timestamps =
        cx.minorversion >= 2 && args.share_access & OPEN4_SHARE_ACCESS_WANT_DELEG_TIMESTAMPS != 0;
    let ask = Asked {
        want,
        access,
        offer,
        timestamps,
        created,
    };
    let delegation = delegation(cx, ask, &args.owner.owner, &key, wire).await;
    // §9.6: blocking-lock waiters get CB_NOTIFY_LOCK. §18.16.3: a file
    // removed while open stays reachable through this open (the client
    // need not rename it to a hidden name), where the backend can keep it.
    let mut rflags = OPEN4_RESULT_LOCKTYPE_POSIX;
    if cx.minorversion == 0 {
        // RFC 7530 §16.16.5: a new open owner confirms its first OPEN.
        if cx.open_confirm {
            rflags |= OPEN4_RESULT_CONFIRM;
        }
    } else {
        rflags |= OPEN4_RESULT_MAY_NOTIFY_LOCK;
        if cx.export(key.0).is_ok_and(|e| e.vfs.keeps_unlinked()) {
            rflags |= OPEN4_RESULT_PRESERVE_UNLINKED;
        }
    }
    Ok(Open4ResOk {
        stateid,
        cinfo: target.cinfo,
        rflags,
        attrset,
        delegation,
    })
}

/// Whether an OPEN may come with a delegation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Offer {
    /// CLAIM_DELEGATE_CUR, CLAIM_DELEG_CUR_FH, or a reclaim of an open
    /// that had none.
    No,
    /// CLAIM_NULL, CLAIM_FH.
    New,
    /// CLAIM_PREVIOUS with a delegation (§10.2.1): granted in the grace
    /// period too.
    Reclaim,
    /// CLAIM_DELEGATE_PREV, CLAIM_DELEG_PREV_FH: the delegation kept across
    /// the client's restart, a write one if true (and the open writes).
    Kept(bool),
}

/// The delegation an OPEN answers with (RFC 8881 §18.16.3): a read
/// delegation for an open for reading, a write delegation for one for
/// writing (CLAIM_NULL or CLAIM_FH, `offer`; by a user who may read it
/// too, since the holder reads and writes from its cache), when the client
/// wants one of that kind or has no preference, its back channel works
/// and the state grants it; else none, saying why
/// (OPEN_DELEGATE_NONE_EXT) when the client asked for one or for none.
/// What an OPEN asks of its delegation.
struct Asked {
    /// Its OPEN4_SHARE_ACCESS_WANT_* value.
    want: u32,
    /// Its share access.
    access: u32,
    offer: Offer,
    /// The file's times delegated too (RFC 9754 §5).
    timestamps: bool,
    /// The OPEN made the file.
    created: bool,
}

async fn delegation(
    cx: &Compound,
    ask: Asked,
    owner: &bytes::Bytes,
    key: &state::FileKey,
    wire: bytes::Bytes,
) -> OpenDelegation4 {
    let Asked {
        want,
        access,
        offer,
        timestamps,
        created,
    } = ask;
    let why = |w| OpenDelegation4::NoneExt(OpenNoneDelegation4::Other(w));
    match want {
        OPEN4_SHARE_ACCESS_WANT_NO_DELEG => return why(WhyNoDelegation4::Wnd4NotWanted),
        OPEN4_SHARE_ACCESS_WANT_CANCEL => return why(WhyNoDelegation4::Wnd4Cancelled),
        OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE
        | OPEN4_SHARE_ACCESS_WANT_READ_DELEG
        | OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG
        | OPEN4_SHARE_ACCESS_WANT_ANY_DELEG => {}
        _ => return OpenDelegation4::None,
    }
    let wanted = want != OPEN4_SHARE_ACCESS_WANT_NO_PREFERENCE;
    let refuse = |w: WhyNoDelegation4| match (wanted, w) {
        (false, _) => OpenDelegation4::None,
        (true, WhyNoDelegation4::Wnd4Contention) => {
            OpenDelegation4::NoneExt(OpenNoneDelegation4::Contention(false))
        }
        (true, WhyNoDelegation4::Wnd4Resource) => {
            OpenDelegation4::NoneExt(OpenNoneDelegation4::Resource(false))
        }
        (true, w) => why(w),
    };
    if offer == Offer::No {
        return OpenDelegation4::None;
    }
    let reclaim = matches!(offer, Offer::Reclaim | Offer::Kept(_));
    // A write delegation for a writer, a read one for a reader (§10.4);
    // a kept one as it was.
    let write = access & OPEN4_SHARE_ACCESS_WRITE != 0 && offer != Offer::Kept(false);
    match (write, want) {
        (false, OPEN4_SHARE_ACCESS_WANT_WRITE_DELEG) => {
            return refuse(WhyNoDelegation4::Wnd4WriteDelegNotSuppFtype)
        }
        (true, OPEN4_SHARE_ACCESS_WANT_READ_DELEG) => {
            return refuse(WhyNoDelegation4::Wnd4Contention)
        }
        (true, _) if !cx.srv.cfg.write_delegations => {
            return refuse(WhyNoDelegation4::Wnd4WriteDelegNotSuppFtype)
        }
        _ => {}
    }
    // A delegation is only as good as its recall (§10.2).
    if !cx.callable() {
        return refuse(WhyNoDelegation4::Wnd4Resource);
    }
    if !cx.export(key.0).is_ok_and(|e| e.delegations) {
        return refuse(WhyNoDelegation4::Wnd4Resource);
    }
    let Ok(client) = cx.clientid() else {
        return OpenDelegation4::None;
    };
    let asker = (client, owner.clone());
    // A local process writing the file must recall a read delegation too
    // (guarded only when the state would grant it). A write delegation is
    // not guarded by a lease (the server's own writes to the file would
    // break it), but by a watch that holds local opens.
    if let Some(w) = cx
        .srv
        .state()
        .delegation_refusal(&asker, key, write, reclaim)
    {
        return refuse(w);
    }
    // The holder reads from its cache what it writes: a write delegation
    // only for a user who may read the file (a write-only open was
    // checked for writing alone).
    if write && access == OPEN4_SHARE_ACCESS_WRITE && !may_read(cx, key).await {
        return refuse(WhyNoDelegation4::Wnd4WriteDelegNotSuppFtype);
    }
    // Local writers, renames, removes, attribute changes (and, under a
    // write delegation, local opens) must recall it.
    let kind = if write {
        deleg::Kind::Write
    } else {
        deleg::Kind::Read
    };
    match deleg::protect(cx, key, kind, created).await {
        Ok(()) => {}
        Err(deleg::Unprotected::OpenForWriting) => return refuse(WhyNoDelegation4::Wnd4Contention),
        Err(deleg::Unprotected::Unwatched) => return refuse(WhyNoDelegation4::Wnd4Resource),
        Err(deleg::Unprotected::LockedLocally) => return refuse(WhyNoDelegation4::Wnd4Contention),
    }
    // An empty ACE: the client asks the server (ACCESS) before it opens
    // under the delegation for another user (§10.2).
    let permissions = Nfsace4 {
        type_: ACE4_ACCESS_ALLOWED_ACE_TYPE,
        ..Default::default()
    };
    // Delegated times (RFC 9754 §5): the file's now, below which the
    // holder's are not taken.
    let times = if timestamps {
        times_now(cx, key).await
    } else {
        None
    };
    match cx
        .srv
        .state()
        .offer_delegation(&asker, key, wire, (write, reclaim), times)
    {
        Ok(stateid) if write => {
            let d = OpenWriteDelegation4 {
                stateid,
                recall: false,
                // No limit on how far the holder may extend the file from
                // its cache (§10.4.1).
                space_limit: NfsSpaceLimit4::Size(u64::MAX),
                permissions,
            };
            if times.is_some() {
                OpenDelegation4::WriteAttrs(d)
            } else {
                OpenDelegation4::Write(d)
            }
        }
        Ok(stateid) => {
            let d = OpenReadDelegation4 {
                stateid,
                recall: false,
                permissions,
            };
            if times.is_some() {
                OpenDelegation4::ReadAttrs(d)
            } else {
                OpenDelegation4::Read(d)
            }
        }
        Err(w) => {
            deleg::unprotect(cx, key, kind);
            refuse(w)
        }
    }
}

/// The access and modification times of `key` now, for a delegation
/// with delegated timestamps; none if they cannot be read (the
/// delegation then goes without them).
async fn times_now(cx: &Compound, key: &state::FileKey) -> Option<state::DelegTimes> {
    let h = vfs::Handle(key.1.clone());
    let a = cx.vfs(key.0, move |v, _| v.getattr(&h)).await.ok()?;
    let t = |t: vfs::Timespec| NfsTime4 {
        seconds: t.sec,
        nseconds: t.nsec,
    };
    Some(state::DelegTimes {
        atime: t(a.atime),
        mtime: t(a.mtime),
    })
}

/// Whether the compound's user may read `key` (for a write delegation on
/// an open for writing only).
async fn may_read(cx: &Compound, key: &state::FileKey) -> bool {
    let h = vfs::Handle(key.1.clone());
    cx.vfs(key.0, move |v, c| v.access(c, &h, libc::R_OK))
        .await
        .unwrap_or(false)
}

/// Checks an existing file is a regular file the caller may open with
/// `access` (RFC 8881 §18.16.3: read or write permission).
fn check_existing(
    v: &dyn vfs::Vfs,
    c: &vfs::Creds,
    h: &vfs::Handle,
    a: &vfs::Attr,
    access: u32,
) -> vfs::Result<Result<(), NfsStat4>> {
    if let Err(s) = regular(a) {
        return Ok(Err(s));
    }
    let mut mask = 0;
    if access & OPEN4_SHARE_ACCESS_READ != 0 {
        mask |= libc::R_OK;
    }
    if access & OPEN4_SHARE_ACCESS_WRITE != 0 {
        mask |= libc::W_OK;
    }
    if !v.access(c, h, mask)? {
        return Ok(Err(NfsStat4::Nfs4errAccess));
    }
    Ok(Ok(()))
}

/// An existing file opened for reading, from the backend's caches: `name`
/// in the directory `fh` (CLAIM_NULL without creation) or `fh` itself
/// (CLAIM_FH, CLAIM_PREVIOUS); `None` to take the blocking path. The same
/// checks as there: a directory to look in, a regular file, and read
/// permission (RFC 8881 §18.16.3).
fn existing_nowait(
    cx: &Compound,
    fh: &crate::nfs4::compound::context::Fh,
    name: Option<&bytes::Bytes>,
) -> Option<Result<Target, NfsStat4>> {
    let r = cx.vfs_nowait(fh.export, |v, c| {
        let (handle, attr, cinfo_of) = match name {
            Some(name) => {
                let d = match v.getattr_nowait(&fh.handle)? {
                    Ok(d) => d,
                    Err(e) => return Some(Err(e)),
                };
                match d.ftype {
                    vfs::FileType::Directory => {}
                    vfs::FileType::Symlink => return Some(Ok(Err(NfsStat4::Nfs4errSymlink))),
                    _ => return Some(Ok(Err(NfsStat4::Nfs4errNotdir))),
                }
                let (h, a) = match v.lookup_nowait(c, &fh.handle, name)? {
                    Ok(found) => found,
                    Err(e) => return Some(Err(e)),
                };
                (h, a, d.change)
            }
            None => {
                let a = match v.getattr_nowait(&fh.handle)? {
                    Ok(a) => a,
                    Err(e) => return Some(Err(e)),
                };
                let change = a.change;
                (fh.handle.clone(), a, change)
            }
        };
        if let Err(s) = regular(&attr) {
            return Some(Ok(Err(s)));
        }
        match v.access_nowait(c, &handle, libc::R_OK)? {
            Ok(true) => {}
            Ok(false) => return Some(Ok(Err(NfsStat4::Nfs4errAccess))),
            Err(e) => return Some(Err(e)),
        }
        Some(Ok(Ok(Target {
            handle,
            attr,
            attrset: Bitmap4::default(),
            cinfo: ChangeInfo4 {
                atomic: true,
                before: cinfo_of,
                after: cinfo_of,
            },
            truncate: false,
            created: false,
        })))
    })?;
    Some(r.and_then(|t| t))
}

/// CLAIM_FH and CLAIM_PREVIOUS: the current filehandle is the file.
async fn by_fh(
    cx: &Compound,
    fh: &crate::nfs4::compound::context::Fh,
    access: u32,
) -> Result<Target, NfsStat4> {
    let handle = fh.handle.clone();
    let attr = cx
        .vfs(fh.export, move |v, c| {
            let a = v.getattr(&handle)?;
            Ok(check_existing(v, c, &handle, &a, access)?.map(|()| a))
        })
        .await??;
    Ok(Target {
        handle: fh.handle.clone(),
        cinfo: ChangeInfo4 {
            atomic: true,
            before: attr.change,
            after: attr.change,
        },
        attr,
        attrset: Bitmap4::default(),
        truncate: false,
        created: false,
    })
}

/// What to do for a CLAIM_NULL open.
enum How {
    NoCreate,
    Create(vfs::CreateMode, vfs::SetAttr, Bitmap4),
}

async fn how(cx: &Compound, openhow: &OpenFlag4) -> Result<How, NfsStat4> {
    Ok(match openhow {
        OpenFlag4::NoCreate => How::NoCreate,
        OpenFlag4::Create(CreateHow4::Unchecked(a)) => {
            let (s, m) = attrs::to_setattr(cx, a).await?;
            How::Create(vfs::CreateMode::Unchecked, s, m)
        }
        OpenFlag4::Create(CreateHow4::Guarded(a)) => {
            let (s, m) = attrs::to_setattr(cx, a).await?;
            How::Create(vfs::CreateMode::Guarded, s, m)
        }
        OpenFlag4::Create(CreateHow4::Exclusive(verf)) => How::Create(
            vfs::CreateMode::Exclusive(*verf),
            vfs::SetAttr::default(),
            Bitmap4::default(),
        ),
        OpenFlag4::Create(CreateHow4::Exclusive41(cva)) => {
            // §18.16.3: only the attributes of suppattr_exclcreat.
            if cva
                .attrs
                .attrmask
                .iter()
                .any(|n| !attrs::EXCLCREAT.contains(&n))
            {
                return Err(NfsStat4::Nfs4errInval);
            }
            let (s, m) = attrs::to_setattr(cx, &cva.attrs).await?;
            How::Create(vfs::CreateMode::Exclusive(cva.verf), s, m)
        }
    })
}

/// CLAIM_NULL: look `name` up in the current directory, creating it if
/// asked to.
async fn by_name(
    cx: &Compound,
    dir: &crate::nfs4::compound::context::Fh,
    name: bytes::Bytes,
    openhow: &OpenFlag4,
    access: u32,
) -> Result<Target, NfsStat4> {
    let how = how(cx, openhow).await?;
    let dh = dir.handle.clone();
    let (srv, export, client) = (cx.srv.clone(), dir.export, cx.clientid()?);
    cx.vfs(dir.export, move |v, c| {
        let d = v.getattr(&dh)?;
        match d.ftype {
            vfs::FileType::Directory => {}
            vfs::FileType::Symlink => return Ok(Err(NfsStat4::Nfs4errSymlink)),
            _ => return Ok(Err(NfsStat4::Nfs4errNotdir)),
        }
        // An existing file (for NOCREATE and UNCHECKED4).
        let existing = |h: vfs::Handle, a: vfs::Attr, truncate: bool| {
            Ok(check_existing(v, c, &h, &a, access)?.map(|()| Target {
                handle: h,
                attrset: Bitmap4::default(),
                cinfo: ChangeInfo4 {
                    atomic: true,
                    before: d.change,
                    after: d.change,
                },
                attr: a,
                truncate,
                created: false,
            }))
        };
        let (mode, set, mask) = match how {
            How::NoCreate => {
                let (h, a) = v.lookup(c, &dh, &name)?;
                return existing(h, a, false);
            }
            How::Create(vfs::CreateMode::Unchecked, set, mask) => {
                match v.lookup(c, &dh, &name) {
                    Ok((h, a)) => {
                        // §18.16.3: of the attributes only a size of 0
                        // applies to an existing file, truncating it.
                        let truncate = set.size == Some(0);
                        if truncate
                            && a.ftype == vfs::FileType::Regular
                            && !v.access(c, &h, libc::W_OK)?
                        {
                            return Ok(Err(NfsStat4::Nfs4errAccess));
                        }
                        return existing(h, a, truncate);
                    }
                    Err(vfs::Errno(libc::ENOENT)) => (vfs::CreateMode::Unchecked, set, mask),
                    Err(e) => return Err(e),
                }
            }
            How::Create(mode, set, mask) => (mode, set, mask),
        };
        let exclusive = matches!(mode, vfs::CreateMode::Exclusive(_));
        let mut mask = mask;
        if exclusive {
            // The backend keeps the verifier in the access and modify
            // times; §18.16.4 has the server say so in attrset.
            mask.insert(FATTR4_TIME_ACCESS);
            mask.insert(FATTR4_TIME_MODIFY);
        }
        // An exclusive create and its creator's check are one step.
        let _name = exclusive.then(|| srv.exclusive.name_lock(export, &dh, &name));
        let (h, a, created) = v.create_file(c, &dh, &name, mode, &set)?;
        if !created && !exclusive {
            // UNCHECKED4 lost a race with another creator.
            return existing(h, a, false);
        }
        if exclusive {
            if created {
                srv.exclusive.record(export, &h, client);
            } else if !srv.exclusive.may_retransmit(export, &h, client) {
                // The verifier matches, but another client made the file.
                return Ok(Err(NfsStat4::Nfs4errExist));
            }
        }
        if let Err(s) = regular(&a) {
            return Ok(Err(s));
        }
        // A retried exclusive create answers as the original did; the
        // creator needs no permission to open what it just made.
        let after = v.getattr(&dh).map(|a| a.change).unwrap_or(d.change);
        Ok(Ok(Target {
            handle: h,
            attr: a,
            attrset: mask,
            cinfo: ChangeInfo4 {
                atomic: false,
                before: d.change,
                after,
            },
            truncate: false,
            created,
        }))
    })
    .await?
}
