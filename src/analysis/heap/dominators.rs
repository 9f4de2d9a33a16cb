//! Immediate dominators (Semi-NCA) and retained sizes, and the dominator tree as a profile.

use super::{RootedHeap, UNREACHED, VIRTUAL_ROOT};
use crate::model::heap::ObjIdx;
use crate::model::{Profile, ValueKind, ValueType};

/// The dominator tree and retained sizes.
#[derive(Debug, Clone)]
pub struct Dominators {
    /// Per object: its immediate dominator, [`VIRTUAL_ROOT`] when only the virtual root
    /// dominates it (roots, and objects reached from several roots), [`UNREACHED`] for
    /// garbage.
    pub idom: Vec<ObjIdx>,
    /// The reachable objects in depth-first preorder from the virtual root; every object comes
    /// after its immediate dominator.
    pub order: Vec<ObjIdx>,
    /// Per object: shallow Java bytes of the objects it dominates, itself included (0 for
    /// garbage).
    pub retained: Vec<u64>,
    /// Per object: native bytes of the objects it dominates, itself included.
    pub retained_native: Vec<u64>,
}

impl Dominators {
    /// Number of reachable objects.
    pub fn reachable(&self) -> usize {
        self.order.len()
    }
}

impl RootedHeap<'_> {
    /// The dominator-tree profile (see the module docs): sample types `Object count`/`count`
    /// and `Object size`/`bytes`, whose cumulative values are retained count and size. A
    /// `[native]` child node has count 0, so that counts are objects.
    pub fn dominator_profile(&self, dom: &Dominators) -> Profile {
        let types = vec![
            ValueType::new("Object count", "count", ValueKind::TotalCount),
            ValueType::new("Object size", "bytes", ValueKind::TotalSize),
        ];
        self.tree_profile(&dom.order, &dom.idom, 0, types)
    }

    /// Immediate dominators and retained sizes (see the module docs and [`Dominators`]).
    pub fn dominators(&self) -> Dominators {
        let bound = self.dump.ref_target.len()
            + self.roots.len()
            + self.statics.iter().map(|&(_, c)| self.dump.classes[c as usize].static_refs.len()).sum::<usize>();
        let (vertex, idom) =
            if bound < u32::MAX as usize { self.dominator_tree::<u32>() } else { self.dominator_tree::<u64>() };
        // Back to object indexes, and retained sizes bottom-up (in reverse preorder every
        // object comes after those it dominates).
        let d = self.dump;
        let n = self.n;
        let mut out_idom = vec![UNREACHED; n];
        let mut retained = vec![0u64; n];
        let mut retained_native = vec![0u64; n];
        for w in 1..vertex.len() {
            let o = vertex[w] as usize;
            let p = idom[w];
            out_idom[o] = if p == 0 { VIRTUAL_ROOT } else { vertex[p as usize] };
            retained[o] = d.obj_self_size[o];
            retained_native[o] = d.obj_native_size[o];
        }
        for w in (1..vertex.len()).rev() {
            let p = idom[w];
            if p != 0 {
                let (o, po) = (vertex[w] as usize, vertex[p as usize] as usize);
                retained[po] = retained[po].saturating_add(retained[o]);
                retained_native[po] = retained_native[po].saturating_add(retained_native[o]);
            }
        }
        drop(idom);
        let mut order = vertex;
        order.remove(0);
        Dominators { idom: out_idom, order, retained, retained_native }
    }

    /// The dominator tree over DFS numbers: (vertex, idom), where `vertex[w]` is the object
    /// numbered `w` (`vertex[0]` the virtual root) and `idom[w]` the number of its immediate
    /// dominator. `O` holds offsets into the predecessor lists.
    fn dominator_tree<O: Offset>(&self) -> (Vec<ObjIdx>, Vec<u32>) {
        const UNSEEN: u32 = u32::MAX;
        // 1. Depth-first numbering from the virtual root (number 0), counting each object's
        // in-edges on the way: `info[o]` = (number, in-degree), one cache line for both. The
        // cursor of each node on the search path lives in `semi`.
        let mut info: Vec<(u32, O)> = vec![(UNSEEN, O::ZERO); self.n];
        // Visited bits: the test a search waits on reads this small array, not `info`, whose
        // updates are left to overlap.
        let mut seen: Vec<u64> = vec![0; self.n.div_ceil(64)];
        let visit = |seen: &mut Vec<u64>, o: ObjIdx| seen[o as usize / 64] |= 1 << (o % 64);
        let mut vertex: Vec<ObjIdx> = vec![VIRTUAL_ROOT];
        let mut parent: Vec<u32> = vec![0];
        let mut semi: Vec<u32> = vec![0];
        for &r in &self.roots {
            info[r as usize].1.inc(); // the edge from the virtual root
            if info[r as usize].0 != UNSEEN {
                continue;
            }
            let mut cur = vertex.len() as u32;
            info[r as usize].0 = cur;
            visit(&mut seen, r);
            vertex.push(r);
            parent.push(0);
            semi.push(0);
            while cur != 0 {
                let o = vertex[cur as usize];
                let mut k = semi[cur as usize];
                let next = self.scan(o, &mut k, |t| {
                    info[t as usize].1.inc();
                    seen[t as usize / 64] & (1 << (t % 64)) == 0
                });
                semi[cur as usize] = k;
                match next {
                    Some(t) => {
                        let w = vertex.len() as u32;
                        info[t as usize].0 = w;
                        visit(&mut seen, t);
                        vertex.push(t);
                        parent.push(cur);
                        semi.push(0);
                        cur = w;
                    }
                    None => cur = parent[cur as usize],
                }
            }
        }
        drop(seen);
        // 2. Predecessor lists by number in CSR form, `preds[ps[w]..ps[w + 1]]`: end offsets
        // in `info`, then filled backwards, leaving the start offsets there.
        let nn = vertex.len();
        let mut total = 0usize;
        for &o in &vertex[1..] {
            total += info[o as usize].1.get();
            info[o as usize].1 = O::from_usize(total);
        }
        let mut preds = vec![0u32; total];
        for &r in &self.roots {
            let e = &mut info[r as usize].1;
            e.dec();
            preds[e.get()] = 0;
        }
        // Objects in index order (references read sequentially), not in DFS order.
        for o in 0..self.n {
            let w = info[o].0;
            if w == UNSEEN {
                continue;
            }
            self.for_each_target(o as ObjIdx, |t| {
                let e = &mut info[t as usize].1;
                e.dec();
                preds[e.get()] = w;
            });
        }
        let mut ps: Vec<O> = Vec::with_capacity(nn + 1);
        ps.push(O::ZERO);
        ps.extend(vertex[1..].iter().map(|&o| info[o as usize].1));
        ps.push(O::from_usize(total));
        drop(info);
        // 3. Semi-NCA; `parent` becomes the immediate dominators.
        semi_nca(&ps, &preds, &mut parent, &mut semi);
        (vertex, parent)
    }
}

