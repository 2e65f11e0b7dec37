use super::*;

fn sid(n: u8) -> SessionId4 {
    [n; 16]
}

fn reply(s: &str) -> Vec<Bytes> {
    vec![Bytes::from(s.to_string()), Bytes::from_static(b"-tail")]
}

#[test]
fn a_restart_keeps_the_replies_for_retries_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = Sessions::open(dir.path(), 1, Duration::from_secs(10)).unwrap();
    let f = s.create(&sid(7), 4).unwrap().unwrap();
    assert!(f.keep(0, 5, 0xAA, &reply("remove")).unwrap());
    assert!(f.keep(2, 9, 0xBB, &reply("rename")).unwrap());
    // Slot 2 again: the later request replaces the earlier's reply.
    assert!(f.keep(2, 10, 0xCC, &reply("lock")).unwrap());
    assert!(!f.keep(4, 1, 0, &reply("x")).unwrap(), "beyond the slots");
    let big = vec![Bytes::from(vec![0u8; MAX_REPLY + 1])];
    assert!(!f.keep(1, 1, 0, &big).unwrap(), "too large to keep");
    assert_eq!(s.dead(&sid(7), 0, 5, 0xAA), Dead::Unknown, "live, not dead");

    // The next instance.
    let s2 = Sessions::open(dir.path(), 2, Duration::from_secs(10)).unwrap();
    let want = Bytes::from_static(b"remove-tail");
    assert_eq!(s2.dead(&sid(7), 0, 5, 0xAA), Dead::Replay(want));
    assert_eq!(
        s2.dead(&sid(7), 2, 10, 0xCC),
        Dead::Replay(Bytes::from_static(b"lock-tail"))
    );
    assert_eq!(s2.dead(&sid(7), 2, 9, 0xBB), Dead::Dead, "replaced");
    assert_eq!(s2.dead(&sid(7), 0, 5, 0xAB), Dead::FalseRetry);
    assert_eq!(s2.dead(&sid(7), 0, 6, 0xAA), Dead::Dead, "a new request");
    assert_eq!(s2.dead(&sid(7), 1, 1, 0), Dead::Dead, "nothing kept");
    assert_eq!(s2.dead(&sid(7), 99, 1, 0), Dead::Dead);
    assert_eq!(s2.dead(&sid(8), 0, 5, 0xAA), Dead::Unknown);
}

#[test]
fn a_torn_record_is_no_reply() {
    let dir = tempfile::tempdir().unwrap();
    let s = Sessions::open(dir.path(), 1, Duration::ZERO).unwrap();
    let f = s.create(&sid(1), 2).unwrap().unwrap();
    f.keep(0, 3, 1, &reply("a")).unwrap();
    f.keep(1, 3, 1, &reply("b")).unwrap();
    let path = fs::read_dir(dir.path().join("sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut data = fs::read(&path).unwrap();
    data[(HEADER + SLOT_BYTES) as usize + SLOT_HEAD] ^= 1;
    fs::write(&path, &data).unwrap();
    let s2 = Sessions::open(dir.path(), 2, Duration::ZERO).unwrap();
    assert!(matches!(s2.dead(&sid(1), 0, 3, 1), Dead::Replay(_)));
    assert_eq!(s2.dead(&sid(1), 1, 3, 1), Dead::Dead);
    // A file that is not a session's is skipped, not fatal.
    fs::write(dir.path().join("sessions/junk"), b"junk").unwrap();
    let s3 = Sessions::open(dir.path(), 3, Duration::ZERO).unwrap();
    assert!(matches!(s3.dead(&sid(1), 0, 3, 1), Dead::Replay(_)));
}

#[test]
fn sweeps_remove_gone_sessions_and_in_time_the_earlier_ones() {
    let dir = tempfile::tempdir().unwrap();
    let files = || fs::read_dir(dir.path().join("sessions")).unwrap().count();
    let s = Sessions::open(dir.path(), 1, Duration::ZERO).unwrap();
    let kept = s.create(&sid(1), 1).unwrap().unwrap();
    kept.keep(0, 1, 1, &reply("a")).unwrap();
    let gone = s.create(&sid(2), 1).unwrap().unwrap();
    drop(gone);
    assert_eq!(files(), 2);
    s.sweep(Duration::ZERO);
    assert_eq!((files(), s.live_files()), (1, 1));
    // The next instance keeps the earlier file for its keeping time.
    let s2 = Sessions::open(dir.path(), 2, Duration::from_secs(60)).unwrap();
    let mine = s2.create(&sid(3), 1).unwrap().unwrap();
    s2.sweep(Duration::from_secs(59));
    assert_eq!(files(), 2);
    assert!(matches!(s2.dead(&sid(1), 0, 1, 1), Dead::Replay(_)));
    s2.sweep(Duration::from_secs(60));
    assert_eq!(files(), 1, "only this instance's");
    assert_eq!(s2.dead(&sid(1), 0, 1, 1), Dead::Unknown);
    drop(mine);
    assert!(!Sessions::none().enabled());
    assert!(Sessions::none().create(&sid(4), 1).unwrap().is_none());
}

#[test]
fn only_namespace_changes_persist() {
    use proto::nfs4::*;
    let open = |openhow| {
        NfsArgOp4::Open(Open4Args {
            seqid: 0,
            share_access: OPEN4_SHARE_ACCESS_READ,
            share_deny: 0,
            owner: OpenOwner4 {
                clientid: 0,
                owner: Bytes::new(),
            },
            openhow,
            claim: OpenClaim4::Null(Bytes::from_static(b"f")),
        })
    };
    assert!(!persists(&open(OpenFlag4::NoCreate)));
    assert!(persists(&open(OpenFlag4::Create(CreateHow4::Guarded(
        Fattr4::default()
    )))));
    assert!(persists(&NfsArgOp4::Remove(Remove4Args {
        target: Bytes::from_static(b"f")
    })));
    assert!(!persists(&NfsArgOp4::GetFh));
    let lock = NfsArgOp4::Lock(Lock4Args {
        locktype: NfsLockType4::WriteLt,
        reclaim: false,
        offset: 0,
        length: 1,
        locker: Locker4::LockOwner(ExistLockOwner4 {
            lock_stateid: StateId4::default(),
            lock_seqid: 0,
        }),
    });
    assert!(!persists(&lock), "locks do not outlive a restart");
    assert!(!persists(&NfsArgOp4::Commit(Commit4Args {
        offset: 0,
        count: 0
    })));
}
