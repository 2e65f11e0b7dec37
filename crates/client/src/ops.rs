//! Typed helpers: one COMPOUND each, built from the `proto` types
//! (RFC 8881 §18). They return the interesting part of the result; any
//! failure is an [`Error`] carrying the status and partial results.

use bytes::Bytes;
use proto::nfs4::*;

use crate::{Client, Error, Result};

/// `PUTFH fh`.
pub fn putfh(fh: &NfsFh4) -> NfsArgOp4 {
    NfsArgOp4::PutFh(PutFh4Args { object: fh.clone() })
}

/// `GETATTR` of the given attribute numbers.
pub fn getattr_op(attrs: &[u32]) -> NfsArgOp4 {
    NfsArgOp4::GetAttr(GetAttr4Args {
        attr_request: Bitmap4::from_attrs(attrs),
    })
}

/// `LOOKUP name`.
pub fn lookup_op(name: &str) -> NfsArgOp4 {
    NfsArgOp4::Lookup(Lookup4Args {
        objname: Bytes::copy_from_slice(name.as_bytes()),
    })
}

/// How OPEN creates (RFC 8881 §18.16.1 `createhow4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OpenCreate {
    /// OPEN4_NOCREATE.
    #[default]
    None,
    Unchecked,
    Guarded,
    Exclusive41(Verifier4),
}

/// OPEN options.
#[derive(Debug, Clone, Default)]
pub struct OpenOpts {
    /// `OPEN4_SHARE_ACCESS_*`, plus any `OPEN4_SHARE_ACCESS_WANT_*` bits.
    pub access: u32,
    /// `OPEN4_SHARE_DENY_*`.
    pub deny: u32,
    pub create: OpenCreate,
    /// Mode for a created file.
    pub mode: Option<u32>,
    /// Other attributes for a created file (size, owner, ...).
    pub attrs: Option<Attrs>,
    /// The open owner; `None` uses the client's default one.
    pub owner: Option<StateOwner4>,
}

impl OpenOpts {
    /// Open an existing file for `access` with no deny.
    pub fn read() -> Self {
        OpenOpts {
            access: OPEN4_SHARE_ACCESS_READ,
            ..Default::default()
        }
    }

    pub fn write() -> Self {
        OpenOpts {
            access: OPEN4_SHARE_ACCESS_WRITE,
            ..Default::default()
        }
    }

    pub fn both() -> Self {
        OpenOpts {
            access: OPEN4_SHARE_ACCESS_BOTH,
            ..Default::default()
        }
    }

    /// Create (UNCHECKED) or open for read and write, with `mode`.
    pub fn create(mode: u32) -> Self {
        OpenOpts {
            access: OPEN4_SHARE_ACCESS_BOTH,
            create: OpenCreate::Unchecked,
            mode: Some(mode),
            ..Default::default()
        }
    }

    pub fn how(mut self, create: OpenCreate) -> Self {
        self.create = create;
        self
    }

    pub fn deny(mut self, deny: u32) -> Self {
        self.deny = deny;
        self
    }

    pub fn owner(mut self, owner: StateOwner4) -> Self {
        self.owner = Some(owner);
        self
    }

    fn create_attrs(&self) -> Fattr4 {
        let mut a = self.attrs.clone().unwrap_or_default();
        if self.mode.is_some() {
            a.mode = self.mode;
        }
        a.encode()
    }

    fn openhow(&self) -> OpenFlag4 {
        match self.create {
            OpenCreate::None => OpenFlag4::NoCreate,
            OpenCreate::Unchecked => OpenFlag4::Create(CreateHow4::Unchecked(self.create_attrs())),
            OpenCreate::Guarded => OpenFlag4::Create(CreateHow4::Guarded(self.create_attrs())),
            OpenCreate::Exclusive41(verf) => {
                OpenFlag4::Create(CreateHow4::Exclusive41(CreatVerfAttr {
                    verf,
                    attrs: self.create_attrs(),
                }))
            }
        }
    }
}

/// An opened file.
#[derive(Debug, Clone, PartialEq)]
pub struct Open {
    pub fh: NfsFh4,
    pub stateid: StateId4,
    pub cinfo: ChangeInfo4,
    pub rflags: u32,
    pub attrset: Bitmap4,
    pub delegation: OpenDelegation4,
}

