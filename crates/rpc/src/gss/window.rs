//! The sequence window of a context (RFC 2203 §5.3.3.1): each sequence
//! number is accepted once; numbers below the window are dropped.

/// Sequence numbers a context accepts out of order behind the highest
/// seen. The client may have this many calls in flight (RFC 2203
/// §5.2.3.1: seq_window); Linux's clients keep at most their slot table.
pub const SEQ_WINDOW: u32 = 128;

/// What the window says of one sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// New and inside the window: the call goes on.
    Fresh,
    /// Already accepted once: a replay, dropped silently.
    Replay,
    /// Below the window: too old to tell, dropped silently.
    Old,
}

/// The highest sequence number accepted and a bitmap of the window
/// behind it (bit i: highest - i was accepted). Fixed size.
#[derive(Debug, Clone, Default)]
pub struct Window {
    /// None until the first number is accepted.
    highest: Option<u32>,
    bits: u128,
}

const _: () = assert!(SEQ_WINDOW == u128::BITS);

impl Window {
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks `seq` and, if fresh, records it.
    pub fn check(&mut self, seq: u32) -> Seen {
        let Some(high) = self.highest else {
            self.highest = Some(seq);
            self.bits = 1;
            return Seen::Fresh;
        };
        if seq > high {
            let shift = seq - high;
            self.bits = if shift >= SEQ_WINDOW {
                0
            } else {
                self.bits << shift
            };
            self.bits |= 1;
            self.highest = Some(seq);
            return Seen::Fresh;
        }
        let behind = high - seq;
        if behind >= SEQ_WINDOW {
            return Seen::Old;
        }
        let bit = 1u128 << behind;
        if self.bits & bit != 0 {
            return Seen::Replay;
        }
        self.bits |= bit;
        Seen::Fresh
    }
}
