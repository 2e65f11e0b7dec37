//! Owner and group names (RFC 8881 §5.9): numeric ids to the host's user
//! and group names where they resolve, numeric strings otherwise; both
//! forms (with or without "@domain") are accepted back.
//!
//! Looking a name up may block (the name service can be LDAP or NIS), so
//! the blocking methods are for the blocking pool; the `try_` ones answer
//! without a lookup when they can. Answers, negative ones included, are
//! cached for ten minutes in caches of at most 1024 entries each, since a
//! client can send any name.

use std::ffi::{CStr, CString};
use std::time::Duration;

use crate::cache::Cache;

/// Entries per cache.
const CACHE_ENTRIES: usize = 1024;
/// How long an answer is trusted.
const CACHE_TTL: Duration = Duration::from_secs(600);

pub struct IdMap {
    /// The NFSv4 domain owner names carry (`user@domain`, RFC 8881
    /// §5.9), idmapd's `Domain`; none: bare names, and any domain taken.
    domain: Option<String>,
    users: Cache<u32, String>,
    groups: Cache<u32, String>,
    uids: Cache<String, Option<u32>>,
    gids: Cache<String, Option<u32>>,
}

impl Default for IdMap {
    fn default() -> Self {
        IdMap {
            domain: None,
            users: Cache::new("user name", CACHE_ENTRIES, CACHE_TTL),
            groups: Cache::new("group name", CACHE_ENTRIES, CACHE_TTL),
            uids: Cache::new("user id", CACHE_ENTRIES, CACHE_TTL),
            gids: Cache::new("group id", CACHE_ENTRIES, CACHE_TTL),
        }
    }
}

/// What an owner string is before any lookup.
enum Owner<'a> {
    Invalid,
    Id(u32),
    Name(&'a str),
}

/// Accepts "123", "name" and "name@domain"; with a configured domain, a
/// name of another domain names nobody here (as idmapd maps it).
fn owner<'a>(name: &'a [u8], domain: Option<&str>) -> Owner<'a> {
    let Ok(s) = std::str::from_utf8(name) else {
        return Owner::Invalid;
    };
    let (local, dom) = match s.split_once('@') {
        Some((l, d)) => (l, Some(d)),
        None => (s, None),
    };
    if local.is_empty() {
        return Owner::Invalid;
    }
    match local.parse::<u32>() {
        Ok(n) => Owner::Id(n),
        Err(_) => match (dom, domain) {
            (Some(d), Some(mine)) if !d.eq_ignore_ascii_case(mine) => Owner::Invalid,
            _ => Owner::Name(local),
        },
    }
}

/// Whether an owner string is a name rather than a number (RFC 8881
/// §5.9: "1000" and "1000@domain" are numbers).
pub fn is_name(s: &[u8]) -> bool {
    let local = s.split(|b| *b == b'@').next().unwrap_or(s);
    !local.is_empty() && !local.iter().all(u8::is_ascii_digit)
}

impl IdMap {
    /// A map whose owner names carry `domain` (none: bare names).
    pub fn with_domain(domain: Option<String>) -> IdMap {
        IdMap {
            domain: domain.filter(|d| !d.is_empty()),
            ..IdMap::default()
        }
    }

    pub fn domain(&self) -> Option<&str> {
        self.domain.as_deref()
    }

    /// The owner string for `uid` when owners go out as names:
    /// `user@domain` (the bare name without a domain), the number where
    /// the uid has no name (RFC 8881 §5.9) (blocking).
    pub fn owner_name(&self, uid: u32) -> String {
        self.with_domain_of(self.user_name(uid))
    }

    /// [`IdMap::owner_name`] for a group.
    pub fn group_owner_name(&self, gid: u32) -> String {
        self.with_domain_of(self.group_name(gid))
    }

    fn with_domain_of(&self, name: String) -> String {
        match &self.domain {
            Some(d) if is_name(name.as_bytes()) => format!("{name}@{d}"),
            _ => name,
        }
    }

    /// The user name for `uid` (blocking).
    pub fn user_name(&self, uid: u32) -> String {
        self.users
            .get_or(&uid, || lookup_user(uid).unwrap_or_else(|| uid.to_string()))
    }

    /// The group name for `gid` (blocking).
    pub fn group_name(&self, gid: u32) -> String {
        self.groups.get_or(&gid, || {
            lookup_group(gid).unwrap_or_else(|| gid.to_string())
        })
    }

