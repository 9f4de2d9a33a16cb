//! Deterministic generator of synthetic heapprofd traces.
//!
//! The output is laid out the way a real Android device writes a heapprofd
//! trace (see `perfetto-heapprofd-traceconv.md` §1–§2): a `ProcessTree` packet,
//! a `ClockSnapshot` (BOOTTIME = MONOTONIC_COARSE + 5 s), then one heapprofd
//! writer sequence (`trusted_packet_sequence_id` 1) whose first packet clears
//! the incremental state and interns `""` as iid 0, followed by one packet
//! chain per (dump, process):
//!
//! 1. `ProfilePacket{index, process_dumps{header, samples…}}` packets, split
//!    after about [`SynthOptions::packet_bytes`] bytes with the
//!    `ProcessHeapSamples` header repeated and `continued = true`;
//! 2. the `InternedData` of every callstack never emitted before (strings,
//!    mappings and frames before the callstack that uses them), in the last
//!    samples packet and spilling into packets without a `profile_packet`;
//! 3. an empty `ProfilePacket{index}` (`continued` absent, i.e. false).
//!
//! Samples therefore reference callstack iids that are defined later in the
//! same chain. Interning is incremental across chains and dumps.
//!
//! Encoding details copied from protozero/traced: nested messages inside a
//! packet carry a *redundant 4-byte varint* length (e.g. `85 80 80 00`), the
//! outer `Trace.packet` framing uses a minimal varint, fields are written in
//! heapprofd's call order (zero values and `false` booleans included), and the
//! service's trusted fields (`trusted_uid`, `trusted_packet_sequence_id`,
//! `trusted_pid`) come last. The first packet of every sequence also carries
//! `previous_packet_dropped` and `first_packet_on_sequence`, as the service
//! writes them.
//!
//! Counters are cumulative per callstack entry and follow heapprofd's
//! bookkeeping: an entry with no live allocation is written once with
//! `self_allocated == self_freed`, and is deleted before the next dump if it
//! did not allocate again ("recycled"). A few recycled callstacks that only
//! one process uses come back later under a *new* callstack iid with the same
//! frames, starting again from zero.
//!
//! The expected per-(pid, dump) totals are returned in [`SynthSummary`]: for a
//! dump T they are the sum, over every callstack iid the process ever
//! reported, of the latest cumulative values at or before T.
//!
//! With [`SynthOptions::compress`], packets are bundled (≤ ~500 KB of framed
//! packets per bundle) into `TracePacket{compressed_packets = 50}` whose bytes
//! are a valid zlib stream made of *stored* (uncompressed) deflate blocks.
//!
//! Everything is derived from [`SynthOptions::seed`] with the
//! [`SplitMix64`] generator: the same options always produce the same bytes.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};

use crate::protowire::{
    WT_LEN, begin_msg, end_msg, put_bool, put_bytes, put_key, put_u64, put_varint, varint_into, varint_len,
};
use crate::rng::{GOLDEN_GAMMA, SplitMix64, mix64, scale};

/// Parameters of a synthetic heapprofd trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthOptions {
    /// Number of distinct callstacks in the shared pool (before recycling
    /// creates new iids). Each process uses about 95 % of them, every
    /// callstack is used by at least one process, and about 2 % are recycled.
    pub callstacks: usize,
    /// Typical callstack depth in frames (root and allocator frames
    /// included); each stack varies by about ±25 %.
    /// Values below 3 are treated as 3.
    pub depth: usize,
    /// Number of dumps (continuous-dump rounds); one chain per process each.
    pub dumps: usize,
    /// Number of profiled processes (pids 1000, 1001, …).
    pub processes: usize,
    /// Seed of the deterministic generator.
    pub seed: u64,
    /// Number of application functions (spread over `mappings` libraries).
    /// Values below 1 are treated as 1.
    pub functions: usize,
    /// Number of application libraries `/system/lib64/libfoo_N.so`; `libc.so`
    /// and `libc++.so` are added on top. Values below 1 are treated as 1.
    pub mappings: usize,
    /// `sampling_interval_bytes` reported by every process; sampled sizes of
    /// allocations smaller than this are reported as this value.
    pub sampling_interval: u64,
    /// Packet size threshold after which heapprofd starts a new packet
    /// (heapprofd uses 400 000). Clamped to 1 KiB ..= 64 MiB.
    pub packet_bytes: usize,
    /// Wrap packets into `compressed_packets` bundles (stored-block zlib).
    pub compress: bool,
    /// The frame-family generator (issue #15's shapes) when set: about this many distinct frames
    /// (function × call site) in all, the `functions` application functions having one call
    /// site each plus the rest spread over them, callees picked per call site among a few
    /// candidates, and callstacks sharing shorter prefixes (about 18 new stack-tree nodes per
    /// 29-frame stack). `None` (the default) keeps the classic generator and its bytes
    /// (up to 64 call sites per function, one callee each; about 60k frames at 300k callstacks).
    pub frames: Option<usize>,
    /// With [`SynthOptions::frames`]: functions share names (a pool of a quarter as many names as
    /// functions, the same name in several libraries), instead of one name per function.
    pub shared_names: bool,
}

impl Default for SynthOptions {
    fn default() -> Self {
        SynthOptions {
            callstacks: 1000,
            depth: 30,
            dumps: 4,
            processes: 2,
            seed: 1,
            functions: 2000,
            mappings: 20,
            sampling_interval: 4096,
            packet_bytes: 400_000,
            compress: false,
            frames: None,
            shared_names: false,
        }
    }
}

/// What [`write_synthetic_trace`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SynthSummary {
    /// Bytes written to the output.
    pub bytes: u64,
    /// Number of logical `TracePacket`s written (before any compression
    /// bundling; compressed wrapper packets are not counted).
    pub packets: u64,
    /// Number of `HeapSample` messages written, over all chains.
    pub samples: u64,
    /// Expected totals per (pid, dump), in the order the chains were written
    /// (dump-major, then process).
    pub totals: Vec<SynthDumpTotals>,
    /// Distinct frames written (interned `Frame`s).
    pub frames: u64,
    /// Distinct function-name strings written (the empty name excluded).
    pub function_names: u64,
    /// Mappings written.
    pub mappings: u64,
    /// Distinct stack-tree nodes (callstack prefixes) over the base callstacks, counted
    /// exactly by the generator; recycled callstacks' new iids are not counted.
    pub stack_nodes: u64,
}

/// Expected cumulative totals of one process at one dump.
///
/// For each callstack iid the process ever reported, the latest cumulative
/// value at or before this dump is summed (recycled callstacks keep
/// contributing their last value).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SynthDumpTotals {
    /// Profiled process id.
    pub pid: u64,
    /// Index of the dump (0-based).
    pub dump_index: usize,
    /// Dump timestamp in the trace clock (BOOTTIME), i.e. the
    /// `ProcessHeapSamples.timestamp` converted through the ClockSnapshot.
    pub timestamp: u64,
    /// The raw `ProcessHeapSamples.timestamp` (CLOCK_MONOTONIC_COARSE).
    pub mono_timestamp: u64,
    /// Sum of `self_allocated`.
    pub alloc_bytes: u64,
    /// Sum of `self_freed`.
    pub freed_bytes: u64,
    /// Sum of `alloc_count`.
    pub alloc_count: u64,
    /// Sum of `free_count`.
    pub free_count: u64,
}

/// Writes a synthetic heapprofd trace for `opts` to `out` and returns what
/// was written together with the expected totals.
///
/// Output is written in large chunks (one `write_all` per packet or block),
/// so wrapping `out` in a `BufWriter` is optional. Memory use is roughly
/// `callstacks × depth × 4` bytes plus about 60 bytes per (process,
/// callstack).
pub fn write_synthetic_trace<W: Write>(opts: &SynthOptions, out: W) -> io::Result<SynthSummary> {
    let mut model = Model::new(opts);
    model.gen_callstacks();
    let stack_nodes = model.count_stack_nodes();
    let mut generator = Gen::new(opts, model);
    let mut sink = Sink::new(out, opts.compress);
    generator.run(&mut sink)?;
    let (bytes, packets) = sink.finish()?;
    let m = &generator.model;
    let mut names: Vec<u64> = m.funcs.iter().map(|f| f.name_iid).filter(|&i| i != 0 && i != u64::MAX).collect();
    names.sort_unstable();
    names.dedup();
    Ok(SynthSummary {
        bytes,
        packets,
        samples: generator.samples,
        frames: m.frames.len() as u64,
        function_names: names.len() as u64,
        mappings: m.mappings.iter().filter(|m| m.iid != 0).count() as u64,
        stack_nodes,
        totals: std::mem::take(&mut generator.totals),
    })
}

/// Deterministic hash of a few words.
#[inline]
fn hash(seed: u64, a: u64, b: u64, c: u64) -> u64 {
    let mut h = mix64(seed ^ GOLDEN_GAMMA);
    h = mix64(h ^ a);
    h = mix64(h ^ b.wrapping_mul(0x2545_f491_4f6c_dd1d));
    mix64(h ^ c.wrapping_mul(GOLDEN_GAMMA))
}

