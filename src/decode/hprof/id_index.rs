//! Object ids to object indexes.

use super::*;

/// Object ids to object indexes: an open-addressing table of (id, index) pairs with linear
/// probing, at most 3/4 full, so a lookup is usually one cache miss. Id 0 (null) is never an
/// object; an id given to several objects names the first.
pub(super) struct IdIndex {
    slots: Vec<(u64, ObjIdx)>,
    shift: u32,
    pub(super) duplicates: u64,
}

impl IdIndex {
    pub(super) fn new(obj_id: &[u64]) -> Self {
        let cap = (obj_id.len() + obj_id.len() / 3 + 1).next_power_of_two().max(2);
        let mut ix = IdIndex { slots: vec![(0, 0); cap], shift: 64 - cap.trailing_zeros(), duplicates: 0 };
        let mask = cap - 1;
        for (i, &id) in obj_id.iter().enumerate() {
            if id == 0 {
                continue;
            }
            let mut at = ix.slot(id);
            loop {
                match ix.slots[at].0 {
                    0 => {
                        ix.slots[at] = (id, i as ObjIdx);
                        break;
                    }
                    k if k == id => {
                        ix.duplicates += 1;
                        break;
                    }
                    _ => at = (at + 1) & mask,
                }
            }
        }
        ix
    }

    #[inline]
    fn slot(&self, id: u64) -> usize {
        (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    #[inline]
    pub(super) fn get(&self, id: u64) -> Option<ObjIdx> {
        if id == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = self.slot(id);
        loop {
            match self.slots[at] {
                (0, _) => return None,
                (k, v) if k == id => return Some(v),
                _ => at = (at + 1) & mask,
            }
        }
    }
}
