//! The in-process harness itself: a session over `vfs::mem`, a file
//! written and read back, the lease expiring on the manual clock.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use proto::nfs4::*;
use server::nfs4::inproc::InProcess;

fn mem() -> Arc<dyn vfs::Vfs> {
    Arc::new(vfs::mem::MemFs::default())
}

#[tokio::test]
async fn open_write_read_close_over_memory() {
    let h = InProcess::new(mem(), Duration::from_secs(10));
    let s = h.client("a").await;
    let open = NfsArgOp4::Open(Open4Args {
        seqid: 0,
        share_access: OPEN4_SHARE_ACCESS_BOTH,
        share_deny: 0,
        owner: StateOwner4 {
            clientid: s.clientid,
            owner: Bytes::from_static(b"o"),
        },
        openhow: OpenFlag4::Create(CreateHow4::Guarded(Fattr4::default())),
        claim: OpenClaim4::Null(Bytes::from_static(b"f")),
    });
    let r = h
        .seq(&s, &[NfsArgOp4::PutRootFh, open, NfsArgOp4::GetFh])
        .await;
    assert_eq!(r.status, NfsStat4::Nfs4Ok, "{r:?}");
    let Some(NfsResOp4::Open(Res4::Ok(o))) = r.resarray.get(2) else {
        panic!("{r:?}");
    };
    let Some(NfsResOp4::GetFh(Res4::Ok(fh))) = r.resarray.get(3) else {
        panic!("{r:?}");
    };
    let (sid, fh) = (o.stateid, fh.object.clone());
    let write = NfsArgOp4::Write(Write4Args {
        stateid: sid,
        offset: 0,
        stable: StableHow4::FileSync4,
        data: Bytes::from_static(b"hello"),
    });
    let read = NfsArgOp4::Read(Read4Args {
        stateid: sid,
        offset: 0,
        count: 100,
    });
    let r = h
        .seq(
            &s,
            &[
                NfsArgOp4::PutFh(PutFh4Args { object: fh.clone() }),
                write,
                read,
            ],
        )
        .await;
    assert_eq!(r.status, NfsStat4::Nfs4Ok, "{r:?}");
    let Some(NfsResOp4::Read(Res4::Ok(data))) = r.resarray.get(3) else {
        panic!("{r:?}");
    };
    assert_eq!(&data.data[..], b"hello");
    // A lease renewed by SEQUENCE outlives the clock moving on.
    h.advance(Duration::from_secs(9));
    let r = h
        .seq(
            &s,
            &[
                NfsArgOp4::PutFh(PutFh4Args { object: fh }),
                NfsArgOp4::Close(Close4Args {
                    seqid: 0,
                    open_stateid: sid,
                }),
            ],
        )
        .await;
    assert_eq!(r.status, NfsStat4::Nfs4Ok, "{r:?}");
}
