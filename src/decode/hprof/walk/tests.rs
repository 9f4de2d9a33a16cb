use super::*;

#[test]
fn modified_utf8() {
    assert_eq!(decode_mutf8(b"plain"), "plain");
    assert_eq!(decode_mutf8(&[b'a', 0xC0, 0x80, b'b']), "a\0b");
    // U+1F600 as a CESU-8 surrogate pair.
    assert_eq!(decode_mutf8(&[0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80]), "\u{1F600}");
    assert_eq!(decode_mutf8(&[0xFF, b'x']), "\u{FFFD}x");
    assert_eq!(decode_mutf8(&[0xED, 0xA0, 0xBD]), "\u{FFFD}");
}

#[test]
fn sub_lengths() {
    assert_eq!(sub_len(&[sub::ROOT_UNKNOWN], 4), Ok(SubLen::Known { header: 4, payload: 0 }));
    assert_eq!(sub_len(&[sub::ROOT_JNI_MONITOR], 8), Ok(SubLen::Known { header: 16, payload: 0 }));
    assert_eq!(sub_len(&[sub::INSTANCE_DUMP, 0, 0], 4), Ok(SubLen::Need(17)));
    let mut inst = vec![sub::INSTANCE_DUMP];
    inst.extend_from_slice(&[0; 12]);
    inst.extend_from_slice(&7u32.to_be_bytes());
    assert_eq!(sub_len(&inst, 4), Ok(SubLen::Known { header: 16, payload: 7 }));
    let mut arr = vec![sub::PRIMITIVE_ARRAY_NODATA];
    arr.extend_from_slice(&[0; 4]);
    arr.extend_from_slice(&[0; 4]);
    arr.extend_from_slice(&u32::MAX.to_be_bytes());
    arr.push(11);
    assert_eq!(sub_len(&arr, 4), Ok(SubLen::Known { header: 13, payload: 0 }));
    arr[0] = sub::PRIMITIVE_ARRAY_DUMP;
    assert_eq!(sub_len(&arr, 4), Ok(SubLen::Known { header: 13, payload: u64::from(u32::MAX) * 8 }));
    arr[13] = 2;
    assert_eq!(sub_len(&arr, 4), Err(SubLenError::BadType { code: 2, at: 13 }));
    assert_eq!(sub_len(&[0x42], 4), Err(SubLenError::UnknownTag(0x42)));
}

#[test]
fn header_errors_name_what_is_wrong() {
    let e = HprofStream::new(&b"JAVA PROFILE 1.0.2\0\0\0\0\x03"[..], "x.hprof").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Truncated);
    let mut f = b"JAVA PROFILE 1.0.2\0".to_vec();
    f.extend_from_slice(&3u32.to_be_bytes());
    f.extend_from_slice(&[0; 8]);
    let e = HprofStream::new(&f[..], "x.hprof").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.to_string().contains("identifier size 3 at byte 19"), "{e}");
    let e = HprofStream::new(&b"JAVA PROFILE 9.9\0"[..], "x.hprof").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    let e = HprofStream::new(&b"hello world"[..], "x.hprof").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Malformed);
}
