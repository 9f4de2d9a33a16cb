//! The fields after the tables: mapping flags, period, default sample type, comments, times.

use super::*;

/// What the last parts of a flat profile write beyond samples, locations and what they use.
pub(super) struct Head<'a> {
    pub(super) meta: &'a ProfileMeta,
    pub(super) types: &'a [ValueType],
    pub(super) default: usize,
}

/// What follows the locations, functions and strings (with `extras`): the mappings' flags
/// (`has_filenames` on input says whether every frame of the mapping is symbolized), period,
/// default sample type, comments and times, interning their strings with `s` in that order.
pub(super) fn tail_fields(
    mappings: &mut [pp::Mapping],
    head: &Head<'_>,
    opts: &PprofOptions,
    s: &mut dyn FnMut(&str) -> i64,
    out: &mut pp::Profile,
) {
    if !opts.extras {
        for m in mappings.iter_mut() {
            m.has_filenames = false;
        }
        return;
    }
    for m in mappings.iter_mut() {
        // `Location.address` holds rel_pc, not a process address, so pprof must not try to
        // symbolize these mappings itself: what the trace (or heapconv) knows is all there is.
        m.has_functions = true;
        let sym = m.has_filenames;
        m.has_line_numbers = sym;
        m.has_inline_frames = sym;
    }
    let meta = head.meta;
    if let Some(p) = &meta.period {
        let ty = s(&p.name);
        let unit = s(&p.unit);
        out.period_type = Some(pp::ValueType { r#type: ty, unit });
        out.period = p.value;
    } else if let Some(interval) = meta.sampling_interval.filter(|&i| i > 0) {
        let ty = s("space");
        let unit = s("bytes");
        out.period_type = Some(pp::ValueType { r#type: ty, unit });
        out.period = i64::try_from(interval).unwrap_or(i64::MAX);
    }
    if let Some(t) = head.types.get(head.default) {
        out.default_sample_type = s(&t.name);
    }
    let mut comments = vec![format!("heapconv: {}", meta.describe())];
    if let Some(i) = meta.sampling_interval {
        comments.push(format!("sampling interval: {i} bytes"));
    }
    if meta.flags.dump_at_max {
        comments.push("dump_at_max: values are the heap at its peak".to_owned());
    }
    let loss = meta.flags.data_loss();
    if !loss.is_empty() {
        comments.push(format!("data loss: {}", loss.join(", ")));
    }
    for c in meta.comments.iter() {
        if !comments.contains(c) {
            comments.push(c.clone());
        }
    }
    for c in comments {
        let id = s(&c);
        out.comment.push(id);
    }
    out.time_nanos = meta.time_nanos.unwrap_or(0);
    out.duration_nanos = meta.duration_nanos.unwrap_or(0);
}
