//! The NFSv4.1 backend: one [`client::Client`] (its own client ID, session
//! and TCP connection) per benchmark client. COMPOUNDs are sent here rather
//! than through `Client::compound` so that every transmission is timed and
//! counted exactly: slot wait (queueing time), round trip, bytes on the
//! wire and every operation by opcode.
//!
//! When the target offers flexible-file layouts (its `fs_layout_types`,
//! asked with the target's lookup) READ and WRITE go to the data servers
//! ([`crate::pnfs`]), unless the URL says `?pnfs=off`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use client::{Client, ClientOptions, SlotOutcome};
use proto::nfs4::*;
use xdr::{Decoder, Encoder, Pack, Unpack};

use crate::fs::{components, BenchFs, Node, OpenFile, OpenMode};
use crate::pnfs::Layouts;
use crate::record::{call_overhead, current_phase, CallRecord, OpStats, Phase, REPLY_OVERHEAD};
use crate::{Error, Result};

/// The name of an NFSv4 operation number (RFC 8881 §16.2.1, RFC 7862 §15).
pub fn op_name(opnum: u32) -> &'static str {
    const NAMES: [&str; 76] = [
        "?0",
        "?1",
        "?2",
        "ACCESS",
        "CLOSE",
        "COMMIT",
        "CREATE",
        "DELEGPURGE",
        "DELEGRETURN",
        "GETATTR",
        "GETFH",
        "LINK",
        "LOCK",
        "LOCKT",
        "LOCKU",
        "LOOKUP",
        "LOOKUPP",
        "NVERIFY",
        "OPEN",
        "OPENATTR",
        "OPEN_CONFIRM",
        "OPEN_DOWNGRADE",
        "PUTFH",
        "PUTPUBFH",
        "PUTROOTFH",
        "READ",
        "READDIR",
        "READLINK",
        "REMOVE",
        "RENAME",
        "RENEW",
        "RESTOREFH",
        "SAVEFH",
        "SECINFO",
        "SETATTR",
        "SETCLIENTID",
        "SETCLIENTID_CONFIRM",
        "VERIFY",
        "WRITE",
        "RELEASE_LOCKOWNER",
        "BACKCHANNEL_CTL",
        "BIND_CONN_TO_SESSION",
        "EXCHANGE_ID",
        "CREATE_SESSION",
        "DESTROY_SESSION",
        "FREE_STATEID",
        "GET_DIR_DELEGATION",
        "GETDEVICEINFO",
        "GETDEVICELIST",
        "LAYOUTCOMMIT",
        "LAYOUTGET",
        "LAYOUTRETURN",
        "SECINFO_NO_NAME",
        "SEQUENCE",
        "SET_SSV",
        "TEST_STATEID",
        "WANT_DELEGATION",
        "DESTROY_CLIENTID",
        "RECLAIM_COMPLETE",
        "ALLOCATE",
        "COPY",
        "COPY_NOTIFY",
        "DEALLOCATE",
        "IO_ADVISE",
        "LAYOUTERROR",
        "LAYOUTSTATS",
        "OFFLOAD_CANCEL",
        "OFFLOAD_STATUS",
        "READ_PLUS",
        "SEEK",
        "WRITE_SAME",
        "CLONE",
        "GETXATTR",
        "SETXATTR",
        "LISTXATTRS",
        "REMOVEXATTR",
    ];
    NAMES.get(opnum as usize).copied().unwrap_or("ILLEGAL")
}

