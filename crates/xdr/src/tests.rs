use super::*;

#[derive(Debug, PartialEq, Pack, Unpack)]
struct Pair {
    a: u32,
    #[xdr(max = 8)]
    name: String,
    data: Bytes,
    big: u64,
}

#[derive(Debug, PartialEq, Clone, Copy, Pack, Unpack)]
#[repr(i32)]
enum Kind {
    Reg = 1,
    Dir = 2,
    Neg = -1,
}

#[derive(Debug, PartialEq, Pack, Unpack)]
enum Res {
    #[xdr(value = 0)]
    Ok(Pair),
    #[xdr(value = 7)]
    Seven,
    #[xdr(default)]
    Err(u32),
}

#[derive(Debug, PartialEq, Pack, Unpack)]
enum Open {
    #[xdr(value = 0)]
    Zero,
    #[xdr(default)]
    Other(u32),
}

fn pair() -> Pair {
    Pair {
        a: 5,
        name: "abc".into(),
        data: Bytes::from_static(b"hello"),
        big: 1 << 40,
    }
}

#[test]
fn struct_roundtrip_and_layout() {
    let b = to_bytes(&pair());
    assert_eq!(
        &b[..],
        &[
            0, 0, 0, 5, 0, 0, 0, 3, b'a', b'b', b'c', 0, 0, 0, 0, 5, b'h', b'e', b'l', b'l', b'o',
            0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0
        ][..]
    );
    assert_eq!(from_bytes::<Pair>(b).unwrap(), pair());
}

#[test]
fn bounded_string_is_rejected() {
    let mut p = pair();
    p.name = "123456789".into();
    let b = to_bytes(&p);
    assert_eq!(
        from_bytes::<Pair>(b),
        Err(Error::TooLong { len: 9, max: 8 })
    );
}

#[test]
fn enum_values_including_negative() {
    assert_eq!(&to_bytes(&Kind::Neg)[..], &[0xff, 0xff, 0xff, 0xff]);
    assert_eq!(from_bytes::<Kind>(to_bytes(&Kind::Dir)).unwrap(), Kind::Dir);
    assert_eq!(
        from_bytes::<Kind>(to_bytes(&3u32)),
        Err(Error::BadDiscriminant(3, "Kind"))
    );
    assert_eq!(from_bytes::<Open>(to_bytes(&9u32)).unwrap(), Open::Other(9));
    assert_eq!(&to_bytes(&Open::Other(9))[..], &[0, 0, 0, 9]);
}

#[test]
fn union_arms() {
    for v in [Res::Ok(pair()), Res::Seven, Res::Err(10005)] {
        let b = to_bytes(&v);
        assert_eq!(from_bytes::<Res>(b).unwrap(), v);
    }
    assert_eq!(&to_bytes(&Res::Seven)[..], &[0, 0, 0, 7]);
}

#[test]
fn short_input_and_padding() {
    assert!(matches!(
        from_bytes::<u64>(Bytes::from_static(&[0, 0, 0])),
        Err(Error::Short { .. })
    ));
    // opaque of length 1 with nonzero padding
    let bad = Bytes::from_static(&[0, 0, 0, 1, 7, 1, 0, 0]);
    assert_eq!(from_bytes::<Bytes>(bad), Err(Error::BadPadding));
    // opaque claims 2^32-1 bytes: bounded by what is left, no allocation
    let huge = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
    assert!(matches!(
        from_bytes::<Bytes>(huge),
        Err(Error::Short { .. })
    ));
}

#[test]
fn array_count_bounded_by_remaining() {
    let huge = Bytes::from_static(&[0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1]);
    assert!(matches!(
        from_bytes::<Vec<u64>>(huge),
        Err(Error::Short { .. })
    ));
    let v: Vec<u32> = vec![1, 2, 3];
    assert_eq!(from_bytes::<Vec<u32>>(to_bytes(&v)).unwrap(), v);
    let mut d = Decoder::new(to_bytes(&v));
    assert!(matches!(
        Vec::<u32>::unpack_bounded(&mut d, 2),
        Err(Error::TooLong { len: 3, max: 2 })
    ));
}

