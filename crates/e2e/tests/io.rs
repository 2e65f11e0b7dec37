//! Opens, I/O, stateids and locks: OPEN, CLOSE, OPEN_DOWNGRADE, READ,
//! WRITE, COMMIT, TEST_STATEID, FREE_STATEID, LOCK, LOCKT, LOCKU
//! (RFC 8881 §8, §9, §18).

mod common;

use bytes::Bytes;
use client::{OpenCreate, OpenOpts};
use common::*;
use proto::nfs4::*;

#[tokio::test]
async fn open_create_write_read_close() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let o = c.open(&root, "new", OpenOpts::create(0o640)).await.unwrap();
        assert_ne!(o.stateid.other, [0; 12]);
        assert_ne!(o.cinfo.before, o.cinfo.after, "the directory changed");
        let w = c
            .write(
                &o.fh,
                o.stateid,
                0,
                Bytes::from_static(b"hello"),
                StableHow4::FileSync4,
            )
            .await
            .unwrap();
        assert_eq!(w.count, 5);
        assert_eq!(w.committed, StableHow4::FileSync4);
        let (data, eof) = c.read(&o.fh, o.stateid, 0, 100).await.unwrap();
        assert_eq!(&data[..], b"hello");
        assert!(eof);
        let (data, eof) = c.read(&o.fh, o.stateid, 1, 2).await.unwrap();
        assert_eq!(&data[..], b"el");
        assert!(!eof);
        let a = c
            .getattr(&o.fh, &[FATTR4_SIZE, FATTR4_MODE, FATTR4_TYPE])
            .await
            .unwrap();
        assert_eq!(a.size, Some(5));
        assert_eq!(a.mode, Some(0o640));
        assert_eq!(a.type_, Some(NfsFtype4::Nf4Reg));
        // The stateid CLOSE returns is of no further use (§18.2.4).
        c.close(&o.fh, o.stateid).await.unwrap();
        assert_eq!(std::fs::read(srv.path("new")).unwrap(), b"hello");
        // After CLOSE the stateid is gone.
        let r = c.read(&o.fh, o.stateid, 0, 5).await;
        assert_eq!(status(r), NfsStat4::Nfs4errBadStateid);
        let r = c.close(&o.fh, o.stateid).await;
        assert_eq!(status(r), NfsStat4::Nfs4errBadStateid);
    })
    .await
}

#[tokio::test]
async fn open_create_modes() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "existing", b"keep me");
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();

        // UNCHECKED on an existing file opens it without truncating.
        let o = c
            .open(&root, "existing", OpenOpts::create(0o600))
            .await
            .unwrap();
        let (data, _) = c.read(&o.fh, o.stateid, 0, 100).await.unwrap();
        assert_eq!(&data[..], b"keep me");
        c.close(&o.fh, o.stateid).await.unwrap();
        // UNCHECKED with size 0 truncates.
        let mut opts = OpenOpts::create(0o600);
        opts.attrs = Some(Attrs {
            size: Some(0),
            ..Default::default()
        });
        let o = c.open(&root, "existing", opts).await.unwrap();
        assert_eq!(std::fs::metadata(srv.path("existing")).unwrap().len(), 0);
        c.close(&o.fh, o.stateid).await.unwrap();

        // GUARDED: creates a new file, EXIST on an existing one.
        let g = OpenOpts::create(0o600).how(OpenCreate::Guarded);
        let o = c.open(&root, "guarded", g.clone()).await.unwrap();
        c.close(&o.fh, o.stateid).await.unwrap();
        assert!(srv.path("guarded").exists());
        assert_eq!(
            status(c.open(&root, "guarded", g).await),
            NfsStat4::Nfs4errExist
        );

        // EXCLUSIVE4_1: a retry with the same verifier succeeds on the same
        // file; another verifier is EXIST.
        let x = OpenOpts::create(0o600).how(OpenCreate::Exclusive41([9; 8]));
        let o1 = c.open(&root, "excl", x.clone()).await.unwrap();
        let o2 = c.open(&root, "excl", x).await.unwrap();
        assert_eq!(o1.fh, o2.fh);
        c.close(&o2.fh, o2.stateid).await.unwrap();
        let y = OpenOpts::create(0o600).how(OpenCreate::Exclusive41([8; 8]));
        assert_eq!(
            status(c.open(&root, "excl", y).await),
            NfsStat4::Nfs4errExist
        );
        let a = c
            .getattr(&o1.fh, &[FATTR4_MODE, FATTR4_SIZE])
            .await
            .unwrap();
        assert_eq!(a.size, Some(0));

        // NOCREATE of a missing file.
        assert_eq!(
            status(c.open(&root, "missing", OpenOpts::read()).await),
            NfsStat4::Nfs4errNoent
        );
    })
    .await
}

