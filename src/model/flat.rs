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
use super::profile::{LabelStore, Profile, ProfileMeta, ValueType};
use super::strings::StringId;
use super::tables::Tables;

/// A profile with one list of frames per sample, **leaf first** (as pprof orders locations).
/// The tables hold strings, mappings and frames; their stack tree is not used.
#[derive(Debug, Clone)]
pub struct FlatProfile {
    /// Strings, mappings and frames that samples point into.
    pub tables: Arc<Tables>,
    /// Where it came from.
    pub meta: ProfileMeta,
    /// What each value of a sample measures, in order.
    pub sample_types: Vec<ValueType>,
    /// Index into `sample_types` of the type viewers should show first.
    pub default_sample_type: usize,
    frames: Vec<FrameId>,
    frame_ends: Vec<u32>,
    values: Vec<i64>,
    labels: LabelStore,
}

impl FlatProfile {
    /// An empty profile with the given sample types.
    pub fn new(tables: Arc<Tables>, meta: ProfileMeta, sample_types: Vec<ValueType>) -> Self {
        FlatProfile {
            tables,
            meta,
            sample_types,
            default_sample_type: 0,
            frames: Vec::new(),
            frame_ends: Vec::new(),
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
        assert_eq!(values.len(), self.sample_types.len(), "one value per sample type");
        self.labels.push(self.frame_ends.len(), labels, str_labels);
        self.frames.extend_from_slice(frames_leaf_first);
        self.frame_ends.push(u32::try_from(self.frames.len()).expect("fewer than 2^32 frames in samples"));
        self.values.extend_from_slice(values);
    }

    /// Makes room for `samples` more samples with `frames` frames in all.
    pub fn reserve(&mut self, samples: usize, frames: usize) {
        self.frame_ends.reserve(samples);
        self.frames.reserve(frames);
        self.values.reserve(samples * self.sample_types.len());
    }

    /// All frames of all samples, in order (sample `i`'s are a slice of it).
    pub fn all_frames(&self) -> &[FrameId] {
        &self.frames
    }

    /// Number of samples.
    pub fn sample_count(&self) -> usize {
        self.frame_ends.len()
    }

    /// Sample `i`: its frames (leaf first) and values.
    pub fn sample(&self, i: usize) -> (&[FrameId], &[i64]) {
        let start = if i == 0 { 0 } else { self.frame_ends[i - 1] as usize };
        let n = self.sample_types.len();
        (&self.frames[start..self.frame_ends[i] as usize], &self.values[i * n..(i + 1) * n])
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
        let n = self.sample_types.len().max(1);
        self.values.chunks_exact(n).map(|v| v[index]).sum()
    }

    /// Index of the first sample type of `kind`.
    pub fn value_index(&self, kind: super::profile::ValueKind) -> Option<usize> {
        self.sample_types.iter().position(|t| t.kind == kind)
    }

    /// The same profile with its stacks in a prefix tree (added to a copy of the tables).
    /// A sample without frames is left out.
    pub fn to_profile(&self) -> Profile {
        let mut tables = (*self.tables).clone();
        let mut root_first = Vec::with_capacity(self.frames.len());
        let mut bounds = Vec::with_capacity(self.frame_ends.len() + 1);
        bounds.push(0);
        for i in 0..self.sample_count() {
            root_first.extend(self.sample(i).0.iter().rev());
            bounds.push(root_first.len());
        }
        let stacks = tables.intern_stacks(&root_first, &bounds);
        let mut p = Profile::new(Arc::new(tables), self.meta.clone(), self.sample_types.clone());
        p.default_sample_type = self.default_sample_type;
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