// Field numbers (perfetto_trace.proto).
mod f {
    // TracePacket
    pub(super) const TP_TIMESTAMP: u32 = 8;
    pub(super) const TP_PROCESS_TREE: u32 = 2;
    pub(super) const TP_TRUSTED_UID: u32 = 3;
    pub(super) const TP_CLOCK_SNAPSHOT: u32 = 6;
    pub(super) const TP_TRUSTED_SEQ_ID: u32 = 10;
    pub(super) const TP_INTERNED_DATA: u32 = 12;
    pub(super) const TP_SEQUENCE_FLAGS: u32 = 13;
    pub(super) const TP_PROFILE_PACKET: u32 = 37;
    pub(super) const TP_PREVIOUS_PACKET_DROPPED: u32 = 42;
    pub(super) const TP_COMPRESSED_PACKETS: u32 = 50;
    pub(super) const TP_TRUSTED_PID: u32 = 79;
    pub(super) const TP_FIRST_PACKET_ON_SEQUENCE: u32 = 87;
    // ProcessTree / Process
    pub(super) const PT_PROCESSES: u32 = 1;
    pub(super) const PT_COLLECTION_END: u32 = 3;
    pub(super) const PR_PID: u32 = 1;
    pub(super) const PR_PPID: u32 = 2;
    pub(super) const PR_CMDLINE: u32 = 3;
    pub(super) const PR_UID: u32 = 5;
    // ClockSnapshot / Clock
    pub(super) const CS_CLOCKS: u32 = 1;
    pub(super) const CS_PRIMARY: u32 = 2;
    pub(super) const CL_ID: u32 = 1;
    pub(super) const CL_TS: u32 = 2;
    // InternedData
    pub(super) const ID_FUNCTION_NAMES: u32 = 5;
    pub(super) const ID_FRAMES: u32 = 6;
    pub(super) const ID_CALLSTACKS: u32 = 7;
    pub(super) const ID_BUILD_IDS: u32 = 16;
    pub(super) const ID_MAPPING_PATHS: u32 = 17;
    pub(super) const ID_MAPPINGS: u32 = 19;
    // InternedString
    pub(super) const IS_IID: u32 = 1;
    pub(super) const IS_STR: u32 = 2;
    // Mapping
    pub(super) const MA_IID: u32 = 1;
    pub(super) const MA_BUILD_ID: u32 = 2;
    pub(super) const MA_START_OFFSET: u32 = 3;
    pub(super) const MA_START: u32 = 4;
    pub(super) const MA_END: u32 = 5;
    pub(super) const MA_LOAD_BIAS: u32 = 6;
    pub(super) const MA_PATH_STRING_IDS: u32 = 7;
    pub(super) const MA_EXACT_OFFSET: u32 = 8;
    // Frame
    pub(super) const FR_IID: u32 = 1;
    pub(super) const FR_FUNCTION_NAME_ID: u32 = 2;
    pub(super) const FR_MAPPING_ID: u32 = 3;
    pub(super) const FR_REL_PC: u32 = 4;
    // Callstack
    pub(super) const CA_IID: u32 = 1;
    pub(super) const CA_FRAME_IDS: u32 = 2;
    // ProfilePacket
    pub(super) const PP_PROCESS_DUMPS: u32 = 5;
    pub(super) const PP_CONTINUED: u32 = 6;
    pub(super) const PP_INDEX: u32 = 7;
    // ProcessHeapSamples
    pub(super) const HS_PID: u32 = 1;
    pub(super) const HS_SAMPLES: u32 = 2;
    pub(super) const HS_FROM_STARTUP: u32 = 3;
    pub(super) const HS_STATS: u32 = 5;
    pub(super) const HS_DISCONNECTED: u32 = 6;
    pub(super) const HS_BUFFER_OVERRAN: u32 = 7;
    pub(super) const HS_BUFFER_CORRUPTED: u32 = 8;
    pub(super) const HS_TIMESTAMP: u32 = 9;
    pub(super) const HS_HIT_GUARDRAIL: u32 = 10;
    pub(super) const HS_HEAP_NAME: u32 = 11;
    pub(super) const HS_SAMPLING_INTERVAL: u32 = 12;
    pub(super) const HS_ORIG_SAMPLING_INTERVAL: u32 = 13;
    pub(super) const HS_CLIENT_ERROR: u32 = 14;
    pub(super) const HS_START_TIMESTAMP: u32 = 15;
    // ProcessStats
    pub(super) const ST_UNWINDING_ERRORS: u32 = 1;
    pub(super) const ST_HEAP_SAMPLES: u32 = 2;
    pub(super) const ST_MAP_REPARSES: u32 = 3;
    pub(super) const ST_UNWINDING_TIME_US: u32 = 4;
    pub(super) const ST_TOTAL_UNWINDING_TIME_US: u32 = 5;
    pub(super) const ST_CLIENT_SPINLOCK_BLOCKED_US: u32 = 6;
    pub(super) const HI_BUCKETS: u32 = 1;
    pub(super) const BU_UPPER_LIMIT: u32 = 1;
    pub(super) const BU_MAX_BUCKET: u32 = 2;
    pub(super) const BU_COUNT: u32 = 3;
    // HeapSample
    pub(super) const SA_CALLSTACK_ID: u32 = 1;
    pub(super) const SA_SELF_ALLOCATED: u32 = 2;
    pub(super) const SA_SELF_FREED: u32 = 3;
    pub(super) const SA_ALLOC_COUNT: u32 = 5;
    pub(super) const SA_FREE_COUNT: u32 = 6;
}

// ---------------------------------------------------------------------------
// Output sink (plain or stored-zlib bundles)
// ---------------------------------------------------------------------------

/// Upper bound of framed packet bytes per compressed bundle.
const BUNDLE_LIMIT: usize = 500_000;

struct Sink<W: Write> {
    out: W,
    compress: bool,
    bundle: Vec<u8>,
    bytes: u64,
    packets: u64,
}

impl<W: Write> Sink<W> {
    fn new(out: W, compress: bool) -> Self {
        let bundle = if compress { Vec::with_capacity(BUNDLE_LIMIT + 1024) } else { Vec::new() };
        Sink { out, compress, bundle, bytes: 0, packets: 0 }
    }

    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.bytes += b.len() as u64;
        Ok(())
    }

    /// Emits one `Trace.packet` (tag 0x0A, minimal varint length, body).
    fn packet(&mut self, body: &[u8]) -> io::Result<()> {
        self.packets += 1;
        let mut hdr = [0u8; 11];
        hdr[0] = 0x0a;
        let n = 1 + varint_into(&mut hdr[1..], body.len() as u64);
        if self.compress {
            if !self.bundle.is_empty() && self.bundle.len() + n + body.len() > BUNDLE_LIMIT {
                self.flush_bundle()?;
            }
            self.bundle.extend_from_slice(&hdr[..n]);
            self.bundle.extend_from_slice(body);
            Ok(())
        } else {
            self.write(&hdr[..n])?;
            self.write(body)
        }
    }

    /// Writes the pending bundle as `TracePacket{compressed_packets: zlib}`
    /// where the zlib stream uses stored deflate blocks.
    fn flush_bundle(&mut self) -> io::Result<()> {
        let data = std::mem::take(&mut self.bundle);
        let nblocks = data.len().div_ceil(65535).max(1);
        let zlen = 2 + 5 * nblocks + data.len() + 4;
        let mut hdr = Vec::with_capacity(32);
        // Outer framing: Trace.packet.
        hdr.push(0x0a);
        let inner_len =
            varint_len((u64::from(f::TP_COMPRESSED_PACKETS) << 3) | WT_LEN) + varint_len(zlen as u64) + zlen;
        put_varint(&mut hdr, inner_len as u64);
        // TracePacket.compressed_packets.
        put_key(&mut hdr, f::TP_COMPRESSED_PACKETS, WT_LEN);
        put_varint(&mut hdr, zlen as u64);
        // zlib header: CM=8, CINFO=7, FCHECK so that (CMF*256+FLG) % 31 == 0.
        hdr.extend_from_slice(&[0x78, 0x01]);
        self.write(&hdr)?;
        if data.is_empty() {
            self.write(&[0x01, 0x00, 0x00, 0xff, 0xff])?;
        } else {
            let mut chunks = data.chunks(65535).peekable();
            while let Some(chunk) = chunks.next() {
                let last = chunks.peek().is_none();
                let len = chunk.len() as u16;
                let nlen = !len;
                let bh = [u8::from(last), (len & 0xff) as u8, (len >> 8) as u8, (nlen & 0xff) as u8, (nlen >> 8) as u8];
                self.write(&bh)?;
                self.write(chunk)?;
            }
        }
        self.write(&adler32(&data).to_be_bytes())?;
        self.bundle = data;
        self.bundle.clear();
        Ok(())
    }

    fn finish(mut self) -> io::Result<(u64, u64)> {
        if self.compress && !self.bundle.is_empty() {
            self.flush_bundle()?;
        }
        self.out.flush()?;
        Ok((self.bytes, self.packets))
    }
}

fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

// ---------------------------------------------------------------------------
// Static model: strings, mappings, functions, frames, callstacks
// ---------------------------------------------------------------------------

/// Maximum number of call sites (distinct rel_pcs) per function.
const MAXDEG: usize = 64;

const NAMESPACES: [&str; 10] = ["app", "core", "gfx", "net", "io", "util", "media", "ui", "db", "render"];
const CLASSES: [&str; 16] = [
    "Module", "Engine", "Buffer", "Parser", "Cache", "Loader", "Session", "Queue", "Pool", "Layer", "Decoder",
    "Stream", "Manager", "Worker", "Node", "Graph",
];
const METHODS: [&str; 16] = [
    "step", "run", "update", "process", "flush", "resize", "allocate", "append", "reset", "dispatch", "visit", "build",
    "commit", "load", "parse", "decode",
];
/// Itanium encodings of simple parameter lists (no substitutions needed).
const PARAMS: [&str; 10] = ["v", "i", "j", "m", "Pv", "PKc", "ib", "Pvm", "RKi", "PKvm"];

