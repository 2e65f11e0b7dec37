//! Directory delegations (RFC 8881 §10.9) over the wire: GET_DIR_DELEGATION
//! grants the notifications it supports of those asked for; other
//! clients' changes of those kinds are told with CB_NOTIFY (§20.4), the
//! holder's own are not, and a change of a kind not asked for recalls the
//! delegation first.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::*;
use proto::nfs4::*;

/// GET_DIR_DELEGATION on `dir` asking for the notification `types` and
/// the directory attributes `attrs`.
async fn get_dir_deleg(
    c: &client::Client,
    dir: &NfsFh4,
    types: &[NotifyType4],
    attrs: &[u32],
) -> client::Result<GetDirDelegation4ResNonFatal> {
    get_dir_deleg_delayed(c, dir, types, attrs, NfsTime4::default()).await
}

/// [`get_dir_deleg`] with a delay for changes of the directory's
/// attributes.
async fn get_dir_deleg_delayed(
    c: &client::Client,
    dir: &NfsFh4,
    types: &[NotifyType4],
    attrs: &[u32],
    dir_attr_delay: NfsTime4,
) -> client::Result<GetDirDelegation4ResNonFatal> {
    let types: Vec<u32> = types.iter().map(|t| *t as u32).collect();
    let r = c
        .compound(vec![
            putfh(dir),
            NfsArgOp4::GetDirDelegation(GetDirDelegation4Args {
                signal_deleg_avail: false,
                notification_types: Bitmap4::from_attrs(&types),
                child_attr_delay: NfsTime4::default(),
                dir_attr_delay,
                child_attributes: Bitmap4::from_attrs(&[FATTR4_SIZE]),
                dir_attributes: Bitmap4::from_attrs(attrs),
            }),
        ])
        .await?;
    match &r[1] {
        NfsResOp4::GetDirDelegation(Res4::Ok(ok)) => Ok(ok.clone()),
        other => panic!("{other:?}"),
    }
}

fn granted(r: GetDirDelegation4ResNonFatal) -> GetDirDelegation4ResOk {
    match r {
        GetDirDelegation4ResNonFatal::Ok(ok) => ok,
        other => panic!("no directory delegation: {other:?}"),
    }
}

/// Waits ([`PATIENCE`] at most) for `c` to have `n` notifications.
async fn notified(c: &client::Client, n: usize) -> Vec<Notify4> {
    let all = || {
        c.callbacks()
            .notifies()
            .into_iter()
            .flat_map(|a| a.changes)
            .collect::<Vec<_>>()
    };
    eventually(|| Some(all()).filter(|got| got.len() >= n))
        .await
        .unwrap_or_else(all)
}

fn kind(n: &Notify4) -> Vec<u32> {
    n.mask.iter().collect()
}

#[tokio::test]
async fn other_clients_changes_are_notified_and_the_holders_own_are_not() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let (a, b) = (srv.client().await, srv.client().await);
        let root = a.root_fh().await.unwrap();
        let d = a.mkdir(&root, "d", 0o777).await.unwrap();
        let all = [
            NotifyType4::ChangeChildAttrs,
            NotifyType4::ChangeDirAttrs,
            NotifyType4::RemoveEntry,
            NotifyType4::AddEntry,
            NotifyType4::RenameEntry,
            NotifyType4::ChangeCookieVerifier,
        ];
        let g = granted(
            get_dir_deleg(&a, &d, &all, &[FATTR4_MODE, FATTR4_CHANGE, FATTR4_OWNER])
                .await
                .unwrap(),
        );
        // Entries' own attributes and the cookie verifier are not offered.
        assert_eq!(g.notification.iter().collect::<Vec<_>>(), vec![1, 2, 3, 4]);
        assert_eq!(
            g.dir_attributes,
            Bitmap4::from_attrs(&[FATTR4_CHANGE, FATTR4_MODE])
        );
        assert!(g.child_attributes.is_empty());

        // The holder's own change: nothing.
        let own = create_file(&a, &d, "own").await;
        a.close(&own.fh, own.stateid).await.unwrap();
        // Another client's: added, renamed, removed, attributes changed.
        let x = b
            .open(&d, "x", client::OpenOpts::create(0o644))
            .await
            .unwrap();
        b.close(&x.fh, x.stateid).await.unwrap();
        b.rename(&d, "x", &d, "y").await.unwrap();
        b.remove(&d, "y").await.unwrap();
        let mode = Attrs {
            mode: Some(0o750),
            ..Default::default()
        };
        b.setattr(&d, StateId4::default(), &mode).await.unwrap();
        let got = notified(&a, 4).await;
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(kind(&got[0]), vec![NotifyType4::AddEntry as u32]);
        let add: NotifyAdd4 = xdr::from_bytes(got[0].values.clone()).unwrap();
        assert_eq!(add.new_entry.file, Bytes::from_static(b"x"));
        assert_eq!(kind(&got[1]), vec![NotifyType4::RenameEntry as u32]);
        let ren: NotifyRename4 = xdr::from_bytes(got[1].values.clone()).unwrap();
        assert_eq!(ren.old_entry.old_entry.file, Bytes::from_static(b"x"));
        assert_ne!(ren.old_entry.old_entry_cookie, 0, "the READDIR cookie of x");
        assert_eq!(ren.new_entry.new_entry.file, Bytes::from_static(b"y"));
        assert_eq!(kind(&got[2]), vec![NotifyType4::RemoveEntry as u32]);
        let rm: NotifyRemove4 = xdr::from_bytes(got[2].values.clone()).unwrap();
        assert_eq!(rm.old_entry.file, Bytes::from_static(b"y"));
        assert_ne!(rm.old_entry_cookie, 0);
        assert_eq!(kind(&got[3]), vec![NotifyType4::ChangeDirAttrs as u32]);
        let at: NotifyAttr4 = xdr::from_bytes(got[3].values.clone()).unwrap();
        let at = Attrs::decode(&at.changed_entry.attrs).unwrap();
        assert_eq!(at.mode, Some(0o750));
        assert!(at.change.is_some());
        assert_eq!(at.owner, None);
        // Every notification named the delegation; none was recalled.
        for n in a.callbacks().notifies() {
            assert_eq!((n.stateid.other, &n.fh), (g.stateid.other, &d));
        }
        assert!(a.callbacks().recalls().is_empty());
    })
    .await
}

