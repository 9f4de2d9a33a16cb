//! ART frame annotations (`[jit]`, `[interp]`, `[aot]`, `[common-frame]`,
//! `[common-frame-interp]`), computed per stack node from its ancestors exactly as Perfetto's
//! trace processor does.

use super::stack::StackId;
use super::tables::Tables;

/// An annotation of one frame in one stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Annotation {
    /// No annotation.
    #[default]
    None,
    /// Interpreted Java (`.dex`, `.vdex`, `.jar`, `.apk`).
    Interp,
    /// JIT-compiled Java (`/memfd:jit-cache`).
    Jit,
    /// Ahead-of-time compiled Java (`.oat`, `.odex`).
    Aot,
    /// ART runtime glue between managed frames.
    CommonFrame,
    /// ART interpreter glue.
    CommonFrameInterp,
}

impl Annotation {
    /// Every annotation, each at its [`Annotation::index`].
    pub const ALL: [Annotation; 6] = [
        Annotation::None,
        Annotation::Interp,
        Annotation::Jit,
        Annotation::Aot,
        Annotation::CommonFrame,
        Annotation::CommonFrameInterp,
    ];

    /// This annotation's place in [`Annotation::ALL`] (for tables indexed by annotation).
    pub fn index(self) -> usize {
        match self {
            Annotation::None => 0,
            Annotation::Interp => 1,
            Annotation::Jit => 2,
            Annotation::Aot => 3,
            Annotation::CommonFrame => 4,
            Annotation::CommonFrameInterp => 5,
        }
    }

    /// The label written in brackets after the function name; "" for none.
    pub fn label(self) -> &'static str {
        match self {
            Annotation::None => "",
            Annotation::Interp => "interp",
            Annotation::Jit => "jit",
            Annotation::Aot => "aot",
            Annotation::CommonFrame => "common-frame",
            Annotation::CommonFrameInterp => "common-frame-interp",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MapClass {
    Jit,
    Libart,
    Native,
    Interp,
    Aot,
    Other,
}

fn classify(path: &str) -> MapClass {
    if path.is_empty() {
        return MapClass::Other;
    }
    if path.starts_with("/memfd:jit-cache") || path.starts_with("/memfd:jit-zygote-cache") {
        return MapClass::Jit;
    }
    if let Some(i) = path.rfind('/') {
        let tail = &path[i..];
        if tail.starts_with("/libart.so") || tail.starts_with("/libartd.so") {
            return MapClass::Libart;
        }
    }
    // The "extension" is everything from the last '.' of the whole path, as Perfetto does.
    let Some(i) = path.rfind('.') else {
        return MapClass::Other;
    };
    let ext = &path[i..];
    if ext.starts_with(".so") {
        MapClass::Native
    } else if [".dex", ".vdex", ".jar", ".apk"].iter().any(|e| ext.starts_with(e)) {
        MapClass::Interp
    } else if ext.starts_with(".oat") || ext.starts_with(".odex") {
        MapClass::Aot
    } else {
        MapClass::Other
    }
}

/// The annotation state passed from a stack node to its children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AnnotationState {
    /// No managed frame seen yet.
    #[default]
    Initial,
    /// In a managed stack: libart frames are runtime glue.
    EraseLibart,
    /// After `art_jni_trampoline`: the next frame is kept as is.
    KeepNext,
}

const INTERP_GLUE: [&str; 5] = ["nterp_", "Nterp", "ExecuteNterp", "ExecuteSwitchImpl", "_ZN3art11interpreter"];

/// Annotates one stack node given its parent's state (`AnnotationState::Initial` for a root);
/// returns the state for its children and its annotation.
pub fn annotate_node(tables: &Tables, parent: AnnotationState, node: StackId) -> (AnnotationState, Annotation) {
    use AnnotationState as S;
    let frame = tables.frame(tables.stack_node(node).frame);
    if parent == S::KeepNext {
        return (S::EraseLibart, Annotation::None);
    }
    let raw = tables.strings.get(frame.raw_name);
    if raw == "art_jni_trampoline" {
        return (S::KeepNext, Annotation::CommonFrame);
    }
    let class = frame.mapping.map(|m| classify(tables.strings.get(tables.mapping(m).path))).unwrap_or(MapClass::Other);
    match class {
        MapClass::Interp | MapClass::Jit | MapClass::Aot => {
            let state = if parent == S::Initial { S::EraseLibart } else { parent };
            let a = match class {
                MapClass::Interp => Annotation::Interp,
                MapClass::Jit => Annotation::Jit,
                _ => Annotation::Aot,
            };
            (state, a)
        }
        MapClass::Libart if parent == S::EraseLibart => {
            if INTERP_GLUE.iter().any(|p| raw.starts_with(p)) {
                (parent, Annotation::CommonFrameInterp)
            } else {
                (parent, Annotation::CommonFrame)
            }
        }
        _ => (parent, Annotation::None),
    }
}

/// What annotation needs to know of one frame, computed once per frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameClass {
    class: MapClass,
    jni_trampoline: bool,
    interp_glue: bool,
}

