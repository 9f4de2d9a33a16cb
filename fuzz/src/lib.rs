//! What the fuzz targets share: one driver per decoder, and checks that hold for every
//! profile whatever bytes it came from. A target is a few lines naming its driver, so adding
//! one is short (see FUZZING.md); drivers are plain functions, so a finding can also be
//! replayed from a test or a debugger without libFuzzer.
//!
//! Drivers never assert on the decoder's verdict (an error is a fine answer to garbage); they
//! assert only what must hold for any input: no panic (libFuzzer catches it), and outputs that
//! their own readers accept.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use heapconv::analysis::heap::{HeapTopOptions, RootedHeap, VIRTUAL_ROOT};
use heapconv::decode::Input;
use heapconv::decode::ddm_alloc_records::{DdmOptions, OrderChoice, alloc_records_profile, decode_alloc_records};
use heapconv::decode::hprof::{HprofConvOptions, HprofReadOptions, hprof_conv, read_hprof, read_hprof_with_stats};
use heapconv::decode::perfetto::module_symbols::scan_module_symbols;
use heapconv::decode::perfetto::{DecodeOptions, HeapGraphOptions, decode_heap_graphs_all, decode_heapprofd_all};
use heapconv::decode::pprof::{
    NO_STACK, PprofDecodeOptions, decode_pprof, decode_pprof_maybe_gzip, looks_like_pprof, read_pprof,
};
use heapconv::encode::folded::{FoldedOptions, encode_folded, parse_folded_line};
use heapconv::encode::heap_top::{heap_top_json, heap_top_text};
use heapconv::encode::hprof::{HprofOptions, encode_hprof};
use heapconv::encode::pprof::{PprofOptions, encode_pprof};
use heapconv::encode::summary::{hprof_inspect_json, hprof_inspect_text, inspect_json, inspect_text};
use heapconv::model::heap::HeapDump;
use heapconv::model::{Profile, ValueKind};
use heapconv::pipeline::convert::{ConvertOptions, encode_one, select_profiles};
use heapconv::pipeline::select::ConvertCommon;
use heapconv::pipeline::{DumpSelect, Format, Selection};
use heapconv_testdata::ddm::encode_alloc_records;
use prost::Message;

/// Profiles encoded per input at most (each encoder walks every sample; a trace of many dumps
/// would otherwise make one input slow without finding more).
const MAX_PROFILES_ENCODED: usize = 4;

/// A byte that varies options between inputs without consuming input bytes: the inputs' own
/// bytes stay exactly what a file would hold (so seeds are real files and findings replay with
/// the CLI), and the options still vary as the fuzzer mutates.
pub fn option_bits(data: &[u8]) -> u8 {
    data.iter().fold(0u8, |a, b| a.rotate_left(1) ^ b)
}

/// A directory of this process for files a driver must hand over by path, emptied by
/// `run.sh` (which points `TMPDIR` at a scratch directory).
pub fn scratch_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("heapconv-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("scratch directory");
        d
    })
}

/// Writes `data` to `name` in the scratch directory and returns its path.
pub fn scratch_file(name: &str, data: &[u8]) -> PathBuf {
    let p = scratch_dir().join(name);
    std::fs::write(&p, data).expect("scratch file");
    p
}

/// Perfetto trace reader and heapprofd decoding, in memory: whole-file gzip, packets,
/// interning, compressed_packets, chains, dumps; then the inspect report of what it found and
/// the ModuleSymbols pre-scan that file inputs get.
pub fn perfetto_heapprofd(data: &[u8]) {
    let opts = DecodeOptions::default();
    let Ok(mut input) = Input::from_bytes("fuzz.pftrace", data.to_vec(), opts.max_gzip_bytes) else { return };
    if let Ok((profiles, report)) = decode_heapprofd_all(&mut input, &opts) {
        for p in &profiles {
            check_profile_shape(p);
        }
        let _ = inspect_text(&report);
        let _ = inspect_json(&report);
    }
    if let Ok(mut again) = Input::from_bytes("fuzz.pftrace", data.to_vec(), opts.max_gzip_bytes) {
        let _ = scan_module_symbols(&mut again, opts.max_packet_bytes);
    }
}