/// What WRITE answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteResult {
    pub count: u32,
    pub committed: StableHow4,
    pub verf: Verifier4,
}

/// One READDIR entry.
#[derive(Debug, Clone, PartialEq)]
pub struct DirEntry {
    pub name: Bytes,
    pub cookie: NfsCookie4,
    pub attrs: Attrs,
}

macro_rules! take {
    ($res:expr, $idx:expr, $pat:pat => $val:expr) => {{
        let mut res = $res;
        let idx = $idx;
        if idx >= res.len() {
            return Err(Error::Unexpected(format!(
                "{} results, wanted #{idx}",
                res.len()
            )));
        }
        match res.swap_remove(idx) {
            $pat => $val,
            other => return Err(Error::unexpected(&other)),
        }
    }};
}

fn decode_attrs(f: &Fattr4) -> Result<Attrs> {
    Attrs::decode(f).map_err(|e| Error::Unexpected(format!("attributes: {e}")))
}

fn name(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

impl Client {
    /// The client's default open owner.
    pub fn default_open_owner(&self) -> StateOwner4 {
        StateOwner4 {
            clientid: self.clientid(),
            owner: Bytes::from_static(b"ferrite-open-owner"),
        }
    }

    /// PUTROOTFH; GETFH.
    pub async fn root_fh(&self) -> Result<NfsFh4> {
        let r = self
            .compound(vec![NfsArgOp4::PutRootFh, NfsArgOp4::GetFh])
            .await?;
        Ok(take!(r, 1, NfsResOp4::GetFh(Res4::Ok(ok)) => ok.object))
    }

    /// PUTROOTFH; LOOKUP per component of `path`; GETFH.
    pub async fn lookup_path(&self, path: &str) -> Result<NfsFh4> {
        let mut ops = vec![NfsArgOp4::PutRootFh];
        ops.extend(path.split('/').filter(|c| !c.is_empty()).map(lookup_op));
        ops.push(NfsArgOp4::GetFh);
        let n = ops.len();
        let r = self.compound(ops).await?;
        Ok(take!(r, n - 1, NfsResOp4::GetFh(Res4::Ok(ok)) => ok.object))
    }

    /// PUTFH dir; LOOKUP name; GETFH.
    pub async fn lookup(&self, dir: &NfsFh4, name: &str) -> Result<NfsFh4> {
        let r = self
            .compound(vec![putfh(dir), lookup_op(name), NfsArgOp4::GetFh])
            .await?;
        Ok(take!(r, 2, NfsResOp4::GetFh(Res4::Ok(ok)) => ok.object))
    }

    /// PUTFH; GETATTR, decoded.
    pub async fn getattr(&self, fh: &NfsFh4, attrs: &[u32]) -> Result<Attrs> {
        let f = self.getattr_raw(fh, Bitmap4::from_attrs(attrs)).await?;
        decode_attrs(&f)
    }

    /// PUTFH; GETATTR, as encoded.
    pub async fn getattr_raw(&self, fh: &NfsFh4, mask: Bitmap4) -> Result<Fattr4> {
        let r = self
            .compound(vec![
                putfh(fh),
                NfsArgOp4::GetAttr(GetAttr4Args { attr_request: mask }),
            ])
            .await?;
        Ok(take!(r, 1, NfsResOp4::GetAttr(Res4::Ok(ok)) => ok.obj_attributes))
    }

    /// PUTFH; SETATTR. Returns the attributes set.
    pub async fn setattr(&self, fh: &NfsFh4, stateid: StateId4, attrs: &Attrs) -> Result<Bitmap4> {
        let r = self
            .compound(vec![
                putfh(fh),
                NfsArgOp4::SetAttr(SetAttr4Args {
                    stateid,
                    obj_attributes: attrs.encode(),
                }),
            ])
            .await?;
        Ok(take!(r, 1, NfsResOp4::SetAttr(res) => res.attrsset))
    }

    /// PUTFH; ACCESS.
    pub async fn access(&self, fh: &NfsFh4, access: u32) -> Result<Access4ResOk> {
        let r = self
            .compound(vec![putfh(fh), NfsArgOp4::Access(Access4Args { access })])
            .await?;
        Ok(take!(r, 1, NfsResOp4::Access(Res4::Ok(ok)) => ok))
    }

    fn open_args(&self, opts: &OpenOpts, claim: OpenClaim4) -> NfsArgOp4 {
        NfsArgOp4::Open(Open4Args {
            seqid: 0,
            share_access: opts.access,
            share_deny: opts.deny,
            owner: opts
                .owner
                .clone()
                .unwrap_or_else(|| self.default_open_owner()),
            openhow: opts.openhow(),
            claim,
        })
    }

    async fn open_with(&self, fh: &NfsFh4, opts: &OpenOpts, claim: OpenClaim4) -> Result<Open> {
        let r = self
            .compound(vec![
                putfh(fh),
                self.open_args(opts, claim),
                NfsArgOp4::GetFh,
            ])
            .await?;
        let mut r = r.into_iter().skip(1);
        let ok = match r.next() {
            Some(NfsResOp4::Open(Res4::Ok(ok))) => ok,
            other => return Err(Error::Unexpected(format!("{other:?}"))),
        };
        let fh = match r.next() {
            Some(NfsResOp4::GetFh(Res4::Ok(f))) => f.object,
            other => return Err(Error::Unexpected(format!("{other:?}"))),
        };
        Ok(Open {
            fh,
            stateid: ok.stateid,
            cinfo: ok.cinfo,
            rflags: ok.rflags,
            attrset: ok.attrset,
            delegation: ok.delegation,
        })
    }

    /// PUTFH dir; OPEN (CLAIM_NULL) name; GETFH.
    pub async fn open(&self, dir: &NfsFh4, name_: &str, opts: OpenOpts) -> Result<Open> {
        self.open_with(dir, &opts, OpenClaim4::Null(name(name_)))
            .await
    }

    /// PUTFH file; OPEN (CLAIM_FH); GETFH.
    pub async fn open_fh(&self, fh: &NfsFh4, opts: OpenOpts) -> Result<Open> {
        self.open_with(fh, &opts, OpenClaim4::Fh).await
    }

    /// PUTFH file; OPEN (CLAIM_PREVIOUS); GETFH: reclaims an open held
    /// before the server restarted (RFC 8881 §8.4.2.1).
    pub async fn open_reclaim(&self, fh: &NfsFh4, opts: OpenOpts) -> Result<Open> {
        self.open_reclaim_deleg(fh, opts, OpenDelegationType4::OpenDelegateNone)
            .await
    }

    /// [`Client::open_reclaim`] of an open that had a delegation of type
    /// `deleg` (RFC 8881 §10.2.1: the server may grant it again).
    pub async fn open_reclaim_deleg(
        &self,
        fh: &NfsFh4,
        opts: OpenOpts,
        deleg: OpenDelegationType4,
    ) -> Result<Open> {
        self.open_with(fh, &opts, OpenClaim4::Previous(deleg)).await
    }

    /// PUTFH; CLOSE.
    pub async fn close(&self, fh: &NfsFh4, stateid: StateId4) -> Result<StateId4> {
        let r = self
            .compound(vec![
                putfh(fh),
                NfsArgOp4::Close(Close4Args {
                    seqid: 0,
                    open_stateid: stateid,
                }),
            ])
            .await?;
        Ok(take!(r, 1, NfsResOp4::Close(Res4::Ok(s)) => s))
    }

    /// PUTFH; OPEN_DOWNGRADE.
    pub async fn open_downgrade(
        &self,
        fh: &NfsFh4,
        stateid: StateId4,
        access: u32,
        deny: u32,
    ) -> Result<StateId4> {
        let r = self
            .compound(vec![
                putfh(fh),
                NfsArgOp4::OpenDowngrade(OpenDowngrade4Args {
                    open_stateid: stateid,
                    seqid: 0,
                    share_access: access,
                    share_deny: deny,
                }),
            ])
            .await?;
        Ok(take!(r, 1, NfsResOp4::OpenDowngrade(Res4::Ok(ok)) => ok.open_stateid))
    }

    /// PUTFH; READ. Returns the data and eof.
    pub async fn read(
        &self,
        fh: &NfsFh4,
        stateid: StateId4,
        offset: u64,
        count: u32,
    ) -> Result<(Bytes, bool)> {
        let r = self
            .compound(vec![
                putfh(fh),
                NfsArgOp4::Read(Read4Args {
                    stateid,
                    offset,
                    count,
                }),
            ])
            .await?;
        // A decoded payload is in memory.
        Ok(
            take!(r, 1, NfsResOp4::Read(Res4::Ok(ok)) => (ok.data.into_mem().unwrap_or_default(), ok.eof)),
        )
    }

    /// PUTFH; WRITE.
    pub async fn write(
        &self,
        fh: &NfsFh4,
        stateid: StateId4,
        offset: u64,
        data: Bytes,
        stable: StableHow4,
    ) -> Result<WriteResult> {
        let r = self
            .compound(vec![
                putfh(fh),
                NfsArgOp4::Write(Write4Args {
                    stateid,
                    offset,
                    stable,
                    data,
                }),
            ])
            .await?;
        Ok(take!(r, 1, NfsResOp4::Write(Res4::Ok(ok)) => WriteResult {
            count: ok.count,
            committed: ok.committed,
            verf: ok.writeverf,
        }))
    }

    /// PUTFH; COMMIT. Returns the write verifier.
    pub async fn commit(&self, fh: &NfsFh4, offset: u64, count: u32) -> Result<Verifier4> {
        let r = self
            .compound(vec![
                putfh(fh),
                NfsArgOp4::Commit(Commit4Args { offset, count }),
            ])
            .await?;
        Ok(take!(r, 1, NfsResOp4::Commit(Res4::Ok(ok)) => ok.writeverf))
    }

    /// PUTFH dir; CREATE; GETFH. Returns the new object's filehandle.
    pub async fn create(
        &self,
        dir: &NfsFh4,
        name_: &str,
        objtype: CreateType4,
        attrs: &Attrs,
    ) -> Result<(NfsFh4, Create4ResOk)> {
        let r = self
            .compound(vec![
                putfh(dir),
                NfsArgOp4::Create(Create4Args {
                    objtype,
                    objname: name(name_),
                    createattrs: attrs.encode(),
                }),
                NfsArgOp4::GetFh,
            ])
            .await?;
        let mut r = r.into_iter().skip(1);
        let ok = match r.next() {
            Some(NfsResOp4::Create(Res4::Ok(ok))) => ok,
            other => return Err(Error::Unexpected(format!("{other:?}"))),
        };
        match r.next() {
            Some(NfsResOp4::GetFh(Res4::Ok(f))) => Ok((f.object, ok)),
            other => Err(Error::Unexpected(format!("{other:?}"))),
        }
    }

    /// CREATE of a directory with `mode`.
    pub async fn mkdir(&self, dir: &NfsFh4, name_: &str, mode: u32) -> Result<NfsFh4> {
        let attrs = Attrs {
            mode: Some(mode),
            ..Default::default()
        };
        Ok(self.create(dir, name_, CreateType4::Dir, &attrs).await?.0)
    }

    /// CREATE of a symbolic link to `target`.
    pub async fn symlink(&self, dir: &NfsFh4, name_: &str, target: &str) -> Result<NfsFh4> {
        let t = CreateType4::Link(name(target));
        Ok(self.create(dir, name_, t, &Attrs::default()).await?.0)
    }

    /// PUTFH dir; REMOVE.
    pub async fn remove(&self, dir: &NfsFh4, name_: &str) -> Result<ChangeInfo4> {
        let r = self
            .compound(vec![
                putfh(dir),
                NfsArgOp4::Remove(Remove4Args {
                    target: name(name_),
                }),
            ])
            .await?;
        Ok(take!(r, 1, NfsResOp4::Remove(Res4::Ok(ok)) => ok.cinfo))
    }

    /// PUTFH src; SAVEFH; PUTFH dst; RENAME.
    pub async fn rename(
        &self,
        src_dir: &NfsFh4,
        old: &str,
        dst_dir: &NfsFh4,
        new: &str,
    ) -> Result<Rename4ResOk> {
        let r = self
            .compound(vec![
                putfh(src_dir),
                NfsArgOp4::SaveFh,
                putfh(dst_dir),
                NfsArgOp4::Rename(Rename4Args {
                    oldname: name(old),
                    newname: name(new),
                }),
            ])
            .await?;
        Ok(take!(r, 3, NfsResOp4::Rename(Res4::Ok(ok)) => ok))
    }

    /// PUTFH file; SAVEFH; PUTFH dir; LINK.
    pub async fn link(&self, file: &NfsFh4, dir: &NfsFh4, new: &str) -> Result<ChangeInfo4> {
        let r = self
            .compound(vec![
                putfh(file),
                NfsArgOp4::SaveFh,
                putfh(dir),
                NfsArgOp4::Link(Link4Args { newname: name(new) }),
            ])
            .await?;
        Ok(take!(r, 3, NfsResOp4::Link(Res4::Ok(ok)) => ok.cinfo))
    }

    /// PUTFH; READLINK.
    pub async fn readlink(&self, fh: &NfsFh4) -> Result<Bytes> {
        let r = self.compound(vec![putfh(fh), NfsArgOp4::ReadLink]).await?;
        Ok(take!(r, 1, NfsResOp4::ReadLink(Res4::Ok(ok)) => ok.link))
    }

    /// One READDIR call.
    pub async fn readdir_page(
        &self,
        dir: &NfsFh4,
        cookie: NfsCookie4,
        cookieverf: Verifier4,
        dircount: u32,
        maxcount: u32,
        attrs: &[u32],
    ) -> Result<ReadDir4ResOk> {
        let r = self
            .compound(vec![
                putfh(dir),
                NfsArgOp4::ReadDir(ReadDir4Args {
                    cookie,
                    cookieverf,
                    dircount,
                    maxcount,
                    attr_request: Bitmap4::from_attrs(attrs),
                }),
            ])
            .await?;
        Ok(take!(r, 1, NfsResOp4::ReadDir(Res4::Ok(ok)) => ok))
    }

    /// Every entry of a directory, following cookies until eof.
    pub async fn readdir(&self, dir: &NfsFh4, attrs: &[u32]) -> Result<Vec<DirEntry>> {
        self.readdir_sized(dir, attrs, 8192, 32768).await
    }

    /// [`Client::readdir`] with explicit `dircount` and `maxcount`.
    pub async fn readdir_sized(
        &self,
        dir: &NfsFh4,
        attrs: &[u32],
        dircount: u32,
        maxcount: u32,
    ) -> Result<Vec<DirEntry>> {
        let mut out = Vec::new();
        let mut cookie = 0;
        let mut verf = [0u8; 8];
        loop {
            let page = self
                .readdir_page(dir, cookie, verf, dircount, maxcount, attrs)
                .await?;
            verf = page.cookieverf;
            let got = page.reply.entries.len();
            for e in page.reply.entries {
                cookie = e.cookie;
                out.push(DirEntry {
                    attrs: decode_attrs(&e.attrs)?,
                    name: e.name,
                    cookie: e.cookie,
                });
            }
            if page.reply.eof {
                return Ok(out);
            }
            if got == 0 {
                return Err(Error::Unexpected(
                    "READDIR returned no entries and no eof".into(),
                ));
            }
        }
    }

    /// PUTFH; LOCK. NFS4ERR_DENIED comes back as an error whose
    /// [`Error::denied`] is the conflicting lock.
    pub async fn lock(
        &self,
        fh: &NfsFh4,
        locktype: NfsLockType4,
        offset: u64,
        length: u64,
        locker: Locker4,
    ) -> Result<StateId4> {
        self.lock_as(fh, locktype, offset, length, locker, false)
            .await
    }

    /// PUTFH; LOCK with `reclaim` set: a lock held before the server
    /// restarted (RFC 8881 §8.4.2.1).
    pub async fn lock_reclaim(
        &self,
        fh: &NfsFh4,
        locktype: NfsLockType4,
        offset: u64,
        length: u64,
        locker: Locker4,
    ) -> Result<StateId4> {
        self.lock_as(fh, locktype, offset, length, locker, true)
            .await
    }

    async fn lock_as(
        &self,
        fh: &NfsFh4,
        locktype: NfsLockType4,
        offset: u64,
        length: u64,
        locker: Locker4,
        reclaim: bool,
    ) -> Result<StateId4> {
        let r = self
            .compound(vec![
                putfh(fh),
                NfsArgOp4::Lock(Lock4Args {
                    locktype,
                    reclaim,
                    offset,
                    length,
                    locker,
                }),
            ])
            .await?;
        Ok(take!(r, 1, NfsResOp4::Lock(Lock4Res::Ok(ok)) => ok.lock_stateid))
    }

    /// A `locker4` for a lock owner's first lock, from an open stateid.
    pub fn new_locker(&self, open_stateid: StateId4, owner: StateOwner4) -> Locker4 {
        Locker4::OpenOwner(OpenToLockOwner4 {
            open_seqid: 0,
            open_stateid,
            lock_seqid: 0,
            lock_owner: owner,
        })
    }

    /// A `locker4` for a lock owner that already has a lock stateid.
    pub fn existing_locker(&self, lock_stateid: StateId4) -> Locker4 {
        Locker4::LockOwner(ExistLockOwner4 {
            lock_stateid,
            lock_seqid: 0,
        })
    }

    /// PUTFH; LOCKT. `Ok` when no lock conflicts.
    pub async fn lockt(
        &self,
        fh: &NfsFh4,
        locktype: NfsLockType4,
        offset: u64,
        length: u64,
        owner: StateOwner4,
    ) -> Result<()> {
        self.compound(vec![
            putfh(fh),
            NfsArgOp4::LockT(LockT4Args {
                locktype,
                offset,
                length,
                owner,
            }),
        ])
        .await?;
        Ok(())
    }

    /// PUTFH; LOCKU.
    pub async fn locku(
        &self,
        fh: &NfsFh4,
        locktype: NfsLockType4,
        lock_stateid: StateId4,
        offset: u64,
        length: u64,
    ) -> Result<StateId4> {
        let r = self
            .compound(vec![
                putfh(fh),
                NfsArgOp4::LockU(LockU4Args {
                    locktype,
                    seqid: 0,
                    lock_stateid,
                    offset,
                    length,
                }),
            ])
            .await?;
        Ok(take!(r, 1, NfsResOp4::LockU(Res4::Ok(s)) => s))
    }

    /// PUTFH; DELEGRETURN.
    pub async fn delegreturn(&self, fh: &NfsFh4, stateid: StateId4) -> Result<()> {
        self.compound(vec![
            putfh(fh),
            NfsArgOp4::DelegReturn(DelegReturn4Args {
                deleg_stateid: stateid,
            }),
        ])
        .await?;
        Ok(())
    }

    /// TEST_STATEID: one status per stateid.
    pub async fn test_stateids(&self, stateids: Vec<StateId4>) -> Result<Vec<NfsStat4>> {
        let r = self
            .compound(vec![NfsArgOp4::TestStateId(TestStateId4Args { stateids })])
            .await?;
        Ok(take!(r, 0, NfsResOp4::TestStateId(Res4::Ok(ok)) => ok.status_codes))
    }

    /// FREE_STATEID.
    pub async fn free_stateid(&self, stateid: StateId4) -> Result<()> {
        self.compound(vec![NfsArgOp4::FreeStateId(FreeStateId4Args { stateid })])
            .await?;
        Ok(())
    }

    /// PUTFH dir; SECINFO name.
    pub async fn secinfo(&self, dir: &NfsFh4, name_: &str) -> Result<Vec<SecInfo4>> {
        let r = self
            .compound(vec![
                putfh(dir),
                NfsArgOp4::SecInfo(SecInfo4Args { name: name(name_) }),
            ])
            .await?;
        Ok(take!(r, 1, NfsResOp4::SecInfo(Res4::Ok(v)) => v))
    }

    /// PUTFH; SECINFO_NO_NAME.
    pub async fn secinfo_no_name(
        &self,
        fh: &NfsFh4,
        style: SecInfoStyle4,
    ) -> Result<Vec<SecInfo4>> {
        let r = self
            .compound(vec![putfh(fh), NfsArgOp4::SecInfoNoName(style)])
            .await?;
        Ok(take!(r, 1, NfsResOp4::SecInfoNoName(Res4::Ok(v)) => v))
    }
}
