//! TEST_STATEID (RFC 8881 §18.48).

use proto::nfs4::*;

use crate::nfs4::compound::Compound;

pub async fn run(cx: &mut Compound, args: TestStateId4Args) -> TestStateId4Res {
    let client = match cx.clientid() {
        Ok(c) => c,
        Err(e) => return Res4::Err(e),
    };
    let t = cx.srv.state();
    let status_codes = args
        .stateids
        .iter()
        .map(|sid| {
            // Special stateids (§8.2.3) are not tested, and another
            // client's stateids are not revealed.
            if sid.other == [0; 12] || sid.other == [0xff; 12] {
                return NfsStat4::Nfs4errBadStateid;
            }
            match t.stateids.get(&sid.other) {
                Some(e) if e.client != client => NfsStat4::Nfs4errBadStateid,
                _ => t.test_stateid(sid),
            }
        })
        .collect();
    Res4::Ok(TestStateId4ResOk { status_codes })
}