#[test]
fn large_opaque_is_not_copied() {
    let payload = Bytes::from(vec![9u8; 4097]);
    let mut e = Encoder::new();
    e.u32(1);
    payload.pack(&mut e);
    e.u32(2);
    assert_eq!(e.len(), 4 + 4 + 4097 + 3 + 4);
    let chunks = e.finish();
    assert_eq!(chunks.len(), 3);
    assert_eq!(chunks[1].as_ptr(), payload.as_ptr());
    // decoded opaque shares the receive buffer
    let msg = to_bytes(&payload);
    let mut d = Decoder::new(msg.clone());
    let got = Bytes::unpack(&mut d).unwrap();
    assert_eq!(got.as_ptr(), msg[4..].as_ptr());
}

#[test]
fn optional() {
    let v: Option<u32> = Some(3);
    assert_eq!(&to_bytes(&v)[..], &[0, 0, 0, 1, 0, 0, 0, 3]);
    assert_eq!(from_bytes::<Option<u32>>(to_bytes(&v)).unwrap(), v);
    assert_eq!(
        from_bytes::<Option<u32>>(Bytes::from_static(&[0, 0, 0, 2])),
        Err(Error::BadBool(2))
    );
}

#[test]
fn union_discriminant() {
    assert_eq!(Union::discriminant(&Res::Ok(pair())), 0);
    assert_eq!(Union::discriminant(&Res::Seven), 7);
    assert_eq!(Union::discriminant(&Res::Err(42)), 42);
    assert_eq!(Union::discriminant(&Open::Other(9)), 9);
}

/// Encodes a word, a zero-copy payload and a word; truncates to `at`
/// and appends `tail`.
fn truncated(at: usize) -> Vec<u8> {
    let big = Bytes::from(vec![7u8; ZERO_COPY_THRESHOLD + 1]);
    let mut e = Encoder::new();
    e.u32(1);
    e.opaque_bytes(&big);
    e.u32(2);
    e.truncate(at);
    assert_eq!(e.len(), at);
    e.u32(0xdead_beef);
    let chunks = e.finish();
    let flat: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
    assert!(chunks.iter().all(|c| !c.is_empty()));
    flat
}

#[test]
fn truncate_across_zero_copy_chunks() {
    let big = Bytes::from(vec![7u8; ZERO_COPY_THRESHOLD + 1]);
    let mut whole = Encoder::new();
    whole.u32(1);
    whole.opaque_bytes(&big);
    whole.u32(2);
    let full = whole.to_bytes().to_vec();
    let payload_end = 8 + big.len();
    // In the copied head, at a chunk boundary, inside the payload, in
    // its padding and in the copied tail.
    for at in [0, 4, 8, 100, payload_end, payload_end + 2, full.len() - 4] {
        let mut want = full[..at].to_vec();
        want.extend([0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(truncated(at), want, "at {at}");
    }
    // Past the end: nothing changes.
    let mut e = Encoder::new();
    e.u32(5);
    e.truncate(100);
    assert_eq!(&e.to_bytes()[..], &[0, 0, 0, 5]);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn decode_never_panics(data in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = from_bytes::<Res>(Bytes::from(data.clone()));
            let _ = from_bytes::<Vec<Pair>>(Bytes::from(data));
        }

        #[test]
        fn roundtrip(a in any::<u32>(), name in "[a-z]{0,8}", data in proptest::collection::vec(any::<u8>(), 0..2000), big in any::<u64>()) {
            let p = Pair { a, name, data: Bytes::from(data), big };
            prop_assert_eq!(from_bytes::<Pair>(to_bytes(&p)).unwrap(), p);
        }
    }
}
