//! Write delegations (RFC 8881 §10.4) over the wire: granted to a lone
//! writer, kept through its own I/O, recalled by another client's open or
//! READ, and another client's GETATTR answered from the holder's cache
//! with CB_GETATTR (§10.4.3).

mod common;

use bytes::Bytes;
use common::*;
use proto::nfs4::*;

fn write_deleg(d: &OpenDelegation4) -> StateId4 {
    match d {
        OpenDelegation4::Write(w) => w.stateid,
        other => panic!("no write delegation: {other:?}"),
    }
}

const SIZE_CHANGE: [u32; 3] = [FATTR4_SIZE, FATTR4_CHANGE, FATTR4_TIME_MODIFY];

#[tokio::test]
async fn a_lone_writer_gets_a_write_delegation_and_writes_through_it() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let (a, b) = (srv.client().await, srv.client_with(impatient()).await);
        let root = a.root_fh().await.unwrap();
        // A create for writing by a client alone: a write delegation.
        let f = create_file(&a, &root, "w").await;
        let wd = write_deleg(&f.delegation);
        // Its own I/O, under the delegation or under its open, keeps it.
        let data = Bytes::from_static(b"written under a write delegation");
        a.write(&f.fh, wd, 0, data.clone(), StableHow4::Unstable4)
            .await
            .unwrap();
        a.write(&f.fh, f.stateid, 0, data.clone(), StableHow4::Unstable4)
            .await
            .unwrap();
        let (got, _) = a.read(&f.fh, wd, 0, 64).await.unwrap();
        assert_eq!(got, data);
        let grow = Attrs {
            size: Some(64),
            ..Default::default()
        };
        a.setattr(&f.fh, wd, &grow).await.unwrap();
        assert!(a.callbacks().recalls().is_empty());
        // Another client's open for reading conflicts (§10.4): recalled,
        // and the open answered at the return, not NFS4ERR_DELAY.
        let r = b.open(&root, "w", client::OpenOpts::read()).await.unwrap();
        assert_eq!(recalls(&a, 1).await.len(), 1);
        assert_eq!(a.callbacks().recalls()[0].stateid.other, wd.other);
        assert_eq!(
            a.test_stateids(vec![wd]).await.unwrap(),
            vec![NfsStat4::Nfs4errBadStateid]
        );
        let (got, _) = b.read(&r.fh, r.stateid, 0, 64).await.unwrap();
        assert_eq!(&got[..data.len()], &data[..]);
        assert_eq!(got.len(), 64);
    })
    .await
}

#[tokio::test]
async fn another_clients_getattr_is_answered_from_the_holders_cache() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let (a, b) = (srv.client().await, srv.client_with(impatient()).await);
        let root = a.root_fh().await.unwrap();
        let f = create_file(&a, &root, "g").await;
        let wd = write_deleg(&f.delegation);
        a.write(
            &f.fh,
            wd,
            0,
            Bytes::from_static(b"abc"),
            StableHow4::Unstable4,
        )
        .await
        .unwrap();
        // The holder's own GETATTR is not called back.
        let server = a.getattr(&f.fh, &SIZE_CHANGE).await.unwrap();
        assert!(a.callbacks().getattrs().is_empty());
        let c0 = server.change.unwrap();

        // Unchanged in the holder's cache: the server's attributes.
        let cached = |size: u64, change: u64| Attrs {
            size: Some(size),
            change: Some(change),
            ..Default::default()
        };
        a.callbacks().set_attrs(f.fh.clone(), cached(3, c0));
        let seen = b.getattr(&f.fh, &SIZE_CHANGE).await.unwrap();
        assert_eq!(a.callbacks().getattrs().len(), 1);
        assert_eq!(
            a.callbacks().getattrs()[0].attr_request,
            Bitmap4::from_attrs(&[FATTR4_CHANGE, FATTR4_SIZE])
        );
        assert_eq!((seen.size, seen.change), (Some(3), Some(c0)));

        // Changed there (the holder's change attribute moved, the file
        // grew): its size, and a change attribute the server never gave.
        a.callbacks().set_attrs(f.fh.clone(), cached(10, c0 + 1));
        let seen = b.getattr(&f.fh, &SIZE_CHANGE).await.unwrap();
        let c1 = seen.change.unwrap();
        assert_eq!(seen.size, Some(10));
        assert!(c1 > c0, "{c1} after {c0}");
        assert_ne!(seen.time_modify, server.time_modify);
        // Asked again with nothing new: the same answer.
        let again = b.getattr(&f.fh, &SIZE_CHANGE).await.unwrap();
        assert_eq!((again.size, again.change), (Some(10), Some(c1)));
        // Attributes the holder cannot have changed ask nothing.
        b.getattr(&f.fh, &[FATTR4_MODE]).await.unwrap();
        assert_eq!(a.callbacks().getattrs().len(), 3);
        assert!(a.callbacks().recalls().is_empty());

        // Another client's READ recalls it; the server's attributes then.
        let anon = StateId4::default();
        b.read(&f.fh, anon, 0, 16).await.unwrap();
        assert_eq!(recalls(&a, 1).await.len(), 1);
        let after = b.getattr(&f.fh, &SIZE_CHANGE).await.unwrap();
        assert_eq!(after.size, Some(3));
        assert_eq!(a.callbacks().getattrs().len(), 3);
    })
    .await
}