/// Classifies every frame of `tables` (index = `FrameId`), for [`annotate_with`].
pub fn classify_frames(tables: &Tables) -> Vec<FrameClass> {
    classify_frames_from(tables, 0)
}

/// Classifies the frames of `tables` from index `start` on.
pub fn classify_frames_from(tables: &Tables, start: usize) -> Vec<FrameClass> {
    let map_classes: Vec<MapClass> = tables.mappings().iter().map(|m| classify(tables.strings.get(m.path))).collect();
    tables.frames()[start.min(tables.frames().len())..]
        .iter()
        .map(|f| {
            let raw = tables.strings.get(f.raw_name);
            FrameClass {
                class: f.mapping.map(|m| map_classes[m.0 as usize]).unwrap_or(MapClass::Other),
                jni_trampoline: raw == "art_jni_trampoline",
                interp_glue: INTERP_GLUE.iter().any(|p| raw.starts_with(p)),
            }
        })
        .collect()
}

/// [`annotate_node`] with the frame's precomputed class.
pub fn annotate_with(parent: AnnotationState, f: FrameClass) -> (AnnotationState, Annotation) {
    use AnnotationState as S;
    if parent == S::KeepNext {
        return (S::EraseLibart, Annotation::None);
    }
    if f.jni_trampoline {
        return (S::KeepNext, Annotation::CommonFrame);
    }
    match f.class {
        MapClass::Interp | MapClass::Jit | MapClass::Aot => {
            let state = if parent == S::Initial { S::EraseLibart } else { parent };
            let a = match f.class {
                MapClass::Interp => Annotation::Interp,
                MapClass::Jit => Annotation::Jit,
                _ => Annotation::Aot,
            };
            (state, a)
        }
        MapClass::Libart if parent == S::EraseLibart => {
            (parent, if f.interp_glue { Annotation::CommonFrameInterp } else { Annotation::CommonFrame })
        }
        _ => (parent, Annotation::None),
    }
}

/// Computes annotations for every node of a stack, given its nodes root first.
/// Fills `out` with one annotation per node, in the same order. The annotation of a node
/// depends only on its ancestors, so the result is the same whatever stack contains it.
pub fn annotate_stack(tables: &Tables, nodes_root_first: &[StackId], out: &mut Vec<Annotation>) {
    out.clear();
    let mut state = AnnotationState::Initial;
    for &node in nodes_root_first {
        let (s, a) = annotate_node(tables, state, node);
        state = s;
        out.push(a);
    }
}

#[cfg(test)]
mod tests {
    use super::Annotation;

    #[test]
    fn every_annotation_is_at_its_index() {
        for (i, a) in Annotation::ALL.into_iter().enumerate() {
            assert_eq!(a.index(), i, "{a:?}");
        }
        let labels: std::collections::BTreeSet<&str> = Annotation::ALL.iter().map(|a| a.label()).collect();
        assert_eq!(labels.len(), Annotation::ALL.len(), "each annotation once");
    }
}
