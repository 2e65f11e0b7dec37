//! Per-thread identity switching (fsuid, fsgid, supplementary groups).
//!
//! Linux keeps credentials per thread; the raw syscalls change only the
//! calling thread (glibc's wrappers would broadcast to every thread). The
//! thread's current identity is cached in a thread-local so repeated calls
//! skip syscalls: supplementary groups are left in place when switching back
//! to the server's identity (they are irrelevant while fsuid is 0, which has
//! CAP_DAC_OVERRIDE), so a run of calls with the same credentials only pays
//! for the fsuid/fsgid flips.

use std::cell::RefCell;
use std::marker::PhantomData;

use super::sys;
use crate::{Creds, Errno, Result};

struct ThreadIdent {
    fsuid: u32,
    fsgid: u32,
    /// The supplementary groups last set on this thread; `None` until we
    /// set them the first time.
    groups: Option<Vec<u32>>,
}

thread_local! {
    static CURRENT: RefCell<ThreadIdent> = RefCell::new(ThreadIdent {
        fsuid: sys::geteuid(),
        fsgid: sys::getegid(),
        groups: None,
    });
}

/// Switched to a caller's identity until dropped; then back to the server's
/// (effective uid/gid). Not `Send`: it belongs to the thread it switched.
pub(crate) struct AsCaller {
    /// `Some((uid, gid))` to restore on drop; `None` if nothing was switched.
    restore: Option<(u32, u32)>,
    _not_send: PhantomData<*const ()>,
}

impl AsCaller {
    /// A guard that switched nothing (credential switching disabled).
    pub(crate) fn noop() -> AsCaller {
        AsCaller {
            restore: None,
            _not_send: PhantomData,
        }
    }

    /// Switches the calling thread's fs identity to `c`; `base` is the
    /// server's (uid, gid), restored on drop.
    pub(crate) fn switch(c: &Creds, base: (u32, u32)) -> Result<AsCaller> {
        let guard = AsCaller {
            restore: Some(base),
            _not_send: PhantomData,
        };
        CURRENT.with(|cur| {
            let mut cur = cur.borrow_mut();
            if cur.groups.as_deref() != Some(&c.groups[..]) {
                // Forget the old value first: if setgroups fails we no
                // longer know what is in force.
                cur.groups = None;
                sys::setgroups_thread(&c.groups)?;
                cur.groups = Some(c.groups.clone());
            }
            if cur.fsgid != c.gid {
                cur.fsgid = sys::setfsgid_thread(c.gid);
                if cur.fsgid != c.gid {
                    return Err(Errno(libc::EPERM));
                }
            }
            if cur.fsuid != c.uid {
                cur.fsuid = sys::setfsuid_thread(c.uid);
                if cur.fsuid != c.uid {
                    return Err(Errno(libc::EPERM));
                }
            }
            Ok(())
        })?;
        // On error above, dropping `guard` restores the server identity.
        Ok(guard)
    }
}

impl Drop for AsCaller {
    fn drop(&mut self) {
        let Some((uid, gid)) = self.restore else {
            return;
        };
        CURRENT.with(|cur| {
            let mut cur = cur.borrow_mut();
            if cur.fsuid != uid {
                cur.fsuid = sys::setfsuid_thread(uid);
            }
            if cur.fsgid != gid {
                cur.fsgid = sys::setfsgid_thread(gid);
            }
            if cur.fsuid != uid || cur.fsgid != gid {
                tracing::error!(
                    fsuid = cur.fsuid,
                    fsgid = cur.fsgid,
                    "could not restore the server's fs identity"
                );
            }
        });
    }
}
