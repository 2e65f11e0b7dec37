//! GETATTR (RFC 8881 §18.7).

use proto::nfs4::*;

use crate::nfs4::attrs;
use crate::nfs4::compound::context::Compound;
use crate::nfs4::deleg;

/// What a write delegation's holder may have changed in its cache.
const HOLDER_ATTRS: [u32; 4] = [
    FATTR4_CHANGE,
    FATTR4_SIZE,
    FATTR4_TIME_MODIFY,
    FATTR4_TIME_METADATA,
];

pub async fn run(cx: &mut Compound, args: GetAttr4Args) -> GetAttr4Res {
    let fh = match cx.cfh() {
        Ok(fh) => fh.clone(),
        Err(e) => return Res4::Err(e),
    };
    // §18.7.3: write-only attributes cannot be read; nor can NFSv4.2's
    // delegated times (RFC 9754 §5), which only a delegation's holder
    // sets (in NFSv4.1 they are unsupported, and left out).
    let asked = |a: &u32| args.attr_request.contains(*a);
    let deleg_times = [FATTR4_TIME_DELEG_ACCESS, FATTR4_TIME_DELEG_MODIFY];
    if [FATTR4_TIME_ACCESS_SET, FATTR4_TIME_MODIFY_SET]
        .iter()
        .any(asked)
        || (cx.minorversion >= 2 && deleg_times.iter().any(asked))
    {
        return Res4::Err(NfsStat4::Nfs4errInval);
    }
    // Another client's write delegation: the holder's cache may hold a
    // newer size and change attribute (RFC 8881 §10.4.3).
    let mut known = None;
    if fh.pseudo.is_none() && HOLDER_ATTRS.iter().any(|a| args.attr_request.contains(*a)) {
        let held = cx.srv.state().write_delegation(&fh.key());
        if let Some(w) = held.filter(|w| cx.client_hint() != Some(w.holder)) {
            match deleg::holder_attrs(cx, &fh, w).await {
                Ok(a) => known = Some(a),
                Err(e) => return Res4::Err(e),
            }
        }
    }
    match attrs::get_with(cx, &fh, &args.attr_request, known).await {
        Ok(obj_attributes) => Res4::Ok(GetAttr4ResOk { obj_attributes }),
        Err(e) => Res4::Err(e),
    }
}
