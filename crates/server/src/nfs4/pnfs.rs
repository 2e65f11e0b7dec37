//! The NFSv4 side of pNFS flexible-file layouts (RFC 8881 §12, RFC 8435):
//! device ids and their addresses (GETDEVICEINFO), the `ff_layout4` of a
//! layout segment (LAYOUTGET), and what a segment covers. The data
//! servers themselves and the data files are `crate::pnfs`'s.
//!
//! Segments. Linux's flexible-file client takes one data server per
//! mirror (fs/nfs/flexfilelayout, ds_count 1), so a layout segment is
//! one stripe (`[k * unit, (k + 1) * unit)`), its mirrors the stripe's
//! data servers; where every stripe is on the same servers (as many
//! mirrors as servers) one segment covers the whole file. The data
//! file's offsets are the file's (`crate::pnfs::datafiles`).

use std::net::SocketAddr;

use bytes::Bytes;
use proto::nfs4::*;

use crate::pnfs::datafiles::{FENCE_GID, FENCE_UID, READ_UID};
use crate::pnfs::dataserver::IO_SIZE;
use crate::pnfs::Pnfs;

/// A device id: "FF", the export, the data server's index and the
/// export's data-server generation (a change of data servers makes old
/// ids unknown: NFS4ERR_NOENT).
pub fn device_id(export: u16, index: usize, generation: u64) -> DeviceId4 {
    let mut d = [0u8; NFS4_DEVICEID4_SIZE];
    d[0] = b'F';
    d[1] = b'F';
    d[2..4].copy_from_slice(&export.to_be_bytes());
    d[4..8].copy_from_slice(&(index as u32).to_be_bytes());
    d[8..16].copy_from_slice(&generation.to_be_bytes());
    d
}

/// The export and data server index of a device id, if it is one of ours.
pub fn parse_device_id(d: &DeviceId4) -> Option<(u16, usize, u64)> {
    if d[0] != b'F' || d[1] != b'F' {
        return None;
    }
    let export = u16::from_be_bytes([d[2], d[3]]);
    let index = u32::from_be_bytes([d[4], d[5], d[6], d[7]]) as usize;
    let generation = u64::from_be_bytes(d[8..16].try_into().ok()?);
    Some((export, index, generation))
}

/// A socket address as an RPC universal address (RFC 5665 §5.2.3.3,
/// §5.2.3.4) with its netid.
pub fn universal_addr(a: &SocketAddr) -> NetAddr4 {
    let (hi, lo) = (a.port() >> 8, a.port() & 0xff);
    match a {
        SocketAddr::V4(v) => NetAddr4 {
            netid: "tcp".into(),
            addr: format!("{}.{hi}.{lo}", v.ip()),
        },
        SocketAddr::V6(v) => NetAddr4 {
            netid: "tcp6".into(),
            addr: format!("{}.{hi}.{lo}", v.ip()),
        },
    }
}

/// The `ff_device_addr4` of data server `index`: NFSv3, READ and WRITE
/// up to [`IO_SIZE`], loosely coupled.
pub fn device_addr(pnfs: &Pnfs, index: usize) -> Option<DeviceAddr4> {
    let ds = pnfs.servers.get(index)?;
    Some(
        FfDeviceAddr4 {
            netaddrs: MultipathList4(vec![universal_addr(&ds.addr.addr)]),
            versions: vec![FfDeviceVersions4 {
                version: 3,
                minorversion: 0,
                rsize: IO_SIZE,
                wsize: IO_SIZE,
                tightly_coupled: false,
            }],
        }
        .to_device_addr(),
    )
}

/// The byte range `[start, end)` a layout asked for at `offset` gets.
pub fn segment_range(pnfs: &Pnfs, offset: u64) -> (u64, u64) {
    let g = &pnfs.geometry;
    if g.one_place() {
        (0, u64::MAX)
    } else {
        let k = g.stripe(offset);
        (k.saturating_mul(g.stripe_unit), g.stripe_end(offset))
    }
}

/// The data servers of the segment at `offset` of the file `h`, one per
/// mirror; those marked down left out while another answers.
pub fn segment_servers(pnfs: &Pnfs, h: &[u8], offset: u64) -> Vec<usize> {
    let g = &pnfs.geometry;
    let all = g.servers_of(pnfs.base(h), g.stripe(offset));
    let up: Vec<usize> = all
        .iter()
        .copied()
        .filter(|i| pnfs.servers[*i].is_up())
        .collect();
    if up.is_empty() {
        all
    } else {
        up
    }
}

/// The `ff_layout4` of a segment: one mirror per data server in
/// `servers` with its data file `fhs[i]`, for `iomode` with the file's
/// fence generation `gen`.
pub fn ff_layout(
    pnfs: &Pnfs,
    servers: &[(usize, Bytes)],
    iomode: LayoutIoMode4,
    gen: u32,
) -> FfLayout4 {
    let user = match iomode {
        LayoutIoMode4::Rw => FENCE_UID + gen,
        _ => READ_UID,
    };
    let group = FENCE_GID + gen;
    FfLayout4 {
        stripe_unit: 0,
        mirrors: servers
            .iter()
            .map(|(i, fh)| FfMirror4 {
                data_servers: vec![FfDataServer4 {
                    deviceid: device_id(pnfs.export, *i, pnfs.generation),
                    efficiency: 1,
                    stateid: StateId4::ANONYMOUS,
                    fh_vers: vec![NfsFh4(fh.clone())],
                    user: Bytes::from(user.to_string()),
                    group: Bytes::from(group.to_string()),
                }],
            })
            .collect(),
        flags: 0,
        stats_collect_hint: 0,
    }
}

/// Errors a client met on data servers (LAYOUTERROR, a LAYOUTRETURN's
/// `ff_ioerr4`): each server named is probed now, in the background, and
/// is marked down if it does not answer (then left out of layouts).
pub fn report_errors(pnfs: &std::sync::Arc<Pnfs>, errors: Vec<DeviceError4>) {
    let mut named: Vec<usize> = errors
        .iter()
        .filter_map(|e| {
            let (export, index, generation) = parse_device_id(&e.deviceid)?;
            (export == pnfs.export && generation == pnfs.generation && index < pnfs.servers.len())
                .then_some(index)
        })
        .collect();
    named.sort_unstable();
    named.dedup();
    for i in named {
        tracing::info!(data_server = %pnfs.servers[i].addr, "a client reports I/O errors: probing");
        let ds = pnfs.servers[i].clone();
        tokio::spawn(async move {
            ds.probe().await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_ids_and_addresses() {
        let d = device_id(3, 7, 0x1122_3344_5566_7788);
        assert_eq!(parse_device_id(&d), Some((3, 7, 0x1122_3344_5566_7788)));
        assert_eq!(parse_device_id(&[0; 16]), None);
        let a = universal_addr(&"127.0.0.1:2050".parse().unwrap());
        assert_eq!(
            (a.netid.as_str(), a.addr.as_str()),
            ("tcp", "127.0.0.1.8.2")
        );
        let a = universal_addr(&"[::1]:2049".parse().unwrap());
        assert_eq!((a.netid.as_str(), a.addr.as_str()), ("tcp6", "::1.8.1"));
    }
}
