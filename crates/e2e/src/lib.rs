//! End-to-end tests of Ferrite: each test in `tests/` starts a real server
//! on 127.0.0.1 over a temporary export and drives it over TCP with the
//! `client` crate. This library is empty; everything lives in `tests/`.
