//! The NFSv3 client against a real NFS-Ganesha (or any NFSv3 server with
//! MOUNT on TCP). Ignored unless asked for (`-- --ignored`, as
//! tests/peer-ganesha.sh does); it then needs
//! `FERRITE_GANESHA_V3=host:nfsport:mountport`, and
//! `FERRITE_GANESHA_V3_EXPORT` names the export (default `/export`).
//! Everything happens in a fresh directory that is removed at the end.

use std::collections::BTreeSet;
use std::net::{SocketAddr, ToSocketAddrs};

use bytes::Bytes;
use client::v3::{Client, Error};
use proto::nfs3::*;

fn target() -> (SocketAddr, SocketAddr, String) {
    let Ok(spec) = std::env::var("FERRITE_GANESHA_V3") else {
        panic!(
            "FERRITE_GANESHA_V3=host:nfsport:mountport is not set: this test needs a live \
             NFSv3 server (tests/peer-ganesha.sh starts NFS-Ganesha and runs it)"
        );
    };
    let mut parts = spec.rsplitn(3, ':');
    let (mnt, nfs, host) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(n), Some(h)) => (m, n, h),
        _ => panic!("FERRITE_GANESHA_V3 must be host:nfsport:mountport, got {spec:?}"),
    };
    let resolve = |port: &str| {
        format!("{host}:{port}")
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .unwrap_or_else(|| panic!("cannot resolve {host}:{port}"))
    };
    let export = std::env::var("FERRITE_GANESHA_V3_EXPORT").unwrap_or_else(|_| "/export".into());
    (resolve(nfs), resolve(mnt), export)
}

fn pattern(len: usize, seed: u8) -> Bytes {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect::<Vec<u8>>()
        .into()
}

