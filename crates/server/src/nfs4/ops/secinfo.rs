//! SECINFO (RFC 8881 §18.29): the security flavors to use for a name in
//! the directory that is the current filehandle. Consumes the current
//! filehandle (§2.6.3.1.1.8).

use proto::nfs4::*;

use super::lookup::need_dir;
use crate::nfs4::compound::{check_name, Compound};

pub async fn run(cx: &mut Compound, args: SecInfo4Args) -> SecInfo4Res {
    secinfo(cx, args).await.into()
}

async fn secinfo(cx: &mut Compound, args: SecInfo4Args) -> Result<SecInfo4ResOk, NfsStat4> {
    let dir = cx.cfh()?.clone();
    let name = check_name(&args.name)?;
    let h = dir.handle.clone();
    cx.vfs(dir.export, move |fs, c| {
        need_dir(&fs.getattr(&h)?)?;
        fs.lookup(c, &h, &name)
    })
    .await?;
    consume_cfh(cx);
    Ok(flavors())
}

/// The flavors every export accepts, preferred first.
pub(crate) fn flavors() -> SecInfo4ResOk {
    vec![SecInfo4::Flavor(AUTH_SYS), SecInfo4::Flavor(AUTH_NONE)]
}

/// After SECINFO and SECINFO_NO_NAME there is no current filehandle
/// (RFC 8881 §2.6.3.1.1.8).
pub(crate) fn consume_cfh(cx: &mut Compound) {
    cx.cfh = None;
    cx.cur_stateid = None;
}
