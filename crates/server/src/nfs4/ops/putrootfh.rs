//! PUTROOTFH (RFC 8881 §18.21).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound) -> PutRootFh4Res {
    cx.put_root_fh().into()
}
