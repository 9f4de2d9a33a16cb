//! The pprof form of a diff, and the factors that normalize a base to a new profile.

use std::sync::Arc;

use crate::model::FlatProfile;

/// The pprof form of a diff, as `go tool pprof -diff_base BASE NEW` builds it: NEW's samples
/// as they are, then BASE's with negated values and the string label `pprof::base` = `true`
/// (which pprof uses to take percentages of the base's total). Both profiles must come from
/// one [`Merger::finish_sides`](super::Merger::finish_sides). With `normalize`, BASE's values
/// of each type are first scaled by NEW's total over BASE's total (rounded), so that the totals
/// cancel out.
pub fn diff_pprof(base: &FlatProfile, new: &FlatProfile, normalize: bool) -> FlatProfile {
    let mut tables = (*new.tables).clone();
    let key = tables.strings.intern("pprof::base");
    let yes = tables.strings.intern("true");
    let factors = diff_factors(base, new, normalize);
    let mut meta = new.header.meta.clone();
    meta.title = Some("diff".to_owned());
    let mut out = FlatProfile::new(Arc::new(tables), meta, new.header.sample_types.clone());
    out.header.default_sample_type = new.header.default_sample_type;
    for &(k, u) in new.num_label_units() {
        out.set_num_label_unit(k, u);
    }
    for i in 0..new.sample_count() {
        let (frames, v) = new.sample(i);
        out.push_sample(frames, v, new.sample_labels(i), new.sample_str_labels(i));
    }
    let mut strs = Vec::new();
    let mut vals = Vec::new();
    for i in 0..base.sample_count() {
        let (frames, v) = base.sample(i);
        vals.clear();
        vals.extend(v.iter().zip(&factors).map(|(&x, &f)| -scaled(x, f)));
        if vals.iter().all(|&x| x == 0) {
            continue;
        }
        strs.clear();
        strs.extend_from_slice(base.sample_str_labels(i));
        strs.push((key, yes));
        out.push_sample(frames, &vals, base.sample_labels(i), &strs);
    }
    out
}

/// Per sample type, the factor that scales BASE to NEW's total (1 without `normalize`, or when
/// BASE's total is 0).
pub fn diff_factors(base: &FlatProfile, new: &FlatProfile, normalize: bool) -> Vec<f64> {
    (0..new.header.sample_types.len())
        .map(|i| {
            let (b, n) = (base.total(i), new.total(i));
            if normalize && b != 0 { n as f64 / b as f64 } else { 1.0 }
        })
        .collect()
}

/// `v` times `f`, rounded to the nearest integer (exact when `f` is 1).
pub fn scaled(v: i64, f: f64) -> i64 {
    if f == 1.0 { v } else { (v as f64 * f).round() as i64 }
}
