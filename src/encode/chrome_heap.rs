//! Chrome DevTools' sampling heap profile (`.heapprofile`): the `HeapProfiler.SamplingHeapProfile`
//! object of the Chrome DevTools Protocol, which DevTools' Memory panel ("Load profile") and
//! VS Code open.
//!
//! The document: `head`, the root of a call tree, and `samples`. Each node is
//! `{"callFrame": {"functionName", "scriptId", "url", "lineNumber", "columnNumber"},
//! "selfSize", "id", "children"}`: `id` is unique (the root is 1), `selfSize` is the value of
//! the stacks that end at the node, children are the callees. Line and column numbers are
//! 0-based (-1 when unknown); `url` is the frame's source file, else its mapping's path, else
//! empty; `scriptId` is `"0"` (no scripts). Each sample is `{"size", "nodeId", "ordinal"}`:
//! heapconv writes one sample per stack with a non-zero value (a profile holds values per
//! stack, not single allocations), with ordinals 1, 2, … in that order, so the sizes of the
//! samples at a node add up to its `selfSize`. The root is `(root)` with `selfSize` 0.
//!
//! The value written is the one shown (by default the profile's default sample type); it must
//! be a size in bytes (a sample's `size` is bytes, and DevTools shows it so), so a CPU or
//! other non-memory profile, or a count shown, is refused with the profile's sample types; a
//! sampling heap profile has no negative sizes, so a difference is refused. The tree is written
//! without recursion, so deep stacks do not exhaust the stack.

use rustc_hash::FxHashMap as HashMap;

use super::viewer_frames::{ViewerFrame, ViewerFrames};
use crate::error::{Error, ErrorKind, Result};
use crate::model::Profile;

/// Options of the `.heapprofile` encoder.
#[derive(Debug, Clone, Default)]
pub struct ChromeHeapOptions {
    /// Which sample value to write (index into the profile's sample types). Default: 0.
    pub value_index: usize,
    /// ART annotations in frame names. Default: false.
    pub annotations: bool,
}

struct Node {
    frame: Option<usize>,
    self_size: i64,
    children: Vec<usize>,
}

fn call_frame(out: &mut String, f: Option<&ViewerFrame>) {
    let (name, url, line, col) = match f {
        None => ("(root)", "", -1i64, -1i64),
        Some(f) => (
            f.name.as_str(),
            f.file.as_deref().or(f.mapping.as_deref()).unwrap_or(""),
            i64::from(f.line) - 1,
            i64::from(f.column) - 1,
        ),
    };
    let s = |x: &str| serde_json::to_string(x).expect("a string serializes");
    out.push_str(&format!(
        "{{\"functionName\":{},\"scriptId\":\"0\",\"url\":{},\"lineNumber\":{line},\"columnNumber\":{col}}}",
        s(name),
        s(url)
    ));
}

/// Encodes a profile as a `.heapprofile`.
pub fn encode_chrome_heap(profile: &Profile, opts: &ChromeHeapOptions) -> Result<Vec<u8>> {
    let is_size = |t: &crate::model::ValueType| t.kind.is_bytes() || t.unit.eq_ignore_ascii_case("bytes");
    let types = &profile.header.sample_types;
    if let Some(shown) = types.get(opts.value_index).filter(|t| !is_size(t)) {
        let all: Vec<String> = types.iter().map(|t| format!("{}/{}", t.name, t.unit)).collect();
        let hint = match types.iter().find(|t| is_size(t)) {
            Some(t) => {
                format!("show a size instead, such as {} (--sample-type NAME or --value unreleased-size)", t.name)
            }
            None => "this is not a memory profile: write it as pprof, speedscope, folded, svg or html".to_owned(),
        };
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "a sampling heap profile (.heapprofile) holds sizes in bytes, and the type shown, {}/{}, is not one (sample types: {}); {hint}",
                shown.name,
                shown.unit,
                all.join(", ")
            ),
        ));
    }
    let mut frames = ViewerFrames::default();
    let mut nodes = vec![Node { frame: None, self_size: 0, children: Vec::new() }];
    let mut child: HashMap<(usize, usize), usize> = HashMap::default();
    let mut samples: Vec<(i64, usize)> = Vec::new();
    let mut buf = Vec::new();
    for (s, v) in profile.samples() {
        let value = v[opts.value_index];
        if value == 0 {
            continue;
        }
        if value < 0 {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "a sampling heap profile has no negative sizes (a sample has {value}); write a difference as pprof, folded or svg"
                ),
            ));
        }
        frames.stack(&profile.tables, s, opts.annotations, &mut buf);
        let mut at = 0;
        for &f in &buf {
            at = *child.entry((at, f)).or_insert_with(|| {
                nodes.push(Node { frame: Some(f), self_size: 0, children: Vec::new() });
                let n = nodes.len() - 1;
                nodes[at].children.push(n);
                n
            });
        }
        nodes[at].self_size = nodes[at].self_size.saturating_add(value);
        samples.push((value, at));
    }
    // Node ids: 1 for the root, then in order of creation.
    let mut out = String::from("{\"head\":");
    // Pre-order without recursion: (node, next child to write).
    let mut stack: Vec<(usize, usize)> = vec![(0, 0)];
    let open = |out: &mut String, n: usize| {
        out.push_str("{\"callFrame\":");
        call_frame(out, nodes[n].frame.map(|f| &frames.frames[f]));
        out.push_str(&format!(",\"selfSize\":{},\"id\":{},\"children\":[", nodes[n].self_size, n + 1));
    };
    open(&mut out, 0);
    while let Some(top) = stack.last_mut() {
        let (n, k) = *top;
        if k < nodes[n].children.len() {
            top.1 += 1;
            if k > 0 {
                out.push(',');
            }
            let c = nodes[n].children[k];
            open(&mut out, c);
            stack.push((c, 0));
        } else {
            out.push_str("]}");
            stack.pop();
        }
    }
    out.push_str(",\"samples\":[");
    for (i, (size, node)) in samples.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!("{{\"size\":{size},\"nodeId\":{},\"ordinal\":{}}}", node + 1, i + 1));
    }
    out.push_str("]}\n");
    Ok(out.into_bytes())
}