    /// The uid for an owner string; `None` if it names nobody (blocking).
    pub fn uid(&self, name: &[u8]) -> Option<u32> {
        match owner(name, self.domain.as_deref()) {
            Owner::Invalid => None,
            Owner::Id(n) => Some(n),
            Owner::Name(n) => self.uids.get_or(&n.to_string(), || lookup_uid(n)),
        }
    }

    /// The gid for a group string; `None` if it names no group (blocking).
    pub fn gid(&self, name: &[u8]) -> Option<u32> {
        match owner(name, self.domain.as_deref()) {
            Owner::Invalid => None,
            Owner::Id(n) => Some(n),
            Owner::Name(n) => self.gids.get_or(&n.to_string(), || lookup_gid(n)),
        }
    }

    /// [`IdMap::uid`] if it needs no lookup: `None` if it does.
    pub fn try_uid(&self, name: &[u8]) -> Option<Option<u32>> {
        match owner(name, self.domain.as_deref()) {
            Owner::Invalid => Some(None),
            Owner::Id(n) => Some(Some(n)),
            Owner::Name(n) => self.uids.get(n),
        }
    }

    /// [`IdMap::gid`] if it needs no lookup: `None` if it does.
    pub fn try_gid(&self, name: &[u8]) -> Option<Option<u32>> {
        match owner(name, self.domain.as_deref()) {
            Owner::Invalid => Some(None),
            Owner::Id(n) => Some(Some(n)),
            Owner::Name(n) => self.gids.get(n),
        }
    }
}

fn lookup_uid(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut pw: libc::passwd = unsafe_zeroed_passwd();
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: all pointers are valid for the call; buf outlives pw.
    let r = unsafe { libc::getpwnam_r(c.as_ptr(), &mut pw, buf.as_mut_ptr(), buf.len(), &mut out) };
    (r == 0 && !out.is_null()).then_some(pw.pw_uid)
}

/// Supplementary groups taken for a user: AUTH_SYS carries at most 16;
/// a Kerberos user gets up to this many.
pub const MAX_GROUPS: usize = 64;

/// A local user's uid, primary gid and groups (getpwnam_r,
/// getgrouplist): the identity a Kerberos principal mapped to `name`
/// acts as. Blocks on the name service.
pub fn user_ids(name: &str) -> Option<(u32, u32, Vec<u32>)> {
    let c = CString::new(name).ok()?;
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut pw: libc::passwd = unsafe_zeroed_passwd();
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: all pointers are valid for the call; buf outlives pw.
    let r = unsafe { libc::getpwnam_r(c.as_ptr(), &mut pw, buf.as_mut_ptr(), buf.len(), &mut out) };
    if r != 0 || out.is_null() {
        return None;
    }
    let (uid, gid) = (pw.pw_uid, pw.pw_gid);
    let mut groups = vec![0 as libc::gid_t; MAX_GROUPS];
    let mut n = MAX_GROUPS as libc::c_int;
    // SAFETY: groups has room for n entries; getgrouplist writes at most
    // n and sets n to the number it found (more than n: it returns -1
    // and fills only n, which is the bound we keep).
    let r = unsafe { libc::getgrouplist(c.as_ptr(), gid, groups.as_mut_ptr(), &mut n) };
    let n = if r < 0 {
        MAX_GROUPS
    } else {
        (n.max(0) as usize).min(MAX_GROUPS)
    };
    groups.truncate(n);
    Some((uid, gid, groups))
}

fn lookup_gid(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    let mut buf = vec![0 as libc::c_char; 4096];
    let mut gr: libc::group = unsafe_zeroed_group();
    let mut out: *mut libc::group = std::ptr::null_mut();
    // SAFETY: all pointers are valid for the call; buf outlives gr.
    let r = unsafe { libc::getgrnam_r(c.as_ptr(), &mut gr, buf.as_mut_ptr(), buf.len(), &mut out) };
    (r == 0 && !out.is_null()).then_some(gr.gr_gid)
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

    #[test]
    fn try_answers_without_lookup_only_when_it_can() {
        let m = IdMap::default();
        assert_eq!(m.try_uid(b"1234@x"), Some(Some(1234)));
        assert_eq!(m.try_uid(b"@x"), Some(None));
        assert_eq!(m.try_gid(b"\xff"), Some(None));
        assert_eq!(m.try_uid(b"root"), None);
        assert_eq!(m.uid(b"root@x"), Some(0));
        assert_eq!(m.try_uid(b"root@y"), Some(Some(0)));
        // Negative answers are cached too.
        assert_eq!(m.try_gid(b"no-such-group-here"), None);
        assert_eq!(m.gid(b"no-such-group-here"), None);
        assert_eq!(m.try_gid(b"no-such-group-here"), Some(None));
    }
}