#[tokio::test]
async fn open_claim_fh_and_open_errors() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", b"data");
        std::fs::create_dir(srv.path("d")).unwrap();
        std::os::unix::fs::symlink("f", srv.path("l")).unwrap();
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let f = c.lookup(&root, "f").await.unwrap();
        let o = c.open_fh(&f, OpenOpts::read()).await.unwrap();
        assert_eq!(o.fh, f);
        let (data, _) = c.read(&f, o.stateid, 0, 10).await.unwrap();
        assert_eq!(&data[..], b"data");
        c.close(&f, o.stateid).await.unwrap();

        assert_eq!(
            status(c.open(&root, "d", OpenOpts::read()).await),
            NfsStat4::Nfs4errIsdir
        );
        assert_eq!(
            status(c.open(&root, "l", OpenOpts::read()).await),
            NfsStat4::Nfs4errSymlink
        );
        assert_eq!(
            status(c.open(&root, "", OpenOpts::create(0o600)).await),
            NfsStat4::Nfs4errInval
        );
        assert_eq!(
            status(c.open(&root, "..", OpenOpts::create(0o600)).await),
            NfsStat4::Nfs4errBadname
        );
        assert_eq!(
            status(c.open(&f, "x", OpenOpts::read()).await),
            NfsStat4::Nfs4errNotdir
        );
        let d = c.lookup(&root, "d").await.unwrap();
        assert_eq!(
            status(c.open_fh(&d, OpenOpts::read()).await),
            NfsStat4::Nfs4errIsdir
        );
        // share_access 0 is invalid.
        let mut bad = OpenOpts::read();
        bad.access = 0;
        assert_eq!(
            status(c.open(&root, "f", bad).await),
            NfsStat4::Nfs4errInval
        );
    })
    .await
}

#[tokio::test]
async fn open_downgrade_narrows_access() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let o = c.open(&root, "f", OpenOpts::create(0o644)).await.unwrap();
        c.write(
            &o.fh,
            o.stateid,
            0,
            Bytes::from_static(b"abc"),
            StableHow4::FileSync4,
        )
        .await
        .unwrap();
        // Only down to what an OPEN asked for (RFC 8881 §18.18.3): the
        // same owner opens for reading too.
        let r = c
            .open_downgrade(
                &o.fh,
                o.stateid,
                OPEN4_SHARE_ACCESS_READ,
                OPEN4_SHARE_DENY_NONE,
            )
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errInval);
        let o2 = c.open_fh(&o.fh, OpenOpts::read()).await.unwrap();
        assert_eq!(o2.stateid.other, o.stateid.other);
        let d = c
            .open_downgrade(
                &o.fh,
                o2.stateid,
                OPEN4_SHARE_ACCESS_READ,
                OPEN4_SHARE_DENY_NONE,
            )
            .await
            .unwrap();
        assert_eq!(d.other, o.stateid.other);
        assert_eq!(d.seqid, o2.stateid.seqid + 1);
        let (data, _) = c.read(&o.fh, d, 0, 3).await.unwrap();
        assert_eq!(&data[..], b"abc");
        // Writing through a read-only open: OPENMODE.
        let r = c
            .write(&o.fh, d, 0, Bytes::from_static(b"x"), StableHow4::FileSync4)
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errOpenmode);
        // Downgrading to access never held is INVAL.
        let r = c
            .open_downgrade(&o.fh, d, OPEN4_SHARE_ACCESS_BOTH, OPEN4_SHARE_DENY_NONE)
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errInval);
        // The old seqid is now OLD_STATEID.
        let r = c
            .open_downgrade(
                &o.fh,
                o.stateid,
                OPEN4_SHARE_ACCESS_READ,
                OPEN4_SHARE_DENY_NONE,
            )
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errOldStateid);
        c.close(&o.fh, d).await.unwrap();
    })
    .await
}

