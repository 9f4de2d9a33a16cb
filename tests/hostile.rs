//! Hostile inputs, in-process: every fixture mutated in many deterministic ways (bit flips,
//! truncations, bytes inserted and deleted, length prefixes set near 4 GiB) must give a result
//! or an error, never a panic, and within bounded time. The same for ELF parsing of mutated
//! binaries. (Coverage-guided fuzzing is the hardening issue's; this keeps every test run honest.)

mod common;

use std::time::{Duration, Instant};

use common::*;
use heapconv::decode::Input;
use heapconv::decode::perfetto::{DecodeOptions, decode_heapprofd};

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut b = base.to_vec();
    for _ in 0..1 + rng.below(4) {
        if b.is_empty() {
            break;
        }
        let i = rng.below(b.len());
        match rng.below(6) {
            0 => b[i] ^= 1 << rng.below(8),
            1 => b[i] = rng.next() as u8,
            2 => b.truncate(i),
            3 => {
                b.remove(i);
            }
            4 => b.insert(i, rng.next() as u8),
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
    assert!(lines[0].iter().all(|l| l.2.is_empty() && l.3 == 0), "{:?}", lines[0]);
    assert_eq!(lines[0], lines[2]);
    assert_eq!(lines[1], alone[0]);
    assert_eq!(lines[1][0].0, "deregister_tm_clones");
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
            .map(|l| l.first().map(|l| l.0.clone()))
            .collect();
    assert_eq!(names, [Some("low".to_owned()), None, Some("wraps".to_owned()), Some("wraps".to_owned())]);
}
