use super::*;

/// A plain file decoded where it lies in a map (`read_in_place`) gives what it gives read
/// through a buffer: the report, damage and errors, the dumps, the lists and the frames, on
/// every trace fixture and on cuts of one (a packet cut short, a length past the end).
#[test]
fn a_file_read_in_place_decodes_as_one_read_through_a_buffer() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let mut traces: Vec<Vec<u8>> = Vec::new();
    for d in [dir.to_owned(), format!("{dir}/heapgraph")] {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.to_string_lossy().ends_with(".pftrace") {
                traces.push(std::fs::read(p).unwrap());
            }
        }
    }
    assert!(traces.len() > 10, "{}", traces.len());
    let biggest = traces.iter().max_by_key(|t| t.len()).unwrap().clone();
    for cut in (1..8).map(|k| biggest.len() * k / 8) {
        traces.push(biggest[..cut].to_vec());
    }
    let path = std::env::temp_dir().join(format!("heapconv-in-place-{}.pftrace", std::process::id()));
    let decode = |in_place: bool| {
        let opts = DecodeOptions { read_in_place: in_place, ..DecodeOptions::default() };
        let mut input = Input::open(&path, opts.max_gzip_bytes).unwrap();
        let mut dumps = Vec::new();
        let got = decode_heapprofd_frames(&mut input, &opts, &mut |_, _| {}, &mut |_, _| {}, &mut |d| {
            dumps.push(format!("{d:?}"));
            Ok(())
        });
        match got {
            Ok((report, tables, lists)) => {
                let stacks: Vec<_> = (0..lists.len()).map(|i| lists.frames(StackId(i as u32)).to_vec()).collect();
                format!("{report:?} {dumps:?} {stacks:?} {:?}", tables.frames())
            }
            Err(e) => format!("error {e} after {dumps:?}"),
        }
    };
    for (i, t) in traces.iter().enumerate() {
        std::fs::write(&path, t).unwrap();
        assert_eq!(decode(true), decode(false), "trace {i} ({} bytes)", t.len());
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn packed_samples_read_back_as_written() {
    let samples = [
        RawSample {
            callstack: 1,
            alloc_bytes: 4096,
            freed_bytes: 0,
            alloc_count: 3,
            free_count: 0,
            ..RawSample::default()
        },
        RawSample {
            callstack: u64::MAX,
            alloc_bytes: u64::MAX,
            freed_bytes: 1 << 40,
            alloc_count: 0,
            free_count: 7,
            max_bytes: Some(0),
            max_count: None,
        },
        RawSample { callstack: 0, max_bytes: None, max_count: Some(u64::MAX - 1), ..RawSample::default() },
        RawSample { callstack: 300, max_bytes: Some(5), max_count: Some(6), ..RawSample::default() },
    ];
    let mut packed = PackedSamples::default();
    for s in samples {
        packed.push(s);
    }
    assert_eq!(packed.len(), 4);
    let back: Vec<RawSample> = packed.iter().collect();
    assert_eq!(back.len(), 4);
    for (a, b) in samples.iter().zip(&back) {
        assert_eq!(
            (a.callstack, a.alloc_bytes, a.freed_bytes, a.alloc_count, a.free_count, a.max_bytes, a.max_count),
            (b.callstack, b.alloc_bytes, b.freed_bytes, b.alloc_count, b.free_count, b.max_bytes, b.max_count)
        );
    }
    // Small values take a byte each: 6 bytes for the first sample, not 72.
    assert!(packed.bytes.len() < 6 + 1 + 10 * 5 + 10 + 1 + 5 + 10 + 1 + 5 + 2);
}

#[test]
fn series_rows_sum_entries_of_one_stack_in_stack_order() {
    let cum =
        |b: u64, fb: u64, c: u64, fc: u64| Cum { alloc_bytes: b, freed_bytes: fb, alloc_count: c, free_count: fc };
    let mut series = Series::default();
    series.dense.insert(
        (1, 1),
        vec![
            Entry { stack: StackId(5), cum: cum(100, 40, 2, 1) },
            Entry { stack: NO_STACK, cum: Cum::default() },
            Entry { stack: StackId(2), cum: cum(10, 0, 1, 0) },
            Entry { stack: StackId(5), cum: cum(1, 1, 1, 1) },
            Entry { stack: StackId(9), cum: Cum::default() },
        ],
    );
    series.inline.insert((1, 77, StackId(2)), Entry { stack: StackId(2), cum: cum(u64::MAX, 0, 1, 0) });
    let rows = series_rows(&series, 4);
    assert_eq!(rows.stacks, vec![StackId(2), StackId(5)]);
    // Stack 2: the sum wraps as the counters' own sums do, then saturates into i64.
    let s2 = 10u64.wrapping_add(u64::MAX);
    assert_eq!(rows.values, vec![2, sat(s2), 2, sat(s2), 3, 101, 1, 60]);
    let t = totals_of(&rows);
    assert_eq!(
        (t.total_count, t.total_size, t.unreleased_count, t.unreleased_size),
        (5, sat(s2) + 101, 3, sat(s2) + 60)
    );
    let two = series_rows(&series, 2);
    assert_eq!(two.values, vec![2, sat(s2), 3, 101]);
    let t = totals_of(&two);
    assert_eq!((t.unreleased_count, t.unreleased_size), (5, sat(s2) + 101));
}
