//! `heapconv diff`: two profiles (any kind, each possibly several dumps merged) compared,
//! and the growth gate.

use std::borrow::Cow;
use std::path::Path;

use super::load::{InputInfo, LoadOptions, merge_inputs};
use crate::encode::diff::DiffOptions;
use crate::encode::labels::human_bytes;
use crate::encode::{DiffSides, Format, NetProfile, encode_diff};
use crate::error::{Error, ErrorKind, Hint, Result};
use crate::merge::{MergeOptions, diff_pprof};
use crate::model::{FlatProfile, ValueType};
use serde::Serialize;

/// A limit on growth: bytes, or a percentage of BASE.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GrowthLimit {
    /// At most this many bytes more.
    Bytes(i64),
    /// At most this percentage more.
    Percent(f64),
}

impl GrowthLimit {
    /// Reads `5%`, `10MB`, `512KiB`, `1.5 GB` or a plain number of bytes. `K`, `M`, `G`, `T`
    /// with or without `B`/`iB` are powers of 1024 (as pprof reads `kilobytes`).
    pub fn parse(s: &str) -> Result<GrowthLimit> {
        let bad = || {
            Error::new(
                ErrorKind::Usage,
                format!("a growth limit is a size (10MB, 512KiB, 1000) or a percentage (5%), not {s:?}"),
            )
        };
        let t = s.trim();
        if let Some(p) = t.strip_suffix('%') {
            let v: f64 = p.trim().parse().map_err(|_| bad())?;
            if !v.is_finite() || v < 0.0 {
                return Err(bad());
            }
            return Ok(GrowthLimit::Percent(v));
        }
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let v: f64 = num.parse().map_err(|_| bad())?;
        let factor: f64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" | "byte" | "bytes" => 1.0,
            "k" | "kb" | "kib" => 1024.0,
            "m" | "mb" | "mib" => 1024.0 * 1024.0,
            "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
            "t" | "tb" | "tib" => 1024.0f64.powi(4),
            _ => return Err(bad()),
        };
        let bytes = v * factor;
        if !bytes.is_finite() || bytes < 0.0 || bytes > i64::MAX as f64 {
            return Err(bad());
        }
        Ok(GrowthLimit::Bytes(bytes.round() as i64))
    }

    fn describe(&self) -> String {
        match self {
            GrowthLimit::Bytes(b) => format!("{} ({b} bytes)", human_bytes(*b)),
            GrowthLimit::Percent(p) => format!("{p}%"),
        }
    }
}

/// The verdict of `--fail-if-growth`.
#[derive(Debug, Clone, Serialize)]
pub struct GateResult {
    /// Whether the growth is within the limit.
    pub passed: bool,
    /// The sample type compared.
    pub sample_type: String,
    /// Its total in BASE (not normalized).
    pub before: i64,
    /// Its total in NEW.
    pub after: i64,
    /// `after - before`.
    pub growth: i64,
    /// `growth` as % of `before` (`None` when `before` is 0).
    pub growth_percent: Option<f64>,
    /// The limit, as given.
    pub allowed: String,
    /// One line for people: what was compared, actual vs allowed.
    pub message: String,
}

/// Checks growth against a limit.
pub fn growth_gate(sample_type: &str, unit: &str, before: i64, after: i64, limit: GrowthLimit) -> GateResult {
    let growth = after.saturating_sub(before);
    let pct = (before != 0).then(|| growth as f64 * 100.0 / before as f64);
    let passed = match limit {
        GrowthLimit::Bytes(b) => growth <= b,
        GrowthLimit::Percent(p) => match pct {
            Some(x) => x <= p,
            None => after <= 0,
        },
    };
    let fmt = |v: i64| if unit == "bytes" { format!("{} ({v} bytes)", human_bytes(v)) } else { format!("{v} {unit}") };
    let pct_text = pct.map_or_else(|| "from nothing".to_owned(), |p| format!("{p:+.2}%"));
    let message = format!(
        "{sample_type}: {} -> {}, growth {} ({pct_text}); allowed: {}",
        fmt(before),
        fmt(after),
        fmt(growth),
        limit.describe()
    );
    GateResult {
        passed,
        sample_type: sample_type.to_owned(),
        before,
        after,
        growth,
        growth_percent: pct.map(|p| (p * 100.0).round() / 100.0),
        allowed: limit.describe(),
        message,
    }
}

