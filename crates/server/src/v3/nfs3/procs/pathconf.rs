//! PATHCONF (RFC 1813 §3.3.20): the same figures NFSv4 reports (maxlink,
//! maxname from the backend's statfs, no_trunc, chown_restricted, case).

use proto::nfs3::*;

use crate::v3::nfs3::Ctx;

pub async fn run(cx: &Ctx, args: PathConf3Args) -> PathConf3Res {
    let o = match cx.obj(&args.object) {
        Ok(o) => o,
        Err(s) => return Res3::Fail(s, ObjAttrFail3::default()),
    };
    let (r, obj_attributes) = cx.fsstat(&o).await;
    match r {
        Ok(s) => Res3::Ok(PathConf3ResOk {
            obj_attributes,
            linkmax: 65000,
            name_max: s.max_name,
            no_trunc: true,
            chown_restricted: true,
            case_insensitive: false,
            case_preserving: true,
        }),
        Err(s) => Res3::Fail(s, ObjAttrFail3 { obj_attributes }),
    }
}
