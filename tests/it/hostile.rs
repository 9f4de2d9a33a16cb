//! Hostile inputs: the table of contents of the hardening issue (#7), and the tests that were
//! missing elsewhere. Each hostile input gives a clear error naming the file, the byte offset
//! and the packet or record, or a result flagged partial; never a panic, a hang, or memory
//! beyond a bound (tests that run the binary under `RLIMIT_AS`/`RLIMIT_CPU` use
//! `crate::common::heapconv_limited`). "Nothing lost": outputs are written to a temporary file and
//! renamed, a failed run leaves nothing, an output equal to an input is refused, and what an
//! input says it lost reaches every output and fails a run with `--strict` (exit code 6).
//!
//! | hostile input | covered by |
//! |---|---|
//! | truncation at every packet boundary and mid-varint | `truncation_at_every_packet_boundary_and_inside_every_packet` (here); `cli.rs::truncated_traces_give_partial_results_with_file_offset_and_packet` (mid-packet, mid-varint, mid-tag, inside zlib and gzip); `hprof.rs::truncation_anywhere_is_an_error_or_a_partial_dump_never_a_panic`, `hprof.rs::truncations_at_record_boundaries_convert_as_hprof_conv_does`; `ddm.rs::damaged_framings_and_tables_are_errors` |
//! | length fields past the end or near 4 GiB | `packet_lengths_past_the_end_or_near_4_gib`, `bombs_and_huge_lengths_under_a_memory_limit` (here, under a memory limit); `cli.rs::bad_inputs_are_clear_errors`; `hprof.rs::lying_lengths_unknown_tags_and_odd_id_sizes_give_clear_errors`; `merge.rs::hostile_pprof_inputs_give_clear_errors` |
//! | deep nesting | `deep_nesting` (groups nested 100,000 deep; bundles in bundles) |
//! | wrong wire types | `wrong_wire_types` (here); `merge.rs::hostile_pprof_inputs_give_clear_errors` |
//! | interned ids missing, duplicated, cyclic | `interned_ids_missing_and_duplicated`, `many_unresolvable_callstacks_across_many_chains_stay_fast` (found a quadratic slow-down), `pending_callstacks_wait_for_the_frame_they_lack` (found another: every pending callstack retried at every new frame), `cyclic_superclasses_end` (heap graph types and hprof classes that are their own superclasses; the loops are reported), `long_superclass_chains_and_duplicated_types_in_heap_graphs` (found: field names looked up along the whole chain per class, cubic: 156 s for 20,000 types) |
//! | callstacks naming frames that do not exist | `interned_ids_missing_and_duplicated` (samples dropped, `unresolved_samples`) |
//! | zlib and gzip bombs (expansion capped) | `bombs_and_huge_lengths_under_a_memory_limit` (compressed_packets, pprof, DDM, hprof objects; under `RLIMIT_AS`); `cli.rs::compressed_bundles_are_capped` |
//! | hprof records whose lengths lie | `hprof.rs::lying_lengths_unknown_tags_and_odd_id_sizes_give_clear_errors`, `bombs_and_huge_lengths_under_a_memory_limit` (an array of 2^32-1 longs) |
//! | DDM tables with indexes out of range | `ddm.rs::bad_indices_are_errors_naming_entry_and_offset`, `ddm.rs::damaged_input_never_panics` |
//! | ELF files with bogus headers | `elf_files_with_bogus_headers`, `mutated_elf_files_never_panic`, `symbolizing_with_a_corrupt_debug_file_never_panics`, the `fuzz_symbol_*` findings (here) |
//! | symbol directories with symlink loops and unreadable files | `symbol_directories_with_loops_pipes_and_unreadable_files` (here, run as nobody when root); `symbolize.rs::symlink_loops_end` |
//! | `.gnu_debuglink` naming a path | `debuglink_names_with_a_path_are_refused`; `symbolize.rs::debuglink_crc_is_checked_and_mirrors_are_found` |
//! | random mutations of every fixture | `mutated_traces_never_panic` (here); `hprof.rs::mutated_dumps_never_panic_or_hang`, `ddm.rs::damaged_input_never_panics`, `merge.rs::damaged_pprof_never_panics`, `heap_graph.rs::damaged_heap_graphs_never_panic` |
//! | **nothing lost** | |
//! | outputs renamed into place; a failed run leaves no output | `failed_runs_leave_no_output`, `every_command_refuses_to_overwrite_an_input` (no temporary file left); `hprof.rs::hprof_conv_refuses_what_it_cannot_convert_and_writes_atomically`, `bombs_and_huge_lengths_under_a_memory_limit` (hprof-conv); `cli.rs::special_files_are_written_in_place_not_replaced` |
//! | an output equal to an input is refused (every command) | `every_command_refuses_to_overwrite_an_input` (convert, views, merge, diff, timeline, hprof, hprof-conv, symbolize, batch `--summary-json`; by name, symlink, hard link); `cli.rs::never_overwrites_an_input`; `batch.rs::outputs_never_overwrite_inputs_and_the_output_directory_is_not_scanned` |
//! | data loss in `inspect`, JSON, SVG subtitle, pprof comments | `cli.rs::data_loss_reaches_every_output`, `cli.rs::inspect_reports_sequences_dumps_and_problems`, `incomplete_heap_dumps_are_flagged_in_every_output` (here); `heap_graph.rs::cli_hprof_of_an_incomplete_dump_is_partial_and_inspect_lists_heap_graphs` |
//! | `--strict` fails a run on data loss (exit 6) | `strict_fails_runs_whose_input_lost_data` (every converting command, batches), `strict_judges_the_dumps_converted_not_the_whole_trace`, `incomplete_heap_dumps_are_flagged_in_every_output` |
//!
//! Below: mutation tests (every fixture mutated in many deterministic ways: bit flips,
//! truncations, bytes inserted and deleted, length prefixes near 4 GiB), the findings of the
//! cargo-fuzz targets, then hostile inputs built in code.

use std::time::{Duration, Instant};

use crate::common::*;
use heapconv::decode::Input;
use heapconv::decode::perfetto::{DecodeOptions, decode_heapprofd};
use heapconv_testdata::protowire::put_varint;
use heapconv_testdata::rng::Rng;

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        if b.is_empty() {
            break;
        }
        let i = rng.index(b.len());
        match rng.below(6) {
            0 => b[i] ^= 1 << rng.below(8),
            1 => b[i] = rng.next_u64() as u8,
            2 => b.truncate(i),
            3 => {
                b.remove(i);
            }
            4 => b.insert(i, rng.next_u64() as u8),
            _ => {
                // A length-like varint near 4 GiB.
                let v = [0xff, 0xff, 0xff, 0xff, 0x0f];
                for (k, x) in v.iter().enumerate() {
                    if i + k < b.len() {
                        b[i + k] = *x;
                    }
                }
            }
        }
    }
    b
}

fn decode_bytes(bytes: Vec<u8>) -> Result<(), String> {
    let mut input = Input::from_bytes("mutant", bytes, 64 << 20).map_err(|e| e.to_string())?;
    let opts = DecodeOptions { max_packet_bytes: 16 << 20, max_bundle_bytes: 16 << 20, ..Default::default() };
    let mut n = 0usize;
    decode_heapprofd(&mut input, &opts, &mut |p| {
        n += p.sample_count();
        Ok(())
    })
    .map(|_| ())
    .map_err(|e| e.to_string())
}

#[test]
fn mutated_traces_never_panic() {
    let mut fixtures: Vec<_> = std::fs::read_dir(data(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".pftrace") || p.to_string_lossy().ends_with(".gz"))
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 15);
    let mut rng = Rng(0x5eed);
    let mut runs = 0;
    for f in &fixtures {
        let base = std::fs::read(f).unwrap();
        for _ in 0..600 {
            let m = mutate(&mut rng, &base);
            let start = Instant::now();
            let r = std::panic::catch_unwind(|| decode_bytes(m.clone()));
            assert!(r.is_ok(), "panic on a mutant of {} ({} bytes)", f.display(), m.len());
            assert!(start.elapsed() < Duration::from_secs(5), "too slow on a mutant of {}", f.display());
            runs += 1;
        }
    }
    assert!(runs > 9000);
}

#[test]
fn mutated_elf_files_never_panic() {
    let mut rng = Rng(0xe1f);
    for name in ["libwidget.so", "libgadget.so", ".debug/libgadget.so.debug", "app-nopie"] {
        let base = std::fs::read(root().join("symbols").join(name)).unwrap();
        for _ in 0..200 {
            let m = mutate(&mut rng, &base);
            let r = std::panic::catch_unwind(|| heapconv::symbolize::elf::elf_info_from_bytes(&m));
            assert!(r.is_ok(), "panic on a mutant of {name}");
        }
    }
}