/// Fixed (runtime) functions, appended after the application functions.
/// (name, mapping index)
const FIXED: [(&str, usize); 9] = [
    ("__libc_init", MAP_LIBC),
    ("__start_thread", MAP_LIBC),
    ("_ZL15__pthread_startPv", MAP_LIBC),
    ("malloc", MAP_LIBC),
    ("calloc", MAP_LIBC),
    ("realloc", MAP_LIBC),
    ("_Znwm", MAP_LIBCXX),
    ("_Znam", MAP_LIBCXX),
    ("main", MAP_FIRST_APP),
];
const FX_LIBC_INIT: usize = 0;
const FX_START_THREAD: usize = 1;
const FX_PTHREAD_START: usize = 2;
const FX_MALLOC: usize = 3;
const FX_CALLOC: usize = 4;
const FX_REALLOC: usize = 5;
const FX_NEW: usize = 6;
const FX_NEW_ARRAY: usize = 7;
const FX_MAIN: usize = 8;

const MAP_LIBC: usize = 0;
const MAP_LIBCXX: usize = 1;
const MAP_FIRST_APP: usize = 2;

/// String-kind bits, as in heapprofd's `InterningOutputTracker`.
const K_BUILD_ID: u8 = 1;
const K_MAPPING_PATH: u8 = 2;
const K_FUNCTION_NAME: u8 = 4;

struct MappingDef {
    /// 0 until the mapping is first used.
    iid: u64,
    path_iids: Vec<u64>,
    build_id_iid: u64,
    start: u64,
    end: u64,
    exact_offset: u64,
    load_bias: u64,
}

struct FuncDef {
    mapping: u32,
    /// rel_pc of the function's first instruction.
    base: u64,
    /// Function-name string iid (0 = unnamed); `u64::MAX` until first used.
    name_iid: u64,
}

struct FrameDef {
    iid: u64,
    func: u32,
    /// Call-site index within the function.
    site: u32,
    rel_pc: u64,
}

/// The frame-family generator's per-function call sites and callee choice.
struct Family {
    /// Call sites per function (application functions, then the fixed ones).
    sites: Vec<u32>,
    /// Candidate callees per call site (picked biased).
    fanout: usize,
    /// Name key per function: function-name strings are interned once per key.
    name_key: Vec<u32>,
    /// Function-name iid per name key (`u64::MAX` until first used).
    name_iids: Vec<u64>,
}

struct Model {
    seed: u64,
    depth: usize,
    n_callstacks: usize,
    n_app_funcs: usize,
    /// String table indexed by iid (iid 0 = "").
    strings: Vec<Vec<u8>>,
    path_iids: HashMap<String, u64>,
    mappings: Vec<MappingDef>,
    funcs: Vec<FuncDef>,
    frames: Vec<FrameDef>,
    /// Per function: offset of its block of MAXDEG slots in `frame_slots`
    /// (allocated on first use), or u32::MAX.
    func_slots: Vec<u32>,
    /// Call site → index into `frames`, or u32::MAX.
    frame_slots: Vec<u32>,
    /// Frames of base callstack i are `cs_frames[cs_off[i]..cs_off[i + 1]]`
    /// (indices into `frames`, root first).
    cs_frames: Vec<u32>,
    cs_off: Vec<u32>,
    /// Per callstack *entry* (base callstacks first, then recreated ones):
    /// its iid and the base callstack whose frames it uses.
    cs_iid: Vec<u64>,
    cs_base: Vec<u32>,
    /// Trie-node id counter: callstack iids are sparse like heapprofd's.
    next_node_id: u64,
    /// The frame-family generator, when [`SynthOptions::frames`] is set.
    family: Option<Family>,
}

impl Model {
    fn new(opts: &SynthOptions) -> Self {
        let seed = opts.seed;
        let n_app_maps = opts.mappings.max(1);
        let n_app_funcs = match opts.frames {
            Some(fr) => opts.functions.clamp(1, fr.saturating_sub(FIXED.len()).max(1)),
            None => opts.functions.max(1),
        };
        let mut m = Model {
            seed,
            depth: opts.depth.max(3),
            n_callstacks: opts.callstacks,
            n_app_funcs,
            strings: vec![Vec::new()],
            path_iids: HashMap::new(),
            mappings: Vec::with_capacity(n_app_maps + 2),
            funcs: Vec::with_capacity(n_app_funcs + FIXED.len()),
            frames: Vec::new(),
            func_slots: vec![u32::MAX; n_app_funcs + FIXED.len()],
            frame_slots: Vec::new(),
            cs_frames: Vec::with_capacity(opts.callstacks.saturating_mul(opts.depth.max(3) + 2)),
            cs_off: Vec::with_capacity(opts.callstacks + 1),
            cs_iid: Vec::with_capacity(opts.callstacks + opts.callstacks / 16),
            cs_base: Vec::with_capacity(opts.callstacks + opts.callstacks / 16),
            next_node_id: 0,
            family: None,
        };
        m.cs_off.push(0);
        if let Some(target) = opts.frames {
            // One call site per function, the rest spread over random functions (so some have
            // many), at most MAXDEG each; slots laid out up front.
            let nfun = n_app_funcs + FIXED.len();
            let mut sites = vec![1u32; nfun];
            let extra = target.saturating_sub(nfun);
            for k in 0..extra {
                let mut fi = scale(hash(seed, 0x517e, k as u64, 0), n_app_funcs as u64) as usize;
                while sites[fi] as usize >= MAXDEG {
                    fi = (fi + 1) % n_app_funcs;
                }
                sites[fi] += 1;
            }
            let mut off = 0u32;
            for (slot, &n) in m.func_slots.iter_mut().zip(&sites) {
                *slot = off;
                off += n;
            }
            m.frame_slots = vec![u32::MAX; off as usize];
            let pool = if opts.shared_names { (n_app_funcs / 4).max(1) } else { n_app_funcs };
            let mut name_key: Vec<u32> = (0..n_app_funcs)
                .map(|fi| {
                    if opts.shared_names {
                        scale(hash(seed, 0x9a3e, fi as u64, 0), pool as u64) as u32
                    } else {
                        fi as u32
                    }
                })
                .collect();
            name_key.extend((0..FIXED.len()).map(|j| (pool + j) as u32));
            m.family = Some(Family { sites, fanout: 16, name_key, name_iids: vec![u64::MAX; pool + FIXED.len()] });
        }

        // Function layout: application functions are split into contiguous
        // blocks, one per application library; fixed functions are placed at
        // the end of their library's text.
        let n_maps = n_app_maps + 2;
        let mut text_size = vec![0u64; n_maps];
        for (i, ts) in text_size.iter_mut().enumerate() {
            *ts = 0x400 + (hash(seed, 0x7e47, i as u64, 0) % 0x40) * 0x10;
        }
        for fi in 0..n_app_funcs {
            let map = MAP_FIRST_APP + fi * n_app_maps / n_app_funcs;
            let deg = m.family.as_ref().map_or(MAXDEG, |f| f.sites[fi] as usize) as u64;
            let size = 0x20 + deg * 0x10 + (hash(seed, 0xf5, fi as u64, 0) % 96) * 0x10;
            m.funcs.push(FuncDef { mapping: map as u32, base: text_size[map], name_iid: u64::MAX });
            text_size[map] += size;
        }
        for (j, &(_, map)) in FIXED.iter().enumerate() {
            let size = 0x40 + (hash(seed, 0xf6, j as u64, 0) % 32) * 0x10;
            m.funcs.push(FuncDef { mapping: map as u32, base: text_size[map], name_iid: u64::MAX });
            text_size[map] += size;
        }

        // Address-space layout of the mappings (executable segments).
        let mut addr: u64 = 0x7a00_0000_0000 + (hash(seed, 0xa5, 0, 0) % 0x1000) * 0x10_0000;
        for (i, &text) in text_size.iter().enumerate() {
            let h = hash(seed, 0x3a9, i as u64, 0);
            let exact_offset = 0x1000 * (4 + h % 60);
            let load_bias = if h >> 60 == 0 { 0x1000 } else { 0 };
            let len = (text + 0xfff) & !0xfff;
            m.mappings.push(MappingDef {
                iid: 0,
                path_iids: Vec::new(),
                build_id_iid: 0,
                start: addr,
                end: addr + len,
                exact_offset,
                load_bias,
            });
            addr += len + 0x10_0000 * (1 + (h >> 8) % 8);
        }
        // Make function bases absolute rel_pcs (text starts at exact_offset +
        // load_bias in the ELF's virtual address space).
        for func in &mut m.funcs {
            let map = &m.mappings[func.mapping as usize];
            func.base += map.exact_offset + map.load_bias;
        }
        m
    }

    fn intern_string(&mut self, s: Vec<u8>) -> u64 {
        self.strings.push(s);
        (self.strings.len() - 1) as u64
    }

    fn intern_path(&mut self, comp: &str) -> u64 {
        if let Some(&iid) = self.path_iids.get(comp) {
            return iid;
        }
        let iid = self.intern_string(comp.as_bytes().to_vec());
        self.path_iids.insert(comp.to_owned(), iid);
        iid
    }

