//! The program an input encodes: its limits, the step and operation
//! codes, and [`Input`], which reads the input as small numbers.

/// Most steps one input runs.
pub const MAX_STEPS: usize = 48;
/// Most operations after SEQUENCE in one generated COMPOUND.
pub const MAX_OPS: usize = 12;

/// Step kinds (the first byte of a step, modulo [`STEPS`]).
pub mod step {
    /// A COMPOUND with SEQUENCE (usually) and generated operations.
    pub const COMPOUND: u8 = 0;
    /// A COMPOUND of one session-less operation (EXCHANGE_ID, ...).
    pub const SESSIONLESS: u8 = 9;
    /// Moves the clock on.
    pub const ADVANCE: u8 = 10;
    /// Runs the reaper.
    pub const REAP: u8 = 11;
    /// Answers what the server sent on the back channel.
    pub const CALLBACKS: u8 = 12;
    /// Raw COMPOUND argument bytes.
    pub const RAW: u8 = 13;
    /// A generated COMPOUND followed by raw operation bytes.
    pub const RAW_TAIL: u8 = 14;
    /// A new client: EXCHANGE_ID, CREATE_SESSION, RECLAIM_COMPLETE.
    pub const NEW_CLIENT: u8 = 15;
}
pub(super) const STEPS: u8 = 16;

/// Operation kinds (the first byte of an operation, modulo [`OPS`]).
pub mod op {
    pub const PUTROOTFH: u8 = 0;
    pub const PUTFH: u8 = 1;
    pub const GETFH: u8 = 2;
    pub const LOOKUP: u8 = 3;
    pub const GETATTR: u8 = 4;
    pub const SAVEFH: u8 = 5;
    pub const RESTOREFH: u8 = 6;
    pub const LOOKUPP: u8 = 7;
    pub const ACCESS: u8 = 8;
    pub const READDIR: u8 = 9;
    pub const CREATE: u8 = 10;
    pub const OPEN: u8 = 11;
    pub const CLOSE: u8 = 12;
    pub const OPEN_DOWNGRADE: u8 = 13;
    pub const READ: u8 = 14;
    pub const WRITE: u8 = 15;
    pub const COMMIT: u8 = 16;
    pub const LOCK: u8 = 17;
    pub const LOCKT: u8 = 18;
    pub const LOCKU: u8 = 19;
    pub const REMOVE: u8 = 20;
    pub const RENAME: u8 = 21;
    pub const LINK: u8 = 22;
    pub const READLINK: u8 = 23;
    pub const SETATTR: u8 = 24;
    pub const VERIFY: u8 = 25;
    pub const NVERIFY: u8 = 26;
    pub const SECINFO: u8 = 27;
    pub const SECINFO_NO_NAME: u8 = 28;
    pub const TEST_STATEID: u8 = 29;
    pub const FREE_STATEID: u8 = 30;
    pub const DELEGRETURN: u8 = 31;
    pub const SEEK: u8 = 32;
    pub const ALLOCATE: u8 = 33;
    pub const DEALLOCATE: u8 = 34;
    pub const COPY: u8 = 35;
    pub const CLONE: u8 = 36;
    pub const OFFLOAD_STATUS: u8 = 37;
    pub const OFFLOAD_CANCEL: u8 = 38;
    pub const RECLAIM_COMPLETE: u8 = 39;
    pub const BACKCHANNEL_CTL: u8 = 40;
    pub const SESSIONLESS: u8 = 41;
    pub const SEQUENCE: u8 = 42;
    pub const PUTPUBFH: u8 = 43;
    pub const UNSUPPORTED: u8 = 44;
    /// pNFS (RFC 8881 §18.40-§18.44, RFC 7862 §15.6-§15.7).
    pub const LAYOUTGET: u8 = 45;
    pub const LAYOUTRETURN: u8 = 46;
    pub const LAYOUTCOMMIT: u8 = 47;
    pub const GETDEVICEINFO: u8 = 48;
    pub const GETDEVICELIST: u8 = 49;
    pub const LAYOUTERROR: u8 = 50;
    pub const LAYOUTSTATS: u8 = 51;
}
pub(super) const OPS: u8 = 52;

/// The input, read as small numbers (big-endian); zeros once it runs out.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }

    pub fn u32(&mut self) -> u32 {
        u32::from(self.u16()) << 16 | u32::from(self.u16())
    }

    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) << 32 | u64::from(self.u32())
    }

    /// Up to `n` bytes (fewer when the input runs out).
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let (b, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        b
    }

    /// One of `choices`, by the next byte.
    pub fn pick<T: Clone>(&mut self, choices: &[T]) -> T {
        choices[usize::from(self.u8()) % choices.len()].clone()
    }
}
