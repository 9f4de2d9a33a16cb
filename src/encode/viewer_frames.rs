//! Frames as the viewers' formats (speedscope, DHAT, Chrome's heap profile) name them: one
//! entry per source-level function, so a symbolized frame with inlined functions gives several
//! entries (outermost first, root to leaf), each with the file, line and column it knows.
//! Names are the text outputs' labels ([`frame_labels`]), so every output names a frame alike.

use rustc_hash::FxHashMap as HashMap;

use super::labels::frame_labels;
use crate::model::annotate::{Annotation, AnnotationState, annotate_node};
use crate::model::mapping::basename;
use crate::model::{FrameId, StackId, Tables};

/// One source-level function of a frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ViewerFrame {
    /// Name (the label the folded and flame-graph outputs give it).
    pub name: String,
    /// Source file, when the frame is symbolized with one.
    pub file: Option<String>,
    /// Line number (1-based), 0 when unknown.
    pub line: u32,
    /// Column (1-based), 0 when unknown.
    pub column: u32,
    /// Path of the mapping the frame's address lies in, when it has one.
    pub mapping: Option<String>,
    /// The frame's address (`rel_pc`).
    pub address: u64,
}

/// Interns the [`ViewerFrame`]s of a profile's stacks: each distinct entry gets an index in
/// [`ViewerFrames::frames`], in order of first use.
#[derive(Debug, Default)]
pub struct ViewerFrames {
    /// The distinct entries.
    pub frames: Vec<ViewerFrame>,
    index: HashMap<ViewerFrame, usize>,
    by_frame: HashMap<(FrameId, Annotation), Vec<usize>>,
    nodes: Vec<StackId>,
    labels: Vec<String>,
}

impl ViewerFrames {
    /// The entries of stack `stack`, root first (indices into [`ViewerFrames::frames`]),
    /// with ART annotations in the names when `annotations` is true.
    pub fn stack(&mut self, tables: &Tables, stack: StackId, annotations: bool, out: &mut Vec<usize>) {
        out.clear();
        let mut nodes = std::mem::take(&mut self.nodes);
        tables.stack_nodes_root_first(stack, &mut nodes);
        let mut state = AnnotationState::Initial;
        for &n in &nodes {
            let (next, a) = annotate_node(tables, state, n);
            state = next;
            let a = if annotations { a } else { Annotation::None };
            let frame = tables.stack_node(n).frame;
            if let Some(v) = self.by_frame.get(&(frame, a)) {
                out.extend_from_slice(v);
                continue;
            }
            let v = self.entries(tables, n, a);
            out.extend_from_slice(&v);
            self.by_frame.insert((frame, a), v);
        }
        self.nodes = nodes;
    }

    fn entries(&mut self, tables: &Tables, node: StackId, a: Annotation) -> Vec<usize> {
        self.labels.clear();
        frame_labels(tables, node, a, &mut self.labels);
        let frame = tables.frame(tables.stack_node(node).frame);
        let mapping = frame.mapping.map(|m| tables.strings.get(tables.mapping(m).path).to_owned());
        let mapping = mapping.filter(|m| !m.is_empty() && !basename(m).is_empty());
        let labels = std::mem::take(&mut self.labels);
        let mut out = Vec::with_capacity(labels.len());
        // With lines, `frame_labels` gives one label per line, outermost first.
        let lines: Vec<_> = frame.lines.iter().rev().collect();
        for (k, name) in labels.iter().enumerate() {
            let line = if lines.len() == labels.len() { Some(lines[k]) } else { None };
            let file = line.map(|l| tables.strings.get(l.file).to_owned()).filter(|f| !f.is_empty());
            let vf = ViewerFrame {
                name: name.clone(),
                file,
                line: line.map_or(0, |l| l.line),
                column: line.map_or(0, |l| l.column),
                mapping: mapping.clone(),
                address: frame.rel_pc,
            };
            out.push(self.intern(vf));
        }
        self.labels = labels;
        out
    }

    fn intern(&mut self, f: ViewerFrame) -> usize {
        if let Some(&i) = self.index.get(&f) {
            return i;
        }
        let i = self.frames.len();
        self.frames.push(f.clone());
        self.index.insert(f, i);
        i
    }
}
