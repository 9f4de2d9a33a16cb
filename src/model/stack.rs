//! Stacks as a prefix tree: each node is (parent, frame), so shared prefixes are stored once.

use super::frame::FrameId;

/// Index of a stack node; a stack is the path from the root to this node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StackId(pub u32);

/// One node of the stack tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StackNode {
    /// The caller's node; `None` for an outermost frame.
    pub parent: Option<StackId>,
    /// The frame at this node.
    pub frame: FrameId,
}