#[test]
fn symbolizing_with_a_corrupt_debug_file_never_panics() {
    let mut rng = Rng(0xdeb);
    let base = std::fs::read(root().join("symbols/libwidget.so")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("libwidget.so");
    for _ in 0..60 {
        std::fs::write(&path, mutate(&mut rng, &base)).unwrap();
        let r = std::panic::catch_unwind(|| heapconv::symbolize::symbolize_addresses(&path, &[0x1150, 0x1210, 0x1228]));
        assert!(r.is_ok(), "panic symbolizing a corrupt file");
    }
}

// Findings of the cargo-fuzz targets (fuzz/, FUZZING.md): each minimized input that made a
// target crash, hang or run out of memory, replayed here with the outcome it must have now.
// Inputs live in tests/data/fuzz/<target>/.

/// Fuzz finding 1 (`symbol_file`): looking up the last address, `u64::MAX`, made addr2line
/// compute `addr + 1` (an overflow panic in builds with overflow checks, e.g. `cargo test`
/// without `--release`). Any rel_pc can come from a trace. No DWARF range can hold that
/// address, so it gets no source line (the symbol table may still name the last function, as
/// for any address past it), and the lookups beside it are unaffected.
#[test]
fn fuzz_symbol_lookup_at_the_last_address() {
    let path = root().join("symbols/libwidget.so");
    let alone = heapconv::symbolize::symbolize_addresses(&path, &[0x1150]);
    let lines = heapconv::symbolize::symbolize_addresses(&path, &[u64::MAX, 0x1150, u64::MAX - 1]);
    assert!(lines[0].iter().all(|l| l.file.is_empty() && l.line == 0), "{:?}", lines[0]);
    assert_eq!(lines[0], lines[2]);
    assert_eq!(lines[1], alone[0]);
    assert_eq!(lines[1][0].function, "deregister_tm_clones");
}

/// Fuzz finding 2 (`symbol_file`): a function symbol whose value + size passes 2^64 (a corrupt
/// symbol table) made the symbol-table lookup compute `start + size`: a panic with overflow
/// checks, and without them a wrapped end that hid the symbol. The input is built by
/// tests/data/fuzz/make_inputs.py: `low` at 0x1000 (16 bytes) and `wraps` at
/// 0xed841701f0040000 with size 0x8300009720030000, which holds every address above it.
#[test]
fn fuzz_symbol_whose_end_passes_the_address_space() {
    let path = data("fuzz/symbol_file/symbol-end-overflows.elf");
    let names: Vec<Option<String>> =
        heapconv::symbolize::symbolize_addresses(&path, &[0x1008, 0x1010, 0xED84_1701_F004_0000, u64::MAX - 1])
            .into_iter()
            .map(|l| l.first().map(|l| l.function.clone()))
            .collect();
    assert_eq!(names, [Some("low".to_owned()), None, Some("wraps".to_owned()), Some("wraps".to_owned())]);
}

/// Fuzz finding 5 (`pprof_reader`): sample values whose sum passes 2^63 (two samples of 6e18
/// bytes, allocated and in use; tests/data/fuzz/make_inputs.py writes the legacy heap
/// profile). The totals of the JSON summary and of `top`, and the flame graph's, were added up
/// with `+`: a negative total in release builds (-6446744073709551616), a panic with overflow
/// checks. Now totals stop at `i64::MAX`, the samples keep their values, and the SVG, whose
/// values inferno adds up again, is refused with exit code 1 and a message.
#[test]
fn fuzz_sample_values_summing_past_2_pow_63() {
    let path = data("fuzz/pprof_reader/values-sum-past-2-63.heap");
    let path = path.to_str().unwrap();
    let out = heapconv_ok(&["convert", path, "--to", "json"], 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p = &v["profiles"][0];
    assert_eq!(p["sample_types"][3], "inuse_space/bytes");
    assert_eq!(p["totals"]["unreleased_size"], i64::MAX);
    assert_eq!(p["totals"]["total_size"], i64::MAX);
    assert_eq!(p["totals"]["unreleased_count"], 2);
    let tops: Vec<i64> = p["top_stacks"].as_array().unwrap().iter().map(|t| t["value"].as_i64().unwrap()).collect();
    assert_eq!(tops, [6_000_000_000_000_000_000, 6_000_000_000_000_000_000]);
    // Folded lines keep each stack's own value.
    let out = heapconv_ok(&["convert", path, "--to", "folded"], 0);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().filter(|l| l.ends_with(" 6000000000000000000")).count(), 2, "{text}");
    // `top`: the row and the total stop at 2^63 (8589934592 GiB), no negative share.
    let out = heapconv_ok(&["top", path], 0);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("accounting for 8589934592 GiB (100.00%) of 8589934592 GiB total"), "{text}");
    assert!(!text.contains(" -"), "{text}");
    // The HTML report's and the viewers' sums: no wrapped (negative) value.
    let dir = tempfile::tempdir().unwrap();
    for to in ["html", "speedscope", "chrome-heap", "dhat"] {
        let out = dir.path().join(format!("x.{to}"));
        heapconv_ok(&["convert", path, "--to", to, "-o", out.to_str().unwrap()], 0);
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(!text.contains("-6446744073709551616"), "{to}: a wrapped sum");
        assert!(!text.contains("-1553255926290448384"), "{to}: a wrapped sum");
    }
    assert!(std::fs::read_to_string(dir.path().join("x.html")).unwrap().contains("9223372036854775807"));
    // The SVG: an error, not a wrapped drawing.
    let svg = dir.path().join("x.svg");
    let out = heapconv_ok(&["convert", path, "--to", "svg", "-o", svg.to_str().unwrap()], 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sum past 2^63"), "{err}");
    assert!(!svg.exists());
}

/// Fuzz finding 6 (`pprof_reader`): a legacy heap profile whose memory map has a line that
/// ends before it starts (`9000-8000`), then a piece of the same file starting at its end.
/// Joining adjacent pieces computed `offset + (limit - start)`: a panic with overflow checks.
/// go's `massageMappings` computes it in wrapping uint64, and so does heapconv now: the pieces
/// stay apart, and the sample's address falls in the second, as `go tool pprof -raw` shows it
/// (`0x80ff M=2`, mapping `0x8000/0xa000/0x2000 /lib/libwraps.so`).
#[test]
fn fuzz_legacy_map_line_ending_before_it_starts() {
    let path = data("fuzz/pprof_reader/map-line-ends-before-it-starts.heap");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("w.pb");
    heapconv_ok(&["convert", path.to_str().unwrap(), "--to", "pprof", "-o", out.to_str().unwrap()], 0);
    let p = read_pprof(&out);
    assert_eq!(p.location.len(), 1);
    assert_eq!(p.location[0].address, 0x80ff);
    let m = p.mapping.iter().find(|m| m.id == p.location[0].mapping_id).unwrap();
    assert_eq!((m.memory_start, m.memory_limit, m.file_offset), (0x8000, 0xa000, 0x2000));
    assert_eq!(p.string_table[m.filename as usize], "/lib/libwraps.so");
}

// ------------------------------------------------------------------------------------------
// Hostile inputs built in code, each with the outcome it must have.

use heapconv::model::TraceReport;
use heapconv::proto::perfetto as pb;
use prost::Message;

/// Decodes trace bytes with the default options: the report, the dumps' sample counts, or the
/// error.
fn decode_trace(name: &str, bytes: Vec<u8>) -> Result<(TraceReport, Vec<usize>), heapconv::Error> {
    let mut input = Input::from_bytes(name, bytes, 1 << 30)?;
    let mut samples = Vec::new();
    let (report, _) = decode_heapprofd(&mut input, &DecodeOptions::default(), &mut |p| {
        samples.push(p.sample_count());
        Ok(())
    })?;
    Ok((report, samples))
}

/// `(offset, header length, payload length)` of every top-level packet of a trace.
fn packet_spans(b: &[u8]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        assert_eq!(b[pos], 0x0a, "a packet tag at byte {pos}");
        let (mut len, mut shift, mut i) = (0usize, 0, pos + 1);
        loop {
            len |= usize::from(b[i] & 0x7f) << shift;
            shift += 7;
            i += 1;
            if b[i - 1] & 0x80 == 0 {
                break;
            }
        }
        out.push((pos, i - pos, len));
        pos = i + len;
    }
    out
}

/// One top-level packet holding `payload` as it is (field 1, length-delimited).
fn raw_packet(payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0x0a];
    put_varint(&mut out, payload.len() as u64);
    out.extend_from_slice(payload);
    out
}

fn trace(packets: Vec<pb::TracePacket>) -> Vec<u8> {
    pb::Trace { packet: packets }.encode_to_vec()
}

/// A packet on sequence 1 that clears the incremental state and interns `interned`.
fn interning(interned: pb::InternedData) -> pb::TracePacket {
    pb::TracePacket {
        trusted_packet_sequence_id: Some(1),
        sequence_flags: Some(1),
        interned_data: Some(interned),
        ..Default::default()
    }
}

fn string(iid: u64, s: &str) -> pb::InternedString {
    pb::InternedString { iid: Some(iid), str: Some(s.as_bytes().to_vec()) }
}

