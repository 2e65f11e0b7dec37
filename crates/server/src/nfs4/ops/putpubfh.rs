//! PUTPUBFH (RFC 8881 §18.20): the public filehandle is the root here.

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound) -> PutPubFh4Res {
    cx.put_root_fh().into()
}
