//! What the fuzz targets share: one driver per decoder, and checks that hold for every
//! profile whatever bytes it came from. A target is a few lines naming its driver, so adding
//! one is short (see FUZZING.md); drivers are plain functions, so a finding can also be
//! replayed from a test or a debugger without libFuzzer.
//!
//! Drivers never assert on the decoder's verdict (an error is a fine answer to garbage); they
//! assert only what must hold for any input: no panic (libFuzzer catches it), and outputs that
//! their own readers accept.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use heapconv::decode::Input;
use heapconv::decode::ddm_alloc_records::{
    DdmOptions, OrderChoice, alloc_records_profile, decode_alloc_records, encode_alloc_records,
};
use heapconv::decode::perfetto::module_symbols::scan_module_symbols;
use heapconv::decode::perfetto::{DecodeOptions, decode_heapprofd_all};
use heapconv::encode::folded::{FoldedOptions, encode_folded, parse_folded_line};
use heapconv::encode::pprof::{PprofOptions, encode_pprof};
use heapconv::encode::summary::{inspect_json, inspect_text};
use heapconv::model::{Profile, ValueKind};
use heapconv::pipeline::{ConvertOptions, DumpSelect, Format, encode_one, select_profiles};
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
    let opts = ConvertOptions { dump: DumpSelect::All, view, annotations: bits & 4 != 0, ..Default::default() };
    let Ok((profiles, _report, _)) = select_profiles(&path, &opts) else { return };
    for p in profiles.iter().take(MAX_PROFILES_ENCODED) {
        check_profile_shape(p);
        check_encoders(p, bits);
        for format in [Format::Folded, Format::Json] {
            let _ = encode_one(p, &ConvertOptions { format, ..opts.clone() });
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
    let _ = heapconv::pipeline::ddm_inspect(&capture, &opts);
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

/// What holds for every profile: each sample has one value per sample type, and every stack
/// and frame it names exists.
pub fn check_profile_shape(p: &Profile) {
    let nodes = p.tables.stack_count();
    let mut frames = Vec::new();
    for (stack, values) in p.samples() {
        assert_eq!(values.len(), p.sample_types.len(), "a sample's values do not match its types");
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
    assert_eq!(decoded.sample_type.len(), p.sample_types.len());
    let strings = decoded.string_table.len() as i64;
    for s in &decoded.sample {
        assert_eq!(s.value.len(), p.sample_types.len(), "pprof sample with the wrong number of values");
        for l in &s.label {
            assert!(l.key >= 0 && l.key < strings, "pprof label key outside the string table");
        }
    }
    for index in 0..p.sample_types.len().min(4) {
        let folded = encode_folded(p, &FoldedOptions { value_index: index, annotations: bits & 32 != 0 });
        for line in folded.lines() {
            assert!(parse_folded_line(line).is_some(), "folded line does not parse back: {line:?}");
        }
    }
    if p.sample_count() <= 256 {
        let _ =
            encode_one(p, &ConvertOptions { format: Format::Svg, view: ValueKind::TotalSize, ..Default::default() });
    }
}
