//! FSSTAT (RFC 1813 §3.3.18): the file system's space and files, as the
//! backend's statfs says.

use proto::nfs3::*;

use crate::v3::nfs3::Ctx;

pub async fn run(cx: &Ctx, args: FsRoot3Args) -> FsStat3Res {
    let o = match cx.obj(&args.fsroot) {
        Ok(o) => o,
        Err(s) => return Res3::Fail(s, ObjAttrFail3::default()),
    };
    let (r, obj_attributes) = cx.fsstat(&o).await;
    match r {
        Ok(s) => Res3::Ok(FsStat3ResOk {
            obj_attributes,
            tbytes: s.total_bytes,
            fbytes: s.free_bytes,
            abytes: s.avail_bytes,
            tfiles: s.total_files,
            ffiles: s.free_files,
            afiles: s.avail_files,
            // The figures change at any time.
            invarsec: 0,
        }),
        Err(s) => Res3::Fail(s, ObjAttrFail3 { obj_attributes }),
    }
}
