//! Operations outside a session: EXCHANGE_ID, CREATE_SESSION,
//! DESTROY_SESSION, DESTROY_CLIENTID, BIND_CONN_TO_SESSION, and the
//! client and session ids they name.

use bytes::Bytes;
use proto::nfs4::*;
use server::nfs4::inproc::ClientOpts;

use super::args::sec_parms;
use super::program::Input;
use super::world::World;

impl World {
    /// EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION, DESTROY_CLIENTID or
    /// BIND_CONN_TO_SESSION.
    pub(super) fn sessionless(&mut self, inp: &mut Input<'_>) -> NfsArgOp4 {
        match inp.u8() % 8 {
            0 => self.exchange_id(inp),
            5 => self.setclientid(inp),
            6 => {
                let (clientid, verf) = match self.clients40.get(usize::from(inp.u8()) % 9) {
                    Some(&c) => c,
                    None => (self.cur_client, [inp.u8(); 8]),
                };
                NfsArgOp4::SetClientIdConfirm(SetClientIdConfirm4Args {
                    clientid,
                    setclientid_confirm: verf,
                })
            }
            7 => NfsArgOp4::Renew(Renew4Args {
                clientid: self.client_id(inp),
            }),
            1 => {
                let (clientid, seq) = match self.clients.get(usize::from(inp.u8()) % 9) {
                    Some(&c) => c,
                    None => (self.sessions[0].clientid, 1),
                };
                self.create_session_for(inp, clientid, seq)
            }
            2 => NfsArgOp4::DestroySession(DestroySession4Args {
                sessionid: self.session_id(inp),
            }),
            3 => NfsArgOp4::DestroyClientId(DestroyClientId4Args {
                clientid: self.client_id(inp),
            }),
            _ => NfsArgOp4::BindConnToSession(BindConnToSession4Args {
                sessid: self.session_id(inp),
                dir: inp.pick(&[
                    ChannelDirFromClient4::Cdfc4ForeOrBoth,
                    ChannelDirFromClient4::Cdfc4Fore,
                    ChannelDirFromClient4::Cdfc4Back,
                    ChannelDirFromClient4::Cdfc4BackOrBoth,
                ]),
                use_conn_in_rdma_mode: inp.u8() == 0xff,
            }),
        }
    }

    /// SETCLIENTID (NFSv4.0, RFC 7530 §16.33) of a few id strings and
    /// verifiers; the callback addresses are ones the server does not
    /// call (no address, another network id, garbage): fuzzing never
    /// makes it open connections.
    pub(super) fn setclientid(&mut self, inp: &mut Input<'_>) -> NfsArgOp4 {
        let id: &[u8] = inp.pick(&[b"c1", b"v40", b"fuzz", b"v40b"]);
        let (netid, addr) = inp.pick(&[
            ("tcp", "0.0.0.0.0.0"),
            ("tcp6", "::.0.0"),
            ("udp", "127.0.0.1.8.1"),
            ("tcp", "not an address"),
            ("tcp", ""),
        ]);
        NfsArgOp4::SetClientId(SetClientId4Args {
            client: NfsClientId4 {
                verifier: [inp.u8() % 3; 8],
                id: Bytes::copy_from_slice(id),
            },
            callback: CbClient4 {
                cb_program: inp.pick(&[0x4000_0000, 0, 100_003, u32::MAX]),
                cb_location: NetAddr4 {
                    netid: netid.into(),
                    addr: addr.into(),
                },
            },
            callback_ident: inp.u32(),
        })
    }

    pub(super) fn exchange_id(&mut self, inp: &mut Input<'_>) -> NfsArgOp4 {
        let owner: &[u8] = inp.pick(&[b"c1", b"c2", b"fuzz", b"c3"]);
        let verifier = [inp.u8() % 3; 8];
        let flags = inp.pick(&[
            0,
            EXCHGID4_FLAG_USE_NON_PNFS,
            EXCHGID4_FLAG_UPD_CONFIRMED_REC_A,
            EXCHGID4_FLAG_SUPP_MOVED_REFER | EXCHGID4_FLAG_BIND_PRINC_STATEID,
            EXCHGID4_FLAG_USE_PNFS_MDS,
            EXCHGID4_FLAG_CONFIRMED_R,
            u32::MAX,
        ]);
        let state_protect = match inp.u8() % 8 {
            6 => StateProtect4A::MachCred(StateProtectOps4 {
                must_enforce: Bitmap4(vec![1 << 2]),
                must_allow: Bitmap4::default(),
            }),
            7 => StateProtect4A::Ssv(SsvSpParms4 {
                ops: StateProtectOps4 {
                    must_enforce: Bitmap4::default(),
                    must_allow: Bitmap4::default(),
                },
                hash_algs: Vec::new(),
                encr_algs: Vec::new(),
                window: 1,
                num_gss_handles: 1,
            }),
            _ => StateProtect4A::None,
        };
        NfsArgOp4::ExchangeId(ExchangeId4Args {
            clientowner: ClientOwner4 {
                verifier,
                ownerid: Bytes::from_static(owner),
            },
            flags,
            state_protect,
            client_impl_id: None,
        })
    }

    pub(super) fn create_session_for(
        &mut self,
        inp: &mut Input<'_>,
        clientid: ClientId4,
        seq: SequenceId4,
    ) -> NfsArgOp4 {
        let how = inp.u8();
        let sequence = match how & 7 {
            0..=4 => seq,
            5 => seq.wrapping_sub(1),
            6 => seq.wrapping_add(1),
            _ => inp.u32(),
        };
        let flags = match how >> 3 & 3 {
            0 => 0,
            1 => CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
            2 => CREATE_SESSION4_FLAG_PERSIST | CREATE_SESSION4_FLAG_CONN_BACK_CHAN,
            _ => u32::MAX,
        };
        // The in-process harness's own client's channel.
        let normal = ClientOpts::default().fore;
        let fore = match how >> 5 {
            0..=3 => normal,
            4 => ChannelAttrs4 {
                maxrequestsize: 200,
                maxresponsesize: 300,
                maxresponsesize_cached: 0,
                maxoperations: 2,
                maxrequests: 1,
                ..normal
            },
            5 => ChannelAttrs4 {
                maxrequests: 0,
                maxoperations: 0,
                ..normal
            },
            6 => ChannelAttrs4 {
                headerpadsize: u32::MAX,
                maxrequestsize: u32::MAX,
                maxresponsesize: u32::MAX,
                maxresponsesize_cached: u32::MAX,
                maxoperations: u32::MAX,
                maxrequests: u32::MAX,
                rdma_ird: Some(1),
            },
            _ => ChannelAttrs4 {
                maxresponsesize_cached: 600,
                maxrequests: 2,
                ..normal
            },
        };
        self.creating = Some(clientid);
        NfsArgOp4::CreateSession(CreateSession4Args {
            clientid,
            sequence,
            flags,
            fore_chan_attrs: fore,
            back_chan_attrs: normal,
            cb_program: 0x4000_0000,
            sec_parms: sec_parms(inp),
        })
    }

    fn session_id(&self, inp: &mut Input<'_>) -> SessionId4 {
        let v = inp.u8();
        match self.sessions.get(usize::from(v) % 9) {
            Some(s) => s.id,
            None => [v; 16],
        }
    }

    pub(super) fn client_id(&self, inp: &mut Input<'_>) -> ClientId4 {
        let v = inp.u8();
        match v % 10 {
            0 => self.sessions[0].clientid,
            9 => u64::from(v) << 32 | 7,
            i => self
                .clients
                .get(usize::from(i - 1))
                .map_or(self.cur_client, |c| c.0),
        }
    }
}