    /// Assigns iids to a mapping and its strings the first time it is used.
    fn ensure_mapping(&mut self, map: usize) {
        if self.mappings[map].iid != 0 {
            return;
        }
        let comps: Vec<String> = match map {
            MAP_LIBC => {
                ["apex", "com.android.runtime", "lib64", "bionic", "libc.so"].iter().map(|s| (*s).to_owned()).collect()
            }
            MAP_LIBCXX => vec!["system".into(), "lib64".into(), "libc++.so".into()],
            _ => vec!["system".into(), "lib64".into(), format!("libfoo_{}.so", map - MAP_FIRST_APP)],
        };
        let path_iids: Vec<u64> = comps.iter().map(|c| self.intern_path(c)).collect();
        let mut build_id = Vec::with_capacity(20);
        for k in 0..3u64 {
            build_id.extend_from_slice(&hash(self.seed, 0xb1d, map as u64, k).to_le_bytes());
        }
        build_id.truncate(20);
        let build_id_iid = self.intern_string(build_id);
        let iid = self.mappings.iter().filter(|m| m.iid != 0).count() as u64 + 1;
        let m = &mut self.mappings[map];
        m.iid = iid;
        m.path_iids = path_iids;
        m.build_id_iid = build_id_iid;
    }

    /// Frame index for call site `site` of function `func`, creating it (and
    /// interning its mapping and name) on first use.
    fn frame(&mut self, func: usize, site: usize) -> u32 {
        if self.func_slots[func] == u32::MAX {
            self.func_slots[func] = self.frame_slots.len() as u32;
            self.frame_slots.resize(self.frame_slots.len() + MAXDEG, u32::MAX);
        }
        let key = self.func_slots[func] as usize + site;
        let idx = self.frame_slots[key];
        if idx != u32::MAX {
            return idx;
        }
        let map = self.funcs[func].mapping as usize;
        self.ensure_mapping(map);
        if self.funcs[func].name_iid == u64::MAX {
            let key = self.family.as_ref().map_or(func, |f| f.name_key[func] as usize);
            let known = self.family.as_ref().map_or(u64::MAX, |f| f.name_iids[key]);
            self.funcs[func].name_iid = if known != u64::MAX {
                known
            } else {
                let name = if func >= self.n_app_funcs {
                    Some(FIXED[func - self.n_app_funcs].0.to_owned())
                } else {
                    app_function_name(self.seed, key)
                };
                let iid = match name {
                    Some(n) => self.intern_string(n.into_bytes()),
                    None => 0,
                };
                if let Some(f) = self.family.as_mut() {
                    f.name_iids[key] = iid;
                }
                iid
            };
        }
        let rel_pc = self.funcs[func].base + 0x14 + 0x10 * site as u64;
        let idx = self.frames.len() as u32;
        self.frames.push(FrameDef { iid: u64::from(idx) + 1, func: func as u32, site: site as u32, rel_pc });
        self.frame_slots[key] = idx;
        idx
    }

    /// Application function called from call site `site` of `func`.
    #[inline]
    fn callee(&self, func: usize, site: usize) -> usize {
        scale(hash(self.seed, 0xca11, func as u64, site as u64), self.n_app_funcs as u64) as usize
    }

    /// Frame family: the `r`-th candidate callee of frame `fr`'s call site.
    #[inline]
    fn family_callee(&self, fr: u32, r: usize) -> usize {
        let fd = &self.frames[fr as usize];
        let slot = u64::from(self.func_slots[fd.func as usize] + fd.site);
        scale(hash(self.seed, 0xca12, slot, r as u64), self.n_app_funcs as u64) as usize
    }

    /// Distinct stack-tree nodes over the base callstacks (prefixes, counted by hashing).
    fn count_stack_nodes(&self) -> u64 {
        let n = self.cs_off.len() - 1;
        let mut seen: HashSet<u64> = HashSet::with_capacity(self.cs_frames.len() / 2);
        for i in 0..n {
            let mut h = 0x1234_5678_9abc_def0u64;
            for &fr in &self.cs_frames[self.cs_off[i] as usize..self.cs_off[i + 1] as usize] {
                h = mix64(h ^ u64::from(fr));
                seen.insert(h);
            }
        }
        seen.len() as u64
    }

    /// Generates the callstack pool. Like a real callsite trie, stacks share
    /// long prefixes: most stacks copy a prefix of an earlier stack (picked
    /// uniformly, so busy subtrees attract more stacks) cut at a point biased
    /// towards the deep end, then continue with a random walk down the call
    /// graph (fan-out widening with depth, biased towards hot call sites).
    /// A few stacks are fresh walks from one of the two roots
    /// (`__start_thread` / `__libc_init`). Every stack ends in an allocator
    /// and all stacks are distinct.
    fn gen_callstacks(&mut self) {
        let n = self.n_callstacks;
        let depth = self.depth;
        let lo = depth - depth / 4;
        let span = depth / 2 + 1;
        let mut rng = SplitMix64(self.seed ^ 0x5eed_cafe_f00d_0001);
        let mut seen: HashSet<u64> = HashSet::with_capacity(n);
        let mut stack: Vec<u32> = Vec::with_capacity(depth * 2);
        // Per stack: number of frames before the allocator frames.
        let mut user_end: Vec<u32> = Vec::with_capacity(n);
        let nf = self.n_app_funcs;
        for i in 0..n {
            let mut extra = 0usize;
            let mut tries = 0usize;
            loop {
                stack.clear();
                let len = lo + rng.scaled(span) + extra;
                let leaf: &[usize] = match rng.scaled(20) {
                    0..=9 => &[FX_MALLOC],
                    10 | 11 => &[FX_CALLOC],
                    12 => &[FX_REALLOC],
                    13..=17 => &[FX_NEW, FX_MALLOC],
                    _ => &[FX_NEW_ARRAY, FX_MALLOC],
                };
                // Where the walk starts; `shared` frames are already in the trie.
                let mut func;
                let shared;
                if i == 0 || rng.scaled(100) < 4 {
                    let root = if rng.scaled(10) < 6 {
                        stack.push(self.frame(nf + FX_START_THREAD, 0));
                        stack.push(self.frame(nf + FX_PTHREAD_START, 0));
                        nf + FX_PTHREAD_START
                    } else {
                        stack.push(self.frame(nf + FX_LIBC_INIT, 0));
                        stack.push(self.frame(nf + FX_MAIN, 0));
                        nf + FX_MAIN
                    };
                    func = self.callee(root, rng.biased(8));
                    shared = if i == 0 { 0 } else { 2 };
                } else {
                    let j = rng.scaled(i);
                    let ue = user_end[j] as usize;
                    let (a, b) = (rng.scaled(ue - 2), rng.scaled(ue - 2));
                    let lo_j = self.cs_off[j] as usize;
                    if let Some(fam) = &self.family {
                        // Shorter shared prefixes, then another callee of the last shared frame.
                        let cut = 2 + a.min(b);
                        stack.extend_from_slice(&self.cs_frames[lo_j..lo_j + cut]);
                        func = self.family_callee(stack[cut - 1], rng.biased(fam.fanout));
                        shared = cut;
                    } else {
                        let cut = 2 + a.max(b);
                        stack.extend_from_slice(&self.cs_frames[lo_j..lo_j + cut]);
                        func = self.frames[self.cs_frames[lo_j + cut] as usize].func as usize;
                        shared = cut;
                    }
                }
                let end = len.saturating_sub(leaf.len()).max(stack.len() + 1);
                for k in stack.len()..end {
                    if let Some(fam) = &self.family {
                        let (nsites, fanout) = (fam.sites[func] as usize, fam.fanout);
                        let site = rng.scaled(nsites);
                        let fr = self.frame(func, site);
                        stack.push(fr);
                        func = self.family_callee(fr, rng.biased(fanout));
                    } else {
                        let deg = MAXDEG.min(1 + k);
                        let site = rng.biased(deg);
                        stack.push(self.frame(func, site));
                        func = self.callee(func, site);
                    }
                }
                let ue = stack.len();
                for &l in leaf {
                    stack.push(self.frame(nf + l, 0));
                }
                let mut h = 0x1234_5678_9abc_def0u64;
                for &fr in &stack {
                    h = mix64(h ^ u64::from(fr));
                }
                if seen.insert(h) {
                    user_end.push(ue as u32);
                    // Trie node ids are shared with inner nodes: one id per
                    // new node, the leaf's being the callstack iid.
                    self.next_node_id += (stack.len() - shared) as u64;
                    break;
                }
                tries += 1;
                if tries % 64 == 0 {
                    extra += 1;
                }
            }
            self.cs_frames.extend_from_slice(&stack);
            self.cs_off.push(self.cs_frames.len() as u32);
            let base = self.cs_base.len() as u32;
            self.cs_iid.push(self.next_node_id);
            self.cs_base.push(base);
        }
    }

    /// Callstack iid for a recreated entry: its leaf node (and maybe a few
    /// ancestors that died with it) get fresh trie node ids.
    fn new_node_id(&mut self, rng: &mut SplitMix64) -> u64 {
        self.next_node_id += 1 + rng.scaled(4) as u64;
        self.next_node_id
    }

    fn base_frames(&self, base: u32) -> &[u32] {
        let b = base as usize;
        &self.cs_frames[self.cs_off[b] as usize..self.cs_off[b + 1] as usize]
    }
}

