//! SECINFO (RFC 8881 §18.29): the security flavors to use for a name in
//! the directory that is the current filehandle: those of the export the
//! name leads to (another export where one is mounted). Consumes the
//! current filehandle (§2.6.3.1.1.8).

use proto::nfs4::*;

use crate::exports::namespace::Child;
use crate::nfs4::check::need_dir;
use crate::nfs4::compound::context::{check_name, Compound};
use crate::nfs4::dirs::pseudo_child;

pub async fn run(cx: &mut Compound, args: SecInfo4Args) -> SecInfo4Res {
    secinfo(cx, args).await.into()
}

async fn secinfo(cx: &mut Compound, args: SecInfo4Args) -> Result<SecInfo4ResOk, NfsStat4> {
    let dir = cx.cfh()?.clone();
    let name = check_name(&args.name)?;
    let target = match dir.pseudo {
        Some(node) => match pseudo_child(cx, node, &name)? {
            Child::Node(n) => cx.pseudo_fh(n),
            Child::Export(e) => cx.export_root_fh(e)?,
            // The parent is present: its flavors (RFC 8881 §11.3).
            Child::Referral(r) => cx.referral_fh(r),
        },
        None => {
            let h = dir.handle.clone();
            // The directory is looked in with the export's identity but
            // without its flavor check: SECINFO is how a client learns
            // the flavors (§2.6.3.1.1.5).
            let creds = cx.admit(dir.export)?.creds(&cx.auth);
            let fs = cx.export(dir.export)?.vfs.clone();
            let (obj, _) = cx
                .blocking(fs, creds, move |fs, c| {
                    need_dir(&fs.getattr(&h)?)?;
                    fs.lookup(c, &h, &name)
                })
                .await?;
            match cx.exports.ns.junctions.get(&(dir.export, obj.clone())) {
                Some(&inner) => cx.export_root_fh(inner)?,
                None => cx.make_fh(dir.export, obj),
            }
        }
    };
    let flavors = cx.flavors(&target)?;
    cx.consume_cfh();
    Ok(flavors)
}
