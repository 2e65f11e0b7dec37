//! The back channel: the calls the server sent, answered (or not) as the
//! input chooses.

use bytes::Bytes;
use proto::nfs4::*;
use xdr::{Decoder, Encoder, Pack, Unpack};

use super::program::Input;
use super::world::{trace, World};

impl World {
    /// Takes what the server sent on the back channel and answers it, in a
    /// way the input chooses.
    pub(super) async fn callbacks(&mut self, inp: &mut Input<'_>) {
        let how = inp.u8();
        // Let spawned tasks (probes, CB_NOTIFY_LOCK) reach their calls.
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        while let Ok(msg) = self.h.sent.lock().await.try_recv() {
            let msg: Bytes = msg.concat().into();
            let mut d = Decoder::new(msg.slice(4.min(msg.len())..));
            let (Ok(xid), Ok(rpc::CALL)) = (d.u32(), d.u32()) else {
                panic!("back-channel message is not a call: {msg:02x?}");
            };
            let Ok((_prog, _vers, proc_, _auth)) = rpc::conn::parse_call(&mut d) else {
                panic!("back-channel call header does not decode: {msg:02x?}");
            };
            let mut e = Encoder::new();
            match how % 5 {
                // Answer properly.
                0 | 1 => {
                    accepted(&mut e, rpc::AcceptStat::Success);
                    if proc_ == 1 {
                        let args = CbCompound4Args::unpack(&mut d)
                            .expect("the server's CB_COMPOUND decodes");
                        cb_reply(&args, how & 0x80 != 0, how & 0x40 != 0).pack(&mut e);
                    }
                }
                2 => accepted(&mut e, rpc::AcceptStat::ProgUnavail),
                3 => {
                    accepted(&mut e, rpc::AcceptStat::Success);
                    let n = usize::from(inp.u8() % 32);
                    e.raw(inp.bytes(n));
                }
                // No answer: the call waits until the connection closes.
                _ => continue,
            }
            let delivered = self.h.conn.deliver_reply(xid, e.to_bytes());
            if trace() {
                eprintln!("callback proc {proc_} answered ({how}): {delivered}");
            }
        }
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
    }
}

fn accepted(e: &mut Encoder, stat: rpc::AcceptStat) {
    e.u32(rpc::MSG_ACCEPTED);
    rpc::OpaqueAuth::none().pack(e);
    stat.pack(e);
}

/// A client's answer to a CB_COMPOUND: CB_SEQUENCE accepted (or
/// refused), then success for CB_NOTIFY_LOCK.
fn cb_reply(args: &CbCompound4Args, refuse: bool, nomatch: bool) -> CbCompound4Res {
    let mut resarray = Vec::new();
    for op in &args.argarray {
        resarray.push(match op {
            NfsCbArgOp4::CbSequence(_) if refuse => {
                NfsCbResOp4::CbSequence(Res4::Err(NfsStat4::Nfs4errBadsession))
            }
            NfsCbArgOp4::CbSequence(s) => NfsCbResOp4::CbSequence(Res4::Ok(CbSequence4ResOk {
                sessionid: s.sessionid,
                sequenceid: s.sequenceid,
                slotid: s.slotid,
                highest_slotid: s.highest_slotid,
                target_highest_slotid: s.highest_slotid,
            })),
            NfsCbArgOp4::CbNotifyLock(_) => NfsCbResOp4::CbNotifyLock(Res4::Ok(())),
            NfsCbArgOp4::CbRecallAny(_) => NfsCbResOp4::CbRecallAny(Res4::Ok(())),
            // A layout recall: taken (the layout comes back by
            // LAYOUTRETURN, or not), or nothing held.
            NfsCbArgOp4::CbLayoutRecall(_) if !nomatch => NfsCbResOp4::CbLayoutRecall(Res4::Ok(())),
            NfsCbArgOp4::CbLayoutRecall(_) => {
                NfsCbResOp4::CbLayoutRecall(Res4::Err(NfsStat4::Nfs4errNomatchingLayout))
            }
            _ => break,
        });
        if refuse {
            break;
        }
    }
    let status = resarray
        .last()
        .map_or(NfsStat4::Nfs4Ok, NfsCbResOp4::status);
    CbCompound4Res {
        status,
        tag: args.tag.clone(),
        resarray,
    }
}