#[tokio::test]
async fn a_change_not_asked_about_recalls_the_directory_delegation() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let (a, b) = (srv.client().await, srv.client_with(impatient()).await);
        let root = a.root_fh().await.unwrap();
        let d = a.mkdir(&root, "d", 0o777).await.unwrap();
        // A file with no delegation of its own.
        let mut o = client::OpenOpts::create(0o644);
        o.access |= OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
        let f = a.open(&d, "f", o).await.unwrap();
        a.close(&f.fh, f.stateid).await.unwrap();
        let g = granted(
            get_dir_deleg(&a, &d, &[NotifyType4::AddEntry], &[])
                .await
                .unwrap(),
        );
        // A second one of the same directory: not granted.
        assert_eq!(
            get_dir_deleg(&a, &d, &[NotifyType4::AddEntry], &[])
                .await
                .unwrap(),
            GetDirDelegation4ResNonFatal::Unavail(false)
        );
        // A removal is not notified: recalled first, and the REMOVE goes on
        // once it is returned (no NFS4ERR_DELAY).
        b.remove(&d, "f").await.unwrap();
        let r = recalls(&a, 1).await;
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].stateid.other, &r[0].fh), (g.stateid.other, &d));
        assert_eq!(
            a.test_stateids(vec![g.stateid]).await.unwrap(),
            vec![NfsStat4::Nfs4errBadStateid]
        );
        assert!(a.callbacks().notifies().is_empty());
    })
    .await
}

#[tokio::test]
async fn no_directory_delegation_of_a_file_or_where_delegations_are_off() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let a = srv.client().await;
        let root = a.root_fh().await.unwrap();
        let f = create_file(&a, &root, "f").await;
        let r = a
            .compound(vec![
                putfh(&f.fh),
                NfsArgOp4::GetDirDelegation(GetDirDelegation4Args {
                    signal_deleg_avail: false,
                    notification_types: Bitmap4::default(),
                    child_attr_delay: NfsTime4::default(),
                    dir_attr_delay: NfsTime4::default(),
                    child_attributes: Bitmap4::default(),
                    dir_attributes: Bitmap4::default(),
                }),
            ])
            .await;
        assert_eq!(failed_at(r), (1, NfsStat4::Nfs4errNotdir));

        let off = TestServer::start().await;
        let c = off.client().await;
        let root = c.root_fh().await.unwrap();
        assert_eq!(
            get_dir_deleg(&c, &root, &[NotifyType4::AddEntry], &[])
                .await
                .unwrap(),
            GetDirDelegation4ResNonFatal::Unavail(false)
        );
    })
    .await
}

#[tokio::test]
async fn attribute_changes_wait_the_asked_delay_and_go_together() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let (a, b) = (srv.client().await, srv.client().await);
        let root = a.root_fh().await.unwrap();
        let d = a.mkdir(&root, "d", 0o777).await.unwrap();
        // Both changes must come within the delay to go together: two
        // SETATTRs take milliseconds, and 2 s leaves room for a busy
        // machine's.
        let delay = NfsTime4 {
            seconds: 2,
            nseconds: 0,
        };
        let types = [NotifyType4::ChangeDirAttrs];
        granted(
            get_dir_deleg_delayed(&a, &d, &types, &[FATTR4_MODE], delay)
                .await
                .unwrap(),
        );
        // Taken before the first change: the notice goes at least the
        // delay after it, so a slow machine only makes `waited` longer
        // (checked with a tenth of a second to spare for clock rounding).
        let start = std::time::Instant::now();
        for mode in [0o750, 0o755] {
            let m = Attrs {
                mode: Some(mode),
                ..Default::default()
            };
            b.setattr(&d, StateId4::default(), &m).await.unwrap();
        }
        let got = notified(&a, 2).await;
        let waited = start.elapsed();
        assert_eq!(got.len(), 2);
        // One CB_NOTIFY with both, once the delay was over.
        assert_eq!(a.callbacks().notifies().len(), 1);
        assert!(waited >= Duration::from_millis(1900), "{waited:?}");
        let last: NotifyAttr4 = xdr::from_bytes(got[1].values.clone()).unwrap();
        assert_eq!(
            Attrs::decode(&last.changed_entry.attrs).unwrap().mode,
            Some(0o755)
        );
    })
    .await
}
