//! NFSv4.2 extended attributes (RFC 8276) over the wire: GETXATTR,
//! SETXATTR, LISTXATTRS and REMOVEXATTR on the backend's user namespace.

mod common;

use client::Client;
use common::*;
use proto::nfs4::*;

async fn client42(srv: &TestServer) -> Client {
    let mut o = options();
    o.minorversion = 2;
    srv.client_with(o).await
}

/// One xattr operation on `fh`: its result.
async fn on(c: &Client, fh: &NfsFh4, op: NfsArgOp4) -> NfsResOp4 {
    match c.compound(vec![putfh(fh), op]).await {
        Ok(mut r) => r.pop().expect("a result"),
        Err(client::Error::Status { results, .. }) => results.last().cloned().expect("a result"),
        Err(e) => panic!("{e}"),
    }
}

fn set(option: SetXattrOption4, key: &str, value: &str) -> NfsArgOp4 {
    NfsArgOp4::SetXattr(SetXattr4Args {
        option,
        key: b(key),
        value: b(value),
    })
}

fn get(key: &str) -> NfsArgOp4 {
    NfsArgOp4::GetXattr(GetXattr4Args { name: b(key) })
}

fn list(cookie: u64, maxcount: u32) -> NfsArgOp4 {
    NfsArgOp4::ListXattrs(ListXattrs4Args { cookie, maxcount })
}

fn status(r: &NfsResOp4) -> NfsStat4 {
    r.status()
}

/// The local file's value of `user.<key>`, read with getxattr(2).
fn local_value(path: &std::path::Path, key: &str) -> Option<Vec<u8>> {
    let p = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let n = std::ffi::CString::new(format!("user.{key}")).unwrap();
    let mut buf = vec![0u8; 4096];
    // SAFETY: NUL-terminated strings and a buffer of its length.
    let r = unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    (r >= 0).then(|| buf[..r as usize].to_vec())
}

#[tokio::test]
async fn set_get_list_and_remove_extended_attributes() {
    within(async {
        let srv = TestServer::start().await;
        let c = client42(&srv).await;
        let root = c.root_fh().await.unwrap();
        let f = create_file(&c, &root, "x").await;
        let fh = f.fh.clone();
        // The export says it keeps them.
        let r = c
            .compound(vec![putfh(&fh), getattr(&[FATTR4_XATTR_SUPPORT])])
            .await
            .unwrap();
        assert_eq!(attrs_of(&r[1]).xattr_support, Some(true));

        assert_eq!(
            status(&on(&c, &fh, get("a")).await),
            NfsStat4::Nfs4errNoxattr
        );
        let before = c
            .getattr(&fh, &[FATTR4_CHANGE])
            .await
            .unwrap()
            .change
            .unwrap();
        match on(&c, &fh, set(SetXattrOption4::Create, "a", "one")).await {
            NfsResOp4::SetXattr(Res4::Ok(ok)) => {
                assert_eq!(ok.info.before, before);
                assert_ne!(ok.info.after, ok.info.before, "the change attribute moved");
            }
            other => panic!("{other:?}"),
        }
        match on(&c, &fh, get("a")).await {
            NfsResOp4::GetXattr(Res4::Ok(ok)) => assert_eq!(&ok.value[..], b"one"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            local_value(&srv.path("x"), "a").as_deref(),
            Some(&b"one"[..])
        );
        assert_eq!(
            status(&on(&c, &fh, set(SetXattrOption4::Create, "a", "two")).await),
            NfsStat4::Nfs4errExist
        );
        assert_eq!(
            status(&on(&c, &fh, set(SetXattrOption4::Replace, "b", "two")).await),
            NfsStat4::Nfs4errNoxattr
        );
        assert_eq!(
            status(&on(&c, &fh, set(SetXattrOption4::Either, "b", "two")).await),
            NfsStat4::Nfs4Ok
        );
        assert_eq!(
            status(&on(&c, &fh, set(SetXattrOption4::Replace, "a", "three")).await),
            NfsStat4::Nfs4Ok
        );
        assert_eq!(
            local_value(&srv.path("x"), "a").as_deref(),
            Some(&b"three"[..])
        );
        assert_eq!(
            status(&on(&c, &fh, set(SetXattrOption4::Either, "", "v")).await),
            NfsStat4::Nfs4errInval
        );

        // Listing, whole and in pages.
        match on(&c, &fh, list(0, 8192)).await {
            NfsResOp4::ListXattrs(Res4::Ok(ok)) => {
                assert_eq!(ok.names, vec![b("a"), b("b")]);
                assert!(ok.eof);
                assert_eq!(ok.cookie, 2);
            }
            other => panic!("{other:?}"),
        }
        // Room for one name (8 + 4 + 4 + 8).
        match on(&c, &fh, list(0, 24)).await {
            NfsResOp4::ListXattrs(Res4::Ok(ok)) => {
                assert_eq!((ok.names, ok.eof, ok.cookie), (vec![b("a")], false, 1));
            }
            other => panic!("{other:?}"),
        }
        match on(&c, &fh, list(1, 24)).await {
            NfsResOp4::ListXattrs(Res4::Ok(ok)) => {
                assert_eq!((ok.names, ok.eof, ok.cookie), (vec![b("b")], true, 2));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            status(&on(&c, &fh, list(0, 20)).await),
            NfsStat4::Nfs4errToosmall
        );
        assert_eq!(
            status(&on(&c, &fh, list(3, 8192)).await),
            NfsStat4::Nfs4errBadCookie
        );

        // Removal.
        let remove = |k: &str| NfsArgOp4::RemoveXattr(RemoveXattr4Args { name: b(k) });
        assert_eq!(status(&on(&c, &fh, remove("a")).await), NfsStat4::Nfs4Ok);
        assert_eq!(
            status(&on(&c, &fh, remove("a")).await),
            NfsStat4::Nfs4errNoxattr
        );
        assert_eq!(
            status(&on(&c, &fh, get("a")).await),
            NfsStat4::Nfs4errNoxattr
        );
        assert_eq!(local_value(&srv.path("x"), "a"), None);
        c.close(&fh, f.stateid).await.unwrap();

        // NFSv4.1 has no such operations.
        let c41 = srv.client().await;
        assert_eq!(
            status(&on(&c41, &fh, get("b")).await),
            NfsStat4::Nfs4errNotsupp
        );
    })
    .await
}