/// Options of `heapconv diff`.
#[derive(Debug, Clone)]
pub struct DiffRunOptions {
    /// How inputs are read. Default: [`LoadOptions::default`].
    pub load: LoadOptions,
    /// How BASE and NEW are matched. Default: [`MergeOptions::default`].
    pub merge: MergeOptions,
    /// Output format. Default: pprof.
    pub format: Format,
    /// Scale BASE to NEW's total in the outputs (never in the gate). Default: false.
    pub normalize: bool,
    /// Fail when the total grew by more than this. Default: none.
    pub fail_if_growth: Option<GrowthLimit>,
    /// Stacks and functions listed in JSON. Default: 20.
    pub top: usize,
    /// The sample type compared: a type name or a meaning (`total-size`), which the profiles
    /// must have. Default: `None`, the default type if it is in bytes, else the first type in
    /// bytes, else the default type.
    pub sample_type: Option<String>,
    /// HTML report: nodes below this percentage of the total are merged into `[other]`.
    /// Default: [`crate::encode::html::DEFAULT_PRUNE_BELOW`].
    pub prune_below: f64,
}

impl Default for DiffRunOptions {
    fn default() -> Self {
        DiffRunOptions {
            load: LoadOptions::default(),
            merge: MergeOptions::default(),
            format: Format::Pprof,
            normalize: false,
            fail_if_growth: None,
            top: 20,
            sample_type: None,
            prune_below: crate::encode::html::DEFAULT_PRUNE_BELOW,
        }
    }
}

/// What `diff` made.
#[derive(Debug)]
pub struct DiffRun {
    /// BASE, merged (in the shared tables).
    pub base: FlatProfile,
    /// NEW, merged.
    pub new: FlatProfile,
    /// The output in the requested format.
    pub bytes: Vec<u8>,
    /// The gate's verdict, when a limit was given.
    pub gate: Option<GateResult>,
    /// What each input held: BASE, then NEW.
    pub inputs: Vec<InputInfo>,
}

/// The sample type a diff compares and gates on: the default type if it counts bytes, else the
/// first that does, else the default.
pub fn diff_value_index(types: &[ValueType], default: usize) -> usize {
    let is_bytes = |i: usize| types.get(i).is_some_and(|t| t.unit == "bytes" || t.kind.is_bytes());
    if is_bytes(default) {
        return default;
    }
    (0..types.len()).find(|&i| is_bytes(i)).unwrap_or(default)
}

/// Runs `diff`: BASE and NEW loaded and merged side by side (so that their frames are
/// matched by content), then the difference encoded, and the gate checked.
pub fn run_diff(base: &Path, new: &Path, opts: &DiffRunOptions) -> Result<DiffRun> {
    let mut load = opts.load.clone();
    load.ddm_lines = opts.format.keeps_lines();
    load.drop_empty_stacks = true;
    let inputs = [base.to_path_buf(), new.to_path_buf()];
    let (merger, infos) = merge_inputs(&inputs, &load, &opts.merge, 2, &|i| i)?;
    let mut sides = merger.finish_sides()?;
    let new_p = sides.pop().expect("two sides");
    let base_p = sides.pop().expect("two sides");
    let index = match opts.sample_type.as_deref() {
        Some(sel) => super::load::pick_sample_type(&new_p.header, Some(sel))?,
        None => diff_value_index(&new_p.header.sample_types, new_p.header.default_sample_type),
    };
    let ty = new_p.header.sample_types[index].clone();
    let gate = match opts.fail_if_growth {
        Some(GrowthLimit::Bytes(_)) if ty.unit != "bytes" => {
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "a growth limit in bytes needs a sample type in bytes; the profiles have {} ({}); give a percentage",
                    ty.name, ty.unit
                ),
            )
            .with_hint(Hint::GrowthSizeNeedsBytes { sample_type: ty.name.clone(), unit: ty.unit.clone() }));
        }
        Some(limit) => Some(growth_gate(&ty.name, &ty.unit, base_p.total(index), new_p.total(index), limit)),
        None => None,
    };
    let dopts = DiffOptions {
        value_index: index,
        normalize: opts.normalize,
        base_name: base.display().to_string(),
        new_name: new.display().to_string(),
        top: opts.top,
        prune_below: opts.prune_below,
        ..DiffOptions::default()
    };
    let sides = DiffSides {
        trees: &|| [Cow::Owned(base_p.to_profile()), Cow::Owned(new_p.to_profile())],
        net: &|| NetProfile::Flat(diff_pprof(&base_p, &new_p, opts.normalize)),
        annotations: false,
        json_extra: gate.iter().map(|g| ("gate", serde_json::to_value(g).expect("a gate serializes"))).collect(),
    };
    let bytes = encode_diff(opts.format, &sides, &dopts)?;
    Ok(DiffRun { base: base_p, new: new_p, bytes, gate, inputs: infos })
}
