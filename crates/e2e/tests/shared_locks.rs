//! Byte-range locks shared with local processes (issue 33): an NFSv4
//! lock and a local `fcntl(2)` lock on the same range refuse each other
//! both ways; a client blocked by a local lock is told when it is free
//! (CB_NOTIFY_LOCK, the range held for it meanwhile); a client that dies
//! holding a lock stops blocking local processes at its lease's end; an
//! export with `shared_locks = false` keeps them apart as before.
//!
//! The test process stands for the local process, with open file
//! description locks of its own (a POSIX lock would be dropped whenever
//! the server, in the same process, closes a descriptor of the file);
//! one test runs a separate process taking a POSIX lock, as most local
//! programs do.

mod common;

use client::OpenOpts;
use common::*;
use proto::nfs4::*;

#[tokio::test]
async fn nfs_and_local_locks_refuse_each_other_both_ways() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let o = create_file(&c, &root, "f").await;
        let local = local_file(&srv, "f");
        let owner = c.new_owner("lo");
        // The client's lock refuses the local process's.
        let ls = c
            .lock(
                &o.fh,
                NfsLockType4::WriteLt,
                0,
                100,
                c.new_locker(o.stateid, owner.clone()),
            )
            .await
            .unwrap();
        assert!(!local_lock(&local, libc::F_RDLCK, 50, 10));
        assert!(!local_lock(&local, libc::F_WRLCK, 0, 0));
        assert!(local_lock(&local, libc::F_WRLCK, 100, 10));
        // The local process's lock refuses the client's, naming it.
        let e = c
            .lock(&o.fh, NfsLockType4::ReadLt, 105, 1, c.existing_locker(ls))
            .await
            .unwrap_err();
        let d = e.denied().expect("LOCK4denied");
        assert_eq!(d.owner.clientid, 0);
        assert_eq!((d.offset, d.length), (100, 10));
        assert_eq!(&d.owner.owner[..], b"local process");
        let e = c
            .lockt(&o.fh, NfsLockType4::ReadLt, 0, u64::MAX, c.new_owner("t"))
            .await
            .unwrap_err();
        // LOCKT names a lock in the way: the client's own owner's first,
        // else the local one.
        assert!(e.denied().is_some());
        // Another owner, to the end of the file: the local lock is in
        // the way.
        let e = c
            .lock(
                &o.fh,
                NfsLockType4::WriteLt,
                100,
                u64::MAX,
                c.new_locker(o.stateid, c.new_owner("to-end")),
            )
            .await
            .unwrap_err();
        assert_eq!(e.denied().unwrap().owner.clientid, 0);
        // The client unlocks part: the local process gets that part.
        let ls = c
            .locku(&o.fh, NfsLockType4::WriteLt, ls, 0, 50)
            .await
            .unwrap();
        assert!(local_lock(&local, libc::F_WRLCK, 0, 50));
        assert!(!local_lock(&local, libc::F_WRLCK, 50, 1));
        // The local process lets go: the client gets its range.
        assert!(local_lock(&local, libc::F_UNLCK, 0, 0));
        let ls = c
            .lock(&o.fh, NfsLockType4::WriteLt, 100, 10, c.existing_locker(ls))
            .await
            .unwrap();
        // Unlocked to the end: nothing is left in the kernel.
        c.locku(&o.fh, NfsLockType4::WriteLt, ls, 0, u64::MAX)
            .await
            .unwrap();
        assert!(local_lock(&local, libc::F_WRLCK, 0, 0));
    })
    .await
}

#[tokio::test]
async fn a_client_blocked_by_a_local_lock_is_told_when_it_goes() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let o = create_file(&c, &root, "w").await;
        let local = local_file(&srv, "w");
        assert!(local_lock(&local, libc::F_WRLCK, 0, 0));
        let owner = c.new_owner("waiter");
        let e = c
            .lock(
                &o.fh,
                NfsLockType4::WritewLt,
                0,
                10,
                c.new_locker(o.stateid, owner.clone()),
            )
            .await
            .unwrap_err();
        assert_eq!(e.denied().unwrap().owner.clientid, 0);
        // Not told while the local lock is held.
        tokio::time::sleep(QUIET).await;
        assert!(c.callbacks().lock_notices().is_empty());
        // The local process lets go (silently): polled, the client is
        // told, and the range is held for it: the local process cannot
        // take it back before the client comes.
        assert!(local_lock(&local, libc::F_UNLCK, 0, 0));
        let n = notices(&c, 1).await;
        assert_eq!(n.len(), 1, "CB_NOTIFY_LOCK after the local unlock");
        assert_eq!(n[0].lock_owner.owner, owner.owner);
        assert!(!local_lock(&local, libc::F_WRLCK, 5, 1));
        assert!(local_lock(&local, libc::F_WRLCK, 10, 1));
        let ls = c
            .lock(
                &o.fh,
                NfsLockType4::WritewLt,
                0,
                10,
                c.new_locker(o.stateid, owner.clone()),
            )
            .await
            .unwrap();
        assert!(!local_lock(&local, libc::F_WRLCK, 0, 10));
        c.locku(&o.fh, NfsLockType4::WriteLt, ls, 0, 10)
            .await
            .unwrap();
        assert!(local_lock(&local, libc::F_WRLCK, 0, 10));
    })
    .await
}