#[tokio::test]
async fn write_stability_levels_and_commit() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let o = c.open(&root, "f", OpenOpts::create(0o644)).await.unwrap();
        let data = Bytes::from(vec![0x5a; 100_000]);
        let u = c
            .write(&o.fh, o.stateid, 0, data.clone(), StableHow4::Unstable4)
            .await
            .unwrap();
        assert_eq!(u.count, 100_000);
        let d = c
            .write(
                &o.fh,
                o.stateid,
                100_000,
                data.clone(),
                StableHow4::DataSync4,
            )
            .await
            .unwrap();
        assert!(d.committed >= StableHow4::DataSync4);
        let f = c
            .write(
                &o.fh,
                o.stateid,
                200_000,
                data.clone(),
                StableHow4::FileSync4,
            )
            .await
            .unwrap();
        assert_eq!(f.committed, StableHow4::FileSync4);
        assert_eq!(u.verf, d.verf);
        assert_eq!(u.verf, f.verf);
        let cv = c.commit(&o.fh, 0, 0).await.unwrap();
        assert_eq!(cv, u.verf, "COMMIT returns the same verifier");
        let cv = c.commit(&o.fh, 100, 1000).await.unwrap();
        assert_eq!(cv, u.verf);
        let got = std::fs::read(srv.path("f")).unwrap();
        assert_eq!(got.len(), 300_000);
        assert!(got.iter().all(|&b| b == 0x5a));
        // A large read comes back whole.
        let (back, eof) = c.read(&o.fh, o.stateid, 0, 300_000).await.unwrap();
        assert_eq!(back.len(), 300_000);
        assert!(eof);
        // Reads past the end: empty with eof.
        let (back, eof) = c.read(&o.fh, o.stateid, 1_000_000, 10).await.unwrap();
        assert!(back.is_empty() && eof);
        // A write of nothing is fine.
        let z = c
            .write(&o.fh, o.stateid, 0, Bytes::new(), StableHow4::Unstable4)
            .await
            .unwrap();
        assert_eq!(z.count, 0);
        c.close(&o.fh, o.stateid).await.unwrap();
    })
    .await
}

#[tokio::test]
async fn write_verifier_changes_across_restart() {
    within(async {
        let mut srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let o = c.open(&root, "f", OpenOpts::create(0o644)).await.unwrap();
        let w1 = c
            .write(
                &o.fh,
                o.stateid,
                0,
                Bytes::from_static(b"one"),
                StableHow4::Unstable4,
            )
            .await
            .unwrap();
        let v1 = c.commit(&o.fh, 0, 0).await.unwrap();
        assert_eq!(w1.verf, v1);
        drop(c);
        srv.restart().await;
        let c = srv.client().await;
        let o = c.open(&root, "f", OpenOpts::both()).await.unwrap();
        let w2 = c
            .write(
                &o.fh,
                o.stateid,
                3,
                Bytes::from_static(b"two"),
                StableHow4::Unstable4,
            )
            .await
            .unwrap();
        assert_ne!(w2.verf, w1.verf, "a new server instance has a new verifier");
        assert_ne!(c.commit(&o.fh, 0, 0).await.unwrap(), v1);
        assert_eq!(std::fs::read(srv.path("f")).unwrap(), b"onetwo");
    })
    .await
}

