//! GETDEVICEINFO (RFC 8881 §18.40): where a data server of a
//! flexible-file layout is and how to reach it (RFC 8435 §4.1,
//! `ff_device_addr4`). The change and deletion notifications asked for
//! are granted (RFC 8881 §20.12): a device id never changes meaning (the
//! data servers' generation is in it; new ones come with new layouts),
//! so none is ever due, and a client that holds them caches the device.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;
use crate::nfs4::pnfs::{device_addr, parse_device_id};

pub async fn run(cx: &mut Compound, args: GetDeviceInfo4Args) -> GetDeviceInfo4Res {
    if args.layout_type != LAYOUT4_FLEX_FILES {
        return GetDeviceInfo4Res::Err(NfsStat4::Nfs4errUnknownLayouttype);
    }
    let Some((export, index, generation)) = parse_device_id(&args.device_id) else {
        return GetDeviceInfo4Res::Err(NfsStat4::Nfs4errNoent);
    };
    let addr = cx
        .exports
        .get(export)
        .and_then(|e| e.pnfs.as_ref())
        .filter(|p| p.generation == generation)
        .and_then(|p| device_addr(p, index));
    let Some(addr) = addr else {
        return GetDeviceInfo4Res::Err(NfsStat4::Nfs4errNoent);
    };
    // gdir_device_addr (type, opaque body) and gdir_notification.
    let need = (4 + 4 + addr.addr_body.len()).div_ceil(4) * 4 + 4;
    if args.maxcount != 0 && need > args.maxcount as usize {
        return GetDeviceInfo4Res::TooSmall(need as u32);
    }
    GetDeviceInfo4Res::Ok(GetDeviceInfo4ResOk {
        device_addr: addr,
        notification: granted(&args.notify_types),
    })
}

/// The notifications of `asked` a device can have: NOTIFY_DEVICEID4_CHANGE
/// and NOTIFY_DEVICEID4_DELETE (RFC 8881 §20.12.1).
fn granted(asked: &Bitmap4) -> Bitmap4 {
    let ok: Vec<u32> = [
        NotifyDeviceIdType4::Change as u32,
        NotifyDeviceIdType4::Delete as u32,
    ]
    .into_iter()
    .filter(|n| asked.contains(*n))
    .collect();
    Bitmap4::from_attrs(&ok)
}
