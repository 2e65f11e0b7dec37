//! `tls_probe`: the two places RPC-over-TLS (RFC 9289) reads what a peer
//! chose: the reply to an AUTH_TLS probe as a client checks it, and what a
//! client sends once the server has said STARTTLS, read through the
//! server's TLS state and the record reader as a connection reads it.
//!
//! The first byte chooses: its top bit the place; for the second, its
//! low bits how the stream arrives (read sizes, a pending read between
//! reads). Every poll must make progress; the stream ends in records, an
//! error or its end; what TLS has to send is taken as a socket would.

use std::pin::pin;
use std::sync::OnceLock;
use std::task::Poll;

use bytes::Bytes;
use rpc::record::RecordReader;
use rpc::tls::{take_output, Input, TlsClient, TlsServer};

use crate::record::{message, poll_once, Stream};

const CHUNK: [usize; 8] = [1, 3, 5, 16, 64, 517, 4096, 1 << 20];

/// A server certificate for "localhost" and the client settings that
/// trust it, made once per process.
pub fn pair() -> &'static (TlsServer, TlsClient) {
    static PAIR: OnceLock<(TlsServer, TlsClient)> = OnceLock::new();
    PAIR.get_or_init(|| {
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .expect("params")
            .self_signed(&key)
            .expect("certificate");
        let der = rustls_key(&key);
        let server = TlsServer::from_der(vec![cert.der().clone()], der, None).expect("server");
        let client =
            TlsClient::from_der(vec![cert.der().clone()], "localhost", None).expect("client");
        (server, client)
    })
}

fn rustls_key(k: &rcgen::KeyPair) -> rustls_pki_types::PrivateKeyDer<'static> {
    rustls_pki_types::PrivateKeyDer::Pkcs8(k.serialize_der().into())
}

pub fn tls_probe(data: &[u8]) {
    let Some((&cfg, rest)) = data.split_first() else {
        return;
    };
    if cfg & 0x80 != 0 {
        // The reply to probe 7, as a client checks it: only a reply
        // accepting with STARTTLS passes.
        let ok = rpc::tls::parse_probe_reply(7, Bytes::copy_from_slice(rest)).is_ok();
        if ok {
            assert!(rest.len() >= 28 && rest[..4] == 7u32.to_be_bytes());
            assert!(rest.windows(8).any(|w| w == rpc::tls::STARTTLS));
        }
        return;
    }
    let chunk = CHUNK[usize::from(cfg & 7)];
    let stall = cfg & 8 != 0;
    let tls = pair().0.state().expect("server state");
    let mut input = Input::new(Stream::new(rest, chunk, stall));
    input.upgrade(tls.clone());
    let mut reader = RecordReader::new(input, 4096);
    let mut sent = Vec::new();
    // Every poll reads at least one byte or ends: more polls is a hang.
    let mut polls = 0usize;
    loop {
        let got = {
            let mut next = pin!(reader.next());
            loop {
                polls += 1;
                assert!(
                    polls < 4 * rest.len() + 64,
                    "TLS reading stopped making progress"
                );
                match poll_once(next.as_mut()) {
                    Poll::Ready(v) => break v,
                    Poll::Pending => {
                        // The handshake's answers leave as a socket takes them.
                        let _ = take_output(&tls, &mut sent);
                        sent.clear();
                    }
                }
            }
        };
        match got {
            Ok(Some(rec)) => message(rec),
            Ok(None) | Err(_) => break,
        }
    }
}

/// A ClientHello as a client sends it after STARTTLS (for seeds).
pub fn client_hello() -> Vec<u8> {
    let state = pair().1.state().expect("client state");
    let mut out = Vec::new();
    take_output(&state, &mut out).expect("ClientHello");
    out
}