#[tokio::test]
async fn io_on_directories_and_special_stateids() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "f", b"anonymous");
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let f = c.lookup(&root, "f").await.unwrap();
        // The anonymous and bypass stateids read without an open (§8.2.3).
        let (data, _) = c.read(&f, StateId4::ANONYMOUS, 0, 100).await.unwrap();
        assert_eq!(&data[..], b"anonymous");
        let (data, _) = c.read(&f, StateId4::BYPASS, 0, 4).await.unwrap();
        assert_eq!(&data[..], b"anon");
        let w = c
            .write(
                &f,
                StateId4::ANONYMOUS,
                0,
                Bytes::from_static(b"A"),
                StableHow4::FileSync4,
            )
            .await
            .unwrap();
        assert_eq!(w.count, 1);
        // The current stateid carries from OPEN to READ in one compound.
        let r = c
            .compound(vec![
                putfh(&root),
                NfsArgOp4::Open(Open4Args {
                    seqid: 0,
                    share_access: OPEN4_SHARE_ACCESS_READ,
                    share_deny: 0,
                    owner: c.default_open_owner(),
                    openhow: OpenFlag4::NoCreate,
                    claim: OpenClaim4::Null(b("f")),
                }),
                NfsArgOp4::Read(Read4Args {
                    stateid: StateId4::CURRENT,
                    offset: 0,
                    count: 100,
                }),
                NfsArgOp4::Close(Close4Args {
                    seqid: 0,
                    open_stateid: StateId4::CURRENT,
                }),
            ])
            .await
            .unwrap();
        match &r[2] {
            NfsResOp4::Read(Res4::Ok(ok)) => assert_eq!(&ok.data[..], b"Anonymous"),
            other => panic!("{other:?}"),
        }
        // Directories: ISDIR.
        let r = c.read(&root, StateId4::ANONYMOUS, 0, 10).await;
        assert_eq!(status(r), NfsStat4::Nfs4errIsdir);
        let r = c
            .write(
                &root,
                StateId4::ANONYMOUS,
                0,
                Bytes::from_static(b"x"),
                StableHow4::FileSync4,
            )
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errIsdir);
        let r = c.commit(&root, 0, 0).await;
        assert_eq!(status(r), NfsStat4::Nfs4errIsdir);
        // A symlink is not a file either.
        let l = c.symlink(&root, "l", "f").await.unwrap();
        let r = c.read(&l, StateId4::ANONYMOUS, 0, 10).await;
        assert!(
            matches!(status(r), NfsStat4::Nfs4errSymlink | NfsStat4::Nfs4errInval),
            "READ of a symlink"
        );
    })
    .await
}

#[tokio::test]
async fn bad_and_old_stateids() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let o = c.open(&root, "f", OpenOpts::create(0o644)).await.unwrap();
        let forged = forge(o.stateid);
        let random = StateId4 {
            seqid: 1,
            other: [0x77; 12],
        };
        assert!(unknown_stateid(status(c.read(&o.fh, random, 0, 1).await)));
        assert_eq!(
            status(c.read(&o.fh, forged, 0, 1).await),
            NfsStat4::Nfs4errBadStateid
        );
        assert_eq!(
            status(
                c.write(
                    &o.fh,
                    forged,
                    0,
                    Bytes::from_static(b"x"),
                    StableHow4::FileSync4
                )
                .await
            ),
            NfsStat4::Nfs4errBadStateid
        );
        // Opening again under the same owner bumps the seqid.
        let o2 = c.open(&root, "f", OpenOpts::read()).await.unwrap();
        assert_eq!(o2.stateid.other, o.stateid.other);
        assert_eq!(o2.stateid.seqid, o.stateid.seqid + 1);
        assert_eq!(
            status(c.read(&o.fh, o.stateid, 0, 1).await),
            NfsStat4::Nfs4errOldStateid
        );
        // seqid 0 means "the current one" (§8.2.2).
        let zero = StateId4 {
            seqid: 0,
            other: o.stateid.other,
        };
        c.read(&o.fh, zero, 0, 1).await.unwrap();
        // A seqid from the future is BAD_STATEID.
        let future = StateId4 {
            seqid: o2.stateid.seqid + 10,
            other: o.stateid.other,
        };
        assert_eq!(
            status(c.read(&o.fh, future, 0, 1).await),
            NfsStat4::Nfs4errBadStateid
        );
        assert_eq!(
            status(c.close(&o.fh, o.stateid).await),
            NfsStat4::Nfs4errOldStateid
        );
        // A stateid used on another file.
        put_file(&srv, "g", b"");
        let g = c.lookup(&root, "g").await.unwrap();
        assert_eq!(
            status(c.read(&g, o2.stateid, 0, 1).await),
            NfsStat4::Nfs4errBadStateid
        );
        c.close(&o.fh, o2.stateid).await.unwrap();
        // Another client cannot use this client's stateid.
        let o3 = c.open(&root, "f", OpenOpts::read()).await.unwrap();
        let other = srv.client().await;
        assert_eq!(
            status(other.read(&o3.fh, o3.stateid, 0, 1).await),
            NfsStat4::Nfs4errBadStateid
        );
    })
    .await
}