/// End to end as `heapconv convert` runs it: the trace is a file (so the decoder pre-scans
/// ModuleSymbols), every dump is selected, and each profile is encoded to pprof, folded
/// stacks, SVG and JSON, with the outputs read back where a reader exists.
pub fn perfetto_to_outputs(data: &[u8]) {
    let path = scratch_file("input.pftrace", data);
    let bits = option_bits(data);
    let view = [ValueKind::UnreleasedSize, ValueKind::TotalCount, ValueKind::TotalSize, ValueKind::Other]
        [usize::from(bits & 3)];
    let select = Selection { dump: DumpSelect::All, ..Default::default() };
    let common = ConvertCommon { select, value: view, annotations: bits & 4 != 0, ..Default::default() };
    let opts = ConvertOptions { common, ..Default::default() };
    let Ok((profiles, _report, _)) = select_profiles(&path, &opts) else { return };
    for p in profiles.iter().take(MAX_PROFILES_ENCODED) {
        check_profile_shape(p);
        check_encoders(p, bits);
        for format in [Format::Folded, Format::Json] {
            let mut opts = opts.clone();
            opts.common.format = format;
            let _ = encode_one(p, &opts);
        }
    }
}

/// DDM allocation records (bare blob, DDM chunk, JDWP), with options varied per input, then
/// the profile made of them and every encoder; a decoded capture also survives a round trip
/// through the test encoder of the blob format.
pub fn ddm_alloc_records(data: &[u8]) {
    let bits = option_bits(data);
    let opts = DdmOptions {
        order: [OrderChoice::Auto, OrderChoice::NewestFirst, OrderChoice::OldestFirst, OrderChoice::Auto]
            [usize::from(bits & 3)],
        recent: (bits & 4 != 0).then_some(usize::from(bits >> 4)),
        alloc_class_frame: bits & 8 == 0,
        max_depth: (bits & 16 != 0).then_some(usize::from(bits & 7)),
        truncation_marks: bits & 32 == 0,
        lines: bits & 64 == 0,
        per_allocation: bits & 128 == 0,
        ..Default::default()
    };
    let Ok(capture) = decode_alloc_records(data, "fuzz.alloc", &opts) else { return };
    let _ = heapconv::pipeline::reports::ddm_inspect(&capture, &opts);
    // Two captures merge into one profile.
    let profile = alloc_records_profile(&[capture.clone(), capture.clone()], &opts);
    check_profile_shape(&profile);
    check_encoders(&profile, bits);
    // What decoded re-encodes (standard layout) to a blob that decodes to the same records.
    let again = encode_alloc_records(&capture.records, &Default::default(), None);
    let back = decode_alloc_records(&again, "re-encoded", &DdmOptions { order: OrderChoice::OldestFirst, ..opts })
        .expect("a re-encoded capture decodes");
    assert_eq!(back.records.entries.len(), capture.records.entries.len(), "entries lost in a round trip");
}

