//! GETDEVICELIST (RFC 8881 §18.41): the device ids of the current
//! filehandle's file system (its data servers), a page at a time.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;
use crate::nfs4::pnfs::device_id;

pub async fn run(cx: &mut Compound, args: GetDeviceList4Args) -> GetDeviceList4Res {
    list(cx, &args).into()
}

fn list(cx: &mut Compound, args: &GetDeviceList4Args) -> Result<GetDeviceList4ResOk, NfsStat4> {
    let fh = cx.cfh()?.clone();
    if args.layout_type != LAYOUT4_FLEX_FILES {
        return Err(NfsStat4::Nfs4errUnknownLayouttype);
    }
    let export = cx.export(fh.export)?;
    let Some(pnfs) = export.pnfs.as_ref() else {
        return Err(NfsStat4::Nfs4errLayoutunavailable);
    };
    // The cookie is the index of the next data server; the verifier the
    // data servers' generation (a change makes old cookies stale).
    let verf = pnfs.generation.to_be_bytes();
    let n = pnfs.servers.len() as u64;
    if args.cookie > n || (args.cookie != 0 && args.cookieverf != verf) {
        return Err(NfsStat4::Nfs4errBadCookie);
    }
    let ids: Vec<DeviceId4> = (args.cookie as usize..n as usize)
        .take(args.maxdevices.max(1) as usize)
        .map(|i| device_id(pnfs.export, i, pnfs.generation))
        .collect();
    let next = args.cookie + ids.len() as u64;
    Ok(GetDeviceList4ResOk {
        cookie: next,
        cookieverf: verf,
        deviceid_list: ids,
        eof: next == n,
    })
}