/// A valid Itanium-mangled (or plain C) name for application function `fi`,
/// or `None` for an unnamed frame (~5 %). Names are unique per function.
fn app_function_name(seed: u64, fi: usize) -> Option<String> {
    let h = hash(seed, 0x4a3e, fi as u64, 0);
    let group = fi / 7;
    let slot = fi % 7;
    let ns = NAMESPACES[group % NAMESPACES.len()];
    let class = format!("{}{}", CLASSES[group % CLASSES.len()], group / CLASSES.len());
    let method = METHODS[(slot + group * 3) % METHODS.len()];
    let params = PARAMS[((h >> 20) % PARAMS.len() as u64) as usize];
    let name = match h % 100 {
        0..=4 => return None,
        5..=14 => format!("{ns}_{method}_{fi}"),
        15..=24 => {
            let helper = format!("helper_{fi}");
            format!("_ZN{}{}6detail{}{}E{}", ns.len(), ns, helper.len(), helper, params)
        }
        25..=34 => format!("_ZNK{}{}{}{}{}{}Ev", ns.len(), ns, class.len(), class, method.len(), method),
        35..=44 if slot == 0 => format!("_ZN{}{}{}{}C2E{}", ns.len(), ns, class.len(), class, params),
        _ => format!("_ZN{}{}{}{}{}{}E{}", ns.len(), ns, class.len(), class, method.len(), method, params),
    };
    Some(name)
}

// ---------------------------------------------------------------------------
// Dynamic state: per-process callstack entries and their counters
// ---------------------------------------------------------------------------

const CLASS_STEADY: u8 = 0;
const CLASS_LEAK: u8 = 1;
const CLASS_TRANSIENT: u8 = 2;

const ST_NOT_MEMBER: u8 = 0;
const ST_PENDING: u8 = 1;
const ST_ACTIVE: u8 = 2;
const ST_GONE: u8 = 3;

/// Percentage of the callstack pool each process uses.
const MEMBER_PCT: u64 = 95;
/// Percentage of the pool that is recycled (and possibly recreated).
const RECYCLE_PCT: u64 = 2;

#[derive(Clone, Copy)]
struct Entry {
    /// Index into `Model::cs_iid` / `cs_base` (changes when recreated).
    cs: u32,
    state: u8,
    class: u8,
    /// Entry had no live allocation when last written.
    dead_mark: bool,
    start: u16,
    /// Transient: dump at which everything is freed.
    stop: u16,
    /// Dump at which a recycled entry comes back (u16::MAX = never).
    recreate: u16,
    unit: u64,
    /// Allocation-rate multiplier (heavy-tailed: 1, 2, 4, … 128).
    rate: u64,
    alloc_count: u64,
    free_count: u64,
}

#[derive(Default)]
struct Proc {
    pid: u64,
    entries: Vec<Entry>,
    alloc_bytes: u64,
    freed_bytes: u64,
    alloc_count: u64,
    free_count: u64,
    last_mono: u64,
}

/// One sample to write.
#[derive(Clone, Copy)]
struct Rec {
    cs: u32,
    iid: u64,
    alloc: u64,
    freed: u64,
    ac: u64,
    fc: u64,
}

/// Allocation sizes: mostly small (reported as the sampling interval, as
/// heapprofd's sampler does), some medium, a few large.
const SMALL_SIZES: [u64; 10] = [16, 24, 32, 48, 64, 96, 128, 256, 512, 1024];
const MEDIUM_SIZES: [u64; 6] = [4096, 6144, 8192, 12288, 32768, 65536];
const LARGE_SIZES: [u64; 3] = [131_072, 262_144, 1 << 20];

fn pick_size(h: u64) -> u64 {
    let r = h % 100;
    let k = (h >> 8) as usize;
    if r < 72 {
        SMALL_SIZES[k % SMALL_SIZES.len()]
    } else if r < 99 {
        MEDIUM_SIZES[k % MEDIUM_SIZES.len()]
    } else {
        LARGE_SIZES[k % LARGE_SIZES.len()]
    }
}

const MONO_BASE: u64 = 120_000_000_000;
const BOOT_OFFSET: u64 = 5_000_000_000;
const REALTIME_BASE: u64 = 1_767_225_600_000_000_000;
const DUMP_INTERVAL: u64 = 10_000_000_000;
const HEAPPROFD_UID: u64 = 9999;
const HEAPPROFD_PID: u64 = 612;
const TRACED_PID: u64 = 480;
const TRACED_PROBES_PID: u64 = 495;
const SEQ_HEAPPROFD: u64 = 1;
const SEQ_SERVICE: u64 = 2;
const SEQ_PROBES: u64 = 3;

struct Gen {
    model: Model,
    procs: Vec<Proc>,
    dumps: usize,
    sampling_interval: u64,
    threshold: usize,
    pkt: Vec<u8>,
    header: Vec<u8>,
    recs: Vec<Rec>,
    new_cs: Vec<u32>,
    cs_emitted: Vec<bool>,
    frame_emitted: Vec<bool>,
    mapping_emitted: Vec<bool>,
    string_emitted: Vec<u8>,
    boot_now: u64,
    next_index: u64,
    rng: SplitMix64,
    samples: u64,
    totals: Vec<SynthDumpTotals>,
}

impl Gen {
    fn new(opts: &SynthOptions, model: Model) -> Self {
        let seed = model.seed;
        let n = model.n_callstacks;
        let dumps = opts.dumps;
        let dmax = dumps.min(u16::MAX as usize - 1) as u64;
        let nproc = opts.processes;
        // Each process uses ~MEMBER_PCT % of the pool; a callstack no process
        // picked goes to process `c % nproc`, so every callstack is used.
        // Recyclable callstacks belong to process `c % nproc` only, so that
        // their trie node really dies when that process drops them.
        let recyclable = |c: usize| hash(seed, 0x2ec7, c as u64, 0) % 100 < RECYCLE_PCT;
        let picked = |p: usize, c: usize| hash(seed, 0x3e3b, p as u64, c as u64) % 100 < MEMBER_PCT;
        let member = |p: usize, c: usize| {
            if recyclable(c) {
                p == c % nproc
            } else {
                picked(p, c) || (p == c % nproc && !(0..nproc).any(|q| picked(q, c)))
            }
        };
        let mut procs = Vec::with_capacity(nproc);
        for p in 0..nproc {
            let mut entries = Vec::with_capacity(n);
            for c in 0..n {
                if !member(p, c) {
                    entries.push(Entry {
                        cs: c as u32,
                        state: ST_NOT_MEMBER,
                        class: 0,
                        dead_mark: false,
                        start: 0,
                        stop: 0,
                        recreate: u16::MAX,
                        unit: 0,
                        rate: 0,
                        alloc_count: 0,
                        free_count: 0,
                    });
                    continue;
                }
                let h = hash(seed, 0xe7, p as u64, c as u64);
                let mut start = if h % 100 < 95 || dmax <= 1 { 0 } else { 1 + (h >> 8) % (dmax - 1) };
                let mut class = match (h >> 16) % 100 {
                    0..=5 => CLASS_TRANSIENT,
                    6..=30 => CLASS_LEAK,
                    _ => CLASS_STEADY,
                };
                let mut stop = u16::MAX;
                let mut recreate = u16::MAX;
                if recyclable(c) {
                    // Fully freed at `stop`, erased at stop + 1, back under a
                    // new iid at stop + 2 (when the trace is long enough).
                    start = 0;
                    class = CLASS_TRANSIENT;
                    let stop64 = 1 + if dmax >= 4 { (h >> 24) % (dmax - 3) } else { 0 };
                    stop = stop64 as u16;
                    if stop64 + 2 < dmax {
                        recreate = stop + 2;
                    }
                } else if class == CLASS_TRANSIENT {
                    // Fully freed at `stop`, erased at stop + 1, never back.
                    if start + 1 < dmax {
                        stop = (start + 1 + (h >> 24) % (dmax - start - 1)) as u16;
                    }
                }
                if class == CLASS_TRANSIENT && u64::from(stop) >= dmax {
                    class = CLASS_STEADY;
                }
                let size = pick_size(h >> 32);
                entries.push(Entry {
                    cs: c as u32,
                    state: ST_PENDING,
                    class,
                    dead_mark: false,
                    start: start as u16,
                    stop,
                    recreate,
                    unit: size.max(opts.sampling_interval).max(1),
                    rate: 1 << (hash(seed, 0x4a7e, p as u64, c as u64) | 1 << 7).trailing_zeros(),
                    alloc_count: 0,
                    free_count: 0,
                });
            }
            procs.push(Proc {
                pid: 1000 + p as u64,
                entries,
                alloc_bytes: 0,
                freed_bytes: 0,
                alloc_count: 0,
                free_count: 0,
                last_mono: MONO_BASE + 500_000_000 + p as u64 * 1_000_000,
            });
        }
        let threshold = opts.packet_bytes.clamp(1024, 64 << 20);
        let mut string_emitted = vec![0u8; model.strings.len()];
        // iid 0 ("") is emitted for all kinds by the fixed-internings packet.
        string_emitted[0] = K_BUILD_ID | K_MAPPING_PATH | K_FUNCTION_NAME;
        Gen {
            cs_emitted: vec![false; model.cs_iid.len()],
            frame_emitted: vec![false; model.frames.len()],
            mapping_emitted: vec![false; model.mappings.len()],
            string_emitted,
            model,
            procs,
            dumps,
            sampling_interval: opts.sampling_interval,
            threshold,
            pkt: Vec::with_capacity(threshold + (1 << 16)),
            header: Vec::with_capacity(256),
            recs: Vec::new(),
            new_cs: Vec::new(),
            boot_now: MONO_BASE + BOOT_OFFSET,
            next_index: 0,
            rng: SplitMix64(seed ^ 0xd1ce_0000_0000_0001),
            samples: 0,
            totals: Vec::with_capacity(dumps * nproc),
        }
    }

