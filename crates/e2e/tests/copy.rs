//! Server-side copy: COPY, CLONE, OFFLOAD_STATUS and OFFLOAD_CANCEL
//! (RFC 7862 §15.2, §15.13, §15.8, §15.9).

mod common;

use bytes::Bytes;
use client::{Client, OpenOpts};
use common::*;
use proto::nfs4::*;

async fn client42(srv: &TestServer) -> Client {
    srv.client_with(options().minorversion(2)).await
}

fn copy_op(
    src: StateId4,
    dst: StateId4,
    src_offset: u64,
    dst_offset: u64,
    count: u64,
) -> NfsArgOp4 {
    NfsArgOp4::Copy(Copy4Args {
        src_stateid: src,
        dst_stateid: dst,
        src_offset,
        dst_offset,
        count,
        consecutive: false,
        synchronous: false,
        source_server: Vec::new(),
    })
}

/// PUTFH src; SAVEFH; PUTFH dst; `op`: the result of `op`.
async fn on_pair(
    c: &Client,
    src: &NfsFh4,
    dst: &NfsFh4,
    op: NfsArgOp4,
) -> client::Result<NfsResOp4> {
    let mut r = c
        .compound(vec![putfh(src), NfsArgOp4::SaveFh, putfh(dst), op])
        .await?;
    r.pop()
        .ok_or_else(|| client::Error::Unexpected("no result".into()))
}

async fn copy(
    c: &Client,
    src: &client::Open,
    dst: &client::Open,
    src_offset: u64,
    dst_offset: u64,
    count: u64,
) -> client::Result<Copy4ResOk> {
    let op = copy_op(src.stateid, dst.stateid, src_offset, dst_offset, count);
    match on_pair(c, &src.fh, &dst.fh, op).await? {
        NfsResOp4::Copy(Copy4Res::Ok(ok)) => Ok(ok),
        other => Err(client::Error::Unexpected(format!("{other:?}"))),
    }
}

async fn with_data(c: &Client, dir: &NfsFh4, name: &str, data: &[u8]) -> client::Open {
    let o = create_file(c, dir, name).await;
    if !data.is_empty() {
        c.write(
            &o.fh,
            o.stateid,
            0,
            Bytes::copy_from_slice(data),
            StableHow4::FileSync4,
        )
        .await
        .unwrap();
    }
    o
}

#[tokio::test]
async fn copy_across_and_within_files() {
    within(async {
        let srv = TestServer::start().await;
        let c = client42(&srv).await;
        let root = c.root_fh().await.unwrap();
        let a = with_data(&c, &root, "a", b"0123456789").await;
        let b_ = with_data(&c, &root, "b", b"").await;

        let ok = copy(&c, &a, &b_, 2, 0, 3).await.unwrap();
        assert_eq!(ok.response.count, 3);
        assert_eq!(ok.response.callback_id, None, "always synchronous");
        assert_eq!(ok.response.committed, StableHow4::Unstable4);
        assert_eq!(ok.response.writeverf, c.commit(&b_.fh, 0, 0).await.unwrap());
        assert!(ok.requirements.consecutive && ok.requirements.synchronous);
        assert_eq!(std::fs::read(srv.path("b")).unwrap(), b"234");

        // Count 0: through the end of the source, past the destination's end.
        let ok = copy(&c, &a, &b_, 7, 5, 0).await.unwrap();
        assert_eq!(ok.response.count, 3);
        assert_eq!(std::fs::read(srv.path("b")).unwrap(), b"234\x00\x00789");
        let (data, eof) = c.read(&b_.fh, b_.stateid, 0, 100).await.unwrap();
        assert_eq!((&data[..], eof), (&b"234\x00\x00789"[..], true));

        // Within one file: ranges apart are fine, overlapping ones INVAL.
        let ok = copy(&c, &a, &a, 0, 5, 5).await.unwrap();
        assert_eq!(ok.response.count, 5);
        assert_eq!(std::fs::read(srv.path("a")).unwrap(), b"0123401234");
        let r = copy(&c, &a, &a, 0, 2, 5).await;
        assert_eq!(failed_at(r), (3, NfsStat4::Nfs4errInval));

        // A larger file, copied whole with count 0.
        let big: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 253) as u8).collect();
        put_file(&srv, "big", &big);
        let big_fh = c.lookup(&root, "big").await.unwrap();
        let bo = c.open_fh(&big_fh, OpenOpts::read()).await.unwrap();
        let d = with_data(&c, &root, "big2", b"").await;
        let ok = copy(&c, &bo, &d, 0, 0, 0).await.unwrap();
        assert_eq!(ok.response.count, big.len() as u64);
        assert_eq!(std::fs::read(srv.path("big2")).unwrap(), big);
        let a2 = c.getattr(&d.fh, &[FATTR4_SIZE]).await.unwrap();
        assert_eq!(a2.size, Some(big.len() as u64));
    })
    .await
}