/// Array offsets of the predecessor lists: `u32` unless a heap has 2³² references.
trait Offset: Copy {
    const ZERO: Self;
    fn from_usize(v: usize) -> Self;
    fn get(self) -> usize;
    fn inc(&mut self);
    fn dec(&mut self);
}

impl Offset for u32 {
    const ZERO: Self = 0;
    fn from_usize(v: usize) -> Self {
        v as u32
    }
    fn get(self) -> usize {
        self as usize
    }
    fn inc(&mut self) {
        *self += 1;
    }
    fn dec(&mut self) {
        *self -= 1;
    }
}

impl Offset for u64 {
    const ZERO: Self = 0;
    fn from_usize(v: usize) -> Self {
        v as u64
    }
    fn get(self) -> usize {
        self as usize
    }
    fn inc(&mut self) {
        *self += 1;
    }
    fn dec(&mut self) {
        *self -= 1;
    }
}

/// Semi-NCA over DFS numbers (0 is the start node): `parent` (the DFS tree) becomes the
/// immediate dominators; `semi` is scratch of the same length.
///
/// Nodes are processed in reverse preorder: a node's semidominator is the least of its
/// predecessors' evaluations, then the node is linked below its DFS parent. The link-eval
/// forest is Lengauer and Tarjan's balanced one ("sophisticated" linking, with path
/// compression), which keeps the paths an evaluation walks short: on heap graphs, whose
/// depth-first trees are deep, simple linking walked about ten times as many (dependent,
/// cache-missing) steps. Semi-NCA needs semidominator *values* only, so the labels hold values
/// rather than nodes, and each forest node is one 16-byte entry. A predecessor numbered below
/// the current node is not linked yet and is its own candidate.
fn semi_nca<O: Offset>(ps: &[O], preds: &[u32], parent: &mut [u32], semi: &mut [u32]) {
    // Forest entries by number + 1 (0 is Lengauer and Tarjan's sentinel): [ancestor, label
    // (a semidominator value), child, size].
    let nn = parent.len();
    let mut f: Vec<[u32; 4]> = Vec::with_capacity(nn + 1);
    f.push([0, 0, 0, 0]);
    f.extend((0..nn as u32).map(|v| [0, v, 0, 1]));
    let mut stack: Vec<u32> = Vec::new();
    for w in (1..nn).rev() {
        let mut s = w as u32;
        for &v in &preds[ps[w].get()..ps[w + 1].get()] {
            if (v as usize) < w {
                s = s.min(v);
                continue;
            }
            if v as usize == w {
                continue;
            }
            let vi = v as usize + 1;
            if f[vi][0] == 0 {
                s = s.min(f[vi][1]);
                continue;
            }
            // EVAL(v): compress the path, iteratively (find it, then fold minima down).
            let mut x = vi as u32;
            while f[f[x as usize][0] as usize][0] != 0 {
                stack.push(x);
                x = f[x as usize][0];
            }
            while let Some(y) = stack.pop() {
                let a = f[y as usize][0];
                let [aa, la, _, _] = f[a as usize];
                let e = &mut f[y as usize];
                if la < e[1] {
                    e[1] = la;
                }
                e[0] = aa;
            }
            let a = f[vi][0] as usize;
            s = s.min(f[vi][1].min(f[a][1]));
        }
        semi[w] = s;
        // LINK(parent(w), w).
        let (pv, wi) = (parent[w] as usize + 1, w + 1);
        f[wi][1] = s;
        let mut sx = wi;
        loop {
            let cs = f[sx][2] as usize;
            if s >= f[cs][1] {
                break;
            }
            let ccs = f[cs][2] as usize;
            if u64::from(f[sx][3]) + u64::from(f[ccs][3]) >= 2 * u64::from(f[cs][3]) {
                f[cs][0] = sx as u32;
                f[sx][2] = ccs as u32;
            } else {
                f[cs][3] = f[sx][3];
                f[sx][0] = cs as u32;
                sx = cs;
            }
        }
        f[sx][1] = s;
        f[pv][3] += f[wi][3];
        if u64::from(f[pv][3]) < 2 * u64::from(f[wi][3]) {
            let c = f[pv][2];
            f[pv][2] = sx as u32;
            sx = c as usize;
        }
        while sx != 0 {
            f[sx][0] = pv as u32;
            sx = f[sx][2] as usize;
        }
    }
    drop(f);
    for w in 1..nn {
        let mut d = parent[w];
        while d > semi[w] {
            d = parent[d as usize];
        }
        parent[w] = d;
    }
}