/// A whole dump chain in one ProfilePacket: pid 42, libc.malloc, one sample per callstack id
/// (100 bytes allocated each).
fn dump(index: u64, callstacks: &[u64]) -> pb::TracePacket {
    use pb::profile_packet::{HeapSample, ProcessHeapSamples};
    let samples = callstacks
        .iter()
        .map(|&c| HeapSample {
            callstack_id: Some(c),
            self_allocated: Some(100 * (index + 1)),
            alloc_count: Some(index + 1),
            ..Default::default()
        })
        .collect();
    pb::TracePacket {
        trusted_packet_sequence_id: Some(1),
        sequence_flags: Some(2),
        profile_packet: Some(pb::ProfilePacket {
            process_dumps: vec![ProcessHeapSamples {
                pid: Some(42),
                heap_name: Some("libc.malloc".into()),
                timestamp: Some(1000 + index),
                samples,
                ..Default::default()
            }],
            continued: Some(false),
            index: Some(index),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Interned functions `f1`..`f3` (frames 1..3, no mapping) and `callstacks`.
fn frames_and(callstacks: Vec<pb::Callstack>) -> pb::InternedData {
    pb::InternedData {
        function_names: (1..=3).map(|i| string(i, &format!("f{i}"))).collect(),
        frames: (1..=3).map(|i| pb::Frame { iid: Some(i), function_name_id: Some(i), ..Default::default() }).collect(),
        callstacks,
        ..Default::default()
    }
}

fn callstack(iid: u64, frames: &[u64]) -> pb::Callstack {
    pb::Callstack { iid: Some(iid), frame_ids: frames.to_vec() }
}

/// Truncation at every packet boundary decodes what is complete, with no damage; a cut inside
/// a packet's header (mid-varint) or payload is damage naming the file, the packet's byte
/// offset and its number.
#[test]
fn truncation_at_every_packet_boundary_and_inside_every_packet() {
    let mut checked = 0;
    for name in ["interned_chain_spill.pftrace", "continuous_recycle.pftrace", "data_loss.pftrace", "sequences.pftrace"]
    {
        let full = std::fs::read(data(name)).unwrap();
        let spans = packet_spans(&full);
        assert!(spans.len() >= 3, "{name}");
        for (k, &(off, head, len)) in spans.iter().enumerate() {
            // At the boundary before packet k: a clean end.
            let (report, _) =
                decode_trace(name, full[..off].to_vec()).unwrap_or_else(|e| panic!("{name} cut at {off}: {e}"));
            assert_eq!(report.damage, None, "{name} cut at byte {off}");
            assert_eq!(report.packets, k as u64, "{name} cut at byte {off}");
            // Inside the header (after the tag: the length varint missing or cut), and inside
            // the payload.
            let mut cuts = vec![(off + 1, "stream ends after a packet tag")];
            if head > 2 {
                cuts.push((off + 2, "stream ends inside a varint"));
            }
            if len > 1 {
                cuts.push((off + head + len / 2, "but only"));
            }
            for (cut, what) in cuts {
                let (report, _) = decode_trace(name, full[..cut].to_vec()).unwrap();
                assert!(report.is_partial());
                let damage = report.damage.unwrap_or_else(|| panic!("{name} cut at {cut}: no damage"));
                let at = format!("truncated input: {name} at byte {off}, packet {k}: ");
                assert!(damage.starts_with(&at), "{name} cut at {cut}: {damage}");
                assert!(damage.contains(what), "{name} cut at {cut}: {damage}");
                checked += 1;
            }
        }
    }
    assert!(checked > 50, "{checked}");
}

/// `good` (an interning packet and one dump) followed by `bad` bytes, decoded as `name`: the
/// damage, which must name the file, the byte offset where `bad` starts and packet 2; the
/// dump before it must be kept.
fn damage_after(good: &[u8], name: &str, bad: &[u8]) -> String {
    let mut b = good.to_vec();
    b.extend_from_slice(bad);
    let (report, samples) = decode_trace(name, b).unwrap();
    let damage = report.damage.unwrap_or_else(|| panic!("{name}: no damage"));
    assert!(damage.contains(&format!("{name} at byte {}, packet 2: ", good.len())), "{damage}");
    assert_eq!(samples, [1], "{name}: the dump before it is kept");
    damage
}

/// A length that runs past the end of the file, or claims nearly 4 GiB, is refused before
/// anything is allocated, at the packet that claims it.
#[test]
fn packet_lengths_past_the_end_or_near_4_gib() {
    let good = trace(vec![interning(frames_and(vec![callstack(1, &[1, 2])])), dump(0, &[1])]);
    for (claim, what) in
        [(1000u64, "packet claims 1000 bytes but only 3 remain"), (u64::from(u32::MAX), "more than the limit")]
    {
        let mut bad = vec![0x0a];
        put_varint(&mut bad, claim);
        bad.extend_from_slice(&[1, 2, 3]);
        let damage = damage_after(&good, "claims.pftrace", &bad);
        assert!(damage.starts_with("truncated input: ") || damage.starts_with("limit exceeded: "), "{damage}");
        assert!(damage.contains(what), "{damage}");
    }
    // A length inside a packet (an InternedData field) that runs past the packet's end.
    let mut payload = vec![(12 << 3) | 2];
    put_varint(&mut payload, 50);
    payload.extend_from_slice(&[0; 5]);
    let damage = damage_after(&good, "inner.pftrace", &raw_packet(&payload));
    assert!(damage.starts_with("malformed input: "), "{damage}");
}

/// Wrong wire types, at the top level and inside a packet: damage at the packet, with the
/// field and wire type named.
#[test]
fn wrong_wire_types() {
    let (report, _) = decode_trace("wt.pftrace", vec![0x08, 0x01]).unwrap();
    assert_eq!(
        report.damage.as_deref(),
        Some(
            "malformed input: wt.pftrace at byte 0, packet 0: not a Perfetto trace: expected a packet (field 1, length-delimited), found field 1 with wire type 0"
        )
    );
    // profile_packet (37) as a varint.
    let good = trace(vec![interning(frames_and(vec![callstack(1, &[1])])), dump(0, &[1])]);
    let mut payload = Vec::new();
    put_varint(&mut payload, 37 << 3);
    payload.push(7);
    let damage = damage_after(&good, "wt2.pftrace", &raw_packet(&payload));
    assert!(damage.starts_with("malformed input: "), "{damage}");
}

/// Deep nesting: unknown groups nested 100,000 deep inside a packet (a recursion-limit error,
/// not a stack overflow), and compressed bundles inside compressed bundles (not expanded).
#[test]
fn deep_nesting() {
    let mut payload = Vec::new();
    for _ in 0..100_000 {
        put_varint(&mut payload, (1000 << 3) | 3);
    }
    let (report, _) = decode_trace("deep.pftrace", raw_packet(&payload)).unwrap();
    let damage = report.damage.unwrap();
    assert!(damage.starts_with("malformed input: deep.pftrace at byte 0, packet 0: "), "{damage}");

    // Bundles nested 40 deep, the innermost holding a whole dump.
    let mut inner = trace(vec![interning(frames_and(vec![callstack(1, &[1])])), dump(0, &[1])]);
    for _ in 0..40 {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut z, &inner).unwrap();
        inner = trace(vec![pb::TracePacket { compressed_packets: Some(z.finish().unwrap()), ..Default::default() }]);
    }
    let (report, samples) = decode_trace("nested.pftrace", inner).unwrap();
    assert_eq!(report.damage, None);
    assert!(samples.is_empty());
    assert_eq!(report.compressed_bundles, 1);
    assert!(report.problems.iter().any(|p| p.message == "nested compressed_packets ignored" && p.offset == Some(0)));
}

/// Interned ids: a callstack naming a frame that does not exist drops its samples (counted,
/// flagged `unresolved_samples`, reported at the chain's packet); a sample naming a callstack
/// that does not exist likewise; an id defined twice keeps one definition, deterministically.
#[test]
fn interned_ids_missing_and_duplicated() {
    let b = trace(vec![
        interning(frames_and(vec![callstack(1, &[1, 99]), callstack(2, &[1, 2]), callstack(2, &[3])])),
        dump(0, &[1, 2, 7]),
    ]);
    let (report, samples) = decode_trace("ids.pftrace", b.clone()).unwrap();
    assert_eq!(report.damage, None);
    assert_eq!(samples, [1], "only callstack 2 resolves");
    let d = &report.dumps[0];
    assert_eq!(d.flags.unresolved_samples, 2);
    assert_eq!(d.flags.data_loss(), ["unresolved_samples"]);
    let msgs: Vec<&str> = report.problems.iter().map(|p| p.message.as_str()).collect();
    assert!(msgs.contains(&"sequence 1: callstack 1 names frames that are not defined yet"), "{msgs:?}");
    assert!(
        msgs.contains(&"pid 42 heap libc.malloc: 2 sample(s) name callstacks that were never defined; dropped"),
        "{msgs:?}"
    );
    assert!(report.data_loss().contains(&"pid 42 heap libc.malloc dump 1: unresolved_samples".to_owned()));
    // The same bytes decode the same way every time.
    let again = decode_trace("ids.pftrace", b).unwrap();
    assert_eq!(format!("{:?}", again.0.problems), format!("{:?}", report.problems));
}

/// Callstacks whose frames never come stay pending; many of them across many dump chains
/// must not make decoding quadratic (each chain retried every pending callstack and made a
/// message for each).
#[test]
fn many_unresolvable_callstacks_across_many_chains_stay_fast() {
    let n = 20_000u64;
    let mut packets = vec![interning(frames_and((10..10 + n).map(|i| callstack(i, &[1, 500 + i])).collect()))];
    packets.extend((0..n).map(|i| dump(i, &[10])));
    let b = trace(packets);
    let start = Instant::now();
    let (report, samples) = decode_trace("pending.pftrace", b).unwrap();
    let took = start.elapsed();
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(samples.iter().all(|&s| s == 0), "nothing resolves");
    assert_eq!(report.dumps.len() as u64, n);
    assert!(report.dumps.iter().all(|d| d.flags.unresolved_samples == 1));
}

/// A packet on sequence 1 that adds frame `iid` (function `f1`) to the interned state.
fn one_more_frame(iid: u64) -> pb::TracePacket {
    pb::TracePacket {
        trusted_packet_sequence_id: Some(1),
        sequence_flags: Some(2),
        interned_data: Some(pb::InternedData {
            frames: vec![pb::Frame { iid: Some(iid), function_name_id: Some(1), ..Default::default() }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Pending callstacks are tried again only when a frame they lack comes: 10,000 of them, 64
/// frames deep, each lacking its own last frame, across 10,000 chains that each add one frame,
/// stay linear, whether the new frames complete no callstack or one each (which then
/// resolves: its dump's sample counts). Trying every pending callstack at every new frame
/// took minutes here; now it is the cost of 20,000 small dumps.
#[test]
fn pending_callstacks_wait_for_the_frame_they_lack() {
    let n = 10_000u64;
    let stack = |i: u64| -> Vec<u64> { (0..63).map(|k| 1 + k % 3).chain([500_000 + i]).collect() };
    for resolves in [false, true] {
        let mut packets = vec![interning(frames_and((0..n).map(|i| callstack(10 + i, &stack(i))).collect()))];
        for i in 0..n {
            packets.push(one_more_frame(if resolves { 500_000 + i } else { 900_000 + i }));
            packets.push(dump(i, &[10 + i]));
        }
        let start = Instant::now();
        let (report, samples) = decode_trace("pending.pftrace", trace(packets)).unwrap();
        let took = start.elapsed();
        assert!(took < Duration::from_secs(10), "resolves: {resolves}: {took:?}");
        assert_eq!(report.dumps.len() as u64, n);
        if resolves {
            assert!(samples.iter().all(|&s| s == 1), "every dump's callstack resolved");
            assert!(report.dumps.iter().all(|d| d.flags.unresolved_samples == 0));
        } else {
            assert!(samples.iter().all(|&s| s == 0), "nothing resolves");
            assert!(report.dumps.iter().all(|d| d.flags.unresolved_samples == 1));
        }
        // Each callstack is reported once, when first seen unresolved (with frames that
        // resolve, the first callstack's frame is there by the end of its chain); without,
        // each dump also reports its dropped sample. Only the first 200 problems are kept
        // (all about callstacks here), the rest counted.
        assert!(report.problems.iter().all(|p| p.message.contains("names frames that are not defined yet")));
        let all = report.problems.len() as u64 + report.problems_omitted;
        assert_eq!(all, if resolves { n - 1 } else { 2 * n }, "resolves: {resolves}");
    }
}

/// `prefix`, then `chunk` repeated to `total` bytes, gzip- or zlib-compressed as it is
/// written: a bomb of about `total` bytes from a small file.
fn bomb(prefix: &[u8], chunk: &[u8], total: usize, gzip: bool) -> Vec<u8> {
    use std::io::Write;
    fn fill(w: &mut impl Write, prefix: &[u8], chunk: &[u8], total: usize) {
        w.write_all(prefix).unwrap();
        let block: Vec<u8> = chunk.iter().copied().cycle().take(chunk.len() * ((1 << 20) / chunk.len())).collect();
        for _ in 0..total / block.len() {
            w.write_all(&block).unwrap();
        }
    }
    if gzip {
        let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        fill(&mut w, prefix, chunk, total);
        w.finish().unwrap()
    } else {
        let mut w = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        fill(&mut w, prefix, chunk, total);
        w.finish().unwrap()
    }
}

fn be32(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}

/// An hprof header (`JAVA PROFILE 1.0.2`, 4-byte ids).
fn hprof_header() -> Vec<u8> {
    let mut b = b"JAVA PROFILE 1.0.2\0".to_vec();
    b.extend(be32(4));
    b.extend([0u8; 8]);
    b
}

/// An hprof top-level record.
fn hprof_record(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut b = vec![tag];
    b.extend(be32(0));
    b.extend(be32(body.len() as u32));
    b.extend_from_slice(body);
    b
}

/// Decompression bombs and lengths near 4 GiB, each run by the binary with its address space
/// limited to 512 MiB: a clean exit with an error (or a partial result) naming the file, never
/// an abort or a kill.
#[test]
fn bombs_and_huge_lengths_under_a_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = |n: &str| dir.path().join(n).to_str().unwrap().to_owned();
    let out = path("out");

    // A compressed_packets bundle that expands to 1 GiB: stopped at the 256 MiB cap.
    let z = bomb(b"", &[0], 1 << 30, false);
    std::fs::write(
        path("zlib.pftrace"),
        trace(vec![pb::TracePacket { compressed_packets: Some(z), ..Default::default() }]),
    )
    .unwrap();
    let o = heapconv_limited(&["inspect", &path("zlib.pftrace")], HOSTILE_MEMORY);
    assert_clean_exit(&o, 3, "zlib bundle bomb, inspect");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("zlib.pftrace at byte 0, packet 0: compressed_packets: decompressed size exceeds the limit of 268435456 bytes"),
        "{text}"
    );
    let o = heapconv_limited(&["convert", &path("zlib.pftrace"), "-o", &out], HOSTILE_MEMORY);
    assert_clean_exit(&o, 1, "zlib bundle bomb, convert");

    // A gzip-compressed pprof that expands to 1 GiB of empty strings.
    let p = bomb(&[0x32, 0x00, 0x0a, 0x04, 0x08, 0x01, 0x10, 0x02], &[0x32, 0x00], 1 << 30, true);
    std::fs::write(path("bomb.pb.gz"), p).unwrap();
    for args in [vec!["merge", "BOMB", "-o", &out], vec!["convert", "BOMB", "--to", "folded", "-o", &out]] {
        let args: Vec<String> =
            args.iter().map(|a| if *a == "BOMB" { path("bomb.pb.gz") } else { a.to_string() }).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = heapconv_limited(&args, HOSTILE_MEMORY);
        assert_clean_exit(&o, 1, "pprof gzip bomb");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("limit exceeded: reading ") && err.contains("bomb.pb.gz: ran out of memory"), "{err}");
    }

    // A gzip-compressed DDM capture that expands to 1 GiB.
    std::fs::write(path("bomb.alloc.gz"), bomb(&[0x0f, 0x09, 0x08, 0x00], &[0], 1 << 30, true)).unwrap();
    let o = heapconv_limited(&["convert", &path("bomb.alloc.gz"), "--to", "folded", "-o", &out], HOSTILE_MEMORY);
    assert_clean_exit(&o, 1, "DDM gzip bomb");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("limit exceeded: reading ") && err.contains("bomb.alloc.gz: ran out of memory"), "{err}");

    // A gzip-compressed heap dump of 10 million tiny instances (170 MB): more objects than the
    // memory holds. Found by this test: the reader's vectors grew until the process aborted.
    let mut prefix = hprof_header();
    prefix.extend(hprof_record(0x01, &[0, 0, 0, 20, b'A']));
    prefix.extend(hprof_record(0x02, &[&be32(1)[..], &be32(0x100), &be32(0), &be32(20)].concat()));
    let n = 10_000_000u32;
    let mut class = vec![0x20];
    class.extend([be32(0x100), be32(0), be32(0), be32(0), be32(0), be32(0), be32(0), be32(0), be32(16)].concat());
    class.extend([0u8; 6]);
    prefix.push(0x0c);
    prefix.extend(be32(0));
    prefix.extend(be32(class.len() as u32 + n * 17));
    prefix.extend(&class);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    {
        use std::io::Write;
        gz.write_all(&prefix).unwrap();
        let mut block = Vec::with_capacity(17 << 16);
        for i in 0..n {
            block.push(0x21);
            block.extend([be32(0x1000 + i * 8), be32(0), be32(0x100), be32(0)].concat());
            if block.len() >= 17 << 16 {
                gz.write_all(&block).unwrap();
                block.clear();
            }
        }
        gz.write_all(&block).unwrap();
    }
    std::fs::write(path("objects.hprof.gz"), gz.finish().unwrap()).unwrap();
    for cmd in ["inspect", "convert"] {
        let o = heapconv_limited(
            &[cmd, &path("objects.hprof.gz"), "-o", &out][..if cmd == "inspect" { 2 } else { 4 }],
            HOSTILE_MEMORY,
        );
        assert_clean_exit(&o, 1, "hprof object bomb");
        let err = String::from_utf8_lossy(&o.stderr);
        // The error names the file, the sub-record and its byte, the record, then the limit.
        assert!(
            err.contains("heapconv: error: limit exceeded: ")
                && err.contains("objects.hprof.gz: sub-record 0x21 INSTANCE_DUMP at byte ")
                && err.contains(" in record 0x0C HEAP_DUMP at byte 70: "),
            "{err}"
        );
        assert!(err.contains(": out of memory holding ") && err.contains(" objects and 0 references"), "{err}");
    }

    // Lengths near 4 GiB: a trace packet, a heap-dump record, a primitive array.
    std::fs::write(path("huge.pftrace"), [0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]).unwrap();
    let o = heapconv_limited(&["inspect", &path("huge.pftrace")], HOSTILE_MEMORY);
    assert_clean_exit(&o, 3, "packet of 4 GiB");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("huge.pftrace at byte 0, packet 0: packet claims 4294967295 bytes")
    );
    let mut h = hprof_header();
    h.push(0x0c);
    h.extend(be32(0));
    h.extend(be32(u32::MAX));
    h.push(0x23);
    h.extend([be32(1), be32(0), be32(u32::MAX)].concat());
    h.push(11);
    h.extend([0u8; 100]);
    std::fs::write(path("huge.hprof"), &h).unwrap();
    let o = heapconv_limited(&["inspect", &path("huge.hprof")], HOSTILE_MEMORY);
    assert_clean_exit(&o, 3, "array of 2^32-1 longs");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("huge.hprof: sub-record 0x23 PRIMITIVE_ARRAY_DUMP at byte 40 needs 34359738374 bytes, past the end of record 0x0C HEAP_DUMP at byte 31"),
        "{text}"
    );
    let o = heapconv_limited(&["hprof-conv", &path("huge.hprof"), &path("huge.out.hprof")], HOSTILE_MEMORY);
    assert_clean_exit(&o, 1, "hprof-conv of an array of 2^32-1 longs");
    assert!(!dir.path().join("huge.out.hprof").exists(), "a failed run leaves no output");
}

/// `--strict` and the data-loss warnings judge the dumps a command converts: pid 42 is clean
/// in both chains, pid 43 lost data in its first dump only.
#[test]
fn strict_judges_the_dumps_converted_not_the_whole_trace() {
    use pb::profile_packet::{HeapSample, ProcessHeapSamples};
    let process = |pid: u64, index: u64, overran: bool| ProcessHeapSamples {
        pid: Some(pid),
        heap_name: Some("libc.malloc".into()),
        timestamp: Some(1000 + index),
        samples: vec![HeapSample {
            callstack_id: Some(10),
            self_allocated: Some(100),
            alloc_count: Some(1),
            ..Default::default()
        }],
        buffer_overran: Some(overran),
        ..Default::default()
    };
    let chain = |index: u64| pb::TracePacket {
        trusted_packet_sequence_id: Some(1),
        sequence_flags: Some(2),
        profile_packet: Some(pb::ProfilePacket {
            process_dumps: vec![process(42, index, false), process(43, index, index == 0)],
            continued: Some(false),
            index: Some(index),
            ..Default::default()
        }),
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("two.pftrace");
    std::fs::write(&t, trace(vec![interning(frames_and(vec![callstack(10, &[1, 2])])), chain(0), chain(1)])).unwrap();
    let t = t.to_str().unwrap();
    let out = format!("{}/", dir.path().join("out").to_str().unwrap());
    let run = |args: &[&str], code: i32| {
        let mut all = vec!["convert", t, "--strict", "-o", &out];
        all.extend_from_slice(args);
        stderr_of(&heapconv_ok(&all, code))
    };
    // The last dumps (the default) lost nothing; pid 43's first dump did.
    let err = run(&[], 0);
    assert!(!err.contains("buffer_overran"), "{err}");
    let err = run(&["--dump", "1"], 6);
    assert!(err.contains("--strict: data lost: pid 43 heap libc.malloc dump 1: buffer_overran"), "{err}");
    assert!(!err.contains("pid 42 heap"), "{err}");
    // Pid 42's first dump, beside pid 43's lossy one: clean, no warning about pid 43.
    let err = run(&["--dump", "1", "--pid", "42"], 0);
    assert!(!err.contains("pid 43"), "{err}");
    // Every dump of pid 43 (`profile`): its first dump's loss counts.
    let err = stderr_of(&heapconv_ok(&["profile", t, "--pid", "43", "--strict", "-o", &out], 6));
    assert!(err.contains("--strict: data lost: pid 43 heap libc.malloc dump 1: buffer_overran"), "{err}");
    let err = stderr_of(&heapconv_ok(&["profile", t, "--pid", "42", "--strict", "-o", &out], 0));
    assert!(!err.contains("pid 43"), "{err}");
    // merge, diff and top judge the dumps they take from each trace the same way.
    let merged = format!("{out}m.pb.gz");
    heapconv_ok(&["merge", t, t, "--strict", "-o", &merged], 0);
    let err = stderr_of(&heapconv_ok(&["merge", t, "--dump", "1", "--strict", "-o", &merged], 6));
    assert!(err.contains("two.pftrace: pid 43 heap libc.malloc dump 1: buffer_overran"), "{err}");
    heapconv_ok(&["merge", t, "--dump", "1", "--pid", "42", "--strict", "-o", &merged], 0);
    heapconv_ok(&["top", t, "--dump", "1", "--pid", "42", "--strict"], 0);
    heapconv_ok(&["top", t, "--dump", "1", "--pid", "43", "--strict"], 6);
    heapconv_ok(&["diff", t, t, "--strict", "-o", &format!("{out}d.pb.gz")], 0);
    // And batches (a directory of traces): their summaries list what was lost of those dumps.
    let batch = dir.path().join("batch");
    std::fs::create_dir(&batch).unwrap();
    std::fs::copy(t, batch.join("two.pftrace")).unwrap();
    let b = batch.to_str().unwrap();
    let summary = dir.path().join("s.json");
    for (pid, code, lost) in [("42", 0, 0), ("43", 6, 1)] {
        let bout = format!("{out}batch-{pid}/");
        let args = [
            "convert",
            b,
            "--dump",
            "1",
            "--pid",
            pid,
            "--strict",
            "-o",
            &bout,
            "--summary-json",
            summary.to_str().unwrap(),
        ];
        heapconv_ok(&args, code);
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
        let input = &doc["results"][0];
        assert_eq!(input["data_loss"].as_array().map_or(0, |a| a.len()), lost, "pid {pid}: {input}");
        let args = ["profile", b, "--pid", pid, "--strict", "-o", &format!("{bout}p/")];
        heapconv_ok(&args, code);
    }
}

/// `--strict`: what a trace says about lost data fails the run with exit code 6 (0 or 3
/// without it), outputs written all the same; a failed gate still wins; clean inputs pass.
#[test]
fn strict_fails_runs_whose_input_lost_data() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_owned();
    let loss = data("data_loss.pftrace");
    let loss = loss.to_str().unwrap();
    let clean = data("heaps_and_procs.pftrace");
    let clean = clean.to_str().unwrap();

    // convert: data-loss flags alone are exit 0, and 6 with --strict.
    heapconv_ok(&["convert", loss, "--pid", "13", "--to", "folded", "-o", &p("a.folded")], 0);
    let o = heapconv_ok(&["convert", loss, "--pid", "13", "--to", "folded", "-o", &p("b.folded"), "--strict"], 6);
    let err = stderr_of(&o);
    assert!(
        err.contains("heapconv: error: --strict: data lost: pid 13 heap libc.malloc dump 1: buffer_corrupted, hit_guardrail, missing_packets"),
        "{err}"
    );
    assert!(err.contains("--strict: data lost: sequence 3: 1 packet(s) flagged previous_packet_dropped, 3 ProfilePacket(s) missing (index gaps)"), "{err}");
    assert_eq!(std::fs::read(p("a.folded")).unwrap(), std::fs::read(p("b.folded")).unwrap(), "the output is written");
    heapconv_ok(&["convert", clean, "--pid", "20", "--to", "folded", "-o", &p("c.folded"), "--strict"], 0);

    // profile of a trace cut inside a dump chain: 3 without --strict, 6 with it.
    let cut = data("continuous_recycle.trunc-midchain.pftrace");
    let o = heapconv_ok(&["profile", cut.to_str().unwrap(), "-o", &p("prof"), "--strict"], 6);
    assert!(stderr_of(&o).contains("--strict: data lost: 1 dump(s) never finished"));
    assert_eq!(file_names(&dir.path().join("prof")).len(), 3);

    // An incomplete heap graph: hprof exits 3, and 6 with --strict.
    let graph = data("heapgraph/incomplete.pftrace");
    let graph = graph.to_str().unwrap();
    heapconv_ok(&["hprof", graph, "-o", &p("hp/")], 3);
    let o = heapconv_ok(&["hprof", graph, "-o", &p("hp2/"), "--strict"], 6);
    assert!(stderr_of(&o).contains("incomplete"), "{}", stderr_of(&o));
    heapconv_ok(&["profile", graph, "--java-heap", "-o", &p("jh"), "--strict"], 6);

    // merge, diff, top, timeline, symbolize.
    heapconv_ok(&["merge", loss, "--pid", "13", "-o", &p("m.pb.gz"), "--strict"], 6);
    heapconv_ok(&["merge", clean, "--pid", "20", "-o", &p("m2.pb.gz"), "--strict"], 0);
    heapconv_ok(&["diff", loss, loss, "--pid", "13", "-o", &p("d.pb.gz"), "--strict"], 6);
    heapconv_ok(&["top", loss, "--pid", "13", "--strict"], 6);
    heapconv_ok(&["timeline", loss, "-o", &p("t.csv"), "--strict"], 6);
    heapconv_ok(&["timeline", loss, "-o", &p("t.csv")], 0);
    let sym = root().join("symbols");
    heapconv_ok(&["symbolize", loss, "--symbol-dir", sym.to_str().unwrap(), "-o", &p("s.pftrace"), "--strict"], 6);
    // A failed coverage gate wins over --strict.
    heapconv_ok(
        &[
            "convert",
            loss,
            "--pid",
            "13",
            "--to",
            "folded",
            "-o",
            &p("e.folded"),
            "--symbol-dir",
            sym.to_str().unwrap(),
            "--min-symbolized",
            "100",
            "--strict",
        ],
        4,
    );

    // A batch: the worst input decides, the summary says why.
    let o = heapconv_ok(
        &[
            "convert",
            loss,
            clean,
            "--batch",
            "-o",
            &p("batch"),
            "--summary-json",
            &p("sum.json"),
            "--strict",
            "--summary-no-times",
        ],
        6,
    );
    assert!(stderr_of(&o).contains(
        ": --strict: data lost: pid 12 heap libc.malloc dump 1: disconnected, buffer_overran, missing_packets"
    ));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(p("sum.json")).unwrap()).unwrap();
    assert_eq!(
        (v["outcome"].as_str(), v["exit_code"].as_u64(), v["data_loss"].as_u64()),
        (Some("data-loss"), Some(6), Some(1))
    );
    let r = v["results"].as_array().unwrap();
    // (Six: the first dump of pid 10 is not converted, only its last.)
    assert_eq!(r.iter().map(|r| r["data_loss"].as_array().unwrap().len()).collect::<Vec<_>>(), [6, 0]);
    heapconv_ok(&["convert", loss, clean, "--batch", "-o", &p("batch2")], 0);

    // hprof-conv: a clean dump passes.
    heapconv_ok(&["hprof", &data("heapgraph/cleaner.pftrace").to_string_lossy(), "--android", "-o", &p("a.hprof")], 0);
    heapconv_ok(&["hprof-conv", &p("a.hprof"), &p("b.hprof"), "--strict"], 0);
}

/// Nothing lost: every command refuses an output that is one of its inputs (by name, through
/// a symlink, or as a hard link), leaves the input as it was and no temporary file behind.
#[test]
fn every_command_refuses_to_overwrite_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_owned();
    std::fs::copy(data("heaps_and_procs.pftrace"), p("t.pftrace")).unwrap();
    std::fs::copy(data("views/views.pftrace"), p("v.pftrace")).unwrap();
    std::fs::copy(data("heapgraph/cleaner.pftrace"), p("g.pftrace")).unwrap();
    heapconv_ok(&["hprof", &p("g.pftrace"), "--android", "-o", &p("a.hprof")], 0);
    std::os::unix::fs::symlink(p("t.pftrace"), p("link.pftrace")).unwrap();
    std::fs::hard_link(p("t.pftrace"), p("hard.pftrace")).unwrap();
    let sym = root().join("symbols").to_str().unwrap().to_owned();
    let before: Vec<Vec<u8>> =
        ["t.pftrace", "v.pftrace", "g.pftrace", "a.hprof"].iter().map(|n| std::fs::read(p(n)).unwrap()).collect();
    let listing = file_names(dir.path());
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec![
                "convert".into(),
                p("t.pftrace"),
                "--pid".into(),
                "20".into(),
                "--to".into(),
                "folded".into(),
                "-o".into(),
                p("t.pftrace"),
            ],
            p("t.pftrace"),
        ),
        (
            vec!["convert".into(), p("t.pftrace"), "--pid".into(), "20".into(), "-o".into(), p("link.pftrace")],
            p("link.pftrace"),
        ),
        (
            vec!["convert".into(), p("t.pftrace"), "--pid".into(), "20".into(), "-o".into(), p("hard.pftrace")],
            p("hard.pftrace"),
        ),
        (
            vec![
                "convert".into(),
                p("v.pftrace"),
                "--view".into(),
                "peak".into(),
                "--pid".into(),
                "20".into(),
                "--to".into(),
                "folded".into(),
                "-o".into(),
                p("v.pftrace"),
            ],
            p("v.pftrace"),
        ),
        (
            vec!["merge".into(), p("t.pftrace"), "--pid".into(), "20".into(), "-o".into(), p("t.pftrace")],
            p("t.pftrace"),
        ),
        (
            vec![
                "diff".into(),
                p("v.pftrace"),
                p("t.pftrace"),
                "--pid".into(),
                "20".into(),
                "--sample-types".into(),
                "unreleased-size".into(),
                "-o".into(),
                p("t.pftrace"),
            ],
            p("t.pftrace"),
        ),
        (vec!["timeline".into(), p("v.pftrace"), "-o".into(), p("v.pftrace")], p("v.pftrace")),
        (vec!["hprof".into(), p("g.pftrace"), "-o".into(), p("g.pftrace")], p("g.pftrace")),
        (vec!["hprof-conv".into(), p("a.hprof"), p("a.hprof")], p("a.hprof")),
        (
            vec!["symbolize".into(), p("t.pftrace"), "--symbol-dir".into(), sym.clone(), "-o".into(), p("t.pftrace")],
            p("t.pftrace"),
        ),
        (
            vec![
                "convert".into(),
                p("t.pftrace"),
                "--batch".into(),
                "-o".into(),
                p("out"),
                "--summary-json".into(),
                p("t.pftrace"),
            ],
            p("t.pftrace"),
        ),
    ];
    for (args, target) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = heapconv(&args);
        let err = stderr_of(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(&format!("refusing to write {target}: it is an input")), "{args:?}: {err}");
    }
    let after: Vec<Vec<u8>> =
        ["t.pftrace", "v.pftrace", "g.pftrace", "a.hprof"].iter().map(|n| std::fs::read(p(n)).unwrap()).collect();
    assert!(before == after, "an input changed");
    let mut now = file_names(dir.path());
    now.retain(|n| n != "out");
    assert_eq!(now, listing, "no temporary or partial file is left");
    // A batch whose output directory holds an input under an output's name.
    heapconv_ok(&["hprof-conv", &p("a.hprof"), "-o", dir.path().to_str().unwrap()], 1);
    assert_eq!(std::fs::read(p("a.hprof")).unwrap(), before[3]);
}

