//! Large READs answered from the page cache: the reply's data is a range
//! of the open file that the connection sends with `sendfile`
//! (`vfs::Vfs::read_slice_nowait`, `rpc::out`). What the clients receive
//! over TCP, through NFSv4.1 and NFSv3, must be the file's bytes exactly,
//! with the right counts and end-of-file flags, between and after replies
//! sent from memory.

mod common;

use client::v3::Client as Client3;
use common::*;

/// Byte `k` of the test file.
fn byte(k: usize) -> u8 {
    (k.wrapping_mul(2654435761) >> 13) as u8
}

const SIZE: usize = 3 * 1024 * 1024 + 4097;

/// (offset, count) of the reads: aligned and not, up to and past the end,
/// and small ones (sent from memory) between.
const READS: &[(u64, u32)] = &[
    (0, 1 << 20),
    (1 << 20, 1 << 20),
    (4097, 300_000),
    (17, 100),
    (2 * 1024 * 1024 + 5, 1 << 20),
    (SIZE as u64 - 65_536, 1 << 20),
    (SIZE as u64 - 10, 1 << 20),
    (12_345, 65_536),
];

fn want(offset: u64, count: u32) -> (Vec<u8>, bool) {
    let start = (offset as usize).min(SIZE);
    let end = (start + count as usize).min(SIZE);
    ((start..end).map(byte).collect(), end == SIZE)
}

#[tokio::test]
async fn large_reads_send_the_files_bytes_over_nfsv4_and_nfsv3() {
    within(async {
        let srv = TestServer::start().await;
        let data: Vec<u8> = (0..SIZE).map(byte).collect();
        put_file(&srv, "big", &data);
        let before = vfs::local::read_slices();

        // NFSv4.1: the file open for reading, so that the server keeps it
        // open for I/O; the first read brings its pages into memory, the
        // second of each range is sent from them.
        let c = srv.client().await;
        let root = c.root_fh().await.unwrap();
        let o = c
            .open(&root, "big", client::OpenOpts::read())
            .await
            .expect("open for reading");
        for _ in 0..2 {
            for &(off, count) in READS {
                let (got, eof) = c.read(&o.fh, o.stateid, off, count).await.unwrap();
                let (w, weof) = want(off, count);
                assert_eq!((got.len(), eof), (w.len(), weof), "v4 {off} {count}");
                assert!(got[..] == w[..], "v4 bytes differ at {off} {count}");
            }
        }
        // Without cachestat(2) (Linux before 6.5) every READ is copied:
        // the bytes are still checked, the count cannot be.
        let visible = vfs::local::page_cache_visible();
        if !visible {
            eprintln!(
                "cachestat(2) unsupported: no READ is sent from the file; bytes checked only"
            );
        }
        let v4 = vfs::local::read_slices() - before;
        assert!(
            !visible || v4 >= 6,
            "only {v4} of the NFSv4 reads were sent from the file"
        );

        // NFSv3 on the same file (still open for I/O on the server).
        let c3 = Client3::connect(srv.addr, srv.addr, "/", root_auth())
            .await
            .expect("MNT and connect");
        let fh = c3.lookup(c3.root(), "big").await.unwrap().object;
        let mid = vfs::local::read_slices();
        for &(off, count) in READS {
            let r = c3.read(&fh, off, count).await.unwrap();
            let (w, weof) = want(off, count);
            assert_eq!(
                (r.count as usize, r.data.len(), r.eof),
                (w.len(), w.len(), weof),
                "v3 {off} {count}"
            );
            assert!(r.data[..] == w[..], "v3 bytes differ at {off} {count}");
        }
        let v3 = vfs::local::read_slices() - mid;
        assert!(
            !visible || v3 >= 6,
            "only {v3} of the NFSv3 reads were sent from the file"
        );
        c.close(&o.fh, o.stateid).await.unwrap();
    })
    .await
}