/// The operation a COMPOUND is named after (as mountstats names an NFSv4
/// call): the first one that is not a filehandle shuffle.
fn main_op(ops: &[&'static str]) -> &'static str {
    ops.iter()
        .copied()
        .find(|o| {
            !matches!(
                *o,
                "SEQUENCE" | "PUTFH" | "PUTROOTFH" | "SAVEFH" | "RESTOREFH"
            )
        })
        .unwrap_or("SEQUENCE")
}

/// An NFSv4.1 session used by one benchmark client.
pub struct Nfs4Fs {
    client: Client,
    stats: Arc<OpStats>,
    root: Node,
    /// Length of the RPC call header on the wire, record marker included.
    call_overhead: u64,
    delegations: AtomicU64,
    /// Delegations kept after their file's CLOSE, as the Linux client
    /// keeps them: a later open of the same file by this client is made
    /// locally (no OPEN; its I/O under the delegation's stateid, its locks
    /// local), until the server recalls it (the callback handler gives it
    /// back) or the client shuts down. By path.
    held: Mutex<HashMap<std::path::PathBuf, Held>>,
    /// pNFS: the layouts, devices and data server connections, when the
    /// target offers flexible-file layouts and `?pnfs=off` was not given.
    layouts: Option<Arc<Layouts>>,
    started: Instant,
    /// When the last COMPOUND was sent, in ms from `started`.
    last_call_ms: AtomicU64,
    /// The DELEGRETURNs the callback handler had sent when the measured
    /// period ended (u64::MAX: not ended yet).
    returned_measuring: AtomicU64,
}

/// How the benchmark's client secures its calls: RPCSEC_GSS, TLS, both or
/// neither (AUTH_SYS in the clear).
#[derive(Debug, Clone, Default)]
pub struct Security {
    pub gss: Option<client::GssOptions>,
    pub tls: Option<rpc::tls::TlsClient>,
}

/// How the benchmark's client speaks NFSv4.
#[derive(Debug, Clone, Default)]
pub struct Nfs4Options {
    /// 1, or 0 for NFSv4.0 (no session: per-owner sequence ids, RENEW).
    pub minor: u32,
    /// Ask for a persistent session (NFSv4.1).
    pub persist: bool,
    /// READ and WRITE through flexible-file layouts when offered.
    pub pnfs: bool,
    pub sec: Security,
}

impl Nfs4Fs {
    /// Connects (EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE; NFSv4.0:
    /// SETCLIENTID, SETCLIENTID_CONFIRM and a GETATTR of the lease;
    /// counted as setup) and looks up `path` (PUTROOTFH, LOOKUP per
    /// component, GETFH; with `pnfs`, GETATTR of its layout types and the
    /// lease too).
    pub async fn connect(
        addr: SocketAddr,
        path: &str,
        how: Nfs4Options,
        owner: String,
        stats: Arc<OpStats>,
    ) -> Result<Arc<Nfs4Fs>> {
        let mut opts = ClientOptions::new(owner.into_bytes());
        opts.delay_retry = Duration::from_secs(60);
        opts.minorversion = how.minor;
        opts.persist = how.persist;
        opts.gss = how.sec.gss;
        opts.tls = how.sec.tls;
        let pnfs = how.pnfs && how.minor > 0;
        let client = Client::connect(addr, opts).await?;
        if how.minor == 0 {
            stats.count_ops(Phase::Setup, "SETCLIENTID", &["SETCLIENTID"]);
            stats.count_ops(
                Phase::Setup,
                "SETCLIENTID_CONFIRM",
                &["SETCLIENTID_CONFIRM"],
            );
            stats.count_ops(Phase::Setup, "GETATTR", &["PUTROOTFH", "GETATTR"]);
        } else {
            stats.count_ops(Phase::Setup, "EXCHANGE_ID", &["EXCHANGE_ID"]);
            stats.count_ops(Phase::Setup, "CREATE_SESSION", &["CREATE_SESSION"]);
            stats.count_ops(
                Phase::Setup,
                "RECLAIM_COMPLETE",
                &["SEQUENCE", "RECLAIM_COMPLETE"],
            );
        }
        let call_overhead = call_overhead(&client.cred());
        let mut fs = Nfs4Fs {
            client,
            stats,
            root: Node {
                fh: Bytes::new(),
                path: path.into(),
            },
            call_overhead,
            delegations: AtomicU64::new(0),
            held: Mutex::new(HashMap::new()),
            layouts: None,
            started: Instant::now(),
            last_call_ms: AtomicU64::new(0),
            returned_measuring: AtomicU64::new(u64::MAX),
        };
        let mut ops = vec![NfsArgOp4::PutRootFh];
        ops.extend(components(path).map(client::ops::lookup_op));
        ops.push(NfsArgOp4::GetFh);
        let n = ops.len();
        if pnfs {
            ops.push(client::ops::getattr_op(&[
                FATTR4_FS_LAYOUT_TYPES,
                FATTR4_LEASE_TIME,
            ]));
        }
        let r = fs.compound(ops).await?;
        let attrs = match r.get(n) {
            Some(NfsResOp4::GetAttr(Res4::Ok(ok))) => Attrs::decode(&ok.obj_attributes).ok(),
            _ => None,
        };
        fs.root.fh = getfh(r, n - 1)?;
        if let Some(a) = attrs {
            let flex = a
                .fs_layout_types
                .as_ref()
                .is_some_and(|t| t.contains(&LAYOUT4_FLEX_FILES));
            if flex {
                let lease = Duration::from_secs(u64::from(a.lease_time.unwrap_or(90).max(3)));
                fs.layouts = Some(Layouts::new(fs.stats.clone(), lease));
            }
        }
        let fs = Arc::new(fs);
        if fs.layouts.is_some() {
            crate::pnfs::spawn_poller(Arc::downgrade(&fs));
        }
        Ok(fs)
    }

    /// pNFS: the layouts, when READ and WRITE go to data servers.
    pub fn layouts(&self) -> Option<&Arc<Layouts>> {
        self.layouts.as_ref()
    }

    /// How long since the last COMPOUND was sent.
    pub fn idle(&self) -> Duration {
        let now = self.started.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_call_ms.load(Ordering::Relaxed)))
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Runs `ops` under SEQUENCE, counting and timing every transmission;
    /// NFS4ERR_DELAY is retried (each retry counted) for up to a minute.
    pub async fn compound(&self, ops: Vec<NfsArgOp4>) -> Result<Vec<NfsResOp4>> {
        self.compound_as(ops, None).await
    }

    /// [`Nfs4Fs::compound`] counted as call kind `kind` (else its main
    /// operation's name).
    pub async fn compound_as(
        &self,
        ops: Vec<NfsArgOp4>,
        kind: Option<&'static str>,
    ) -> Result<Vec<NfsResOp4>> {
        if let Some(owners) = self.client.v40() {
            return self.compound40(owners, ops, kind).await;
        }
        let mut names: Vec<&'static str> = Vec::with_capacity(ops.len() + 1);
        names.push("SEQUENCE");
        names.extend(ops.iter().map(|o| op_name(o.opnum())));
        let kind = kind.unwrap_or_else(|| main_op(&names));
        self.last_call_ms
            .store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
        let mut e = Encoder::with_capacity(128 * ops.len().max(1));
        for op in &ops {
            op.pack(&mut e);
        }
        let body_len = e.len();
        let body = e.finish();
        let started = Instant::now();
        let mut backoff = Duration::from_millis(5);
        loop {
            let phase = current_phase(&self.stats);
            let t0 = Instant::now();
            let slot = self.client.take_slot().await;
            let t1 = Instant::now();
            let seq = self.client.sequence_args(&slot, false);
            let mut h = Encoder::with_capacity(96);
            Compound4ArgsHeader {
                tag: Bytes::new(),
                minorversion: self.client.minorversion(),
            }
            .pack(&mut h);
            h.u32(ops.len() as u32 + 1);
            NfsArgOp4::Sequence(seq).pack(&mut h);
            let sent = self.call_overhead + (h.len() + body_len) as u64;
            let mut args = h.finish();
            args.extend(body.iter().cloned());
            let reply = self.send(args).await;
            let t2 = Instant::now();
            let mut rec = CallRecord {
                phase,
                kind,
                ops: &names,
                bytes_sent: sent,
                bytes_recv: 0,
                queue: t1 - t0,
                rtt: t2 - t1,
                ok: false,
            };
            let mut d = match reply {
                Ok(d) => d,
                Err(e) => {
                    slot.release(SlotOutcome::Processed, None);
                    self.stats.record(rec);
                    return Err(client::Error::from(e).into());
                }
            };
            rec.bytes_recv = REPLY_OVERHEAD + d.remaining() as u64;
            let res = match Compound4Res::unpack(&mut d) {
                Ok(r) => r,
                Err(e) => {
                    slot.release(SlotOutcome::Processed, None);
                    self.stats.record(rec);
                    return Err(client::Error::from(e).into());
                }
            };
            rec.ok = res.status == NfsStat4::Nfs4Ok;
            self.stats.record(rec);
            let mut results = res.resarray.into_iter();
            match results.next() {
                Some(NfsResOp4::Sequence(Res4::Ok(ok))) => {
                    slot.release(SlotOutcome::Processed, Some(ok.target_highest_slotid));
                    let rest: Vec<NfsResOp4> = results.collect();
                    if res.status == NfsStat4::Nfs4Ok {
                        return Ok(rest);
                    }
                    if res.status != NfsStat4::Nfs4errDelay
                        || started.elapsed() > Duration::from_secs(60)
                    {
                        return Err(Error::Nfs4 {
                            status: res.status,
                            op: names.get(rest.len()).copied().unwrap_or("?"),
                        });
                    }
                }
                Some(NfsResOp4::Sequence(Res4::Err(NfsStat4::Nfs4errDelay))) => {
                    slot.release(SlotOutcome::NotProcessed, None);
                }
                Some(NfsResOp4::Sequence(Res4::Err(s))) => {
                    slot.release(SlotOutcome::NotProcessed, None);
                    return Err(Error::Nfs4 {
                        status: s,
                        op: "SEQUENCE",
                    });
                }
                _ => {
                    slot.release(SlotOutcome::NotProcessed, None);
                    return Err(Error::Nfs4 {
                        status: res.status,
                        op: "SEQUENCE",
                    });
                }
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(500));
        }
    }

    /// Sends encoded COMPOUND arguments with the client's security.
    async fn send(&self, args: Vec<Bytes>) -> std::result::Result<Decoder, rpc::CallError> {
        self.client
            .sec()
            .call(
                self.client.connection(),
                NFS_PROGRAM,
                NFS_V4,
                client::NFSPROC4_COMPOUND,
                args,
            )
            .await
    }

    /// NFSv4.0's [`Nfs4Fs::compound_as`] (RFC 7530): no SEQUENCE; the
    /// sequence ids of the open and lock owners `ops` name filled in by
    /// the client's `v40::Owners` (each owner held until the reply is
    /// in); an owner's first OPEN confirmed by an OPEN_CONFIRM call of its
    /// own, counted as such.
    async fn compound40(
        &self,
        owners: &client::v40::Owners,
        mut ops: Vec<NfsArgOp4>,
        kind: Option<&'static str>,
    ) -> Result<Vec<NfsResOp4>> {
        let names: Vec<&'static str> = ops.iter().map(|o| op_name(o.opnum())).collect();
        let kind = kind.unwrap_or_else(|| main_op(&names));
        let started = Instant::now();
        let mut backoff = Duration::from_millis(5);
        loop {
            self.last_call_ms
                .store(self.started.elapsed().as_millis() as u64, Ordering::Relaxed);
            let phase = current_phase(&self.stats);
            let t0 = Instant::now();
            let slot = self.client.take_slot().await;
            let begun = owners.begin(&mut ops).await;
            let t1 = Instant::now();
            let mut e = Encoder::with_capacity(128 * ops.len().max(1));
            Compound4ArgsHeader {
                tag: Bytes::new(),
                minorversion: 0,
            }
            .pack(&mut e);
            e.u32(ops.len() as u32);
            for op in &ops {
                op.pack(&mut e);
            }
            let sent = self.call_overhead + e.len() as u64;
            let reply = self.send(e.finish()).await;
            let t2 = Instant::now();
            slot.release(SlotOutcome::Processed, None);
            let mut rec = CallRecord {
                phase,
                kind,
                ops: &names,
                bytes_sent: sent,
                bytes_recv: 0,
                queue: t1 - t0,
                rtt: t2 - t1,
                ok: false,
            };
            let res = match reply {
                Ok(mut d) => {
                    rec.bytes_recv = REPLY_OVERHEAD + d.remaining() as u64;
                    Compound4Res::unpack(&mut d).map_err(client::Error::from)
                }
                Err(e) => Err(client::Error::from(e)),
            };
            let res = match res {
                Ok(r) => r,
                Err(e) => {
                    owners.end(begun, &ops, None);
                    self.stats.record(rec);
                    return Err(e.into());
                }
            };
            owners.end(begun, &ops, Some(&res));
            rec.ok = res.status == NfsStat4::Nfs4Ok;
            self.stats.record(rec);
            if res.status == NfsStat4::Nfs4Ok {
                let mut results = res.resarray;
                for (i, fh, sid) in owners.unconfirmed(&results) {
                    let c =
                        Box::pin(self.compound40(owners, client::v40::confirm_ops(&fh, sid), None))
                            .await?;
                    let sid = client::v40::confirmed(&c)
                        .ok_or_else(|| Error::Msg(format!("expected OPEN_CONFIRM, got {c:?}")))?;
                    client::v40::patch_open(&mut results, i, sid);
                }
                return Ok(results);
            }
            if res.status != NfsStat4::Nfs4errDelay || started.elapsed() > Duration::from_secs(60) {
                return Err(Error::Nfs4 {
                    status: res.status,
                    op: names
                        .get(res.resarray.len().saturating_sub(1))
                        .copied()
                        .unwrap_or("?"),
                });
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(500));
        }
    }

    /// PUTFH; READ, counted as `kind`.
    pub(crate) async fn mds_read(
        &self,
        f: &OpenFile,
        off: u64,
        len: u32,
        kind: &'static str,
    ) -> Result<u64> {
        let read = |stateid| {
            NfsArgOp4::Read(Read4Args {
                stateid,
                offset: off,
                count: len,
            })
        };
        let r = match self
            .compound_as(vec![fh(&f.node), read(f.stateid)], Some(kind))
            .await
        {
            Err(e) if delegation_gone(f, &e) => {
                self.reopened(f, read(StateId4::CURRENT), false, kind)
                    .await?
            }
            r => r?.into_iter().nth(1),
        };
        match r {
            Some(NfsResOp4::Read(Res4::Ok(ok))) => Ok(ok.data.len() as u64),
            other => Err(Error::Msg(format!("expected READ, got {other:?}"))),
        }
    }

    /// `io` (a READ or WRITE; `write`) on a file opened here under a
    /// delegation the server has since recalled, whose stateid it no
    /// longer knows: under an open of its own instead (OPEN by filehandle,
    /// no delegation wanted; the operation under the current stateid;
    /// CLOSE) in one COMPOUND, as the Linux client opens at the server
    /// what it had open under a delegation once that goes. The
    /// operation's result.
    async fn reopened(
        &self,
        f: &OpenFile,
        io: NfsArgOp4,
        write: bool,
        kind: &'static str,
    ) -> Result<Option<NfsResOp4>> {
        let access = if write {
            OPEN4_SHARE_ACCESS_BOTH
        } else {
            OPEN4_SHARE_ACCESS_READ
        };
        let r = self
            .compound_as(
                vec![
                    fh(&f.node),
                    NfsArgOp4::Open(Open4Args {
                        seqid: 0,
                        share_access: access | OPEN4_SHARE_ACCESS_WANT_NO_DELEG,
                        share_deny: OPEN4_SHARE_DENY_NONE,
                        owner: self.open_owner(f.owner),
                        openhow: OpenFlag4::NoCreate,
                        claim: OpenClaim4::Fh,
                    }),
                    io,
                    NfsArgOp4::Close(Close4Args {
                        seqid: 0,
                        open_stateid: StateId4::CURRENT,
                    }),
                ],
                Some(kind),
            )
            .await?;
        Ok(r.into_iter().nth(2))
    }

    /// PUTFH; WRITE (FILE_SYNC or UNSTABLE), counted as `kind`.
    pub(crate) async fn mds_write(
        &self,
        f: &OpenFile,
        off: u64,
        data: Bytes,
        sync: bool,
        kind: &'static str,
    ) -> Result<()> {
        let stable = if sync {
            StableHow4::FileSync4
        } else {
            StableHow4::Unstable4
        };
        let write = |stateid, data| {
            NfsArgOp4::Write(Write4Args {
                stateid,
                offset: off,
                stable,
                data,
            })
        };
        match self
            .compound_as(
                vec![fh(&f.node), write(f.stateid, data.clone())],
                Some(kind),
            )
            .await
        {
            Err(e) if delegation_gone(f, &e) => {
                self.reopened(f, write(StateId4::CURRENT, data), true, kind)
                    .await?;
                Ok(())
            }
            r => r.map(|_| ()),
        }
    }

    /// PUTFH; COMMIT (whole file), counted as `kind`.
    pub(crate) async fn mds_commit(&self, file: &Bytes, kind: &'static str) -> Result<()> {
        self.compound_as(
            vec![
                NfsArgOp4::PutFh(PutFh4Args {
                    object: NfsFh4(file.clone()),
                }),
                NfsArgOp4::Commit(Commit4Args {
                    offset: 0,
                    count: 0,
                }),
            ],
            Some(kind),
        )
        .await?;
        Ok(())
    }

    fn open_owner(&self, owner: u32) -> StateOwner4 {
        StateOwner4 {
            clientid: self.client.clientid(),
            owner: Bytes::from(format!("ferrite-bench-open-{owner}")),
        }
    }

    fn lock_owner(&self, owner: u32) -> StateOwner4 {
        StateOwner4 {
            clientid: self.client.clientid(),
            owner: Bytes::from(format!("ferrite-bench-lock-{owner}")),
        }
    }
}

/// A delegation kept after its file's CLOSE ([`Nfs4Fs::open`]).
#[derive(Debug, Clone)]
struct Held {
    fh: Bytes,
    stateid: StateId4,
    write: bool,
}

/// Whether `f` was opened locally, under a kept delegation (its stateid
/// is the delegation's).
fn is_local(f: &OpenFile) -> bool {
    f.delegation == Some(f.stateid)
}

/// Whether `e` says the delegation `f` was opened under here is gone (the
/// callback handler returned it, or the server revoked it, while the file
/// was open under it).
fn delegation_gone(f: &OpenFile, e: &Error) -> bool {
    is_local(f)
        && matches!(
            e,
            Error::Nfs4 {
                status: NfsStat4::Nfs4errBadStateid
                    | NfsStat4::Nfs4errDelegRevoked
                    | NfsStat4::Nfs4errOldStateid,
                ..
            }
        )
}

impl Nfs4Fs {
    fn lock_held(&self) -> std::sync::MutexGuard<'_, HashMap<std::path::PathBuf, Held>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The delegations the server recalled from this client so far.
    fn recalled(&self) -> std::collections::HashSet<[u8; 12]> {
        self.client
            .callbacks()
            .recalls()
            .iter()
            .map(|r| r.stateid.other)
            .collect()
    }

    /// The delegation kept of `path` (a write one if `write`), unless the
    /// server recalled it meanwhile (then forgotten).
    fn kept(&self, path: &std::path::Path, write: bool) -> Option<Held> {
        let h = self.lock_held().get(path).cloned()?;
        if self.recalled().contains(&h.stateid.other) {
            self.lock_held().remove(path);
            return None;
        }
        (h.write || !write).then_some(h)
    }

    /// Whether `f` is under a delegation of this client not recalled (a
    /// write one for `write`): its locks are taken locally.
    fn delegated(&self, f: &OpenFile, write: bool) -> bool {
        f.delegation.is_some() && self.kept(&f.node.path, write).is_some()
    }
}

fn fh(n: &Node) -> NfsArgOp4 {
    NfsArgOp4::PutFh(PutFh4Args {
        object: NfsFh4(n.fh.clone()),
    })
}

fn getfh(r: Vec<NfsResOp4>, idx: usize) -> Result<Bytes> {
    match r.into_iter().nth(idx) {
        Some(NfsResOp4::GetFh(Res4::Ok(ok))) => Ok(ok.object.0),
        other => Err(Error::Msg(format!("expected GETFH, got {other:?}"))),
    }
}

fn name(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

#[async_trait]
impl BenchFs for Nfs4Fs {
    fn root(&self) -> Node {
        self.root.clone()
    }

    /// PUTFH; LOOKUP; GETFH.
    async fn lookup(&self, dir: &Node, n: &str) -> Result<Option<Node>> {
        match self
            .compound(vec![fh(dir), client::ops::lookup_op(n), NfsArgOp4::GetFh])
            .await
        {
            Ok(r) => Ok(Some(Node {
                fh: getfh(r, 2)?,
                path: dir.path.join(n),
            })),
            Err(Error::Nfs4 {
                status: NfsStat4::Nfs4errNoent,
                ..
            }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// PUTFH; CREATE (NF4DIR); GETFH — on NFS4ERR_EXIST, a lookup.
    async fn mkdir(&self, dir: &Node, n: &str) -> Result<Node> {
        let attrs = Attrs {
            mode: Some(0o755),
            ..Default::default()
        };
        let r = self
            .compound(vec![
                fh(dir),
                NfsArgOp4::Create(Create4Args {
                    objtype: CreateType4::Dir,
                    objname: name(n),
                    createattrs: attrs.encode(),
                }),
                NfsArgOp4::GetFh,
            ])
            .await;
        match r {
            Ok(r) => Ok(Node {
                fh: getfh(r, 2)?,
                path: dir.path.join(n),
            }),
            Err(Error::Nfs4 {
                status: NfsStat4::Nfs4errExist,
                ..
            }) => self
                .lookup(dir, n)
                .await?
                .ok_or_else(|| Error::Msg(format!("{n} exists but cannot be looked up"))),
            Err(e) => Err(e),
        }
    }

    /// PUTFH dir; OPEN (CLAIM_NULL); GETFH — or nothing, under a
    /// delegation this client kept of the file (a write one for writing).
    async fn open(&self, dir: &Node, n: &str, mode: OpenMode, owner: u32) -> Result<OpenFile> {
        let path = dir.path.join(n);
        if mode != OpenMode::Create {
            if let Some(h) = self.kept(&path, mode == OpenMode::ReadWrite) {
                return Ok(OpenFile {
                    node: Node { fh: h.fh, path },
                    stateid: h.stateid,
                    lock_stateid: None,
                    delegation: Some(h.stateid),
                    file: None,
                    owner,
                });
            }
        }
        let (access, openhow) = match mode {
            OpenMode::Read => (OPEN4_SHARE_ACCESS_READ, OpenFlag4::NoCreate),
            OpenMode::ReadWrite => (OPEN4_SHARE_ACCESS_BOTH, OpenFlag4::NoCreate),
            OpenMode::Create => {
                let a = Attrs {
                    mode: Some(0o644),
                    ..Default::default()
                };
                (
                    OPEN4_SHARE_ACCESS_BOTH,
                    OpenFlag4::Create(CreateHow4::Unchecked(a.encode())),
                )
            }
        };
        let r = self
            .compound(vec![
                fh(dir),
                NfsArgOp4::Open(Open4Args {
                    seqid: 0,
                    share_access: access,
                    share_deny: OPEN4_SHARE_DENY_NONE,
                    owner: self.open_owner(owner),
                    openhow,
                    claim: OpenClaim4::Null(name(n)),
                }),
                NfsArgOp4::GetFh,
            ])
            .await?;
        let mut r = r.into_iter().skip(1);
        let ok = match r.next() {
            Some(NfsResOp4::Open(Res4::Ok(ok))) => ok,
            other => return Err(Error::Msg(format!("expected OPEN, got {other:?}"))),
        };
        let f = match r.next() {
            Some(NfsResOp4::GetFh(Res4::Ok(f))) => f.object.0,
            other => return Err(Error::Msg(format!("expected GETFH, got {other:?}"))),
        };
        let granted = ok.delegation.granted();
        let delegation = granted.map(|(sid, _)| sid);
        if let Some((stateid, write)) = granted {
            self.delegations.fetch_add(1, Ordering::Relaxed);
            let h = Held {
                fh: f.clone(),
                stateid,
                write,
            };
            self.lock_held().insert(path, h);
        }
        Ok(OpenFile {
            node: Node {
                fh: f,
                path: dir.path.join(n),
            },
            stateid: ok.stateid,
            lock_stateid: None,
            delegation,
            file: None,
            owner,
        })
    }

    /// PUTFH; READ — or, with a layout, READ (DS) to a data server.
    async fn read(&self, f: &OpenFile, off: u64, len: u32) -> Result<u64> {
        if let Some(p) = &self.layouts {
            return p.read(self, f, off, len).await;
        }
        self.mds_read(f, off, len, "READ").await
    }

    /// PUTFH; WRITE (FILE_SYNC or UNSTABLE) — or, with a layout, WRITE
    /// (DS) to every mirror.
    async fn write(&self, f: &OpenFile, off: u64, data: Bytes, sync: bool) -> Result<()> {
        if let Some(p) = &self.layouts {
            return p.write(self, f, off, data, sync).await;
        }
        self.mds_write(f, off, data, sync, "WRITE").await
    }

    /// PUTFH; COMMIT (whole file) — or, after writes through layouts,
    /// COMMIT (DS) to the data servers and LAYOUTCOMMIT.
    async fn commit(&self, f: &OpenFile) -> Result<()> {
        if let Some(p) = &self.layouts {
            return p.commit(self, f).await;
        }
        self.mds_commit(&f.node.fh, "COMMIT").await
    }

    /// PUTFH; CLOSE — nothing for a file opened under a kept delegation,
    /// whose delegation is kept after it too. After writes through
    /// layouts, COMMIT (DS) and LAYOUTCOMMIT first.
    async fn close(&self, f: OpenFile) -> Result<()> {
        if let Some(p) = &self.layouts {
            p.before_close(self, &f).await?;
        }
        if is_local(&f) {
            return Ok(());
        }
        self.compound(vec![
            fh(&f.node),
            NfsArgOp4::Close(Close4Args {
                seqid: 0,
                open_stateid: f.stateid,
            }),
        ])
        .await?;
        Ok(())
    }

    /// PUTFH; LOCK (whole file, open-to-lock-owner with the worker's lock
    /// owner) — or nothing under a delegation this client holds (and,
    /// for a write lock, a write one), as the Linux client locks locally
    /// then (RFC 8881 §10.4).
    async fn lock(&self, f: &mut OpenFile, write: bool) -> Result<()> {
        if self.delegated(f, write) {
            f.lock_stateid = f.delegation;
            return Ok(());
        }
        let locktype = if write {
            NfsLockType4::WriteLt
        } else {
            NfsLockType4::ReadLt
        };
        let locker = match f.lock_stateid {
            Some(s) => self.client.existing_locker(s),
            None => self.client.new_locker(f.stateid, self.lock_owner(f.owner)),
        };
        let r = self
            .compound(vec![
                fh(&f.node),
                NfsArgOp4::Lock(Lock4Args {
                    locktype,
                    reclaim: false,
                    offset: 0,
                    length: u64::MAX,
                    locker,
                }),
            ])
            .await?;
        match r.into_iter().nth(1) {
            Some(NfsResOp4::Lock(Lock4Res::Ok(ok))) => {
                f.lock_stateid = Some(ok.lock_stateid);
                Ok(())
            }
            other => Err(Error::Msg(format!("expected LOCK, got {other:?}"))),
        }
    }

    /// PUTFH; LOCKU (whole file) — nothing for a lock taken locally.
    async fn unlock(&self, f: &mut OpenFile) -> Result<()> {
        let Some(s) = f.lock_stateid else {
            return Err(Error::Msg("unlock without a lock".into()));
        };
        if f.delegation == Some(s) {
            return Ok(());
        }
        let r = self
            .compound(vec![
                fh(&f.node),
                NfsArgOp4::LockU(LockU4Args {
                    locktype: NfsLockType4::ReadLt,
                    seqid: 0,
                    lock_stateid: s,
                    offset: 0,
                    length: u64::MAX,
                }),
            ])
            .await?;
        if let Some(NfsResOp4::LockU(Res4::Ok(s))) = r.into_iter().nth(1) {
            f.lock_stateid = Some(s);
        }
        Ok(())
    }

    /// PUTFH; READDIR (type and fileid, dircount 8 KiB, maxcount 32 KiB),
    /// repeated until eof.
    async fn readdir(&self, dir: &Node) -> Result<u64> {
        let mut cookie = 0;
        let mut verf = [0u8; 8];
        let mut n = 0u64;
        loop {
            let r = self
                .compound(vec![
                    fh(dir),
                    NfsArgOp4::ReadDir(ReadDir4Args {
                        cookie,
                        cookieverf: verf,
                        dircount: 8192,
                        maxcount: 32768,
                        attr_request: Bitmap4::from_attrs(&[FATTR4_TYPE, FATTR4_FILEID]),
                    }),
                ])
                .await?;
            let page = match r.into_iter().nth(1) {
                Some(NfsResOp4::ReadDir(Res4::Ok(ok))) => ok,
                other => return Err(Error::Msg(format!("expected READDIR, got {other:?}"))),
            };
            verf = page.cookieverf;
            let got = page.reply.entries.len();
            n += got as u64;
            if let Some(last) = page.reply.entries.last() {
                cookie = last.cookie;
            }
            if page.reply.eof {
                return Ok(n);
            }
            if got == 0 {
                return Err(Error::Msg("READDIR returned no entries and no eof".into()));
            }
        }
    }

    /// PUTFH; REMOVE (a delegation kept of the file is forgotten: the
    /// server recalls it).
    async fn remove(&self, dir: &Node, n: &str) -> Result<()> {
        self.lock_held().remove(&dir.path.join(n));
        self.compound(vec![
            fh(dir),
            NfsArgOp4::Remove(Remove4Args { target: name(n) }),
        ])
        .await?;
        Ok(())
    }

    /// PUTFH; GETATTR (size).
    async fn size(&self, node: &Node) -> Result<u64> {
        let r = self
            .compound(vec![fh(node), client::ops::getattr_op(&[FATTR4_SIZE])])
            .await?;
        match r.into_iter().nth(1) {
            Some(NfsResOp4::GetAttr(Res4::Ok(ok))) => Attrs::decode(&ok.obj_attributes)
                .ok()
                .and_then(|a| a.size)
                .ok_or_else(|| Error::Msg("GETATTR without a size".into())),
            other => Err(Error::Msg(format!("expected GETATTR, got {other:?}"))),
        }
    }

    /// PUTFH; CREATE (NF4LNK); GETFH.
    async fn symlink(&self, dir: &Node, n: &str, target: &str) -> Result<Node> {
        let r = self
            .compound(vec![
                fh(dir),
                NfsArgOp4::Create(Create4Args {
                    objtype: CreateType4::Link(name(target)),
                    objname: name(n),
                    createattrs: Attrs::default().encode(),
                }),
                NfsArgOp4::GetFh,
            ])
            .await?;
        Ok(Node {
            fh: getfh(r, 2)?,
            path: dir.path.join(n),
        })
    }

    /// PUTFH; READLINK.
    async fn readlink(&self, link: &Node) -> Result<u64> {
        let r = self.compound(vec![fh(link), NfsArgOp4::ReadLink]).await?;
        match r.into_iter().nth(1) {
            Some(NfsResOp4::ReadLink(Res4::Ok(ok))) => Ok(ok.link.len() as u64),
            other => Err(Error::Msg(format!("expected READLINK, got {other:?}"))),
        }
    }

    /// PUTFH; SETATTR (mode, anonymous stateid).
    async fn set_mode(&self, node: &Node, mode: u32) -> Result<()> {
        let attrs = Attrs {
            mode: Some(mode),
            ..Default::default()
        };
        self.compound(vec![
            fh(node),
            NfsArgOp4::SetAttr(SetAttr4Args {
                stateid: StateId4::ANONYMOUS,
                obj_attributes: attrs.encode(),
            }),
        ])
        .await?;
        Ok(())
    }

    /// PUTFH; GETATTR (space_avail, space_free, space_total, files_avail).
    async fn fsstat(&self, node: &Node) -> Result<u64> {
        let r = self
            .compound(vec![
                fh(node),
                client::ops::getattr_op(&[
                    FATTR4_FILES_AVAIL,
                    FATTR4_SPACE_AVAIL,
                    FATTR4_SPACE_FREE,
                    FATTR4_SPACE_TOTAL,
                ]),
            ])
            .await?;
        match r.into_iter().nth(1) {
            Some(NfsResOp4::GetAttr(Res4::Ok(ok))) => Attrs::decode(&ok.obj_attributes)
                .ok()
                .and_then(|a| a.space_avail)
                .ok_or_else(|| Error::Msg("GETATTR without space_avail".into())),
            other => Err(Error::Msg(format!("expected GETATTR, got {other:?}"))),
        }
    }

    fn recalls(&self) -> u64 {
        self.client.callbacks().recalls().len() as u64
    }

    fn delegations(&self) -> u64 {
        self.delegations.load(Ordering::Relaxed)
    }

    fn measured(&self) {
        let n = self.client.callbacks().delegreturns();
        let _ = self.returned_measuring.compare_exchange(
            u64::MAX,
            n,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    fn slot_wait(&self) -> (u64, u64, u64, u64) {
        let s = self.client.slot_stats();
        (
            s.acquired,
            s.waited,
            s.wait_total.as_nanos() as u64,
            s.wait_max.as_nanos() as u64,
        )
    }

    /// pNFS: every layout still held given back (its writes committed
    /// first). DESTROY_SESSION, DESTROY_CLIENTID (counted as teardown). The
    /// DELEGRETURNs the client's callback handler sent after CB_RECALLs
    /// (SEQUENCE, PUTFH, DELEGRETURN each) are counted here too, as kind
    /// "DELEGRETURN(recall)": in the measure phase those sent before it
    /// ended ([`BenchFs::measured`]), the rest in teardown.
    async fn shutdown(&self) -> Result<()> {
        let layouts = match &self.layouts {
            Some(p) => p.shutdown(self).await,
            None => Ok(()),
        };
        // The delegations kept, given back (counted as teardown).
        let kept: Vec<Held> = self.lock_held().drain().map(|(_, h)| h).collect();
        let recalled = self.recalled();
        for h in kept
            .into_iter()
            .filter(|h| !recalled.contains(&h.stateid.other))
        {
            let ops = vec![
                NfsArgOp4::PutFh(PutFh4Args {
                    object: NfsFh4(h.fh.clone()),
                }),
                NfsArgOp4::DelegReturn(DelegReturn4Args {
                    deleg_stateid: h.stateid,
                }),
            ];
            // A delegation revoked meanwhile is no error at the end.
            let _ = self.client.compound(ops).await;
            self.stats.count_ops(
                Phase::Teardown,
                "DELEGRETURN",
                &["SEQUENCE", "PUTFH", "DELEGRETURN"],
            );
        }
        let returned = self.client.callbacks().delegreturns();
        let measuring = self
            .returned_measuring
            .load(Ordering::Relaxed)
            .min(returned);
        for i in 0..returned {
            let phase = if i < measuring {
                Phase::Measure
            } else {
                Phase::Teardown
            };
            self.stats.count_ops(
                phase,
                "DELEGRETURN(recall)",
                &["SEQUENCE", "PUTFH", "DELEGRETURN"],
            );
        }
        // NFSv4.0 has neither: its client ID lapses with the lease.
        if self.client.v40().is_none() {
            self.stats
                .count_ops(Phase::Teardown, "DESTROY_SESSION", &["DESTROY_SESSION"]);
            self.stats
                .count_ops(Phase::Teardown, "DESTROY_CLIENTID", &["DESTROY_CLIENTID"]);
        }
        self.client.destroy().await?;
        layouts
    }
}
