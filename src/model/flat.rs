//! Profiles whose stacks are lists of frames rather than nodes of the stack tree.
//!
//! A [`Profile`] shares a prefix tree of stacks between the dumps of a trace, which is what
//! decoding heapprofd traces and converting many dumps needs. A pprof file holds each sample's
//! stack as its own list of locations, and merging pprof files only ever compares such lists:
//! building a tree for them (millions of nodes for a large profile) and walking it back costs
//! more than the whole merge. A [`FlatProfile`] keeps the lists as they are; it turns into a
//! [`Profile`] when an output that walks stacks (folded stacks, flame graphs, summaries) needs
//! one.

use std::sync::Arc;

use super::frame::FrameId;
use super::profile::{LabelStore, Profile, ProfileHeader, ProfileMeta, ValueType};
use super::strings::StringId;
use super::tables::Tables;

/// A profile with one list of frames per sample, **leaf first** (as pprof orders locations).
/// The tables hold strings, mappings and frames; their stack tree is not used.
#[derive(Debug, Clone)]
pub struct FlatProfile {
    /// Strings, mappings and frames that samples point into.
    pub tables: Arc<Tables>,
    /// Where it came from and what its values measure.
    pub header: ProfileHeader,
    /// Frames of the samples: sample `i`'s are `spans[i]` (start, length) of it. Spans may
    /// share frames (a merge points every sample of a stack at the one copy of the stack).
    frames: Vec<FrameId>,
    spans: Vec<(u32, u32)>,
    values: Vec<i64>,
    labels: LabelStore,
}

impl FlatProfile {
    /// An empty profile with the given sample types.
    pub fn new(tables: Arc<Tables>, meta: ProfileMeta, sample_types: Vec<ValueType>) -> Self {
        FlatProfile {
            tables,
            header: ProfileHeader::new(meta, sample_types),
            frames: Vec::new(),
            spans: Vec::new(),
            values: Vec::new(),
            labels: LabelStore::default(),
        }
    }

    /// Adds a sample: its frames leaf first, one value per sample type, numeric and string
    /// labels.
    pub fn push_sample(
        &mut self,
        frames_leaf_first: &[FrameId],
        values: &[i64],
        labels: &[(StringId, i64)],
        str_labels: &[(StringId, StringId)],
    ) {
        assert_eq!(values.len(), self.header.sample_types.len(), "one value per sample type");
        self.labels.push(self.spans.len(), labels, str_labels);
        let start = u32::try_from(self.frames.len()).expect("fewer than 2^32 frames in samples");
        let len = u32::try_from(frames_leaf_first.len()).expect("fewer than 2^32 frames in a sample");
        assert!(start.checked_add(len).is_some(), "fewer than 2^32 frames in samples");
        self.frames.extend_from_slice(frames_leaf_first);
        self.spans.push((start, len));
        self.values.extend_from_slice(values);
    }

    /// A profile whose samples point into one list of frames: sample `i`'s frames (leaf first)
    /// are `frames[spans[i].0 .. spans[i].0 + spans[i].1]`, its values
    /// `values[i * n .. (i + 1) * n]` for `n` sample types. Spans may overlap and leave frames
    /// out, so that samples of one stack share its frames. No labels; add them with
    /// [`FlatProfile::push_labels`].
    ///
    /// # Panics
    /// When a span runs past the frames, or `values` does not hold one value per sample type
    /// for each span.
    pub fn from_spans(
        tables: Arc<Tables>,
        meta: ProfileMeta,
        sample_types: Vec<ValueType>,
        frames: Vec<FrameId>,
        spans: Vec<(u32, u32)>,
        values: Vec<i64>,
    ) -> Self {
        assert_eq!(values.len(), spans.len() * sample_types.len(), "one value per sample type and sample");
        assert!(
            spans.iter().all(|&(s, l)| (s as usize).checked_add(l as usize).is_some_and(|e| e <= frames.len())),
            "every span lies within the frames"
        );
        FlatProfile {
            tables,
            header: ProfileHeader::new(meta, sample_types),
            frames,
            spans,
            values,
            labels: LabelStore::default(),
        }
    }

    /// Sets the labels of sample `i`: called for every sample in order (0, 1, ...) after
    /// [`FlatProfile::from_spans`], or for none.
    pub fn push_labels(&mut self, i: usize, labels: &[(StringId, i64)], str_labels: &[(StringId, StringId)]) {
        self.labels.push(i, labels, str_labels);
    }

    /// Makes room for `samples` more samples with `frames` frames in all.
    pub fn reserve(&mut self, samples: usize, frames: usize) {
        self.spans.reserve(samples);
        self.frames.reserve(frames);
        self.values.reserve(samples * self.header.sample_types.len());
    }

    /// The list of frames the samples point into (sample `i`'s are a slice of it).
    pub fn all_frames(&self) -> &[FrameId] {
        &self.frames
    }

    /// Number of samples.
    pub fn sample_count(&self) -> usize {
        self.spans.len()
    }

    /// Sample `i`: its frames (leaf first) and values.
    pub fn sample(&self, i: usize) -> (&[FrameId], &[i64]) {
        let (start, len) = self.spans[i];
        let n = self.header.sample_types.len();
        (&self.frames[start as usize..start as usize + len as usize], &self.values[i * n..(i + 1) * n])
    }

