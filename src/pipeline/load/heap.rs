//! Java heap dumps that a selection keeps: the heap graphs of a Perfetto trace
//! ([`for_selected_heap_graphs`]) and the dumps of an HPROF file ([`for_selected_hprof_dumps`]),
//! deobfuscated with the maps given.

use super::sources::ProguardMaps;
use crate::decode::Input;
use crate::decode::hprof::ObjectSize;
use crate::decode::hprof::{
    HprofDumpInfo, HprofDumpSelect, HprofReadOptions, HprofStats, apply_object_size, read_hprof_dump,
};
use crate::decode::perfetto::DecodeOptions;
use crate::decode::perfetto::heap_graph::{HeapGraphOptions, decode_heap_graphs};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{HeapDump, TraceReport};
use crate::pipeline::select::DumpSelect;
use crate::symbolize::proguard::{Deobfuscator, deobfuscate_heap_dump};
use std::collections::BTreeMap;

/// Decodes the Java heap graphs of a trace and hands the dumps `pids` and `dump` select to
/// `each`, in the order the dumps end in the trace. `dump` counts the dumps of each process
/// (`Nth(2)`: every process's second dump); `Last` keeps one dump per process in memory until
/// the trace ends, the others hand each dump on as soon as it ends. Returns the trace report
/// (`heap_graphs` is empty for a trace without any).
pub(crate) fn for_selected_heap_graphs(
    inp: &mut Input,
    decode: &DecodeOptions,
    pids: &[u64],
    dump: DumpSelect,
    maps: &ProguardMaps,
    each: &mut dyn FnMut(HeapDump) -> Result<()>,
) -> Result<TraceReport> {
    let deob = maps.open_for_trace(inp, decode.max_packet_bytes)?;
    let each = &mut |mut d: HeapDump| {
        deob.deobfuscate_graph(&mut d);
        each(d)
    };
    let graph = HeapGraphOptions {
        max_packet_bytes: decode.max_packet_bytes,
        max_bundle_bytes: decode.max_bundle_bytes,
        pids: pids.to_vec(),
    };
    let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
    let mut last: BTreeMap<u32, (usize, HeapDump)> = BTreeMap::new();
    let mut n = 0usize;
    let report = decode_heap_graphs(inp, &graph, &mut |d| {
        n += 1;
        let pid = d.pid.unwrap_or(0);
        let k = seen.entry(pid).or_default();
        *k += 1;
        match dump {
            DumpSelect::Last => {
                last.insert(pid, (n, d));
                Ok(())
            }
            DumpSelect::All => each(d),
            DumpSelect::Nth(want) if *k == want => each(d),
            DumpSelect::Nth(_) => Ok(()),
        }
    })?;
    let mut kept: Vec<(usize, HeapDump)> = last.into_values().collect();
    kept.sort_by_key(|k| k.0);
    for (_, d) in kept {
        each(d)?;
    }
    Ok(report)
}

/// Reads the heap dumps `dump` selects of an HPROF input (the JVMTI hprof agent writes several
/// per file; HotSpot and Android one) and hands each to `each` with its 1-based number and what
/// the reader counted, in file order. Returns every dump the file holds. `Last` and `Nth` read
/// the file once; `All` reads it once per dump (each pass keeps one dump in memory). A number
/// past the file's dumps is a usage error that says how many it has. Shallow sizes are counted
/// as `size` says.
pub(crate) fn for_selected_hprof_dumps(
    mut inp: Input,
    dump: DumpSelect,
    size: ObjectSize,
    maps: &ProguardMaps,
    each: &mut dyn FnMut(usize, HeapDump, HprofStats) -> Result<()>,
) -> Result<Vec<HprofDumpInfo>> {
    let deob = maps.open()?;
    let each = &mut |n: usize, mut d: HeapDump, s: HprofStats| {
        deobfuscate_dump(deob.as_deref(), &mut d);
        each(n, d, s)
    };
    let name = inp.name.clone();
    let opts = HprofReadOptions::default();
    let which = match dump {
        DumpSelect::Nth(n) => HprofDumpSelect::Index(n - 1),
        DumpSelect::Last | DumpSelect::All => HprofDumpSelect::Last,
    };
    let (d, stats) = match read_hprof_dump(inp.reader(), &name, &opts, which) {
        Err(e) if e.kind() == ErrorKind::NoData && matches!(dump, DumpSelect::Nth(_)) => {
            return Err(Error::new(ErrorKind::Usage, format!("{} (see `heapconv inspect`)", e.context())));
        }
        r => r?,
    };
    let mut d = d;
    apply_object_size(&mut d, size);
    let dumps = stats.dumps.clone();
    let number = stats.dump.map_or(1, |i| i + 1);
    if dump != DumpSelect::All || dumps.len() <= 1 {
        each(number, d, stats)?;
        return Ok(dumps);
    }
    // Every dump but the last is read again from the start; the last is the one in hand.
    for i in 0..dumps.len() - 1 {
        let mut inp = match inp.reopen() {
            Some(r) => r?,
            None => return Err(Error::new(ErrorKind::Io, format!("{name}: cannot be read twice"))),
        };
        let (mut di, si) = read_hprof_dump(inp.reader(), &name, &opts, HprofDumpSelect::Index(i))?;
        apply_object_size(&mut di, size);
        each(i + 1, di, si)?;
    }
    each(number, d, stats)?;
    Ok(dumps)
}

/// Deobfuscates a Java heap dump's class and field names with the map for its process's package
/// (a heap graph's process name up to any `:`), or the map given without a package (HPROF).
pub(crate) fn deobfuscate_dump(deob: Option<&Deobfuscator>, dump: &mut HeapDump) {
    let Some(d) = deob else { return };
    let pkg = dump.process_name.as_deref().map(|n| n.split(':').next().unwrap_or(n).to_owned());
    let mut s = d.session();
    let what = match &pkg {
        Some(p) => format!("heap dump classes and fields of {p}"),
        None => "heap dump classes and fields".to_owned(),
    };
    if let Some(i) = s.for_package(pkg.as_deref(), &what) {
        deobfuscate_heap_dump(dump, &mut s, i);
    }
}