    fn run<W: Write>(&mut self, sink: &mut Sink<W>) -> io::Result<()> {
        self.write_process_tree(sink)?;
        self.write_clock_snapshot(sink, MONO_BASE, true)?;
        self.write_fixed_internings(sink)?;
        for d in 0..self.dumps {
            for p in 0..self.procs.len() {
                self.update_process(p, d);
                self.write_chain(sink, p)?;
            }
        }
        let mono_end = self.boot_now - BOOT_OFFSET + 1_000_000;
        self.write_clock_snapshot(sink, mono_end, false)
    }

    // -- trace packet helpers ------------------------------------------------

    fn begin_packet(&mut self, timestamp: Option<u64>) {
        self.pkt.clear();
        if let Some(ts) = timestamp {
            put_u64(&mut self.pkt, f::TP_TIMESTAMP, ts);
        }
    }

    /// Appends the service-written trusted fields and emits the packet.
    fn end_packet<W: Write>(
        &mut self,
        sink: &mut Sink<W>,
        uid: u64,
        seq: u64,
        pid: u64,
        first: bool,
    ) -> io::Result<()> {
        let b = &mut self.pkt;
        put_u64(b, f::TP_TRUSTED_UID, uid);
        put_u64(b, f::TP_TRUSTED_SEQ_ID, seq);
        put_u64(b, f::TP_TRUSTED_PID, pid);
        if first {
            put_u64(b, f::TP_PREVIOUS_PACKET_DROPPED, 1);
            put_bool(b, f::TP_FIRST_PACKET_ON_SEQUENCE, true);
        }
        sink.packet(&self.pkt)
    }

    /// A heapprofd packet: timestamp = BOOTTIME "now".
    fn begin_heapprofd_packet(&mut self) {
        let ts = self.boot_now;
        self.boot_now += 40_000 + self.rng.scaled(20_000) as u64;
        self.begin_packet(Some(ts));
    }

    fn end_heapprofd_packet<W: Write>(&mut self, sink: &mut Sink<W>) -> io::Result<()> {
        self.end_packet(sink, HEAPPROFD_UID, SEQ_HEAPPROFD, HEAPPROFD_PID, false)
    }

    fn write_process_tree<W: Write>(&mut self, sink: &mut Sink<W>) -> io::Result<()> {
        self.begin_packet(Some(MONO_BASE + BOOT_OFFSET - 2_000_000));
        let b = &mut self.pkt;
        let pt = begin_msg(b, f::TP_PROCESS_TREE);
        for (i, pr) in self.procs.iter().enumerate() {
            let m = begin_msg(b, f::PT_PROCESSES);
            put_u64(b, f::PR_PID, pr.pid);
            put_u64(b, f::PR_PPID, 1);
            put_bytes(b, f::PR_CMDLINE, format!("com.example.synth.app{i}").as_bytes());
            put_u64(b, f::PR_UID, 10_100 + i as u64);
            end_msg(b, m);
        }
        put_u64(b, f::PT_COLLECTION_END, MONO_BASE + BOOT_OFFSET - 1_000_000);
        end_msg(b, pt);
        self.end_packet(sink, 0, SEQ_PROBES, TRACED_PROBES_PID, true)
    }

    fn write_clock_snapshot<W: Write>(&mut self, sink: &mut Sink<W>, mono: u64, first: bool) -> io::Result<()> {
        let boot = mono + BOOT_OFFSET;
        self.begin_packet(Some(boot));
        let b = &mut self.pkt;
        let cs = begin_msg(b, f::TP_CLOCK_SNAPSHOT);
        for (id, ts) in [(6u64, boot), (4, mono), (3, mono + 7_331), (1, REALTIME_BASE + mono)] {
            let c = begin_msg(b, f::CS_CLOCKS);
            put_u64(b, f::CL_ID, id);
            put_u64(b, f::CL_TS, ts);
            end_msg(b, c);
        }
        put_u64(b, f::CS_PRIMARY, 6);
        end_msg(b, cs);
        self.end_packet(sink, 0, SEQ_SERVICE, TRACED_PID, first)
    }

    /// heapprofd's `WriteFixedInternings`: no timestamp, `""` as iid 0 in the
    /// three string tables, and the incremental-state-cleared flag.
    fn write_fixed_internings<W: Write>(&mut self, sink: &mut Sink<W>) -> io::Result<()> {
        self.begin_packet(None);
        let b = &mut self.pkt;
        let id = begin_msg(b, f::TP_INTERNED_DATA);
        for field in [f::ID_BUILD_IDS, f::ID_MAPPING_PATHS, f::ID_FUNCTION_NAMES] {
            let s = begin_msg(b, field);
            put_u64(b, f::IS_IID, 0);
            put_bytes(b, f::IS_STR, b"");
            end_msg(b, s);
        }
        end_msg(b, id);
        put_u64(b, f::TP_SEQUENCE_FLAGS, 1);
        self.end_packet(sink, HEAPPROFD_UID, SEQ_HEAPPROFD, HEAPPROFD_PID, true)
    }

    // -- bookkeeping -----------------------------------------------------------

    /// Advances process `p` to dump `d`: applies this interval's allocations
    /// and frees, heapprofd's recycling rule, and fills `self.recs`.
    fn update_process(&mut self, p: usize, d: usize) {
        let seed = self.model.seed;
        let du = d as u16;
        self.recs.clear();
        let mut pr = std::mem::take(&mut self.procs[p]);
        for c in 0..pr.entries.len() {
            let e = &mut pr.entries[c];
            match e.state {
                ST_NOT_MEMBER => continue,
                ST_PENDING if e.start == du => e.state = ST_ACTIVE,
                ST_GONE if e.recreate == du => {
                    // Same frames, new trie node → new callstack iid.
                    let iid = self.model.new_node_id(&mut self.rng);
                    self.model.cs_iid.push(iid);
                    self.model.cs_base.push(e.cs);
                    self.cs_emitted.push(false);
                    e.cs = (self.model.cs_iid.len() - 1) as u32;
                    e.state = ST_ACTIVE;
                    e.class = CLASS_STEADY;
                    e.dead_mark = false;
                    e.alloc_count = 0;
                    e.free_count = 0;
                }
                ST_ACTIVE => {}
                _ => continue,
            }
            let h = hash(seed, 0x1e7e, ((p as u64) << 32) | c as u64, (d as u64) << 32 | u64::from(e.cs));
            let live = e.alloc_count - e.free_count;
            let transient_done = e.class == CLASS_TRANSIENT && du >= e.stop;
            let n_alloc = if transient_done {
                0
            } else {
                let base = e.rate * (2 + (h % 6) + ((h >> 4) % 4) * ((h >> 8) % 2));
                if (h >> 12) % 10 == 0 { base * (4 + (h >> 16) % 13) } else { base }
            };
            let n_free = match e.class {
                CLASS_TRANSIENT if du == e.stop => live,
                CLASS_TRANSIENT if du > e.stop => 0,
                CLASS_LEAK => u64::from((h >> 24) % 8 == 0 && live > 1),
                _ => {
                    let avail = live + n_alloc / 2;
                    if avail == 0 { 0 } else { (h >> 24) % (avail + 1) }
                }
            };
            // heapprofd deletes an entry that had no live allocation at the
            // previous dump and has not allocated since, before writing.
            if e.dead_mark && n_alloc == 0 {
                e.state = ST_GONE;
                continue;
            }
            e.alloc_count += n_alloc;
            e.free_count += n_free;
            e.dead_mark = e.alloc_count == e.free_count;
            pr.alloc_count += n_alloc;
            pr.free_count += n_free;
            pr.alloc_bytes += n_alloc * e.unit;
            pr.freed_bytes += n_free * e.unit;
            self.recs.push(Rec {
                cs: e.cs,
                iid: self.model.cs_iid[e.cs as usize],
                alloc: e.alloc_count * e.unit,
                freed: e.free_count * e.unit,
                ac: e.alloc_count,
                fc: e.free_count,
            });
        }
        // Dump timestamp (MONOTONIC_COARSE) and header.
        let mono = MONO_BASE
            + (d as u64 + 1) * DUMP_INTERVAL
            + p as u64 * 3_000_000
            + hash(seed, 0x75, p as u64, d as u64) % 1_000_000;
        let start = pr.last_mono;
        pr.last_mono = mono;
        self.totals.push(SynthDumpTotals {
            pid: pr.pid,
            dump_index: d,
            timestamp: mono + BOOT_OFFSET,
            mono_timestamp: mono,
            alloc_bytes: pr.alloc_bytes,
            freed_bytes: pr.freed_bytes,
            alloc_count: pr.alloc_count,
            free_count: pr.free_count,
        });
        self.fill_header(&pr, p, d, mono, start);
        self.procs[p] = pr;
    }