/// Symbol-file lookup on arbitrary ELF bytes: the facts read from the file (by path and in
/// memory, which must agree), addresses looked up directly, and the whole symbolize stage
/// with the file in a symbol directory (index by build id, path candidates, debuglink).
pub fn symbol_file(data: &[u8]) {
    use heapconv::symbolize::elf::{corrected_address, elf_info_from_bytes, is_elf, read_elf_info};
    use heapconv::symbolize::{SymbolizeOptions, Symbolizer, symbolize_addresses};

    let dir = scratch_dir().join("symbols");
    std::fs::create_dir_all(&dir).expect("symbol directory");
    let path = dir.join("libfuzz.so");
    std::fs::write(&path, data).expect("symbol file");

    let in_memory = elf_info_from_bytes(data);
    let by_path = read_elf_info(&path);
    if data.len() >= 64 && is_elf(data) {
        assert_eq!(by_path, in_memory, "ELF facts differ between the file and its bytes");
    }
    // Addresses: fixed ones, the ELF entry point, and a few in the executable segment.
    let mut addrs = vec![0, 1, 0x1000, 0x1139, 0x401000, u64::MAX - 1, u64::MAX];
    if data.len() >= 32 {
        addrs.push(u64::from_le_bytes(data[24..32].try_into().expect("8 bytes")));
    }
    let exec_load = in_memory.as_ref().and_then(|i| i.exec_load);
    if let Some((vaddr, _, _)) = exec_load {
        addrs.extend([0u64, 0x10, 0x100, 0x1000].map(|d| vaddr.wrapping_add(d)));
    }
    let lines = symbolize_addresses(&path, &addrs);
    assert_eq!(lines.len(), addrs.len());
    for &a in &addrs {
        let _ = corrected_address(a, exec_load, 0, 0, 0);
        let _ = corrected_address(a, exec_load, a, 0x1000, a >> 3);
    }

    // The stage: a mapping that names the file by path and by its build id.
    let mut tables = heapconv::model::Tables::default();
    let build_id = in_memory.as_ref().and_then(|i| i.build_id.clone()).unwrap_or_default();
    let mapping = heapconv::model::Mapping {
        path: tables.strings.intern("/system/lib64/libfuzz.so"),
        build_id: build_id.into_boxed_slice(),
        start: 0x7000_0000,
        end: 0x7100_0000,
        start_offset: 0,
        exact_offset: 0,
        load_bias: 0,
    };
    let m = tables.intern_mapping(mapping);
    let empty = tables.strings.intern("");
    for &a in &addrs {
        tables.intern_frame(Some(m), a, empty);
    }
    let n = tables.frames().len();
    let mut s = Symbolizer::new(SymbolizeOptions {
        symbol_dirs: vec![dir.clone()],
        ignore_build_id: option_bits(data) & 1 != 0,
        find_only: false,
    });
    s.symbolize(&mut tables, 0..n);
    let _ = s.report(&tables);
}

/// Largest whole-file gzip expansion the heap drivers accept (a fuzz input is small; the
/// library's own caps are tested by the other targets).
const MAX_EXPANDED: u64 = 256 << 20;

