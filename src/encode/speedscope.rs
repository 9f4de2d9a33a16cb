//! speedscope's file format (<https://www.speedscope.app/file-format-schema.json>, the schema
//! the npm package `speedscope` ships in `dist/release/file-format-schema.json`).
//!
//! One JSON document: `$schema`, `shared.frames` (every distinct frame once: `name`, and
//! `file`, `line`, `col` when the frame is symbolized with them), and `profiles`, one
//! `"sampled"` profile per sample type of the profile (per value: unreleased size, total
//! count…). A sampled profile lists `samples` (each a stack as indices into `shared.frames`,
//! root first) and `weights` (the sample's value, one per sample); `unit` is `"bytes"` for
//! byte values, the time unit for time values and `"none"` for counts; `startValue` is 0 and
//! `endValue` the profile's total. `activeProfileIndex` opens the value heapconv shows.
//! Samples whose value is 0 are left out of that value's profile. Weights cannot be negative
//! (speedscope sums them into a flame graph), so a profile with negative values is refused.
//!
//! A comparison ([`encode_diff`]) is written as two profiles per value, BASE and NEW, over
//! the same frames, so that speedscope switches between them.

use serde_json::{Value, json};

use super::viewer_frames::{ViewerFrame, ViewerFrames};
use crate::error::{Error, ErrorKind, Result};
use crate::model::Profile;

/// The `$schema` every speedscope file names.
pub const SCHEMA: &str = "https://www.speedscope.app/file-format-schema.json";

/// Options of the speedscope encoder.
#[derive(Debug, Clone, Default)]
pub struct SpeedscopeOptions {
    /// Index of the sample type speedscope opens first. Default: 0.
    pub active: usize,
    /// ART annotations in frame names. Default: false.
    pub annotations: bool,
}

/// speedscope's unit for a pprof unit: `bytes`, a time unit, or `none`.
pub fn unit(pprof_unit: &str) -> &'static str {
    match pprof_unit {
        "bytes" | "byte" | "B" => "bytes",
        "nanoseconds" | "nanosecond" | "ns" => "nanoseconds",
        "microseconds" | "microsecond" | "us" => "microseconds",
        "milliseconds" | "millisecond" | "ms" => "milliseconds",
        "seconds" | "second" | "s" => "seconds",
        _ => "none",
    }
}

fn frame_json(f: &ViewerFrame) -> Value {
    let mut v = json!({ "name": f.name });
    if let Some(file) = &f.file {
        v["file"] = json!(file);
    } else if let Some(m) = &f.mapping {
        v["file"] = json!(m);
    }
    if f.line > 0 {
        v["line"] = json!(f.line);
    }
    if f.column > 0 {
        v["col"] = json!(f.column);
    }
    v
}

/// The sampled profiles of `profile` (one per sample type), named `prefix` + type name, with
/// their frames interned in `frames`.
fn profiles_of(profile: &Profile, prefix: &str, annotations: bool, frames: &mut ViewerFrames) -> Result<Vec<Value>> {
    let mut stacks: Vec<Vec<usize>> = Vec::with_capacity(profile.sample_count());
    let mut buf = Vec::new();
    for (s, v) in profile.samples() {
        if let Some(&neg) = v.iter().find(|&&x| x < 0) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "speedscope weights cannot be negative (a sample has {neg}); write a difference as pprof, folded or svg"
                ),
            ));
        }
        frames.stack(&profile.tables, s, annotations, &mut buf);
        stacks.push(buf.clone());
    }
    let mut out = Vec::new();
    for (i, t) in profile.header.sample_types.iter().enumerate() {
        let mut samples = Vec::new();
        let mut weights = Vec::new();
        let mut total = 0i64;
        for (k, (_, v)) in profile.samples().enumerate() {
            if v[i] != 0 {
                samples.push(&stacks[k]);
                weights.push(v[i]);
                total = total.saturating_add(v[i]);
            }
        }
        let name = if t.name.is_empty() { format!("{prefix}value {}", i + 1) } else { format!("{prefix}{}", t.name) };
        out.push(json!({
            "type": "sampled",
            "name": name,
            "unit": unit(&t.unit),
            "startValue": 0,
            "endValue": total,
            "samples": samples,
            "weights": weights,
        }));
    }
    Ok(out)
}

fn document(name: String, profiles: Vec<Value>, frames: &ViewerFrames, active: usize) -> Vec<u8> {
    let doc = json!({
        "$schema": SCHEMA,
        "exporter": format!("heapconv {}", env!("CARGO_PKG_VERSION")),
        "name": name,
        "activeProfileIndex": active,
        "shared": { "frames": frames.frames.iter().map(frame_json).collect::<Vec<_>>() },
        "profiles": profiles,
    });
    let mut s = serde_json::to_vec(&doc).expect("JSON serializes");
    s.push(b'\n');
    s
}

/// Encodes a profile as a speedscope file.
pub fn encode_speedscope(profile: &Profile, opts: &SpeedscopeOptions) -> Result<Vec<u8>> {
    let mut frames = ViewerFrames::default();
    let profiles = profiles_of(profile, "", opts.annotations, &mut frames)?;
    let active = opts.active.min(profiles.len().saturating_sub(1));
    Ok(document(profile.header.meta.describe(), profiles, &frames, active))
}

/// Encodes two profiles (BASE and NEW, with the same sample types) as one speedscope file:
/// per value, a profile `BASE: <type>` and a profile `NEW: <type>`, over shared frames.
pub fn encode_diff(base: &Profile, new: &Profile, opts: &SpeedscopeOptions) -> Result<Vec<u8>> {
    let mut frames = ViewerFrames::default();
    let b = profiles_of(base, "BASE: ", opts.annotations, &mut frames)?;
    let n = profiles_of(new, "NEW: ", opts.annotations, &mut frames)?;
    let active = b.len() + opts.active.min(n.len().saturating_sub(1));
    let profiles: Vec<Value> = b.into_iter().chain(n).collect();
    let active = active.min(profiles.len().saturating_sub(1));
    let name = format!("{} vs {}", base.header.meta.describe(), new.header.meta.describe());
    Ok(document(name, profiles, &frames, active))
}