/// A failed run leaves no half-written output, and an output that existed stays as it was.
#[test]
fn failed_runs_leave_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_owned();
    std::fs::write(p("bad.pb"), [0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x12, 0xff, 0xff, 0xff, 0xff, 0x0f]).unwrap();
    std::fs::write(p("old.pb.gz"), b"previous").unwrap();
    let good = data("heaps_and_procs.pftrace");
    let o = heapconv(&["merge", good.to_str().unwrap(), &p("bad.pb"), "--pid", "20", "-o", &p("old.pb.gz")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr_of(&o));
    assert!(
        stderr_of(&o)
            .contains("bad.pb: not a valid pprof profile: a sample of 4294967295 bytes runs past the end at byte 6")
    );
    assert_eq!(std::fs::read(p("old.pb.gz")).unwrap(), b"previous");
    let o = heapconv(&["convert", &p("bad.pb"), "--to", "svg", "-o", &p("new.svg")]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(file_names(dir.path()), ["bad.pb", "old.pb.gz"]);
}

/// `heapconv symbolize sym_basic` with `dirs` as symbol directories, run as `uid` when given:
/// the exit status, the JSON report and standard error.
fn symbolize_run(dirs: &[&std::path::Path], uid: Option<u32>) -> (Option<i32>, serde_json::Value, String) {
    use std::os::unix::process::CommandExt;
    let out = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_heapconv"));
    cmd.arg("symbolize").arg(data("symbolize/sym_basic.pftrace")).arg("-o").arg(out.path().join("s")).arg("--json");
    for d in dirs {
        cmd.arg("--symbol-dir").arg(d);
    }
    cmd.env_remove("PERFETTO_BINARY_PATH");
    if let Some(uid) = uid {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(out.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        cmd.uid(uid).gid(uid);
    }
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    (o.status.code(), serde_json::from_str(&err).unwrap_or(serde_json::Value::Null), err)
}

fn mapping<'a>(report: &'a serde_json::Value, path: &str) -> &'a serde_json::Value {
    report["mappings"].as_array().unwrap().iter().find(|m| m["path"] == path).unwrap()
}

