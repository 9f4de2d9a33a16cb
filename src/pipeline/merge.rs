//! `heapconv merge`: inputs of any kind (heapprofd traces, DDM captures, pprof profiles)
//! decoded, merged by the merge stage, then encoded. Each input is opened, decoded and added
//! to an accumulator on rayon's threads; accumulators are combined pairwise, so the output
//! does not depend on the order of the inputs or on how the work was split.

use std::path::{Path, PathBuf};

use super::load::{InputInfo, LoadOptions, merge_inputs};
use crate::encode::pprof::PprofOptions;
use crate::encode::pprof_gzip::encode_flat_pprof_gzip_to;
use crate::encode::{EncodeOptions, Format, encode_flat};
use crate::error::{Error, ErrorKind, Result};
use crate::merge::MergeOptions;
use crate::model::FlatProfile;

/// Options of `heapconv merge`.
#[derive(Debug, Clone)]
pub struct MergeRunOptions {
    /// How inputs are read. Default: [`LoadOptions::default`].
    pub load: LoadOptions,
    /// How they are merged. Default: [`MergeOptions::default`].
    pub merge: MergeOptions,
    /// Output format. Default: pprof.
    pub format: Format,
    /// The sample type the output shows (its `default_sample_type` in pprof), by name
    /// (`alloc_space`) or meaning (`total-size`); a type the merged profile lacks is an error
    /// listing its types. Default: none (the merged inputs' default type).
    pub sample_type: Option<String>,
    /// HTML report: nodes below this percentage of the total are merged into `[other]`.
    /// Default: [`crate::encode::html::DEFAULT_PRUNE_BELOW`].
    pub prune_below: f64,
}

impl Default for MergeRunOptions {
    fn default() -> Self {
        MergeRunOptions {
            load: LoadOptions::default(),
            merge: MergeOptions::default(),
            format: Format::Pprof,
            sample_type: None,
            prune_below: crate::encode::html::DEFAULT_PRUNE_BELOW,
        }
    }
}

/// What `merge` made.
#[derive(Debug)]
pub struct MergeRun {
    /// The merged profile.
    pub profile: FlatProfile,
    /// Its encoding in the requested format.
    pub bytes: Vec<u8>,
    /// What each input held, in input order.
    pub inputs: Vec<InputInfo>,
}

/// Encodes a merged profile (names already carry their annotations) in `format`, showing its
/// default sample type.
pub fn encode_merged(profile: &FlatProfile, format: Format) -> Result<Vec<u8>> {
    encode_flat(profile, format, &EncodeOptions::default())
}

/// [`encode_merged`] with the options of a run (`--prune-below` of an HTML report).
pub fn encode_merged_with(profile: &FlatProfile, opts: &MergeRunOptions) -> Result<Vec<u8>> {
    encode_flat(profile, opts.format, &EncodeOptions { prune_below: opts.prune_below, ..EncodeOptions::default() })
}

/// Runs `merge`: loads, merges and encodes.
pub fn run_merge(inputs: &[PathBuf], opts: &MergeRunOptions) -> Result<MergeRun> {
    let (profile, infos) = merge_to_profile(inputs, opts)?;
    let mut clock = crate::timing::Phases::start("merge");
    let bytes = encode_merged_with(&profile, opts)?;
    clock.done("encode");
    Ok(MergeRun { profile, bytes, inputs: infos })
}

/// Runs `merge` up to the merged profile (what [`run_merge`] encodes) and what each input
/// held; an error when the merged profile is empty.
pub fn merge_to_profile(inputs: &[PathBuf], opts: &MergeRunOptions) -> Result<(FlatProfile, Vec<InputInfo>)> {
    let mut load = opts.load.clone();
    load.ddm_lines = opts.format.keeps_lines();
    load.drop_empty_stacks = true;
    let mut clock = crate::timing::Phases::start("merge");
    let (merger, infos) = merge_inputs(inputs, &load, &opts.merge, 1, &|_| 0)?;
    clock.done("inputs");
    let mut profile = merger.finish()?;
    clock.done("finish");
    if let Some(sel) = opts.sample_type.as_deref() {
        profile.header.default_sample_type = super::load::pick_sample_type(&profile.header, Some(sel))?;
    }
    if profile.sample_count() == 0 {
        return Err(Error::new(ErrorKind::NoData, "the merged profile is empty: every input's values are zero"));
    }
    Ok((profile, infos))
}

/// Runs `merge` with pprof output, written to `path` (atomically, see
/// [`crate::output::AtomicFile`]) as it is encoded; the bytes are those [`run_merge`] makes.
/// Returns the merged profile and what each input held.
pub fn run_merge_pprof_to(
    inputs: &[PathBuf],
    opts: &MergeRunOptions,
    path: &Path,
) -> Result<(FlatProfile, Vec<InputInfo>)> {
    let opts = MergeRunOptions { format: Format::Pprof, ..opts.clone() };
    let (profile, infos) = merge_to_profile(inputs, &opts)?;
    let mut clock = crate::timing::Phases::start("merge");
    let mut out = crate::output::AtomicFile::create(path, inputs)?;
    encode_flat_pprof_gzip_to(&profile, &PprofOptions { annotations: false, extras: true }, &mut out)
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
    out.commit()?;
    clock.done("encode and write");
    Ok((profile, infos))
}

/// Runs `write` (the merged output's writing) timed as the merge's `write` phase.
pub fn timed_write<T>(write: impl FnOnce() -> T) -> T {
    let mut clock = crate::timing::Phases::start("merge");
    let r = write();
    clock.done("write");
    r
}