#[tokio::test]
async fn copy_range_errors() {
    within(async {
        let srv = TestServer::start().await;
        let c = client42(&srv).await;
        let root = c.root_fh().await.unwrap();
        let a = with_data(&c, &root, "a", b"0123456789").await;
        let b_ = with_data(&c, &root, "b", b"xyz").await;

        // Source offset past the end, or the range running past it: INVAL.
        let r = copy(&c, &a, &b_, 11, 0, 0).await;
        assert_eq!(failed_at(r), (3, NfsStat4::Nfs4errInval));
        let r = copy(&c, &a, &b_, 5, 0, 6).await;
        assert_eq!(failed_at(r), (3, NfsStat4::Nfs4errInval));
        let r = copy(&c, &a, &b_, 1, 0, u64::MAX).await;
        assert_eq!(failed_at(r), (3, NfsStat4::Nfs4errInval));
        // At the very end with count 0: nothing to copy, not an error.
        assert_eq!(copy(&c, &a, &b_, 10, 0, 0).await.unwrap().response.count, 0);
        // A destination past the largest file size.
        let r = copy(&c, &a, &b_, 0, i64::MAX as u64, 5).await;
        assert_eq!(failed_at(r), (3, NfsStat4::Nfs4errFbig));
        assert_eq!(std::fs::read(srv.path("b")).unwrap(), b"xyz", "unchanged");

        // Without a saved filehandle.
        let r = c
            .compound(vec![putfh(&b_.fh), copy_op(a.stateid, b_.stateid, 0, 0, 1)])
            .await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errNofilehandle));
        // A directory as the source.
        let r = on_pair(&c, &root, &b_.fh, copy_op(a.stateid, b_.stateid, 0, 0, 1)).await;
        assert!(matches!(
            failed_at(r),
            (3, NfsStat4::Nfs4errIsdir | NfsStat4::Nfs4errBadStateid)
        ));
        // An inter-server copy is not supported.
        let mut op = copy_op(a.stateid, b_.stateid, 0, 0, 1);
        if let NfsArgOp4::Copy(a) = &mut op {
            a.source_server = vec![NetLoc4::Name(b("elsewhere"))];
        }
        let r = on_pair(&c, &a.fh, &b_.fh, op).await;
        assert_eq!(failed_at(r), (3, NfsStat4::Nfs4errNotsupp));
        // NFSv4.1 has no COPY.
        let c41 = srv.client().await;
        let o41 = c41.open_fh(&a.fh, OpenOpts::both()).await.unwrap();
        let r = on_pair(
            &c41,
            &a.fh,
            &a.fh,
            copy_op(o41.stateid, o41.stateid, 0, 5, 1),
        )
        .await;
        assert_eq!(failed_at(r), (3, NfsStat4::Nfs4errNotsupp));
    })
    .await
}