fn mode(m: u32) -> Sattr3 {
    Sattr3 {
        mode: Some(m),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs NFS-Ganesha: run by tests/peer-ganesha.sh"]
async fn v3_against_live_server() {
    let (nfs, mnt, export) = target();
    let auth = rpc::Auth::sys(0, 0, Vec::new(), "ferrite-v3-test");

    // MOUNT side on its own: EXPORT lists the export.
    let exports = client::v3::mount::exports(mnt, &auth).await.unwrap();
    let dirs: Vec<String> = exports
        .iter()
        .map(|e| String::from_utf8_lossy(&e.ex_dir.0).into_owned())
        .collect();
    eprintln!("EXPORT: {dirs:?}");
    assert!(dirs.contains(&export), "{export} not in {dirs:?}");
    let bad = Client::connect(nfs, mnt, "/no/such/export", auth.clone()).await;
    assert!(
        matches!(bad, Err(Error::Mount { .. })),
        "mounting a missing export: {bad:?}"
    );

    let c = Client::connect(nfs, mnt, &export, auth).await.unwrap();
    eprintln!(
        "mounted {export}: root fh {} bytes, flavors {:?}",
        c.root().data.len(),
        c.auth_flavors()
    );
    c.null().await.unwrap();
    let root = c.root().clone();
    assert_eq!(c.getattr(&root).await.unwrap().type_, Ftype3::Dir);
    let info = c.fsinfo(&root).await.unwrap();
    let st = c.fsstat(&root).await.unwrap();
    eprintln!(
        "FSINFO rtmax {} wtmax {} dtpref {}; FSSTAT {} of {} bytes free",
        info.rtmax, info.wtmax, info.dtpref, st.fbytes, st.tbytes
    );
    let granted = c
        .access(&root, ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY)
        .await
        .unwrap();
    assert_eq!(granted & ACCESS3_MODIFY, ACCESS3_MODIFY);

    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let dname = format!("ferrite-v3-{}-{stamp}", std::process::id());
    let dir = c.mkdir(&root, &dname, mode(0o755)).await.unwrap();
    assert_eq!(dir.attrs.map(|a| a.type_), Some(Ftype3::Dir));
    assert_eq!(c.lookup_path(&format!("/{dname}/")).await.unwrap(), dir.fh);
    let d = dir.fh.clone();

    // GUARDED create, then again: EXIST. EXCLUSIVE with a verifier.
    let f = c
        .create(&d, "data", CreateHow3::Guarded(mode(0o644)))
        .await
        .unwrap();
    let again = c
        .create(&d, "data", CreateHow3::Guarded(mode(0o644)))
        .await
        .unwrap_err();
    assert_eq!(again.status(), Some(NfsStat3::Exist));
    let x = c
        .create(&d, "excl", CreateHow3::Exclusive(*b"ferrite3"))
        .await
        .unwrap();
    let x2 = c
        .create(&d, "excl", CreateHow3::Exclusive(*b"ferrite3"))
        .await
        .unwrap();
    assert_eq!(
        x.fh, x2.fh,
        "an EXCLUSIVE retry with the same verifier succeeds"
    );

    // 4 MiB in concurrent UNSTABLE writes, COMMIT, then read back in
    // concurrent reads.
    let chunk = info.wtmax.clamp(4096, 1 << 20) as usize;
    let total = 4 << 20;
    let data = pattern(total, 7);
    let writes = (0..total).step_by(chunk).map(|off| {
        let (c, fh, piece) = (
            c.clone(),
            f.fh.clone(),
            data.slice(off..(off + chunk).min(total)),
        );
        async move {
            let w = c
                .write(&fh, off as u64, piece.clone(), StableHow::Unstable)
                .await
                .unwrap();
            assert_eq!(w.count as usize, piece.len());
            w.verf
        }
    });
    let verfs: Vec<WriteVerf3> = futures_join_all(writes).await;
    let commit = c.commit(&f.fh, 0, 0).await.unwrap();
    assert!(verfs.iter().all(|v| *v == commit.verf), "server rebooted?");
    assert_eq!(c.getattr(&f.fh).await.unwrap().size, total as u64);

    let rchunk = info.rtmax.clamp(4096, 1 << 20) as usize;
    let reads = (0..total).step_by(rchunk).map(|off| {
        let (c, fh) = (c.clone(), f.fh.clone());
        async move {
            let r = c.read(&fh, off as u64, rchunk as u32).await.unwrap();
            (off, r)
        }
    });
    let mut back = vec![0u8; total];
    for (off, r) in futures_join_all(reads).await {
        back[off..off + r.data.len()].copy_from_slice(&r.data[..]);
        assert_eq!(r.count as usize, r.data.len());
    }
    assert!(back == data[..], "read back differs from what was written");
    let tail = c.read(&f.fh, total as u64 - 10, 100).await.unwrap();
    assert_eq!((tail.data.len(), tail.eof), (10, true));

    // FILE_SYNC write, SETATTR truncate, guarded by the current ctime.
    let w = c
        .write(&f.fh, 0, Bytes::from_static(b"hello"), StableHow::FileSync)
        .await
        .unwrap();
    assert_eq!(w.committed, StableHow::FileSync);
    let ctime = c.getattr(&f.fh).await.unwrap().ctime;
    c.setattr(
        &f.fh,
        Sattr3 {
            size: Some(5),
            ..Default::default()
        },
        Some(ctime),
    )
    .await
    .unwrap();
    let r = c.read(&f.fh, 0, 100).await.unwrap();
    assert_eq!((&r.data[..], r.eof), (&b"hello"[..], true));

    // Enough names that READDIR needs several requests.
    let n = 300;
    let creates = (0..n).map(|i| {
        let (c, d) = (c.clone(), d.clone());
        async move {
            c.create(
                &d,
                &format!("file-{i:04}-with-a-longish-name"),
                CreateHow3::Unchecked(mode(0o600)),
            )
            .await
            .unwrap()
        }
    });
    futures_join_all(creates).await;
    let before = c.stats();
    let names: BTreeSet<String> = c
        .readdir_all(&d, 4096)
        .await
        .unwrap()
        .into_iter()
        .map(|e| String::from_utf8_lossy(&e.name).into_owned())
        .collect();
    let pages = c.stats().since(&before).get(NFSPROC3_READDIR).calls;
    eprintln!("READDIR: {} names in {pages} requests", names.len());
    assert!(names.contains("data") && names.contains("excl"));
    for i in 0..n {
        assert!(names.contains(&format!("file-{i:04}-with-a-longish-name")));
    }
    assert!(pages > 1, "expected READDIR to take several requests");
    let before = c.stats();
    let plus = c.readdirplus_all(&d, 2048, 16384).await.unwrap();
    let pages = c.stats().since(&before).get(NFSPROC3_READDIRPLUS).calls;
    eprintln!("READDIRPLUS: {} entries in {pages} requests", plus.len());
    assert!(pages > 1, "expected READDIRPLUS to take several requests");
    for e in &plus {
        if e.name.starts_with(b"file-") {
            let a = e.name_attributes.expect("READDIRPLUS attributes");
            assert_eq!((a.type_, a.mode & 0o777), (Ftype3::Reg, 0o600));
        }
    }
    let data_entry = plus
        .iter()
        .find(|e| &e.name[..] == b"data")
        .expect("data in READDIRPLUS");
    if let Some(fh) = &data_entry.name_handle {
        assert_eq!(*fh, f.fh);
    }
    assert_eq!(
        plus.iter().filter(|e| e.name.starts_with(b"file-")).count(),
        n
    );

    // RENAME, then the old name is gone.
    c.rename(&d, "data", &d, "data.renamed").await.unwrap();
    let gone = c.lookup(&d, "data").await.unwrap_err();
    assert_eq!(gone.status(), Some(NfsStat3::Noent));
    assert_eq!(c.lookup(&d, "data.renamed").await.unwrap().object, f.fh);

    // Clean up: REMOVE everything, RMDIR.
    let removes = names
        .iter()
        .filter(|n| *n != "." && *n != ".." && *n != "data")
        .cloned()
        .chain(["data.renamed".to_owned()])
        .map(|name| {
            let (c, d) = (c.clone(), d.clone());
            async move { c.remove(&d, &name).await.unwrap() }
        });
    futures_join_all(removes).await;
    let e = c.rmdir(&root, &dname).await;
    assert!(e.is_ok(), "RMDIR: {e:?}");
    assert_eq!(
        c.lookup(&root, &dname).await.unwrap_err().status(),
        Some(NfsStat3::Noent)
    );

    let s = c.stats();
    for (_, name, p) in s.called() {
        eprintln!(
            "{name:>12}: {:5} calls {:3} errors {:9} B out {:9} B in, rtt mean {:?} max {:?}",
            p.calls,
            p.errors,
            p.bytes_sent,
            p.bytes_received,
            p.rtt_mean().unwrap_or_default(),
            p.rtt_max
        );
    }
    assert!(s.get(NFSPROC3_WRITE).bytes_sent >= total as u64);
    assert!(s.get(NFSPROC3_READ).bytes_received >= total as u64);
    c.unmount().await.unwrap();
}

/// Runs futures concurrently on the runtime and collects their outputs in
/// order (a tiny `join_all` without the futures crate).
async fn futures_join_all<F>(futs: impl IntoIterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futs.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}