#[tokio::test]
async fn a_holder_that_cannot_answer_cb_getattr_has_the_delegation_recalled() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let (a, b) = (srv.client().await, srv.client().await);
        let root = a.root_fh().await.unwrap();
        let f = create_file(&a, &root, "r").await;
        let wd = write_deleg(&f.delegation);
        a.write(
            &f.fh,
            wd,
            0,
            Bytes::from_static(b"12345"),
            StableHow4::Unstable4,
        )
        .await
        .unwrap();
        // No attributes set: CB_GETATTR is answered NFS4ERR_BADHANDLE.
        let seen = b.getattr(&f.fh, &SIZE_CHANGE).await.unwrap();
        assert_eq!(a.callbacks().getattrs().len(), 1);
        assert_eq!(recalls(&a, 1).await.len(), 1);
        assert_eq!(seen.size, Some(5));
        assert_eq!(
            a.test_stateids(vec![wd]).await.unwrap(),
            vec![NfsStat4::Nfs4errBadStateid]
        );
    })
    .await
}

/// RFC 9754 §4.1: NFSv4.2's open_arguments says what OPEN supports; an
/// NFSv4.1 client is not shown it.
#[tokio::test]
async fn open_arguments_say_what_open_supports_in_nfsv4_2() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let mut o = options();
        o.minorversion = 2;
        let c42 = srv.client_with(o).await;
        let root = c42.root_fh().await.unwrap();
        let want = [FATTR4_SUPPORTED_ATTRS, FATTR4_OPEN_ARGUMENTS];
        let a = c42.getattr(&root, &want).await.unwrap();
        assert!(a
            .supported_attrs
            .clone()
            .unwrap()
            .contains(FATTR4_OPEN_ARGUMENTS));
        let oa = a.open_arguments.expect("open_arguments");
        let bits = |b: &Bitmap4| b.iter().collect::<Vec<_>>();
        assert_eq!(bits(&oa.share_access), vec![1, 2, 3]);
        assert_eq!(bits(&oa.share_deny), vec![0, 1, 2, 3]);
        assert_eq!(bits(&oa.share_access_want), vec![3, 4, 5, 20]);
        let sup = a.supported_attrs.clone().unwrap();
        assert!(sup.contains(FATTR4_TIME_DELEG_ACCESS) && sup.contains(FATTR4_TIME_DELEG_MODIFY));
        assert_eq!(bits(&oa.open_claim), vec![0, 1, 2, 3, 4, 5, 6]);
        assert_eq!(bits(&oa.create_mode), vec![0, 1, 2, 3]);

        let c41 = srv.client().await;
        let a = c41.getattr(&root, &want).await.unwrap();
        assert!(!a
            .supported_attrs
            .clone()
            .unwrap()
            .contains(FATTR4_OPEN_ARGUMENTS));
        assert!(!a
            .supported_attrs
            .unwrap()
            .contains(FATTR4_TIME_DELEG_MODIFY));
        assert_eq!(a.open_arguments, None);
        // Unsupported in NFSv4.1: asked, left out (in NFSv4.2, INVAL).
        let a = c41
            .getattr(&root, &[FATTR4_TIME_DELEG_MODIFY])
            .await
            .unwrap();
        assert_eq!(a.time_deleg_modify, None);
    })
    .await
}

fn time(t: NfsTime4) -> (i64, u32) {
    (t.seconds, t.nseconds)
}

fn plus_ns(t: NfsTime4, ns: u32) -> NfsTime4 {
    let n = t.nseconds + ns;
    NfsTime4 {
        seconds: t.seconds + i64::from(n / 1_000_000_000),
        nseconds: n % 1_000_000_000,
    }
}