    /// The `ProcessHeapSamples` header, in heapprofd's field order.
    fn fill_header(&mut self, pr: &Proc, p: usize, d: usize, mono: u64, start: u64) {
        let b = &mut self.header;
        b.clear();
        put_u64(b, f::HS_PID, pr.pid);
        put_u64(b, f::HS_TIMESTAMP, mono);
        put_u64(b, f::HS_START_TIMESTAMP, start);
        put_bool(b, f::HS_FROM_STARTUP, p % 2 == 0);
        put_bool(b, f::HS_DISCONNECTED, false);
        put_bool(b, f::HS_BUFFER_OVERRAN, false);
        put_u64(b, f::HS_CLIENT_ERROR, 0);
        put_bool(b, f::HS_BUFFER_CORRUPTED, false);
        put_bool(b, f::HS_HIT_GUARDRAIL, false);
        put_bytes(b, f::HS_HEAP_NAME, b"libc.malloc");
        put_u64(b, f::HS_SAMPLING_INTERVAL, self.sampling_interval);
        put_u64(b, f::HS_ORIG_SAMPLING_INTERVAL, self.sampling_interval);
        let heap_samples = pr.alloc_count + pr.free_count;
        let st = begin_msg(b, f::HS_STATS);
        put_u64(b, f::ST_UNWINDING_ERRORS, (d as u64) * (p as u64 % 3));
        put_u64(b, f::ST_HEAP_SAMPLES, heap_samples);
        put_u64(b, f::ST_MAP_REPARSES, 1 + d as u64);
        let hi = begin_msg(b, f::ST_UNWINDING_TIME_US);
        let parts = [(1u64, 2u64), (10, 5), (100, 2), (1000, 1)];
        let mut rest = heap_samples;
        let mut total_us = 0u64;
        for (limit, share) in parts {
            let count = heap_samples * share / 10;
            rest -= count.min(rest);
            total_us += count * limit / 2;
            let bu = begin_msg(b, f::HI_BUCKETS);
            put_u64(b, f::BU_UPPER_LIMIT, limit);
            put_u64(b, f::BU_COUNT, count);
            end_msg(b, bu);
        }
        let bu = begin_msg(b, f::HI_BUCKETS);
        put_bool(b, f::BU_MAX_BUCKET, true);
        put_u64(b, f::BU_COUNT, rest);
        end_msg(b, bu);
        total_us += rest * 2000;
        end_msg(b, hi);
        put_u64(b, f::ST_TOTAL_UNWINDING_TIME_US, total_us);
        put_u64(b, f::ST_CLIENT_SPINLOCK_BLOCKED_US, heap_samples / 7);
        end_msg(b, st);
    }

    // -- chain writing ---------------------------------------------------------

    fn begin_profile_packet(&mut self) -> usize {
        self.begin_heapprofd_packet();
        let pp = begin_msg(&mut self.pkt, f::TP_PROFILE_PACKET);
        put_u64(&mut self.pkt, f::PP_INDEX, self.next_index);
        self.next_index += 1;
        pp
    }

    /// Writes the packet chain of one (process, dump) as heapprofd's
    /// `DumpState` does.
    fn write_chain<W: Write>(&mut self, sink: &mut Sink<W>, p: usize) -> io::Result<()> {
        let mono = self.totals.last().map_or(0, |t| t.mono_timestamp);
        let nominal = mono + BOOT_OFFSET + 20_000_000 + p as u64 * 1_000_000;
        self.boot_now = self.boot_now.max(nominal);

        let mut pp = self.begin_profile_packet();
        let mut hs: Option<usize> = None;
        self.new_cs.clear();
        let recs = std::mem::take(&mut self.recs);
        for r in &recs {
            if self.pkt.len() > self.threshold {
                if let Some(pos) = hs.take() {
                    end_msg(&mut self.pkt, pos);
                }
                put_bool(&mut self.pkt, f::PP_CONTINUED, true);
                end_msg(&mut self.pkt, pp);
                self.end_heapprofd_packet(sink)?;
                pp = self.begin_profile_packet();
            }
            let b = &mut self.pkt;
            if hs.is_none() {
                hs = Some(begin_msg(b, f::PP_PROCESS_DUMPS));
                b.extend_from_slice(&self.header);
            }
            let s = begin_msg(b, f::HS_SAMPLES);
            put_u64(b, f::SA_CALLSTACK_ID, r.iid);
            put_u64(b, f::SA_SELF_ALLOCATED, r.alloc);
            put_u64(b, f::SA_SELF_FREED, r.freed);
            put_u64(b, f::SA_ALLOC_COUNT, r.ac);
            put_u64(b, f::SA_FREE_COUNT, r.fc);
            end_msg(b, s);
            if !self.cs_emitted[r.cs as usize] {
                self.cs_emitted[r.cs as usize] = true;
                self.new_cs.push(r.cs);
            }
        }
        self.samples += recs.len() as u64;
        self.recs = recs;

        // DumpCallstacks: mark continued, then the InternedData.
        if let Some(pos) = hs.take() {
            end_msg(&mut self.pkt, pos);
        }
        put_bool(&mut self.pkt, f::PP_CONTINUED, true);
        end_msg(&mut self.pkt, pp);
        let new_cs = std::mem::take(&mut self.new_cs);
        let mut id: Option<usize> = None;
        for &cs in &new_cs {
            if self.pkt.len() > self.threshold {
                if let Some(pos) = id.take() {
                    end_msg(&mut self.pkt, pos);
                }
                self.end_heapprofd_packet(sink)?;
                self.begin_heapprofd_packet();
            }
            if id.is_none() {
                id = Some(begin_msg(&mut self.pkt, f::TP_INTERNED_DATA));
            }
            self.write_callstack(cs);
        }
        self.new_cs = new_cs;
        if let Some(pos) = id.take() {
            end_msg(&mut self.pkt, pos);
        }
        self.end_heapprofd_packet(sink)?;

        // Terminating empty ProfilePacket (continued unset = false).
        let pp = self.begin_profile_packet();
        end_msg(&mut self.pkt, pp);
        self.end_heapprofd_packet(sink)
    }

    /// `InterningOutputTracker::WriteCallstack`: frames leaf first (each
    /// preceded by its mapping's strings, build id, mapping and function
    /// name, if new), then the callstack with frame ids root first.
    fn write_callstack(&mut self, cs: u32) {
        let m = &self.model;
        let b = &mut self.pkt;
        let frames = m.base_frames(m.cs_base[cs as usize]);
        for &fr in frames.iter().rev() {
            let fd = &m.frames[fr as usize];
            let func = &m.funcs[fd.func as usize];
            let map_idx = func.mapping as usize;
            let map = &m.mappings[map_idx];
            if !self.mapping_emitted[map_idx] {
                self.mapping_emitted[map_idx] = true;
                for &s in &map.path_iids {
                    write_string(b, &mut self.string_emitted, &m.strings, s, K_MAPPING_PATH, f::ID_MAPPING_PATHS);
                }
                write_string(b, &mut self.string_emitted, &m.strings, map.build_id_iid, K_BUILD_ID, f::ID_BUILD_IDS);
                let mm = begin_msg(b, f::ID_MAPPINGS);
                put_u64(b, f::MA_IID, map.iid);
                put_u64(b, f::MA_EXACT_OFFSET, map.exact_offset);
                put_u64(b, f::MA_START_OFFSET, 0);
                put_u64(b, f::MA_START, map.start);
                put_u64(b, f::MA_END, map.end);
                put_u64(b, f::MA_LOAD_BIAS, map.load_bias);
                put_u64(b, f::MA_BUILD_ID, map.build_id_iid);
                for &s in &map.path_iids {
                    put_u64(b, f::MA_PATH_STRING_IDS, s);
                }
                end_msg(b, mm);
            }
            write_string(b, &mut self.string_emitted, &m.strings, func.name_iid, K_FUNCTION_NAME, f::ID_FUNCTION_NAMES);
            if !self.frame_emitted[fr as usize] {
                self.frame_emitted[fr as usize] = true;
                let fm = begin_msg(b, f::ID_FRAMES);
                put_u64(b, f::FR_IID, fd.iid);
                put_u64(b, f::FR_FUNCTION_NAME_ID, func.name_iid);
                put_u64(b, f::FR_MAPPING_ID, map.iid);
                put_u64(b, f::FR_REL_PC, fd.rel_pc);
                end_msg(b, fm);
            }
        }
        let c = begin_msg(b, f::ID_CALLSTACKS);
        put_u64(b, f::CA_IID, m.cs_iid[cs as usize]);
        for &fr in frames {
            put_u64(b, f::CA_FRAME_IDS, m.frames[fr as usize].iid);
        }
        end_msg(b, c);
    }
}

