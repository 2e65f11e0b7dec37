//! pNFS layouts (RFC 8881 §12): what a client holds of a file's layout,
//! as byte ranges with an I/O mode, and the values the layout
//! transitions take and return. A layout is held under one layout stateid
//! per client and file (§12.5.3), recorded with the client's other
//! stateids (`StateKind::Layout`), so stateid checks, TEST_STATEID and a
//! client's purge treat it like the rest.
//!
//! Which bytes a layout maps to which data server is the driver's
//! (Ferrite's flexible-file layouts, RFC 8435): the state keeps only the
//! ranges granted, so that a return, a recall and a conflict can be
//! decided here without I/O.

use std::sync::Arc;

use bytes::Bytes;
use proto::nfs4::*;

use crate::session::Session;
use crate::types::FileKey;

/// Most segments one client keeps of one file: a LAYOUTGET beyond them is
/// refused with NFS4ERR_LAYOUTTRYLATER until some are returned (a client
/// cannot grow the server's tables without end).
pub const MAX_SEGMENTS: usize = 256;

/// One range of a layout: `[offset, end)` (`end` = `u64::MAX` for "to the
/// end of the file", RFC 8881 §3.3.17 NFS4_UINT64_MAX lengths) in an
/// I/O mode, READ or RW.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub iomode: LayoutIoMode4,
    pub offset: u64,
    pub end: u64,
}

/// The end of a range given by offset and length (§3.3.17: a length of
/// all ones means to the end of the file).
pub fn range_end(offset: u64, length: u64) -> u64 {
    if length == u64::MAX {
        u64::MAX
    } else {
        offset.saturating_add(length)
    }
}

/// Whether `mode` (of a return or a recall) covers a segment's mode:
/// LAYOUTIOMODE4_ANY covers both (§18.44.3).
pub fn covers(mode: LayoutIoMode4, seg: LayoutIoMode4) -> bool {
    mode == LayoutIoMode4::Any || mode == seg
}

/// Adds `new` to `segs`, merging it with segments of its mode it
/// overlaps or touches, so that repeated LAYOUTGETs of one range hold one
/// segment.
pub fn add_segment(segs: &mut Vec<Segment>, new: Segment) {
    let mut merged = new;
    segs.retain(|s| {
        let joins = s.iomode == merged.iomode && s.offset <= merged.end && merged.offset <= s.end;
        if joins {
            merged.offset = merged.offset.min(s.offset);
            merged.end = merged.end.max(s.end);
        }
        !joins
    });
    segs.push(merged);
    segs.sort_by_key(|s| (s.offset, s.iomode as u32));
}

/// Takes `[offset, end)` in modes covered by `mode` out of `segs`
/// (LAYOUTRETURN of a range, §18.44.3: a return may cover part of a
/// segment, which then shrinks or splits). Returns whether anything was
/// taken.
pub fn subtract(segs: &mut Vec<Segment>, mode: LayoutIoMode4, offset: u64, end: u64) -> bool {
    let mut out = Vec::with_capacity(segs.len() + 1);
    let mut taken = false;
    for s in segs.drain(..) {
        if !covers(mode, s.iomode) || s.end <= offset || end <= s.offset {
            out.push(s);
            continue;
        }
        taken = true;
        if s.offset < offset {
            out.push(Segment { end: offset, ..s });
        }
        if end < s.end {
            out.push(Segment { offset: end, ..s });
        }
    }
    *segs = out;
    taken
}

/// What a recall covers (RFC 8881 §20.3.1): one file's layout, whole,
/// with the layout stateid as the recall makes it and the file's
/// filehandle as the client knows it; every layout of a client on one
/// export (LAYOUTRECALL4_FSID); or all of them (LAYOUTRECALL4_ALL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecallScope {
    File(StateId4, Bytes),
    Fsid(u16),
    All,
}

