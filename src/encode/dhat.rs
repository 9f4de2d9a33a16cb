//! DHAT's JSON output (`dhatFileVersion` 2), as Valgrind's DHAT (`dhat/dh_main.c`) and the
//! dhat-rs crate write it, read by DHAT's viewer `dh_view.html` and imported by the Firefox
//! Profiler as native-allocation tracks.
//!
//! The document: `dhatFileVersion: 2`, `mode: "heap"`, `verb: "Allocated"`, `bklt: true`
//! (block lifetimes recorded, so the per-point maximum, at-global-max and at-end fields are
//! present), `bkacc: false` (no read/write counts), time units `tu`/`Mtu` (`"ns"`, `"ms"`),
//! `tuth` (the short-lived threshold, 0), `cmd` (what was profiled: heapconv's description of
//! the dump), `pid`, `te` and `tg` (the times of the end and of the global maximum), `pps`
//! (program points) and `ftbl` (the frame table: `"[root]"`, then one string per frame,
//! `0x<ADDR>: <function> (<file>:<line>:<column>)`, `0x<ADDR>: <function> (in <mapping>)` or
//! just the name when nothing locates it).
//!
//! One program point per distinct stack: `fs` lists its frames as indices into `ftbl`, leaf
//! first; the numbers are:
//!
//! | DHAT | meaning in DHAT | heapconv value |
//! |---|---|---|
//! | `tb`, `tbk` | bytes and blocks allocated over the run | total size, total count (0 when the profile has none) |
//! | `tl` | summed lifetimes of the blocks | 0 (not recorded) |
//! | `mb`, `mbk` | the point's own maximum of live bytes and blocks | unreleased size and count at the dump |
//! | `gb`, `gbk` | live bytes and blocks at the global maximum (`tg`) | unreleased size and count at the dump |
//! | `eb`, `ebk` | live bytes and blocks at the end (`te`) | unreleased size and count at the dump |
//!
//! A heap dump is one instant: DHAT's two instants, the end and the global maximum, are both
//! the dump (`te` = `tg` = the dump's time, 0 when unknown), so the live bytes at both are the
//! unreleased bytes, and the point's own maximum is given the same value (a lower bound: a
//! dump does not record each stack's peak). A dump taken at the heap's peak (heapprofd's
//! `dump_at_max`) is exactly the global maximum. In the Firefox Profiler, "Total Bytes" is the
//! allocated bytes, "Maximum Bytes" and "Bytes at Global Max" the peak, "Bytes at End" the
//! unreleased bytes.

use rustc_hash::FxHashMap as HashMap;
use serde_json::{Value, json};

use super::viewer_frames::{ViewerFrame, ViewerFrames};
use crate::error::{Error, ErrorKind, Result};
use crate::model::{Profile, StackId, ValueKind};

/// Options of the DHAT encoder.
#[derive(Debug, Clone, Default)]
pub struct DhatOptions {
    /// ART annotations in frame names. Default: false.
    pub annotations: bool,
}

/// The `ftbl` string of a frame (see the module docs).
pub fn frame_string(f: &ViewerFrame) -> String {
    let loc = match (&f.file, &f.mapping) {
        (Some(file), _) => {
            let mut s = file.clone();
            if f.line > 0 {
                s.push_str(&format!(":{}", f.line));
                if f.column > 0 {
                    s.push_str(&format!(":{}", f.column));
                }
            }
            s
        }
        (None, Some(m)) => format!("in {m}"),
        (None, None) => return f.name.clone(),
    };
    format!("0x{:X}: {} ({loc})", f.address, f.name)
}

/// Encodes a profile as DHAT JSON. Refused when the profile has neither allocation sizes nor
/// counts (a CPU profile) or has negative values (a difference).
pub fn encode_dhat(profile: &Profile, opts: &DhatOptions) -> Result<Vec<u8>> {
    let idx = |k| profile.value_index(k);
    let (tb, tbk, ub, ubk) = (
        idx(ValueKind::TotalSize),
        idx(ValueKind::TotalCount),
        idx(ValueKind::UnreleasedSize),
        idx(ValueKind::UnreleasedCount),
    );
    if [tb, tbk, ub, ubk].iter().all(Option::is_none) {
        let types: Vec<String> = profile.header.sample_types.iter().map(|t| format!("{}/{}", t.name, t.unit)).collect();
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "DHAT holds allocations, and this profile has no allocation size or count (sample types: {})",
                types.join(", ")
            ),
        ));
    }
    let mut frames = ViewerFrames::default();
    let mut points: Vec<(StackId, [i64; 4])> = Vec::new();
    let mut at: HashMap<StackId, usize> = HashMap::default();
    for (s, v) in profile.samples() {
        let get = |i: Option<usize>| i.map_or(0, |i| v[i]);
        let vals = [get(tb), get(tbk), get(ub), get(ubk)];
        if let Some(&neg) = vals.iter().find(|&&x| x < 0) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "DHAT counts cannot be negative (a sample has {neg}); write a difference as pprof, folded or svg"
                ),
            ));
        }
        if vals == [0; 4] {
            continue;
        }
        let k = *at.entry(s).or_insert_with(|| {
            points.push((s, [0; 4]));
            points.len() - 1
        });
        for (a, b) in points[k].1.iter_mut().zip(vals) {
            *a = a.saturating_add(b);
        }
    }
    let mut buf = Vec::new();
    let mut pps = Vec::with_capacity(points.len());
    for (s, [tb, tbk, eb, ebk]) in &points {
        frames.stack(&profile.tables, *s, opts.annotations, &mut buf);
        // ftbl[0] is "[root]": frame i is ftbl[i + 1]; fs is leaf first.
        let fs: Vec<usize> = buf.iter().rev().map(|i| i + 1).collect();
        pps.push(json!({
            "tb": tb, "tbk": tbk, "tl": 0,
            "mb": eb, "mbk": ebk,
            "gb": eb, "gbk": ebk,
            "eb": eb, "ebk": ebk,
            "fs": fs,
        }));
    }
    let mut ftbl = vec![Value::from("[root]")];
    ftbl.extend(frames.frames.iter().map(|f| Value::from(frame_string(f))));
    let meta = &profile.header.meta;
    let time = meta.timestamp.unwrap_or(0).max(0);
    let doc = json!({
        "dhatFileVersion": 2,
        "mode": "heap",
        "verb": "Allocated",
        "bklt": true,
        "bkacc": false,
        "tu": "ns",
        "Mtu": "ms",
        "tuth": 0,
        "cmd": meta.describe(),
        "pid": meta.pid.unwrap_or(0),
        "te": time,
        "tg": time,
        "pps": pps,
        "ftbl": ftbl,
    });
    let mut s = serde_json::to_vec(&doc).expect("JSON serializes");
    s.push(b'\n');
    Ok(s)
}