/// A `.gnu_debuglink` naming `../gadget.so.debug` (or any path, not a file name) is refused:
/// heapconv does not stat or CRC files outside the symbol directories. Before the fix the
/// debug file beside the symbol directory was found and used.
#[test]
fn debuglink_names_with_a_path_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let syms = tmp.path().join("syms");
    std::fs::create_dir(&syms).unwrap();
    let mut bin = std::fs::read(root().join("symbols/libgadget.so")).unwrap();
    let at = bin.windows(18).position(|w| w == b"libgadget.so.debug").unwrap();
    assert_eq!(at, 0x5110, "the name in .gnu_debuglink");
    bin[at..at + 18].copy_from_slice(b"../gadget.so.debug");
    std::fs::write(syms.join("libgadget.so"), &bin).unwrap();
    // The real debug file (right CRC, right build id), outside the symbol directory.
    std::fs::copy(root().join("symbols/.debug/libgadget.so.debug"), tmp.path().join("gadget.so.debug")).unwrap();
    let (code, report, err) = symbolize_run(&[&syms], None);
    assert_eq!(code, Some(0), "{err}");
    let g = mapping(&report, "/system/lib64/libgadget.so");
    assert_ne!(g["outcome"], "symbolized", "{g}");
    let tried: Vec<&str> = g["tried"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(
        tried.iter().any(|t| t
            .ends_with("libgadget.so: .gnu_debuglink name \"../gadget.so.debug\" refused (not a single file name)")),
        "{tried:?}"
    );
    assert!(!tried.iter().any(|t| t.contains("gadget.so.debug (debuglink)")), "{tried:?}");
    // With the name as written by the linker the same layout works (the file is then inside).
    std::fs::copy(root().join("symbols/libgadget.so"), syms.join("libgadget.so")).unwrap();
    std::fs::copy(root().join("symbols/.debug/libgadget.so.debug"), syms.join("libgadget.so.debug")).unwrap();
    let (_, report, _) = symbolize_run(&[&syms], None);
    assert_eq!(mapping(&report, "/system/lib64/libgadget.so")["outcome"], "symbolized");
}

