//! The semantics both backends must share, checked against `LocalFs` (on a
//! temporary directory) and `MemFs` alike. Permission checks with other
//! users' credentials need `LocalFs` to switch fsuid, so these tests need
//! root (CI and ./test.sh run as root).

mod data;
mod fixture;
mod namespace;
mod perms;
mod readdir;