#[tokio::test]
async fn share_reservations_between_two_clients() {
    within(async {
        let srv = TestServer::start().await;
        put_file(&srv, "shared", b"x");
        let a = srv.client().await;
        let b_ = srv.client().await;
        let root = a.root_fh().await.unwrap();
        // A reads and denies writers.
        let oa = a
            .open(
                &root,
                "shared",
                OpenOpts::read().deny(OPEN4_SHARE_DENY_WRITE),
            )
            .await
            .unwrap();
        // B may not open for writing...
        assert_eq!(
            status(b_.open(&root, "shared", OpenOpts::write()).await),
            NfsStat4::Nfs4errShareDenied
        );
        // ...nor deny the reading A does...
        assert_eq!(
            status(
                b_.open(
                    &root,
                    "shared",
                    OpenOpts::read().deny(OPEN4_SHARE_DENY_READ)
                )
                .await
            ),
            NfsStat4::Nfs4errShareDenied
        );
        // ...but may read.
        let ob = b_.open(&root, "shared", OpenOpts::read()).await.unwrap();
        // Anonymous writes conflict with the deny too (§9.7).
        let r = b_
            .write(
                &oa.fh,
                StateId4::ANONYMOUS,
                0,
                Bytes::from_static(b"y"),
                StableHow4::FileSync4,
            )
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errLocked);
        b_.close(&ob.fh, ob.stateid).await.unwrap();
        a.close(&oa.fh, oa.stateid).await.unwrap();
        // Once A is gone, B can write.
        let ob = b_.open(&root, "shared", OpenOpts::write()).await.unwrap();
        b_.close(&ob.fh, ob.stateid).await.unwrap();
    })
    .await
}

#[tokio::test]
async fn test_stateid_and_free_stateid() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let o = c.open(&root, "f", OpenOpts::create(0o644)).await.unwrap();
        let forged = forge(o.stateid);
        let codes = c
            .test_stateids(vec![
                o.stateid,
                forged,
                StateId4 {
                    seqid: 0,
                    ..o.stateid
                },
            ])
            .await
            .unwrap();
        assert_eq!(
            codes,
            vec![
                NfsStat4::Nfs4Ok,
                NfsStat4::Nfs4errBadStateid,
                NfsStat4::Nfs4Ok
            ]
        );
        // An open stateid still holds an open: LOCKS_HELD (§18.38.3).
        assert_eq!(
            status(c.free_stateid(o.stateid).await),
            NfsStat4::Nfs4errLocksHeld
        );
        assert_eq!(
            status(c.free_stateid(forged).await),
            NfsStat4::Nfs4errBadStateid
        );

        // A lock stateid with a lock held: LOCKS_HELD; after LOCKU: freed.
        let owner = c.new_owner("lock");
        let l = c
            .lock(
                &o.fh,
                NfsLockType4::WriteLt,
                0,
                10,
                c.new_locker(o.stateid, owner),
            )
            .await
            .unwrap();
        assert_eq!(status(c.free_stateid(l).await), NfsStat4::Nfs4errLocksHeld);
        let l = c
            .locku(&o.fh, NfsLockType4::WriteLt, l, 0, 10)
            .await
            .unwrap();
        c.free_stateid(l).await.unwrap();
        let codes = c.test_stateids(vec![l]).await.unwrap();
        assert_eq!(codes, vec![NfsStat4::Nfs4errBadStateid]);
        c.close(&o.fh, o.stateid).await.unwrap();
        let codes = c.test_stateids(vec![o.stateid]).await.unwrap();
        assert_eq!(codes, vec![NfsStat4::Nfs4errBadStateid]);
    })
    .await
}