/// ELF files with bogus headers in a symbol directory: section headers past the end, a huge
/// section count, a program-header table past the end, a wrong class, only the ELF header.
/// Each is read without a panic, yields no symbols, and the run goes on (exit 0).
#[test]
fn elf_files_with_bogus_headers() {
    let good = std::fs::read(root().join("symbols/libwidget.so")).unwrap();
    let set = |b: &mut Vec<u8>, at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
    let mut variants: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut b = good.clone();
    set(&mut b, 0x28, &u64::MAX.to_le_bytes()); // e_shoff
    variants.push(("e_shoff past the end", b));
    let mut b = good.clone();
    set(&mut b, 0x3c, &0xffffu16.to_le_bytes()); // e_shnum
    variants.push(("e_shnum 65535", b));
    let mut b = good.clone();
    set(&mut b, 0x20, &(1u64 << 40).to_le_bytes()); // e_phoff
    variants.push(("e_phoff past the end", b));
    let mut b = good.clone();
    b[4] = 7; // EI_CLASS
    variants.push(("EI_CLASS 7", b));
    variants.push(("header only", good[..64].to_vec()));
    let mut b = good.clone();
    set(&mut b, 0x3a, &0x0001u16.to_le_bytes()); // e_shentsize 1
    variants.push(("e_shentsize 1", b));
    for (what, bytes) in variants {
        let r = std::panic::catch_unwind(|| heapconv::symbolize::elf::elf_info_from_bytes(&bytes));
        assert!(r.is_ok(), "{what}: panic");
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("libwidget.so"), &bytes).unwrap();
        let lines = heapconv::symbolize::symbolize_addresses(&tmp.path().join("libwidget.so"), &[0x1150]);
        let start = Instant::now();
        let (code, report, err) = symbolize_run(&[tmp.path()], None);
        assert!(start.elapsed() < Duration::from_secs(20), "{what}: too slow");
        assert_eq!(code, Some(0), "{what}: {err}");
        let w = mapping(&report, "/data/app/com.example-1/lib/arm64/libwidget.so");
        if w["outcome"] == "symbolized" {
            // Only a header field the symbolizer does not need was broken.
            assert!(what == "e_phoff past the end" || !lines[0].is_empty(), "{what}: {w}");
        } else {
            assert_eq!(w["symbolized"], 0, "{what}");
        }
    }
}