#[tokio::test]
async fn copy_checks_both_stateids() {
    within(async {
        let srv = TestServer::start().await;
        let c = client42(&srv).await;
        let root = c.root_fh().await.unwrap();
        let a = with_data(&c, &root, "a", b"0123456789").await;
        let b_ = with_data(&c, &root, "b", b"").await;
        let run = |src: StateId4, dst: StateId4| {
            let c = c.clone();
            let (afh, bfh) = (a.fh.clone(), b_.fh.clone());
            async move { on_pair(&c, &afh, &bfh, copy_op(src, dst, 0, 0, 4)).await }
        };
        // Forged stateids, either side.
        let r = run(forge(a.stateid), b_.stateid).await;
        assert!(unknown_stateid(failed_at(r).1));
        let r = run(a.stateid, forge(b_.stateid)).await;
        assert!(unknown_stateid(failed_at(r).1));
        // Each stateid belongs to the other file.
        let r = run(b_.stateid, a.stateid).await;
        assert_eq!(failed_at(r), (3, NfsStat4::Nfs4errBadStateid));
        // A read-only open cannot be the destination...
        let ro = c
            .open_fh(&b_.fh, OpenOpts::read().owner(c.new_owner("ro")))
            .await
            .unwrap();
        let r = run(a.stateid, ro.stateid).await;
        assert_eq!(failed_at(r), (3, NfsStat4::Nfs4errOpenmode));
        // ...but a write-only open may be the source (§18.22.3 reading).
        let wo = c
            .open_fh(&a.fh, OpenOpts::write().owner(c.new_owner("wo")))
            .await
            .unwrap();
        run(wo.stateid, b_.stateid).await.unwrap();
        // Another client's stateid is not ours to use.
        let other = client42(&srv).await;
        let theirs = other.open_fh(&b_.fh, OpenOpts::both()).await.unwrap();
        let r = run(a.stateid, theirs.stateid).await;
        assert_eq!(failed_at(r), (3, NfsStat4::Nfs4errBadStateid));
        // Anonymous stateids work where no share reservation forbids it.
        run(StateId4::ANONYMOUS, StateId4::ANONYMOUS).await.unwrap();
        // A closed open's stateid is gone.
        c.close(&a.fh, a.stateid).await.unwrap();
        let r = run(a.stateid, b_.stateid).await;
        assert_eq!(failed_at(r), (3, NfsStat4::Nfs4errBadStateid));
        assert_eq!(std::fs::read(srv.path("b")).unwrap(), b"0123");
    })
    .await
}

#[tokio::test]
async fn clone_and_offload_operations() {
    within(async {
        let srv = TestServer::start().await;
        let c = client42(&srv).await;
        let root = c.root_fh().await.unwrap();
        let data: Vec<u8> = (0..8192u32).map(|i| i as u8).collect();
        let a = with_data(&c, &root, "a", &data).await;
        let b_ = with_data(&c, &root, "b", b"").await;
        let op = NfsArgOp4::Clone(Clone4Args {
            src_stateid: a.stateid,
            dst_stateid: b_.stateid,
            src_offset: 0,
            dst_offset: 0,
            count: 4096,
        });
        // Cloning needs a file system that shares blocks (btrfs, XFS):
        // elsewhere NFS4ERR_NOTSUPP.
        match on_pair(&c, &a.fh, &b_.fh, op).await {
            Ok(_) => assert_eq!(std::fs::read(srv.path("b")).unwrap(), &data[..4096]),
            Err(e) => assert_eq!(e.status(), Some(NfsStat4::Nfs4errNotsupp)),
        }
        // Range errors come before that.
        let op = NfsArgOp4::Clone(Clone4Args {
            src_stateid: a.stateid,
            dst_stateid: b_.stateid,
            src_offset: 8193,
            dst_offset: 0,
            count: 0,
        });
        let r = on_pair(&c, &a.fh, &b_.fh, op).await;
        assert_eq!(failed_at(r), (3, NfsStat4::Nfs4errInval));

        // No copy ever runs in the background.
        let r = c
            .compound(vec![
                putfh(&b_.fh),
                NfsArgOp4::OffloadStatus(OffloadStatus4Args {
                    stateid: b_.stateid,
                }),
            ])
            .await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errBadStateid));
        let r = c
            .compound(vec![
                putfh(&b_.fh),
                NfsArgOp4::OffloadCancel(OffloadCancel4Args {
                    stateid: b_.stateid,
                }),
            ])
            .await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errBadStateid));
    })
    .await
}
