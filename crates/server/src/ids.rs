//! Owner and group names (RFC 8881 §5.9): numeric ids to the host's user
//! and group names where they resolve, numeric strings otherwise; both
//! forms (with or without "@domain") are accepted back.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::Mutex;

#[derive(Default)]
pub struct IdMap {
    users: Mutex<HashMap<u32, String>>,
    groups: Mutex<HashMap<u32, String>>,
}

impl IdMap {
    pub fn user_name(&self, uid: u32) -> String {
        cached(&self.users, uid, || lookup_user(uid))
    }

    pub fn group_name(&self, gid: u32) -> String {
        cached(&self.groups, gid, || lookup_group(gid))
    }

    /// The uid for an owner string; `None` if it names nobody.
    pub fn uid(&self, name: &[u8]) -> Option<u32> {
        parse(name, |n| {
            let c = CString::new(n).ok()?;
            let mut buf = vec![0 as libc::c_char; 4096];
            let mut pw: libc::passwd = unsafe_zeroed_passwd();
            let mut out: *mut libc::passwd = std::ptr::null_mut();
            // SAFETY: all pointers are valid for the call; buf outlives pw.
            let r = unsafe {
                libc::getpwnam_r(c.as_ptr(), &mut pw, buf.as_mut_ptr(), buf.len(), &mut out)
            };
            (r == 0 && !out.is_null()).then_some(pw.pw_uid)
        })
    }

    /// The gid for a group string; `None` if it names no group.
    pub fn gid(&self, name: &[u8]) -> Option<u32> {
        parse(name, |n| {
            let c = CString::new(n).ok()?;
            let mut buf = vec![0 as libc::c_char; 4096];
            let mut gr: libc::group = unsafe_zeroed_group();
            let mut out: *mut libc::group = std::ptr::null_mut();
            // SAFETY: all pointers are valid for the call; buf outlives gr.
            let r = unsafe {
                libc::getgrnam_r(c.as_ptr(), &mut gr, buf.as_mut_ptr(), buf.len(), &mut out)
            };
            (r == 0 && !out.is_null()).then_some(gr.gr_gid)
        })
    }
}

fn cached(
    map: &Mutex<HashMap<u32, String>>,
    id: u32,
    f: impl FnOnce() -> Option<String>,
) -> String {
    if let Some(n) = map.lock().ok().and_then(|m| m.get(&id).cloned()) {
        return n;
    }
    let name = f().unwrap_or_else(|| id.to_string());
    if let Ok(mut m) = map.lock() {
        if m.len() > 10_000 {
            m.clear();
        }
        m.insert(id, name.clone());
    }
    name
}

/// Accepts "123", "name" and "name@domain".
fn parse(name: &[u8], by_name: impl FnOnce(&str) -> Option<u32>) -> Option<u32> {
    let s = std::str::from_utf8(name).ok()?;
    let local = s.split('@').next().unwrap_or(s);
    if local.is_empty() {
        return None;
    }
    if let Ok(n) = local.parse::<u32>() {
        return Some(n);
    }
    by_name(local)
}

fn unsafe_zeroed_passwd() -> libc::passwd {
    // SAFETY: passwd is plain old data; all-zero is a valid (empty) value.
    unsafe { std::mem::zeroed() }
}

fn unsafe_zeroed_group() -> libc::group {
    // SAFETY: group is plain old data; all-zero is a valid (empty) value.
    unsafe { std::mem::zeroed() }
}

fn lookup_user(uid: u32) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut pw = unsafe_zeroed_passwd();
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: all pointers are valid for the call; buf outlives pw.
    let r = unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr(), buf.len(), &mut out) };
    if r != 0 || out.is_null() || pw.pw_name.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r succeeded, so pw_name points into buf, NUL-terminated.
    Some(
        unsafe { CStr::from_ptr(pw.pw_name) }
            .to_string_lossy()
            .into_owned(),
    )
}

fn lookup_group(gid: u32) -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut gr = unsafe_zeroed_group();
    let mut out: *mut libc::group = std::ptr::null_mut();
    // SAFETY: all pointers are valid for the call; buf outlives gr.
    let r = unsafe { libc::getgrgid_r(gid, &mut gr, buf.as_mut_ptr(), buf.len(), &mut out) };
    if r != 0 || out.is_null() || gr.gr_name.is_null() {
        return None;
    }
    // SAFETY: getgrgid_r succeeded, so gr_name points into buf, NUL-terminated.
    Some(
        unsafe { CStr::from_ptr(gr.gr_name) }
            .to_string_lossy()
            .into_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_both_ways() {
        let m = IdMap::default();
        assert_eq!(m.user_name(0), "root");
        assert_eq!(m.group_name(0), "root");
        assert_eq!(m.user_name(4_000_000_123), "4000000123");
        assert_eq!(m.uid(b"root"), Some(0));
        assert_eq!(m.uid(b"root@localdomain"), Some(0));
        assert_eq!(m.uid(b"1234"), Some(1234));
        assert_eq!(m.uid(b"no-such-user-here"), None);
        assert_eq!(m.gid(b"root"), Some(0));
        assert_eq!(m.uid(b""), None);
        assert_eq!(m.uid(b"\xff"), None);
    }
}