#[tokio::test]
async fn a_dead_clients_lock_stops_blocking_local_processes_at_its_leases_end() {
    within(async {
        let srv = TestServer::start().await;
        let root;
        let local;
        {
            let c = srv.client().await;
            root = c.root_fh().await.unwrap();
            let o = create_file(&c, &root, "d").await;
            local = local_file(&srv, "d");
            c.lock(
                &o.fh,
                NfsLockType4::WriteLt,
                0,
                u64::MAX,
                c.new_locker(o.stateid, c.new_owner("dies")),
            )
            .await
            .unwrap();
            assert!(!local_lock(&local, libc::F_WRLCK, 0, 1));
            // The client dies: no more renewals.
        }
        let _ = root;
        let freed = async {
            loop {
                if local_lock(&local, libc::F_WRLCK, 0, 1) {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        };
        // The lease is 10 s; the reaper runs every second.
        tokio::time::timeout(PATIENCE, freed)
            .await
            .expect("the dead client's lock went at its lease's end");
    })
    .await
}

#[tokio::test]
async fn an_export_with_shared_locks_off_keeps_them_apart() {
    within(async {
        let srv = TestServer::start_unshared_locks().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let o = c.open(&root, "s", OpenOpts::create(0o644)).await.unwrap();
        let local = local_file(&srv, "s");
        assert!(local_lock(&local, libc::F_WRLCK, 0, 0));
        c.lock(
            &o.fh,
            NfsLockType4::WriteLt,
            0,
            10,
            c.new_locker(o.stateid, c.new_owner("x")),
        )
        .await
        .unwrap();
    })
    .await
}

/// A separate local process with a POSIX lock (python3's fcntl.lockf, as
/// local programs lock): the client is refused and told its pid; once it
/// exits the client gets the range.
#[tokio::test]
async fn a_local_processs_posix_lock_refuses_the_client() {
    within(async {
        let srv = TestServer::start().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let o = create_file(&c, &root, "p").await;
        let script = "import fcntl,sys\nf=open(sys.argv[1],'r+')\nfcntl.lockf(f,fcntl.LOCK_EX,10,0)\nprint('locked',flush=True)\nsys.stdin.read()\n";
        let mut child = std::process::Command::new("python3")
            .args(["-c", script])
            .arg(srv.path("p"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs (the test needs it: apt install python3)");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line.trim(), "locked");
        let owner = c.new_owner("po");
        let e = c
            .lock(
                &o.fh,
                NfsLockType4::ReadLt,
                5,
                1,
                c.new_locker(o.stateid, owner.clone()),
            )
            .await
            .unwrap_err();
        let d = e.denied().expect("LOCK4denied");
        assert_eq!(d.owner.clientid, 0);
        assert_eq!(
            String::from_utf8_lossy(&d.owner.owner),
            format!("local pid {}", child.id())
        );
        drop(child.stdin.take());
        child.wait().unwrap();
        c.lock(
            &o.fh,
            NfsLockType4::ReadLt,
            5,
            1,
            c.new_locker(o.stateid, owner),
        )
        .await
        .unwrap();
    })
    .await
}

/// A client under a write delegation locks in its cache without asking
/// (the Linux client does), so none is granted while a local process
/// holds a lock on the file; once it lets go, one is. A file the OPEN
/// creates gets one at once.
#[tokio::test]
async fn no_write_delegation_while_a_local_process_holds_a_lock() {
    within(async {
        let srv = TestServer::start_delegating().await;
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let made = create_file(&c, &root, "made").await;
        assert!(
            matches!(made.delegation, OpenDelegation4::Write(_)),
            "a created file: {:?}",
            made.delegation
        );
        put_file(&srv, "held", b"data");
        let local = local_file(&srv, "held");
        assert!(local_lock(&local, libc::F_RDLCK, 0, 1));
        let o = c.open(&root, "held", OpenOpts::both()).await.unwrap();
        assert!(
            !matches!(o.delegation, OpenDelegation4::Write(_)),
            "a write delegation of a locally locked file"
        );
        c.close(&o.fh, o.stateid).await.unwrap();
        assert!(local_lock(&local, libc::F_UNLCK, 0, 0));
        put_file(&srv, "free", b"data");
        let o = c.open(&root, "free", OpenOpts::both()).await.unwrap();
        assert!(
            matches!(o.delegation, OpenDelegation4::Write(_)),
            "an unlocked file: {:?}",
            o.delegation
        );
    })
    .await
}