    /// The numeric labels of sample `i`.
    pub fn sample_labels(&self, i: usize) -> &[(StringId, i64)] {
        self.labels.num(i)
    }

    /// The string labels of sample `i`.
    pub fn sample_str_labels(&self, i: usize) -> &[(StringId, StringId)] {
        self.labels.strs(i)
    }

    /// True when some sample has labels.
    pub fn has_labels(&self) -> bool {
        self.labels.any()
    }

    /// Sets the unit of the numeric labels with key `key`.
    pub fn set_num_label_unit(&mut self, key: StringId, unit: StringId) {
        self.labels.set_unit(key, unit);
    }

    /// The unit of the numeric labels with key `key`, when one was set.
    pub fn num_label_unit(&self, key: StringId) -> Option<StringId> {
        self.labels.unit(key)
    }

    /// All numeric label units, (key, unit), sorted by key id.
    pub fn num_label_units(&self) -> &[(StringId, StringId)] {
        self.labels.units()
    }

    /// Sum of value `index` over all samples.
    pub fn total(&self, index: usize) -> i64 {
        let n = self.header.sample_types.len().max(1);
        super::profile::saturating_sum(self.values.chunks_exact(n).map(|v| v[index]))
    }

    /// Index of the first sample type of `kind`.
    pub fn value_index(&self, kind: super::profile::ValueKind) -> Option<usize> {
        self.header.sample_types.iter().position(|t| t.kind == kind)
    }

    /// The same profile with its stacks in a prefix tree (added to a copy of the tables).
    /// A sample without frames is left out.
    pub fn to_profile(&self) -> Profile {
        let mut tables = (*self.tables).clone();
        let mut root_first = Vec::with_capacity(self.frames.len());
        let mut bounds = Vec::with_capacity(self.spans.len() + 1);
        bounds.push(0);
        for i in 0..self.sample_count() {
            root_first.extend(self.sample(i).0.iter().rev());
            bounds.push(root_first.len());
        }
        let stacks = tables.intern_stacks(&root_first, &bounds);
        let mut p = Profile::new(Arc::new(tables), self.header.meta.clone(), self.header.sample_types.clone());
        p.header.default_sample_type = self.header.default_sample_type;
        for &(k, u) in self.num_label_units() {
            p.set_num_label_unit(k, u);
        }
        for (i, stack) in stacks.into_iter().enumerate() {
            if let Some(s) = stack {
                p.push_sample_with_all_labels(s, self.sample(i).1, self.sample_labels(i), self.sample_str_labels(i));
            }
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ValueKind, ValueType};

    fn types() -> Vec<ValueType> {
        vec![ValueType::new("v", "bytes", ValueKind::Other)]
    }

    #[test]
    fn samples_can_share_frames_through_spans() {
        let frames: Vec<FrameId> = [7, 8, 9, 5].into_iter().map(FrameId).collect();
        // Sample 0 and 2 share frames 7, 8, 9; sample 1 is the last two; frame 5 is unused.
        let p = FlatProfile::from_spans(
            Arc::new(Tables::default()),
            ProfileMeta::default(),
            types(),
            frames,
            vec![(0, 3), (1, 2), (0, 3)],
            vec![10, 20, 30],
        );
        assert_eq!(p.sample_count(), 3);
        let ids = |i: usize| p.sample(i).0.iter().map(|f| f.0).collect::<Vec<_>>();
        assert_eq!((ids(0), p.sample(0).1), (vec![7, 8, 9], &[10][..]));
        assert_eq!((ids(1), p.sample(1).1), (vec![8, 9], &[20][..]));
        assert_eq!((ids(2), p.sample(2).1), (vec![7, 8, 9], &[30][..]));
        assert_eq!(p.total(0), 60);
        assert!(!p.has_labels());
    }

    #[test]
    fn labels_after_from_spans_and_pushed_samples_agree() {
        let frames: Vec<FrameId> = [1, 2].into_iter().map(FrameId).collect();
        let mut p = FlatProfile::from_spans(
            Arc::new(Tables::default()),
            ProfileMeta::default(),
            types(),
            frames.clone(),
            vec![(0, 2), (1, 1)],
            vec![1, 2],
        );
        let key = StringId(1);
        p.push_labels(0, &[], &[]);
        p.push_labels(1, &[(key, 42)], &[]);
        let mut q = FlatProfile::new(Arc::new(Tables::default()), ProfileMeta::default(), types());
        q.push_sample(&frames, &[1], &[], &[]);
        q.push_sample(&frames[1..], &[2], &[(key, 42)], &[]);
        for i in 0..2 {
            assert_eq!(p.sample(i), q.sample(i));
            assert_eq!(p.sample_labels(i), q.sample_labels(i));
        }
    }

    #[test]
    #[should_panic(expected = "every span lies within the frames")]
    fn a_span_past_the_frames_is_refused() {
        FlatProfile::from_spans(
            Arc::new(Tables::default()),
            ProfileMeta::default(),
            types(),
            vec![FrameId(0)],
            vec![(0, 2)],
            vec![1],
        );
    }
}