/// Delegated timestamps (RFC 9754 §5): an NFSv4.2 OPEN asking for them
/// gets an OPEN_DELEGATE_*_ATTRS_DELEG delegation, whose holder sets the
/// file's times with `time_deleg_access` and `time_deleg_modify` under
/// the delegation's stateid: not older than at the grant, not in the
/// future; any other stateid is refused, and the attributes cannot be
/// read.
#[tokio::test]
async fn a_holder_of_delegated_timestamps_sets_the_files_times() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let mut o = options();
        o.minorversion = 2;
        let a = srv.client_with(o).await;
        let root = a.root_fh().await.unwrap();
        let mut create = client::OpenOpts::create(0o644);
        create.access |= OPEN4_SHARE_ACCESS_WANT_DELEG_TIMESTAMPS;
        let f = a.open(&root, "t", create).await.unwrap();
        let OpenDelegation4::WriteAttrs(w) = &f.delegation else {
            panic!("no write delegation with timestamps: {:?}", f.delegation)
        };
        let wd = w.stateid;
        let mtime = |c: &client::Client, fh: &NfsFh4| {
            let (c, fh) = (c.clone(), fh.clone());
            async move {
                c.getattr(&fh, &[FATTR4_TIME_MODIFY])
                    .await
                    .unwrap()
                    .time_modify
                    .unwrap()
            }
        };
        let m0 = mtime(&a, &f.fh).await;
        let set_m = |t: NfsTime4| Attrs {
            time_deleg_modify: Some(t),
            ..Default::default()
        };
        // A time after the grant (and not in the future) is the file's.
        let m1 = plus_ns(m0, 1_000);
        a.setattr(&f.fh, wd, &set_m(m1)).await.unwrap();
        assert_eq!(time(mtime(&a, &f.fh).await), time(m1));
        // One before the grant is not taken.
        let old = NfsTime4 {
            seconds: m0.seconds - 10,
            nseconds: 0,
        };
        a.setattr(&f.fh, wd, &set_m(old)).await.unwrap();
        assert_eq!(time(mtime(&a, &f.fh).await), time(m1));
        // One in the future is taken as now.
        let future = NfsTime4 {
            seconds: m0.seconds + 86_400,
            nseconds: 0,
        };
        a.setattr(&f.fh, wd, &set_m(future)).await.unwrap();
        let m2 = mtime(&a, &f.fh).await;
        assert!(time(m2) > time(m1) && time(m2) < time(future), "{m2:?}");
        // Under the open's stateid: refused.
        assert_eq!(
            status(a.setattr(&f.fh, f.stateid, &set_m(m2)).await),
            NfsStat4::Nfs4errBadStateid
        );
        // The attributes are set, never read.
        assert_eq!(
            status(a.getattr(&f.fh, &[FATTR4_TIME_DELEG_MODIFY]).await),
            NfsStat4::Nfs4errInval
        );
        // Nothing was recalled by all this.
        assert!(a.callbacks().recalls().is_empty());

        // A reader's: the access time only.
        let mut plain = client::OpenOpts::create(0o644);
        plain.access |= OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
        let r = a.open(&root, "r", plain).await.unwrap();
        a.close(&r.fh, r.stateid).await.unwrap();
        let r = a
            .open(
                &root,
                "r",
                client::OpenOpts {
                    access: OPEN4_SHARE_ACCESS_READ
                        | OPEN4_SHARE_ACCESS_WANT_READ_DELEG
                        | OPEN4_SHARE_ACCESS_WANT_DELEG_TIMESTAMPS,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let OpenDelegation4::ReadAttrs(rd) = &r.delegation else {
            panic!("no read delegation with timestamps: {:?}", r.delegation)
        };
        let atime = a
            .getattr(&r.fh, &[FATTR4_TIME_ACCESS])
            .await
            .unwrap()
            .time_access
            .unwrap();
        let a1 = plus_ns(atime, 5_000);
        let set_a = Attrs {
            time_deleg_access: Some(a1),
            ..Default::default()
        };
        a.setattr(&r.fh, rd.stateid, &set_a).await.unwrap();
        let got = a
            .getattr(&r.fh, &[FATTR4_TIME_ACCESS])
            .await
            .unwrap()
            .time_access
            .unwrap();
        assert_eq!(time(got), time(a1));
        assert_eq!(
            status(a.setattr(&r.fh, rd.stateid, &set_m(m2)).await),
            NfsStat4::Nfs4errBadStateid
        );
        // Without the want bit: a plain delegation.
        let g = a
            .open(&root, "g", client::OpenOpts::create(0o644))
            .await
            .unwrap();
        assert!(
            matches!(g.delegation, OpenDelegation4::Write(_)),
            "{:?}",
            g.delegation
        );
    })
    .await
}