/// Symbol directories holding a symlink loop, a broken symlink, a named pipe and a directory
/// under a library's name, and files the user cannot read: indexing ends, says what it
/// skipped, never blocks on the pipe, and the run goes on.
#[test]
fn symbol_directories_with_loops_pipes_and_unreadable_files() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(".", d.join("self")).unwrap();
    std::os::unix::fs::symlink("nowhere.so", d.join("broken.so")).unwrap();
    let fifo = std::ffi::CString::new(d.join("libwidget.so").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    std::fs::create_dir(d.join("libgadget.so")).unwrap();
    let locked = d.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::copy(root().join("symbols/app-pie"), locked.join("app-pie")).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let unreadable = d.join("libunreadable.so");
    std::fs::copy(root().join("symbols/libwidget.so"), &unreadable).unwrap();
    std::fs::set_permissions(&unreadable, std::fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads anything: run as nobody then, so that "unreadable" means it.
    let uid = (unsafe { libc::geteuid() } == 0).then_some(65534);
    let start = Instant::now();
    let (code, report, err) = symbolize_run(&[d], uid);
    assert!(start.elapsed() < Duration::from_secs(20), "blocked");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(code, Some(0), "{err}");
    let problems: Vec<&str> = report["problems"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    let has = |s: &str| problems.iter().any(|p| p.contains(s));
    assert!(has("self: already visited (symlink loop or alias); skipped"), "{problems:?}");
    assert!(has("broken.so: broken link or unreadable"), "{problems:?}");
    assert!(has("locked: Permission denied"), "{problems:?}");
    for m in ["/data/app/com.example-1/lib/arm64/libwidget.so", "/system/lib64/libgadget.so"] {
        assert_eq!(mapping(&report, m)["symbolized"], 0, "{m}");
    }
    assert_eq!(report["indexed_files"], 0, "the unreadable file is not indexed");
}

/// Cyclic ids: a heap graph whose types are their own superclasses (directly and through
/// another type), and an hprof dump whose classes are: every walk up the superclass chain ends
/// and the run converts (hprof, flame graph, top report); the hprof reader says the instances'
/// layouts could not be resolved (exit 3).
#[test]
fn cyclic_superclasses_end() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_owned();
    let ty = |id: u64, name: &str, sup: u64, fields: &[u64]| pb::HeapGraphType {
        id: Some(id),
        class_name: Some(name.as_bytes().to_vec()),
        object_size: Some(16),
        superclass_id: Some(sup),
        reference_field_id: fields.to_vec(),
        ..Default::default()
    };
    let obj = |id: u64, ty: u64, refs: &[u64]| pb::HeapGraphObject {
        id: Some(id),
        type_id: Some(ty),
        self_size: Some(16),
        reference_object_id: refs.to_vec(),
        ..Default::default()
    };
    let graph = pb::HeapGraph {
        pid: Some(7),
        types: vec![ty(1, "A", 2, &[1]), ty(2, "B", 1, &[2]), ty(3, "C", 3, &[3])],
        field_names: vec![string(1, "A.a"), string(2, "B.b"), string(3, "C.c")],
        objects: vec![obj(0x10, 1, &[0x20, 0x30, 0x10]), obj(0x20, 2, &[0x10]), obj(0x30, 3, &[0x30, 0x10])],
        roots: vec![pb::HeapGraphRoot { object_ids: vec![0x10], root_type: Some(1) }],
        continued: Some(false),
        index: Some(0),
        ..Default::default()
    };
    let t = trace(vec![pb::TracePacket {
        trusted_packet_sequence_id: Some(1),
        timestamp: Some(5),
        heap_graph: Some(graph),
        ..Default::default()
    }]);
    std::fs::write(p("cycle.pftrace"), t).unwrap();
    for args in [
        vec!["hprof", "IN", "-o", "OUT.hprof"],
        vec!["hprof", "IN", "--android", "-o", "OUT.android.hprof"],
        vec!["profile", "IN", "--java-heap", "-o", "OUT"],
        vec!["inspect", "IN"],
    ] {
        let args: Vec<String> =
            args.iter().map(|a| a.replace("IN", &p("cycle.pftrace")).replace("OUT", &p("out"))).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = heapconv_limited(&args, HOSTILE_MEMORY);
        assert_clean_exit(&o, 0, &format!("{args:?}"));
    }
    let o = heapconv_ok(&["inspect", &p("cycle.pftrace")], 0);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("2 superclass chain(s) loop back on themselves; each is cut where it repeats"), "{text}");
    // The hprof written from the cyclic graph reads back and converts.
    for args in [
        vec!["inspect", "OUT.hprof"],
        vec!["convert", "OUT.hprof", "--to", "folded", "-o", "OUT.folded"],
        vec!["convert", "OUT.hprof", "--to", "json", "-o", "OUT.json"],
        vec!["hprof-conv", "OUT.android.hprof", "OUT.conv.hprof"],
    ] {
        let args: Vec<String> = args.iter().map(|a| a.replace("OUT", &p("out"))).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = heapconv_limited(&args, HOSTILE_MEMORY);
        assert!(matches!(o.status.code(), Some(0 | 3)), "{args:?}: {}", stderr_of(&o));
        assert_clean_exit(&o, o.status.code().unwrap(), &format!("{args:?}"));
    }

    // An hprof dump: class 0x100 extends 0x200 extends 0x100; 0x300 extends itself; an
    // instance of each, rooted.
    let mut h = hprof_header();
    for (sid, s) in [(10u32, "a"), (11, "b"), (12, "c"), (20, "A"), (21, "B"), (22, "C")] {
        h.extend(hprof_record(0x01, &[&be32(sid)[..], s.as_bytes()].concat()));
    }
    for (serial, (cid, sid)) in [(0x100u32, 20u32), (0x200, 21), (0x300, 22)].into_iter().enumerate() {
        h.extend(hprof_record(0x02, &[be32(serial as u32 + 1), be32(cid), be32(0), be32(sid)].concat()));
    }
    let class = |cid: u32, sup: u32, field: u32| {
        let mut b = vec![0x20];
        b.extend([be32(cid), be32(0), be32(sup), be32(0), be32(0), be32(0), be32(0), be32(0), be32(4)].concat());
        b.extend([0, 0, 0, 0, 0, 1]);
        b.extend(be32(field));
        b.push(2); // an object field
        b
    };
    let inst = |oid: u32, cid: u32, r: u32| {
        let mut b = vec![0x21];
        b.extend([be32(oid), be32(0), be32(cid), be32(4), be32(r)].concat());
        b
    };
    let mut body = [class(0x100, 0x200, 10), class(0x200, 0x100, 11), class(0x300, 0x300, 12)].concat();
    body.extend([inst(0x1000, 0x100, 0x2000), inst(0x2000, 0x200, 0x3000), inst(0x3000, 0x300, 0x1000)].concat());
    for r in [0x1000u32, 0x3000] {
        body.push(0xff);
        body.extend(be32(r));
    }
    h.extend(hprof_record(0x0c, &body));
    h.extend(hprof_record(0x2c, &[]));
    std::fs::write(p("cycle.hprof"), &h).unwrap();
    let o = heapconv_limited(&["inspect", &p("cycle.hprof")], HOSTILE_MEMORY);
    assert_clean_exit(&o, 3, "inspect of an hprof with cyclic superclasses");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("3 instance(s) whose class or a superclass has no CLASS_DUMP"), "{text}");
    assert!(text.contains("3 class(es) whose superclass chain loops back on itself"), "{text}");
    for to in ["folded", "json", "svg"] {
        let o =
            heapconv_limited(&["convert", &p("cycle.hprof"), "--to", to, "-o", &p(&format!("c.{to}"))], HOSTILE_MEMORY);
        assert_clean_exit(&o, 3, to);
    }
}

