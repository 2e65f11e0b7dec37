//! TEST_STATEID (RFC 8881 §18.48).

use proto::nfs4::*;

use crate::nfs4::compound::context::Compound;

pub async fn run(cx: &mut Compound, args: TestStateId4Args) -> TestStateId4Res {
    let client = match cx.clientid() {
        Ok(c) => c,
        Err(e) => return Res4::Err(e),
    };
    let status_codes = cx.srv.state().test_stateids(client, &args.stateids);
    Res4::Ok(TestStateId4ResOk { status_codes })
}
