//! Folded stacks and flame graphs of a trace's dumps are made from the callstacks' frame lists,
//! without the stack tree (issue 15): the bytes must be those of the stack-tree path
//! ([`select_profiles`] + [`encode_one`]), for every dump selection, on traces with several
//! processes and dumps, continuous dumps with recycled callstacks, interning spread over a
//! chain, and the old inline (Android Q) layout.

use std::path::Path;

use heapconv::pipeline::convert::{ConvertOptions, encode_one, run_convert, select_profiles};
use heapconv::pipeline::select::ConvertCommon;
use heapconv::pipeline::{Destination, DumpSelect, Format, Selection};

use crate::common::*;

/// The outputs `run_convert` writes for `opts` into a fresh directory, by file name, with the
/// bytes the stack-tree path gives each selected profile under the same name.
fn both_paths(input: &Path, opts: &ConvertOptions) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let (profiles, _, _) = select_profiles(input, opts).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = run_convert(input, &Destination::Dir(out.clone()), opts).unwrap();
    assert_eq!(run.outputs.len(), profiles.len(), "{}", input.display());
    let mut got = Vec::new();
    for (n, p) in profiles.iter().enumerate() {
        let name = heapconv::pipeline::select::heap_dump_name(n + 1, p, opts.common.format.extension());
        let fast = std::fs::read(out.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let tree = encode_one(p, opts).unwrap();
        got.push((name, fast, tree));
    }
    got
}

fn check(input: &Path, pids: &[u64], annotations: bool) -> usize {
    let mut compared = 0;
    for format in [Format::Folded, Format::Svg] {
        for dump in [DumpSelect::Last, DumpSelect::All, DumpSelect::Nth(1), DumpSelect::Nth(2)] {
            let select = Selection { pids: pids.to_vec(), dump, ..Default::default() };
            let opts = ConvertOptions {
                common: ConvertCommon { format, select, annotations, ..Default::default() },
                ..Default::default()
            };
            if select_profiles(input, &opts).unwrap().0.is_empty() {
                continue;
            }
            for (name, fast, tree) in both_paths(input, &opts) {
                assert!(
                    fast == tree,
                    "{} {name} ({format:?}, {dump:?}, pids {pids:?}): frame-list bytes differ from the stack tree's",
                    input.display()
                );
                compared += 1;
            }
        }
    }
    compared
}

#[test]
fn folded_and_flame_of_frame_lists_are_the_stack_trees_bytes_on_the_fixtures() {
    let mut compared = 0;
    for name in [
        "continuous_recycle.pftrace",
        "heaps_and_procs.pftrace",
        "inline_q_chain.pftrace",
        "interned_chain_spill.pftrace",
        "dumps_in_one_packet.pftrace",
        "art_frames.pftrace",
        "names.pftrace",
        "data_loss.pftrace",
        "dump_at_max.pftrace",
        "dump_at_max_legacy.pftrace",
        "continuous_recycle.trunc-midchain.pftrace",
    ] {
        let input = data(name);
        let (all, report, _) = select_profiles(&input, &ConvertOptions::default()).unwrap();
        let mut pids: Vec<u64> = report.dumps.iter().map(|d| d.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        assert!(!all.is_empty(), "{name}");
        compared += check(&input, &[], false);
        compared += check(&input, &[], true);
        for pid in pids {
            compared += check(&input, &[pid], false);
        }
    }
    assert!(compared > 150, "{compared} outputs compared");
}

#[test]
fn folded_and_flame_of_one_dump_of_a_synthetic_trace_match_the_stack_tree() {
    use heapconv_testdata::heapprofd::{SynthOptions, write_synthetic_trace};
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("synth.pftrace");
    // Three processes, four continuous dumps, callstacks interned over several packets per
    // chain (small packets), some recycled.
    let opts = SynthOptions {
        callstacks: 3000,
        depth: 20,
        dumps: 4,
        processes: 3,
        packet_bytes: 16 << 10,
        ..Default::default()
    };
    let mut buf = Vec::new();
    write_synthetic_trace(&opts, &mut buf).unwrap();
    std::fs::write(&input, &buf).unwrap();
    let compared = check(&input, &[1001], false) + check(&input, &[], false);
    assert_eq!(compared, 2 * (1 + 4 + 1 + 1) + 2 * (3 + 3 * 4 + 3 + 3));
    // Through the command line, to one file and to standard output.
    let svg = dir.path().join("one.svg");
    let (s, i) = (svg.to_str().unwrap(), input.to_str().unwrap());
    heapconv_ok(&["convert", i, "--pid", "1001", "--dump", "3", "--to", "svg", "-o", s, "-q"], 0);
    let select = Selection { pids: vec![1001], dump: DumpSelect::Nth(3), ..Default::default() };
    let o = ConvertOptions {
        common: ConvertCommon { format: Format::Svg, select, ..Default::default() },
        ..Default::default()
    };
    let (p, _, _) = select_profiles(&input, &o).unwrap();
    assert_eq!(std::fs::read(&svg).unwrap(), encode_one(&p[0], &o).unwrap());
    let out = heapconv_ok(&["convert", i, "--pid", "1000", "--to", "folded"], 0);
    let select = Selection { pids: vec![1000], ..Default::default() };
    let o = ConvertOptions {
        common: ConvertCommon { format: Format::Folded, select, ..Default::default() },
        ..Default::default()
    };
    let (p, _, _) = select_profiles(&input, &o).unwrap();
    assert_eq!(out.stdout, encode_one(&p[0], &o).unwrap());
    assert!(out.stdout.len() > 10_000);
}
