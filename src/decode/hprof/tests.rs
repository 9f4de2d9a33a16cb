use super::*;

#[test]
fn class_names() {
    assert_eq!(java_class_name("java/lang/String"), "java.lang.String");
    assert_eq!(java_class_name("[I"), "int[]");
    assert_eq!(java_class_name("[[Ljava/lang/Object;"), "java.lang.Object[][]");
    assert_eq!(java_class_name("java.lang.Object[][]"), "java.lang.Object[][]");
    assert_eq!(java_class_name("byte[]"), "byte[]");
    assert_eq!(java_class_name("Foo$$Lambda$14/0x0000000800c03000"), "Foo$$Lambda$14/0x0000000800c03000");
    assert_eq!(java_class_name("a/b/Foo$$Lambda/0x12"), "a.b.Foo$$Lambda/0x12");
    assert_eq!(java_class_name("[Q"), "[Q");
}

#[test]
fn id_index_finds_ids_in_and_out_of_order() {
    let many: Vec<u64> = (1..5000u64).map(|i| i * 24 + (i % 7) * (1 << 33)).collect();
    for ids in
        [vec![16u64, 32, 48, 4096, 1 << 40], vec![48, 16, 1 << 40, 32, 4096, 16], vec![7], vec![1, u64::MAX], many]
    {
        let ix = IdIndex::new(&ids);
        for (i, &id) in ids.iter().enumerate() {
            let want = ids.iter().position(|&x| x == id).unwrap();
            assert_eq!(ix.get(id), Some(want as u32), "{ids:?} {i}");
        }
        assert_eq!(ix.get(17), None);
        assert_eq!(ix.get(1 << 41), None);
    }
    assert_eq!(IdIndex::new(&[]).get(5), None);
    let dup = IdIndex::new(&[16, 16, 8]);
    assert_eq!((dup.duplicates, dup.get(16)), (1, Some(0)));
    assert_eq!(IdIndex::new(&[0, 5]).get(0), None);
}