/// A reader that counts the bytes read through it (the decompressed size of a gzip input).
struct Counted<R> {
    inner: R,
    bytes: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// The HPROF reader, as `heapconv convert`/`top`/`inspect` run it on a file (whole-file gzip
/// undone): `read_hprof_with_stats` (strict or partial, varied per input), the inspect report,
/// every heap analysis (`check_heap_dump`), and Android's `hprof-conv` on the same bytes,
/// whose output must read back to as many objects and roots.
pub fn hprof_reader(data: &[u8]) {
    let bits = option_bits(data);
    let Ok(mut input) = Input::from_bytes("fuzz.hprof", data.to_vec(), MAX_EXPANDED) else { return };
    let opts = HprofReadOptions { partial: bits & 1 == 0 };
    let mut counted = Counted { inner: input.reader(), bytes: 0 };
    let read = read_hprof_with_stats(&mut counted, "fuzz.hprof", &opts);
    let consumed = counted.bytes;
    let Ok((dump, stats)) = read else { return };
    assert!(stats.bytes <= consumed, "stats claim {} bytes, {consumed} were read", stats.bytes);
    // Every object is a sub-record of at least 14 bytes (PRIMITIVE_ARRAY_NODATA with 4-byte
    // ids: tag, id, serial, length, type), except `java.lang.Class`'s synthetic object;
    // every root at least 5 (tag, id); every reference is an id of at least 4 bytes.
    assert!(dump.len() as u64 <= consumed / 14 + 1, "{} objects from {consumed} bytes", dump.len());
    assert!(dump.roots.len() as u64 <= consumed / 5, "{} roots from {consumed} bytes", dump.roots.len());
    assert!(dump.ref_target.len() as u64 <= consumed / 4, "{} references from {consumed} bytes", dump.ref_target.len());
    assert!(dump.classes.len() as u64 <= consumed / 4 + 8, "{} classes from {consumed} bytes", dump.classes.len());
    // A strict read fails on damage; a partial one names it in `incomplete` (which also lists
    // what a whole file can lack, such as instances of classes never dumped).
    if !opts.partial {
        assert!(stats.damage.is_none(), "a strict read returned a damaged dump: {:?}", stats.damage);
    }
    if let Some(damage) = &stats.damage {
        assert!(dump.incomplete.contains(damage), "damage {damage:?} not in {:?}", dump.incomplete);
        assert!(damage.contains("fuzz.hprof"), "damage does not name the file: {damage}");
    }
    let inspect = heapconv::pipeline::reports::hprof_inspect("fuzz.hprof", &dump, &stats);
    let _ = hprof_inspect_text(&inspect);
    let _ = hprof_inspect_json(&inspect);
    check_heap_dump(&dump, bits);

    // Android's hprof-conv on the same bytes, to memory (zero fill capped: a NODATA array may
    // claim 4 G elements); what it writes must read back cleanly when the input was clean.
    let Ok(mut input) = Input::from_bytes("fuzz.hprof", data.to_vec(), MAX_EXPANDED) else { return };
    let conv = HprofConvOptions { app_only: bits & 2 != 0, max_zero_fill: 1 << 20, ..Default::default() };
    let mut out = std::io::Cursor::new(Vec::new());
    if hprof_conv(input.reader(), "fuzz.hprof", &mut out, &conv).is_ok() && dump.incomplete.is_empty() {
        let back = read_hprof(out.get_ref().as_slice(), "converted", &HprofReadOptions { partial: false })
            .expect("hprof-conv output reads back");
        if !conv.app_only {
            assert_eq!(back.len(), dump.len(), "hprof-conv lost or added objects");
            assert_eq!(back.roots.len(), dump.roots.len(), "hprof-conv lost or added roots");
        }
    }
    hprof_deobfuscated(data, &dump);
}

/// `hprof-conv --proguard-map` on the same bytes: the names pre-pass, then the rewrite with a
/// map made of the input's own names (every class it loads renamed, with its fields and the
/// methods of its `STACK_FRAME`s, each with line ranges and an inline chain), so that class,
/// field and frame renames all happen. What it writes must read back to as many objects and
/// roots when the input read cleanly.
fn hprof_deobfuscated(data: &[u8], dump: &HeapDump) {
    use heapconv::decode::hprof::hprof_conv_renamed;
    use heapconv::decode::hprof::{java_class_name, scan_hprof_names};
    use heapconv::pipeline::hprof_conv::deobfuscation_rewrite;
    use heapconv::pipeline::load::ProguardMaps;
    let Ok(mut input) = Input::from_bytes("fuzz.hprof", data.to_vec(), MAX_EXPANDED) else { return };
    let Ok(names) = scan_hprof_names(input.reader(), "fuzz.hprof") else { return };
    let plain =
        |s: &str| !s.is_empty() && s.len() < 200 && !s.contains(|c: char| c.is_whitespace() || c == ':' || c == '#');
    let mut map = String::new();
    for (i, (cid, nid)) in names.load_classes.iter().enumerate().take(256) {
        let Some(raw) = names.strings.get(nid) else { continue };
        let java = java_class_name(raw);
        if !plain(&java) || java.contains('[') || java.contains("->") {
            continue;
        }
        map.push_str(&format!("orig.K{i} -> {java}:\n"));
        if let Some(c) = names.classes.get(cid) {
            for (k, f) in c.statics.iter().chain(&c.fields).enumerate().take(64) {
                if let Some(n) = names.strings.get(f).filter(|n| plain(n) && !n.contains("->")) {
                    map.push_str(&format!("    int f{k} -> {n}\n"));
                }
            }
        }
        let serials: Vec<u32> = names.class_serials.iter().filter(|(_, c)| *c == cid).map(|(s, _)| *s).collect();
        for (k, f) in names.frames.iter().filter(|f| serials.contains(&f.class_serial)).enumerate().take(64) {
            if let Some(m) = names.strings.get(&f.method).filter(|n| plain(n) && !n.contains("->") && !n.contains('('))
            {
                map.push_str(&format!("    1:9:void m{k}():20:28 -> {m}\n"));
                map.push_str(&format!(
                    "    10:19:void inl{k}():5:5 -> {m}\n    10:19:void other.C.out{k}():40 -> {m}\n"
                ));
                map.push_str(&format!("    void amb{k}() -> {m}\n    void amb{k}b() -> {m}\n"));
            }
        }
    }
    let map_path = scratch_file("fuzz-map.txt", map.as_bytes());
    let Ok(maps) = ProguardMaps::new(&[map_path.display().to_string()], None) else { return };
    let Ok(rewrite) = deobfuscation_rewrite(&names, &maps) else { return };
    let Ok(mut input) = Input::from_bytes("fuzz.hprof", data.to_vec(), MAX_EXPANDED) else { return };
    let conv = HprofConvOptions { max_zero_fill: 1 << 20, ..Default::default() };
    let mut out = std::io::Cursor::new(Vec::new());
    if hprof_conv_renamed(input.reader(), "fuzz.hprof", &mut out, &conv, &rewrite).is_ok() && dump.incomplete.is_empty()
    {
        let back = read_hprof(out.get_ref().as_slice(), "deobfuscated", &HprofReadOptions { partial: false })
            .expect("the deobfuscated dump reads back");
        assert_eq!(back.len(), dump.len(), "the rewrite lost or added objects");
        assert_eq!(back.roots.len(), dump.roots.len(), "the rewrite lost or added roots");
    }
}

/// The heap-graph decoder through the trace reader (whole-file gzip, packets, interning,
/// `compressed_packets`, continued dumps), its report, every heap analysis of each dump
/// (`check_heap_dump`), and the dump written as hprof (`heapconv hprof`), which must read back.
pub fn perfetto_heap_graph(data: &[u8]) {
    let bits = option_bits(data);
    let opts = HeapGraphOptions::default();
    let Ok(mut input) = Input::from_bytes("fuzz.pftrace", data.to_vec(), MAX_EXPANDED) else { return };
    let Ok((dumps, report)) = decode_heap_graphs_all(&mut input, &opts) else { return };
    let _ = inspect_text(&report);
    let _ = inspect_json(&report);
    // Without decompression every object is at least a byte of the input (an id in a
    // packed reference list, or a message).
    let objects: usize = dumps.iter().map(HeapDump::len).sum();
    if !report.gzipped && report.compressed_bundles == 0 {
        assert!(objects <= data.len(), "{objects} objects from {} bytes", data.len());
    }
    for d in dumps.iter().take(MAX_PROFILES_ENCODED) {
        check_heap_dump(d, bits);
        let hopts = HprofOptions { android: bits & 64 != 0, segment_bytes: 4096, ..Default::default() };
        let mut out = Vec::new();
        let summary = encode_hprof(d, &hopts, &mut out).expect("a decoded heap graph writes as hprof");
        assert_eq!(summary.bytes, out.len() as u64);
        let back = read_hprof(out.as_slice(), "written", &HprofReadOptions { partial: false })
            .expect("the hprof written reads back");
        assert!(back.len() as u64 >= summary.instances + summary.object_arrays + summary.primitive_arrays);
    }
}

/// The pprof reader on raw and gzip bytes, directly and as the pipeline opens a file; the
/// profile's invariants, every encoder, and a round trip (encoded, decoded again: the same
/// sample types and totals).
pub fn pprof_reader(data: &[u8]) {
    let bits = option_bits(data);
    let _ = looks_like_pprof(data);
    let opts = PprofDecodeOptions { max_bytes: MAX_EXPANDED };
    let direct = decode_pprof_maybe_gzip(data, "fuzz.pb.gz", &opts);
    let piped =
        Input::from_bytes("fuzz.pb.gz", data.to_vec(), opts.max_bytes).and_then(|mut i| read_pprof(&mut i, &opts));
    if let (Ok(a), Ok(b)) = (&direct, &piped) {
        assert_eq!(a.sample_count(), b.sample_count(), "the two ways of reading disagree");
    }
    let Ok(flat) = direct else { return };
    // Every sample is a field of at least 2 bytes (tag, length).
    if !data.starts_with(&[0x1f, 0x8b]) {
        assert!(flat.sample_count() <= data.len() / 2, "{} samples from {} bytes", flat.sample_count(), data.len());
    }
    let frames = flat.tables.frames().len();
    for i in 0..flat.sample_count() {
        let (f, v) = flat.sample(i);
        assert_eq!(v.len(), flat.header.sample_types.len(), "a sample's values do not match its types");
        assert!(!f.is_empty(), "a sample without frames (the decoder names them {NO_STACK:?})");
        assert!(f.iter().all(|x| (x.0 as usize) < frames), "a sample names a frame that does not exist");
    }
    assert!(flat.header.sample_types.is_empty() || flat.header.default_sample_type < flat.header.sample_types.len());
    let profile = flat.to_profile();
    assert_eq!(profile.sample_count(), flat.sample_count(), "samples lost in the tree form");
    check_profile_shape(&profile);
    check_encoders(&profile, bits);
    for format in [Format::Folded, Format::Json] {
        let common = ConvertCommon { format, ..Default::default() };
        let _ = encode_one(&profile, &ConvertOptions { common, ..Default::default() });
    }
    // Round trip: what heapconv writes reads back with the same types and totals.
    let bytes = encode_pprof(&profile, &PprofOptions { annotations: false, extras: bits & 16 == 0 });
    let back = decode_pprof(&bytes, "re-encoded").expect("our pprof decodes");
    assert_eq!(back.header.sample_types.len(), profile.header.sample_types.len());
    let totals = |n: usize, values: &mut dyn Iterator<Item = &[i64]>| {
        let mut t = vec![0i128; n];
        for v in values {
            for (a, &b) in t.iter_mut().zip(v) {
                *a += i128::from(b);
            }
        }
        t
    };
    let n = profile.header.sample_types.len();
    let before = totals(n, &mut profile.samples().map(|(_, v)| v));
    let after = totals(n, &mut (0..back.sample_count()).map(|i| back.sample(i).1));
    assert_eq!(before, after, "totals changed in a pprof round trip");
}

/// What holds for every heap dump, and every analysis run on it: the structure validates,
/// the shortest-path tree and the dominator tree reach the same objects, the objects only the
/// virtual root dominates retain every reachable byte, and the `top` report and both tree
/// profiles (checked as any profile, every encoder) are made.
pub fn check_heap_dump(d: &HeapDump, bits: u8) {
    if let Err(e) = d.validate() {
        panic!("an invalid heap dump: {e}");
    }
    let heap = RootedHeap::new(d);
    let spt = heap.shortest_path_tree();
    let dom = heap.dominators();
    assert_eq!(spt.order.len(), dom.order.len(), "the two trees reach different objects");
    let all: u128 = dom.order.iter().map(|&o| u128::from(d.obj_self_size[o as usize])).sum();
    let top: u128 = dom
        .order
        .iter()
        .filter(|&&o| dom.idom[o as usize] == VIRTUAL_ROOT)
        .map(|&o| u128::from(dom.retained[o as usize]))
        .sum();
    if all <= u128::from(u64::MAX) {
        assert_eq!(top, all, "retained sizes do not add up to the reachable objects' sizes");
    }
    let report = heap.heap_top(&spt, &dom, &HeapTopOptions::default());
    let _ = heap_top_text(&report);
    let _ = heap_top_json(&report);
    for p in [heap.dominator_profile(&dom), heap.spt_profile(&spt)] {
        check_profile_shape(&p);
        check_encoders(&p, bits);
    }
}

/// The generated seeds of `hprof_reader` (there are no hprof fixtures): the Android sample of
/// `heapconv_testdata::hprof` with 4- and 8-byte ids, with and without NODATA arrays, two small
/// synthetic heaps (Android and HotSpot), and each heap-graph fixture under `root` written as
/// hprof (1.0.2 and 1.0.3). Named for `fuzz/seed.sh`, which writes them with
/// `cargo run --example fuzz_seeds`.
pub fn hprof_seeds(root: &Path) -> Vec<(String, Vec<u8>)> {
    use heapconv_testdata::hprof::{SyntheticHeap, android_sample, synthetic_heap};
    let mut v = Vec::new();
    for (id, nodata) in [(4, false), (4, true), (8, false), (8, true)] {
        let name = format!("android-sample-id{id}{}.hprof", if nodata { "-nodata" } else { "" });
        v.push((name, android_sample(id, nodata).0));
    }
    for (android, id_size) in [(true, 4), (false, 8)] {
        let (bytes, _) = synthetic_heap(&SyntheticHeap { target_bytes: 16 << 10, id_size, android, seed: 7 });
        if let Some(framed) = with_stack_frames(&bytes) {
            v.push((format!("synthetic-{}-frames.hprof", if android { "android" } else { "hotspot" }), framed));
        }
        v.push((format!("synthetic-{}.hprof", if android { "android" } else { "hotspot" }), bytes));
    }
    let dir = root.join("tests/data/heapgraph");
    let mut traces: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/data/heapgraph")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "pftrace"))
        .collect();
    traces.sort();
    traces.push(root.join("tests/data/traceconv/cases/heap_graph_small.pftrace"));
    for t in traces {
        let stem = t.file_stem().and_then(|s| s.to_str()).unwrap_or("trace").to_owned();
        let Ok(mut input) = Input::open(&t, MAX_EXPANDED) else { continue };
        let Ok((dumps, _)) = decode_heap_graphs_all(&mut input, &HeapGraphOptions::default()) else { continue };
        for (i, d) in dumps.iter().enumerate().take(2) {
            for android in [false, true] {
                let mut out = Vec::new();
                if encode_hprof(d, &HprofOptions { android, ..Default::default() }, &mut out).is_ok() {
                    v.push((format!("heapgraph-{stem}-{i}-{}.hprof", if android { "103" } else { "102" }), out));
                }
            }
        }
    }
    v
}

/// `bytes` (an hprof file) with a thread's stack trace added after the header, as HotSpot
/// writes them: two `STRING`s (a method name and a source file), three `STACK_FRAME`s of the
/// first class the file loads (lines 5, 15 and -1) and a `STACK_TRACE` listing them; `None`
/// when the file loads no class.
fn with_stack_frames(bytes: &[u8]) -> Option<Vec<u8>> {
    use heapconv::decode::hprof::scan_hprof_names;
    let names = scan_hprof_names(bytes, "seed").ok()?;
    let (&serial, _) = names.class_serials.iter().min()?;
    let id = usize::from(names.id_size);
    let head = names.format.len() + 1 + 4 + 8;
    let ident = |v: u64| v.to_be_bytes()[8 - id..].to_vec();
    let record = |tag: u8, body: Vec<u8>| {
        let mut r = vec![tag, 0, 0, 0, 0];
        r.extend_from_slice(&(body.len() as u32).to_be_bytes());
        r.extend(body);
        r
    };
    let next = names.strings.keys().max().copied().unwrap_or(0) + 1;
    let mut add = Vec::new();
    for (sid, text) in [(next, "a"), (next + 1, "SourceFile")] {
        let mut b = ident(sid);
        b.extend_from_slice(text.as_bytes());
        add.extend(record(0x01, b));
    }
    let frames = [(0x51u64, 5i32), (0x52, 15), (0x53, -1)];
    for (fid, line) in frames {
        let mut b = ident(fid);
        b.extend(ident(next));
        b.extend(ident(next));
        b.extend(ident(next + 1));
        b.extend_from_slice(&serial.to_be_bytes());
        b.extend_from_slice(&line.to_be_bytes());
        add.extend(record(0x04, b));
    }
    let mut b = Vec::new();
    b.extend_from_slice(&7u32.to_be_bytes());
    b.extend_from_slice(&1u32.to_be_bytes());
    b.extend_from_slice(&(frames.len() as u32).to_be_bytes());
    for (fid, _) in frames {
        b.extend(ident(fid));
    }
    add.extend(record(0x05, b));
    let mut out = bytes[..head].to_vec();
    out.extend(add);
    out.extend_from_slice(&bytes[head..]);
    Some(out)
}

/// What holds for every profile: each sample has one value per sample type, and every stack
/// and frame it names exists.
pub fn check_profile_shape(p: &Profile) {
    let nodes = p.tables.stack_count();
    let mut frames = Vec::new();
    for (stack, values) in p.samples() {
        assert_eq!(values.len(), p.header.sample_types.len(), "a sample's values do not match its types");
        assert!((stack.0 as usize) < nodes, "a sample names a stack that does not exist");
        frames.clear();
        p.tables.stack_frames_leaf_first(stack, &mut frames);
        for f in &frames {
            assert!((f.0 as usize) < p.tables.frames().len(), "a stack names a frame that does not exist");
        }
    }
}

/// Every encoder, on one profile: pprof (read back with prost: one sample each, string 0
/// empty), folded stacks (every line parses back), and, for small profiles, the SVG.
pub fn check_encoders(p: &Profile, bits: u8) {
    let bytes = encode_pprof(p, &PprofOptions { annotations: bits & 8 != 0, extras: bits & 16 == 0 });
    let decoded = heapconv::proto::pprof::Profile::decode(bytes.as_slice()).expect("our pprof decodes");
    assert_eq!(decoded.string_table.first().map(String::as_str), Some(""), "pprof string 0 must be empty");
    assert_eq!(decoded.sample_type.len(), p.header.sample_types.len());
    let strings = decoded.string_table.len() as i64;
    for s in &decoded.sample {
        assert_eq!(s.value.len(), p.header.sample_types.len(), "pprof sample with the wrong number of values");
        for l in &s.label {
            assert!(l.key >= 0 && l.key < strings, "pprof label key outside the string table");
        }
    }
    for index in 0..p.header.sample_types.len().min(4) {
        let folded = encode_folded(p, &FoldedOptions { value_index: index, annotations: bits & 32 != 0 });
        for line in folded.lines() {
            assert!(parse_folded_line(line).is_some(), "folded line does not parse back: {line:?}");
        }
    }
    if p.sample_count() <= 256 {
        let common = ConvertCommon { format: Format::Svg, value: ValueKind::TotalSize, ..Default::default() };
        let _ = encode_one(p, &ConvertOptions { common, ..Default::default() });
    }
}

/// A ProGuard/R8 mapping file: the member-line reader against the `proguard` crate's line
/// parser, the file index in parallel pieces against the one-pass index, the whole table, and
/// lookups of the classes it names (class names with array suffixes, fields, frames with and
/// without lines).
pub fn proguard_map(data: &[u8]) {
    use heapconv::symbolize::proguard::{ProguardMap, Retracer, member_lines_as_the_crate_reads_them};
    // The member-line reader reads every line as its oracle, the `proguard` crate, does.
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(e) = member_lines_as_the_crate_reads_them(text) {
            panic!("member-line reader and crate differ: {e}");
        }
    }
    // The file indexed in three pieces in parallel is the map indexed in one pass: the same
    // classes, or the same error.
    let path = scratch_file("mapping.txt", data);
    let name = path.display().to_string();
    let pieces = ProguardMap::open_in(&path, None, 3);
    let whole = ProguardMap::from_bytes(name, None, data.to_vec());
    match (&pieces, &whole) {
        (Ok(p), Ok(w)) => assert!(p.classes().eq(w.classes()), "pieces and one pass index different classes"),
        (Err(p), Err(w)) => assert_eq!(p.to_string(), w.to_string(), "pieces and one pass fail differently"),
        _ => panic!("pieces {:?} and one pass {:?} disagree", pieces.as_ref().err(), whole.as_ref().err()),
    }
    let Ok(map) = whole else { return };
    let _ = map.table();
    let r = Retracer::new(&map);
    let classes: Vec<String> = map.classes().take(64).map(|(o, _)| o.to_owned()).collect();
    for c in &classes {
        let _ = r.class_name(&format!("{c}[]"));
        let _ = r.class_name(&format!("java.lang.Class<{c}>"));
        for m in ["a", "b", "<init>", "main"] {
            let _ = r.field_names(c, m);
            let _ = r.frame(c, m, None);
            for l in [1, 2, 17, 1000, u32::MAX] {
                let _ = r.frame(c, m, Some(l));
            }
        }
    }
    // The batch, the stack walk (outlines) and descriptor narrowing over the same classes.
    let mut queries = Vec::new();
    for c in &classes {
        for m in ["a", "b", "<init>"] {
            for l in [None, Some(1), Some(17)] {
                queries.push(heapconv::symbolize::proguard::FrameQuery { class: c, method: m, line: l });
            }
        }
    }
    let batch = r.frames(&queries);
    for (q, b) in queries.iter().zip(&batch) {
        assert_eq!(*b, r.frame(q.class, q.method, q.line), "batch and one-at-a-time answers differ");
        let _ = r.frame_typed(q.class, q.method, "()V", q.line);
    }
    let _ = r.stack(&queries);
    let _ = r.report();
}