#[tokio::test]
async fn byte_range_locks_conflict_and_release() {
    within(async {
        let srv = TestServer::start().await;
        let a = srv.client().await;
        let b_ = srv.client().await;
        let root = a.root_fh().await.unwrap();
        let oa = a
            .open(&root, "locked", OpenOpts::create(0o666))
            .await
            .unwrap();
        let ob = b_.open(&root, "locked", OpenOpts::both()).await.unwrap();
        let a_owner = a.new_owner("a-lock");
        let b_owner = b_.new_owner("b-lock");

        let la = a
            .lock(
                &oa.fh,
                NfsLockType4::WriteLt,
                100,
                50,
                a.new_locker(oa.stateid, a_owner.clone()),
            )
            .await
            .unwrap();
        assert_ne!(la.other, oa.stateid.other, "a lock stateid of its own");

        // B's LOCKT over part of the range: DENIED with A's lock.
        let e = b_
            .lockt(&ob.fh, NfsLockType4::ReadLt, 120, 1, b_owner.clone())
            .await
            .unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errDenied));
        let d = e.denied().expect("LOCK4denied");
        assert_eq!((d.offset, d.length), (100, 50));
        assert_eq!(d.locktype, NfsLockType4::WriteLt);
        assert_eq!(d.owner, a_owner);
        // And B's LOCK likewise.
        let e = b_
            .lock(
                &ob.fh,
                NfsLockType4::WriteLt,
                0,
                u64::MAX,
                b_.new_locker(ob.stateid, b_owner.clone()),
            )
            .await
            .unwrap_err();
        assert_eq!(e.status(), Some(NfsStat4::Nfs4errDenied));
        assert_eq!(e.denied().map(|d| (d.offset, d.length)), Some((100, 50)));
        // Outside the range is fine.
        b_.lockt(&ob.fh, NfsLockType4::WriteLt, 150, 10, b_owner.clone())
            .await
            .unwrap();
        let lb = b_
            .lock(
                &ob.fh,
                NfsLockType4::WriteLt,
                0,
                100,
                b_.new_locker(ob.stateid, b_owner.clone()),
            )
            .await
            .unwrap();
        // A's own range: no conflict with itself.
        a.lockt(&oa.fh, NfsLockType4::WriteLt, 100, 50, a_owner.clone())
            .await
            .unwrap();

        // Unlock; the lock stateid's seqid moves on.
        let la2 = a
            .locku(&oa.fh, NfsLockType4::WriteLt, la, 100, 50)
            .await
            .unwrap();
        assert_eq!(la2.other, la.other);
        assert_eq!(la2.seqid, la.seqid + 1);
        b_.lockt(&ob.fh, NfsLockType4::WriteLt, 100, 50, b_owner.clone())
            .await
            .unwrap();
        // The old lock seqid is OLD_STATEID.
        let r = a.locku(&oa.fh, NfsLockType4::WriteLt, la, 100, 50).await;
        assert_eq!(status(r), NfsStat4::Nfs4errOldStateid);

        // Read locks share.
        let a2 = a.new_owner("a-read");
        a.lock(
            &oa.fh,
            NfsLockType4::ReadLt,
            1000,
            10,
            a.new_locker(oa.stateid, a2),
        )
        .await
        .unwrap();
        let lb2 = b_
            .lock(
                &ob.fh,
                NfsLockType4::ReadLt,
                1005,
                10,
                b_.existing_locker(lb),
            )
            .await
            .unwrap();
        assert_eq!(lb2.other, lb.other);

        // Argument errors (§18.10.3): zero length, range overflow.
        let a3 = a.new_owner("a-bad");
        let r = a
            .lock(
                &oa.fh,
                NfsLockType4::WriteLt,
                0,
                0,
                a.new_locker(oa.stateid, a3.clone()),
            )
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errInval);
        let r = a
            .lock(
                &oa.fh,
                NfsLockType4::WriteLt,
                u64::MAX - 5,
                10,
                a.new_locker(oa.stateid, a3.clone()),
            )
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errInval);
        let r = a.lockt(&oa.fh, NfsLockType4::WriteLt, 0, 0, a3).await;
        assert_eq!(status(r), NfsStat4::Nfs4errInval);
        let forged = forge(la);
        let r = a.locku(&oa.fh, NfsLockType4::WriteLt, forged, 0, 1).await;
        assert_eq!(status(r), NfsStat4::Nfs4errBadStateid);
        // A write lock through a read-only open: OPENMODE.
        let ro = a
            .open(&root, "locked", OpenOpts::read().owner(a.new_owner("ro")))
            .await
            .unwrap();
        let r = a
            .lock(
                &ro.fh,
                NfsLockType4::WriteLt,
                5000,
                1,
                a.new_locker(ro.stateid, a.new_owner("ro-lock")),
            )
            .await;
        assert_eq!(status(r), NfsStat4::Nfs4errOpenmode);

        // Closing an open with locks held is LOCKS_HELD (§18.2.3)...
        let r = b_.close(&ob.fh, ob.stateid).await;
        assert_eq!(status(r), NfsStat4::Nfs4errLocksHeld);
        // ...until they are released.
        let lb3 = b_
            .locku(&ob.fh, NfsLockType4::WriteLt, lb2, 0, u64::MAX)
            .await
            .unwrap();
        b_.free_stateid(lb3).await.unwrap();
        b_.close(&ob.fh, ob.stateid).await.unwrap();
    })
    .await
}
