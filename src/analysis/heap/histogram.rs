//! The class histogram: instances, shallow, native and retained bytes per class.

use super::{Dominators, RootedHeap, VIRTUAL_ROOT};
use crate::model::heap::{ClassIdx, ObjIdx};
use crate::model::heap_report::ClassStats;

impl RootedHeap<'_> {
    /// Per class: instances, bytes, and retained bytes without double counting (see
    /// [`ClassStats`]), classes with no instance left out, sorted by retained bytes (Java plus
    /// native) descending, then shallow bytes descending, then name and class index.
    pub fn class_histogram(&self, dom: &Dominators) -> Vec<ClassStats> {
        let d = self.dump;
        let nc = d.classes.len() + 1; // the last row collects objects of classes out of range
        let class_of = |o: usize| (d.obj_class[o] as usize).min(nc - 1);
        let mut rows: Vec<ClassStats> = (0..nc)
            .map(|c| ClassStats {
                class: c as ClassIdx,
                name: d.classes.get(c).map_or_else(|| "<unknown class>".to_owned(), |c| c.name.clone()),
                ..Default::default()
            })
            .collect();
        for o in 0..self.n {
            let r = &mut rows[class_of(o)];
            r.instances += 1;
            r.shallow = r.shallow.saturating_add(d.obj_self_size[o]);
            r.native = r.native.saturating_add(d.obj_native_size[o]);
        }
        // Children of each dominator-tree node, in CSR form; then a depth-first walk that
        // keeps, per class, how many instances are on the path from the virtual root.
        let mut start = vec![0u32; self.n + 1];
        let mut tops: Vec<ObjIdx> = Vec::new();
        for &o in &dom.order {
            rows[class_of(o as usize)].reachable_instances += 1;
            match dom.idom[o as usize] {
                VIRTUAL_ROOT => tops.push(o),
                p => start[p as usize] += 1,
            }
        }
        let mut total = 0u32;
        for s in start.iter_mut() {
            total += *s;
            *s = total;
        }
        let mut kids = vec![0 as ObjIdx; total as usize];
        for &o in dom.order.iter().rev() {
            let p = dom.idom[o as usize];
            if p != VIRTUAL_ROOT {
                start[p as usize] -= 1;
                kids[start[p as usize] as usize] = o;
            }
        }
        let mut on_path = vec![0u32; nc];
        let mut todo: Vec<ObjIdx> = tops.iter().rev().copied().collect();
        let mut path: Vec<ObjIdx> = Vec::new();
        while let Some(o) = todo.pop() {
            let up = dom.idom[o as usize];
            while let Some(&top) = path.last() {
                if top == up {
                    break;
                }
                on_path[class_of(top as usize)] -= 1;
                path.pop();
            }
            let c = class_of(o as usize);
            if on_path[c] == 0 {
                let r = &mut rows[c];
                r.retained = r.retained.saturating_add(dom.retained[o as usize]);
                r.retained_native = r.retained_native.saturating_add(dom.retained_native[o as usize]);
            }
            on_path[c] += 1;
            path.push(o);
            let (a, b) = (start[o as usize] as usize, start[o as usize + 1] as usize);
            todo.extend(kids[a..b].iter().rev());
        }
        rows.retain(|r| r.instances > 0);
        rows.sort_by(|a, b| {
            b.retained
                .saturating_add(b.retained_native)
                .cmp(&a.retained.saturating_add(a.retained_native))
                .then(b.shallow.cmp(&a.shallow))
                .then_with(|| a.name.cmp(&b.name))
                .then(a.class.cmp(&b.class))
        });
        rows
    }
}