/// A CB_LAYOUTRECALL to send (RFC 8881 §20.3) on a session of its
/// client, of the layouts `scope` covers in `iomode`.
#[derive(Debug, Clone)]
pub struct LayoutRecall {
    pub session: Arc<Session>,
    pub client: ClientId4,
    pub scope: RecallScope,
    pub iomode: LayoutIoMode4,
}

/// What a change to a file found of other clients' layouts.
#[derive(Debug, Default)]
pub struct LayoutBreaking {
    /// Recalls to send now (each layout is recalled once).
    pub recalls: Vec<LayoutRecall>,
    /// Conflicting layouts remain: the change waits for their return.
    pub pending: bool,
}

/// A layout that ended without its client returning it (revoked after an
/// unanswered recall, or gone with a client whose lease ran out): its
/// client may still be writing to the data servers, so the driver fences
/// the file's data (RFC 8435 §2.2) and learns its size from them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutLost {
    pub file: FileKey,
    pub client: ClientId4,
    /// It held a segment in RW mode.
    pub rw: bool,
}

/// What LAYOUTRETURN of a whole file system or of everything gave back:
/// the files whose layouts the client returned, and whether any of them
/// was RW (the driver then learns those files' sizes).
#[derive(Debug, Default, Clone)]
pub struct Returned {
    pub files: Vec<(FileKey, bool)>,
}

/// A layout stateid's record (`StateKind::Layout`).
#[derive(Debug, Clone)]
pub struct LayoutState {
    /// The file's filehandle as the client was given it (CB_LAYOUTRECALL
    /// names the file so).
    pub fh: Bytes,
    pub segs: Vec<Segment>,
    /// The seqid of the last recall or return (§12.5.5.2.1): a LAYOUTGET
    /// sent before it (an older seqid) is NFS4ERR_OLD_STATEID.
    pub barrier: u32,
    /// A recall under way: the mode recalled, and when it was decided
    /// (revoked and fenced a lease later if still held).
    pub recalled: Option<(LayoutIoMode4, std::time::Duration)>,
}

impl LayoutState {
    pub fn has_rw(&self) -> bool {
        self.segs.iter().any(|s| s.iomode == LayoutIoMode4::Rw)
    }

    /// Whether a recall in `mode` has been answered: no segment it covers
    /// is left.
    pub fn recall_done(&self, mode: LayoutIoMode4) -> bool {
        !self.segs.iter().any(|s| covers(mode, s.iomode))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use LayoutIoMode4::{Any, Read, Rw};

    fn seg(iomode: LayoutIoMode4, offset: u64, end: u64) -> Segment {
        Segment {
            iomode,
            offset,
            end,
        }
    }

    #[test]
    fn segments_merge_by_mode() {
        let mut v = Vec::new();
        add_segment(&mut v, seg(Rw, 0, 10));
        add_segment(&mut v, seg(Rw, 10, 20));
        add_segment(&mut v, seg(Read, 5, 8));
        add_segment(&mut v, seg(Rw, 40, 50));
        assert_eq!(v, vec![seg(Rw, 0, 20), seg(Read, 5, 8), seg(Rw, 40, 50)]);
        add_segment(&mut v, seg(Rw, 15, 45));
        assert_eq!(v, vec![seg(Rw, 0, 50), seg(Read, 5, 8)]);
    }

    #[test]
    fn returns_split_and_shrink() {
        let mut v = vec![seg(Rw, 0, 100), seg(Read, 0, u64::MAX)];
        assert!(subtract(&mut v, Rw, 40, 60));
        assert_eq!(
            v,
            vec![seg(Rw, 0, 40), seg(Rw, 60, 100), seg(Read, 0, u64::MAX)]
        );
        assert!(!subtract(&mut v, Rw, 200, 300));
        assert!(subtract(&mut v, Any, 0, u64::MAX));
        assert!(v.is_empty());
        assert_eq!(range_end(5, u64::MAX), u64::MAX);
        assert_eq!(range_end(u64::MAX - 1, 5), u64::MAX);
        assert_eq!(range_end(5, 5), 10);
    }
}