/// An incomplete heap graph or a heap dump cut short is data loss like heapprofd's flags: in
/// the pprof comments (with the reason), the SVG subtitle and the JSON summary.
#[test]
fn incomplete_heap_dumps_are_flagged_in_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_str().unwrap().to_owned();
    // Written, and the run is partial (exit code 3).
    heapconv_ok(&["profile", data("heapgraph/incomplete.pftrace").to_str().unwrap(), "--java-heap", "-o", &p("jh")], 3);
    let prof = read_pprof(&dir.path().join("jh/java_heap_dump.1.41.pb.gz"));
    let comments: Vec<&str> = prof.comment.iter().map(|&i| prof.string_table[i as usize].as_str()).collect();
    assert!(comments.contains(&"data loss: incomplete"), "{comments:?}");
    assert!(comments.contains(&"incomplete heap dump: packets missing between index 0 and 2"), "{comments:?}");

    heapconv_ok(&["hprof", data("heapgraph/cleaner.pftrace").to_str().unwrap(), "-o", &p("full.hprof")], 0);
    let full = std::fs::read(p("full.hprof")).unwrap();
    std::fs::write(p("cut.hprof"), &full[..1000]).unwrap();
    heapconv_ok(&["convert", &p("cut.hprof"), "--to", "svg", "-o", &p("cut.svg")], 3);
    let svg = std::fs::read_to_string(p("cut.svg")).unwrap();
    assert!(svg.contains("DATA LOSS: incomplete"), "{svg}");
    let o = heapconv_ok(&["convert", &p("cut.hprof"), "--to", "pprof", "-o", &p("cut.pb.gz"), "--strict"], 6);
    assert!(stderr_of(&o).contains("--strict: data lost: input damaged: truncated input: "), "{}", stderr_of(&o));
    let prof = read_pprof(&dir.path().join("cut.pb.gz"));
    let comments: Vec<&str> = prof.comment.iter().map(|&i| prof.string_table[i as usize].as_str()).collect();
    assert!(
        comments.iter().any(|c| c.starts_with("incomplete heap dump: truncated input: ")
            && c.contains("cut.hprof: the file ends at byte 1000")),
        "{comments:?}"
    );
}

/// A heap graph whose 20,000 types each extend the previous one and declare a field: the
/// names of references were looked up along the whole chain for every class (minutes); now
/// as far as the instances need. Duplicated type ids are reported.
#[test]
fn long_superclass_chains_and_duplicated_types_in_heap_graphs() {
    let n = 20_000u64;
    let ty = |id: u64| pb::HeapGraphType {
        id: Some(id),
        class_name: Some(format!("C{id}").into_bytes()),
        object_size: Some(16),
        superclass_id: Some(id - 1),
        reference_field_id: vec![1],
        ..Default::default()
    };
    let obj = |id: u64, ty: u64, refs: &[u64]| pb::HeapGraphObject {
        id: Some(id),
        type_id: Some(ty),
        self_size: Some(16),
        reference_object_id: refs.to_vec(),
        ..Default::default()
    };
    let mut types: Vec<pb::HeapGraphType> = (1..=n).map(ty).collect();
    types.push(ty(n)); // defined twice
    let graph = pb::HeapGraph {
        pid: Some(7),
        types,
        field_names: vec![string(1, "C.next")],
        // Each object points at the next; the last one's two references take the first two
        // names of its chain.
        objects: (1..=n)
            .map(|i| obj(0x1000 + i, i, &if i < n { vec![0x1000 + i + 1] } else { vec![0x1001, 0x1002] }))
            .collect(),
        roots: vec![pb::HeapGraphRoot { object_ids: vec![0x1001], root_type: Some(1) }],
        continued: Some(false),
        index: Some(0),
        ..Default::default()
    };
    let t = trace(vec![pb::TracePacket {
        trusted_packet_sequence_id: Some(1),
        timestamp: Some(5),
        heap_graph: Some(graph),
        ..Default::default()
    }]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("chain.pftrace");
    std::fs::write(&p, t).unwrap();
    let start = Instant::now();
    let o = heapconv_ok(&["inspect", p.to_str().unwrap()], 0);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("1 type id(s) defined twice; the last definition is kept"), "{text}");
    // Dominators and retained sizes along the chain (a profile of it would hold every path
    // from the root: 20,000 stacks of up to 20,000 frames).
    let o = heapconv_ok(&["top", p.to_str().unwrap(), "--java-heap", "-n", "1"], 0);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("20000 objects, 20000 reachable from 1 roots"), "{text}");
    assert!(text.contains("312 KiB 100.00%") && text.contains("  C1\n"), "C1 retains everything: {text}");
    let took = start.elapsed();
    assert!(took < Duration::from_secs(10), "{took:?}");
}