/// Emits an `InternedString` into `field` unless already emitted as `kind`.
#[inline]
fn write_string(b: &mut Vec<u8>, emitted: &mut [u8], strings: &[Vec<u8>], iid: u64, kind: u8, field: u32) {
    let i = iid as usize;
    if emitted[i] & kind != 0 {
        return;
    }
    emitted[i] |= kind;
    let s = begin_msg(b, field);
    put_u64(b, f::IS_IID, iid);
    put_bytes(b, f::IS_STR, &strings[i]);
    end_msg(b, s);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(compress: bool) -> SynthOptions {
        SynthOptions {
            callstacks: 300,
            depth: 12,
            dumps: 4,
            processes: 2,
            packet_bytes: 4096,
            compress,
            ..Default::default()
        }
    }

    fn generate(opts: &SynthOptions) -> (Vec<u8>, SynthSummary) {
        let mut out = Vec::new();
        let s = write_synthetic_trace(opts, &mut out).unwrap();
        (out, s)
    }

    // Minimal protobuf reader for the checks below.
    fn varint(b: &[u8], pos: &mut usize) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let x = b[*pos];
            *pos += 1;
            v |= u64::from(x & 0x7f) << shift;
            if x < 0x80 {
                return v;
            }
            shift += 7;
        }
    }

    /// (field, varint value or 0, bytes slice for length-delimited)
    fn fields(b: &[u8]) -> Vec<(u32, u64, &[u8])> {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < b.len() {
            let key = varint(b, &mut pos);
            let field = (key >> 3) as u32;
            match key & 7 {
                0 => {
                    let v = varint(b, &mut pos);
                    out.push((field, v, &b[0..0]));
                }
                2 => {
                    let len = varint(b, &mut pos) as usize;
                    out.push((field, 0, &b[pos..pos + len]));
                    pos += len;
                }
                wt => panic!("unexpected wire type {wt}"),
            }
        }
        out
    }

    fn inflate_stored(z: &[u8]) -> Vec<u8> {
        assert_eq!(&z[..2], &[0x78, 0x01]);
        assert_eq!((u32::from(z[0]) * 256 + u32::from(z[1])) % 31, 0);
        let mut pos = 2;
        let mut out = Vec::new();
        loop {
            let hdr = z[pos];
            let len = usize::from(u16::from_le_bytes([z[pos + 1], z[pos + 2]]));
            let nlen = u16::from_le_bytes([z[pos + 3], z[pos + 4]]);
            assert_eq!(hdr & 0b110, 0, "stored block");
            assert_eq!(!nlen as usize, len);
            out.extend_from_slice(&z[pos + 5..pos + 5 + len]);
            pos += 5 + len;
            if hdr & 1 == 1 {
                break;
            }
        }
        assert_eq!(&z[pos..], &adler32(&out).to_be_bytes());
        out
    }

    #[test]
    fn deterministic() {
        let (a, sa) = generate(&small(false));
        let (b, sb) = generate(&small(false));
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        let (c, _) = generate(&SynthOptions { seed: 2, ..small(false) });
        assert_ne!(a, c);
    }

    #[test]
    fn frame_family_reaches_its_frames_and_shares_names() {
        let fam = SynthOptions { callstacks: 3000, depth: 20, frames: Some(4000), functions: 3000, ..small(false) };
        let (a, sa) = generate(&fam);
        let (b, sb) = generate(&fam);
        assert_eq!(a, b, "deterministic");
        assert_eq!(sa, sb);
        // Nearly every call site is reached; every function has a name of its own (5 % unnamed).
        assert!((3800..=4000).contains(&sa.frames), "{} frames", sa.frames);
        assert!((2700..=3009).contains(&sa.function_names), "{} names", sa.function_names);
        assert_eq!(sa.mappings, 22);
        // Shorter shared prefixes than the classic generator: more nodes per callstack.
        let classic = generate(&SynthOptions { callstacks: 3000, depth: 20, ..small(false) }).1;
        assert!(sa.stack_nodes > classic.stack_nodes, "{} vs {}", sa.stack_nodes, classic.stack_nodes);
        let (_, shared) = generate(&SynthOptions { shared_names: true, ..fam.clone() });
        assert!(shared.function_names <= 3000 / 4 + 9, "{} shared names", shared.function_names);
        assert!(shared.frames >= 3800);
    }

    #[test]
    fn starts_with_packet_tag() {
        for compress in [false, true] {
            let (a, s) = generate(&small(compress));
            assert_eq!(a[0], 0x0a);
            assert_eq!(s.bytes, a.len() as u64);
        }
    }

    #[test]
    fn totals_monotonic() {
        let (_, s) = generate(&SynthOptions { dumps: 6, ..small(false) });
        assert_eq!(s.totals.len(), 12);
        for pid in [1000u64, 1001] {
            let t: Vec<_> = s.totals.iter().filter(|t| t.pid == pid).collect();
            for w in t.windows(2) {
                assert!(w[1].alloc_bytes > w[0].alloc_bytes);
                assert!(w[1].alloc_count > w[0].alloc_count);
                assert!(w[1].freed_bytes >= w[0].freed_bytes);
                assert!(w[1].free_count >= w[0].free_count);
                assert!(w[1].timestamp > w[0].timestamp);
            }
            assert!(t.iter().all(|x| x.freed_bytes <= x.alloc_bytes));
        }
    }

    #[test]
    fn compressed_bundles_hold_the_same_packets() {
        let (plain, sp) = generate(&small(false));
        let (comp, sc) = generate(&small(true));
        assert_eq!(sp.packets, sc.packets);
        assert_eq!(sp.totals, sc.totals);
        let mut inflated = Vec::new();
        for (field, _, body) in fields(&comp) {
            assert_eq!(field, 1);
            let inner = fields(body);
            assert_eq!(inner.len(), 1);
            assert_eq!(inner[0].0, 50);
            inflated.extend_from_slice(&inflate_stored(inner[0].2));
        }
        assert_eq!(inflated, plain);
    }

    /// Decodes the trace like a consumer would (samples buffered until the
    /// chain ends, interned data kept across chains) and recomputes totals.
    #[test]
    fn decoded_totals_match_summary() {
        for opts in [small(false), SynthOptions { dumps: 5, processes: 3, packet_bytes: 1024, ..small(false) }] {
            let (trace, summary) = generate(&opts);
            let mut strings_fn: HashMap<u64, Vec<u8>> = HashMap::new();
            let mut mappings: HashSet<u64> = HashSet::new();
            let mut frames: HashMap<u64, (u64, u64)> = HashMap::new();
            let mut callstacks: HashMap<u64, Vec<u64>> = HashMap::new();
            // (pid) -> iid -> latest (alloc, freed, ac, fc)
            let mut latest: HashMap<u64, HashMap<u64, [u64; 4]>> = HashMap::new();
            let mut pending: Vec<(u64, u64, u64, [u64; 4])> = Vec::new();
            let mut got: Vec<SynthDumpTotals> = Vec::new();
            let mut expected_index = 0u64;
            let mut cleared = false;
            let mut samples = 0u64;
            for (_, _, pkt) in fields(&trace) {
                let pf = fields(pkt);
                for &(field, v, body) in &pf {
                    match field {
                        13 => cleared |= v & 1 == 1,
                        12 => {
                            for (kind, _, item) in fields(body) {
                                let it = fields(item);
                                let iid = it.iter().find(|x| x.0 == 1).map(|x| x.1).unwrap();
                                match kind {
                                    5 => {
                                        strings_fn.insert(iid, it.iter().find(|x| x.0 == 2).unwrap().2.to_vec());
                                    }
                                    16 | 17 => {}
                                    19 => {
                                        mappings.insert(iid);
                                    }
                                    6 => {
                                        let name = it.iter().find(|x| x.0 == 2).unwrap().1;
                                        let map = it.iter().find(|x| x.0 == 3).unwrap().1;
                                        assert!(strings_fn.contains_key(&name), "name before frame");
                                        assert!(mappings.contains(&map), "mapping before frame");
                                        frames.insert(iid, (name, map));
                                    }
                                    7 => {
                                        let ids: Vec<u64> = it.iter().filter(|x| x.0 == 2).map(|x| x.1).collect();
                                        assert!(ids.iter().all(|i| frames.contains_key(i)), "frames before callstack");
                                        let old = callstacks.insert(iid, ids);
                                        assert!(old.is_none(), "callstack emitted twice");
                                    }
                                    k => panic!("unexpected interned field {k}"),
                                }
                            }
                        }
                        37 => {
                            let pp = fields(body);
                            let index = pp.iter().find(|x| x.0 == 7).unwrap().1;
                            assert_eq!(index, expected_index);
                            expected_index += 1;
                            for &(pf2, _, hs) in &pp {
                                if pf2 != 5 {
                                    continue;
                                }
                                let hsf = fields(hs);
                                let pid = hsf.iter().find(|x| x.0 == 1).unwrap().1;
                                let ts = hsf.iter().find(|x| x.0 == 9).unwrap().1;
                                for &(sf, _, sb) in &hsf {
                                    if sf == 2 {
                                        let s = fields(sb);
                                        let g = |n: u32| s.iter().find(|x| x.0 == n).unwrap().1;
                                        pending.push((pid, ts, g(1), [g(2), g(3), g(5), g(6)]));
                                        samples += 1;
                                    }
                                }
                            }
                            let continued = pp.iter().any(|x| x.0 == 6 && x.1 == 1);
                            if !continued && !pending.is_empty() {
                                let (pid, ts) = (pending[0].0, pending[0].1);
                                let l = latest.entry(pid).or_default();
                                for (p2, t2, iid, vals) in pending.drain(..) {
                                    assert_eq!((p2, t2), (pid, ts));
                                    assert!(callstacks.contains_key(&iid), "callstack defined by end of chain");
                                    let prev = l.insert(iid, vals).unwrap_or([0; 4]);
                                    assert!(vals.iter().zip(prev).all(|(a, b)| *a >= b), "monotonic");
                                }
                                let mut t = [0u64; 4];
                                for v in l.values() {
                                    for k in 0..4 {
                                        t[k] += v[k];
                                    }
                                }
                                got.push(SynthDumpTotals {
                                    pid,
                                    dump_index: 0,
                                    timestamp: ts + BOOT_OFFSET,
                                    mono_timestamp: ts,
                                    alloc_bytes: t[0],
                                    freed_bytes: t[1],
                                    alloc_count: t[2],
                                    free_count: t[3],
                                });
                            }
                        }
                        _ => {}
                    }
                }
            }
            assert!(cleared);
            assert_eq!(samples, summary.samples);
            let want: Vec<_> = summary.totals.iter().map(|t| SynthDumpTotals { dump_index: 0, ..t.clone() }).collect();
            assert_eq!(got, want);
            // Recycling happened: some callstack iids share frames.
            let mut by_frames: HashMap<&Vec<u64>, usize> = HashMap::new();
            for v in callstacks.values() {
                *by_frames.entry(v).or_default() += 1;
            }
            assert!(by_frames.values().any(|&n| n > 1), "expected a recreated callstack");
            assert!(strings_fn.values().any(|s| s.starts_with(b"_ZN")));
            assert!(frames.values().any(|&(name, _)| name == 0));
        }
    }
}
