//! Local processes (not NFS clients) changing delegated files and
//! directories: each change recalls the delegation at once (fanotify,
//! `vfs::watch`), and a local open of a file under a write delegation
//! waits for its return. The server runs in this process, so the changes
//! are made by other processes (`sh -c`): the server's own are never
//! reported.

mod common;

use std::process::Command;

use bytes::Bytes;
use common::*;
use proto::nfs4::*;

/// Runs `cmd` in another process, to its end, off this test's runtime
/// (which runs the server too: a local writer waits for a recall it
/// serves).
async fn sh(cmd: &str) {
    let c = cmd.to_string();
    let st = tokio::task::spawn_blocking(move || Command::new("sh").arg("-c").arg(c).status())
        .await
        .unwrap()
        .unwrap();
    assert!(st.success(), "{cmd}");
}

/// Opens `name` (made, not delegated, then closed) for reading with a
/// read delegation.
async fn read_delegated(c: &client::Client, dir: &NfsFh4, name: &str) -> (client::Open, StateId4) {
    let mut create = client::OpenOpts::create(0o644);
    create.access |= OPEN4_SHARE_ACCESS_WANT_NO_DELEG;
    let f = c.open(dir, name, create).await.unwrap();
    c.close(&f.fh, f.stateid).await.unwrap();
    let o = c
        .open(
            dir,
            name,
            client::OpenOpts {
                access: OPEN4_SHARE_ACCESS_READ | OPEN4_SHARE_ACCESS_WANT_READ_DELEG,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let OpenDelegation4::Read(d) = &o.delegation else {
        panic!("no read delegation: {:?}", o.delegation)
    };
    let sid = d.stateid;
    (o, sid)
}

#[tokio::test]
async fn local_changes_to_a_delegated_file_recall_its_delegation() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let a = srv.client().await;
        let root = a.root_fh().await.unwrap();
        let p = |n: &str| srv.path(n).display().to_string();
        let cases: Vec<(&str, String)> = vec![
            ("chmod", format!("chmod 600 {}", p("chmod"))),
            ("chown", format!("chown 1:1 {}", p("chown"))),
            ("utimes", format!("touch -d 2001-01-01 {}", p("utimes"))),
            (
                "xattr",
                format!(
                    "python3 -c 'import os; os.setxattr(\"{}\", \"user.k\", b\"v\")'",
                    p("xattr")
                ),
            ),
            ("link", format!("ln {} {}", p("link"), p("link2"))),
            ("rename", format!("mv {} {}", p("rename"), p("renamed"))),
            ("remove", format!("rm {}", p("remove"))),
            (
                "replaced",
                format!("touch {0}.new; mv {0}.new {0}", p("replaced")),
            ),
            (
                "truncate",
                format!(
                    "python3 -c 'import os; os.truncate(\"{}\", 0)'",
                    p("truncate")
                ),
            ),
            ("write", format!("echo more >> {}", p("write"))),
        ];
        for (i, (name, cmd)) in cases.iter().enumerate() {
            let (o, d) = read_delegated(&a, &root, name).await;
            sh(cmd).await;
            let got = recalls(&a, i + 1).await;
            assert_eq!(got.len(), i + 1, "{name}: not recalled");
            assert_eq!(got[i].stateid.other, d.other, "{name}");
            assert_eq!(delegreturns(&a, i as u64 + 1).await, i as u64 + 1);
            a.close(&o.fh, o.stateid).await.unwrap();
        }
    })
    .await
}

#[tokio::test]
async fn local_changes_in_a_delegated_directory_recall_its_delegation() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let a = srv.client().await;
        let root = a.root_fh().await.unwrap();
        // A directory each: no delegation is granted within seconds of a
        // conflict over it.
        for (i, cmd) in [
            "touch {d}/new",
            "touch {d}/old; mv {d}/old {d}/moved",
            "touch {d}/gone; rm {d}/gone",
            "mkdir {d}/sub",
            "chmod 700 {d}",
            "mv {d} {d}.renamed",
        ]
        .iter()
        .enumerate()
        {
            let name = format!("d{i}");
            let dir = a.mkdir(&root, &name, 0o755).await.unwrap();
            // Entries made before the delegation by this process (the
            // server's) are no change to report.
            let cmd = cmd.replace("{d}", &srv.path(&name).display().to_string());
            let r = a
                .compound(vec![
                    putfh(&dir),
                    NfsArgOp4::GetDirDelegation(GetDirDelegation4Args {
                        signal_deleg_avail: false,
                        notification_types: Bitmap4::default(),
                        child_attr_delay: NfsTime4::default(),
                        dir_attr_delay: NfsTime4::default(),
                        child_attributes: Bitmap4::default(),
                        dir_attributes: Bitmap4::default(),
                    }),
                ])
                .await
                .unwrap();
            let NfsResOp4::GetDirDelegation(Res4::Ok(GetDirDelegation4ResNonFatal::Ok(ok))) = &r[1]
            else {
                panic!("no directory delegation: {:?}", r[1]);
            };
            sh(&cmd).await;
            let got = recalls(&a, i + 1).await;
            assert_eq!(got.len(), i + 1, "{cmd}: not recalled");
            assert_eq!(got[i].stateid.other, ok.stateid.other, "{cmd}");
            assert_eq!(delegreturns(&a, i as u64 + 1).await, i as u64 + 1);
        }
    })
    .await
}

/// A local process opening a file under a write delegation (to read it,
/// here) waits until the delegation is returned, and then reads what the
/// holder wrote.
#[tokio::test]
async fn a_local_open_of_a_write_delegated_file_waits_for_its_return() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let a = srv.client().await;
        let root = a.root_fh().await.unwrap();
        let f = create_file(&a, &root, "w").await;
        let OpenDelegation4::Write(w) = &f.delegation else {
            panic!("no write delegation: {:?}", f.delegation)
        };
        let wd = w.stateid;
        let data = Bytes::from_static(b"the holder's data");
        a.write(&f.fh, wd, 0, data.clone(), StableHow4::Unstable4)
            .await
            .unwrap();
        let path = srv.path("w");
        let reader =
            tokio::task::spawn_blocking(move || Command::new("cat").arg(&path).output().unwrap());
        let got = recalls(&a, 1).await;
        assert_eq!(got.len(), 1, "the local open recalled nothing");
        assert_eq!(got[0].stateid.other, wd.other);
        let out = reader.await.unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, &data[..]);
        // It went on only once the delegation was gone.
        assert_eq!(
            a.test_stateids(vec![wd]).await.unwrap(),
            vec![NfsStat4::Nfs4errBadStateid]
        );
    })
    .await
}
