//! Naming and sharding: each input's output key ([`assign_keys`]) and shard ([`Shard`]), from its
//! relative path only.

use super::list::BatchInput;
use crate::error::{Error, ErrorKind, Result};
use crate::pipeline::select::stem;
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// SplitMix64's finalizer: spreads every input bit over the low bits a modulo looks at.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The key of `input` at a level: 0 without trace extensions, 1 the relative path as it is,
/// 2 with a hash of the whole path.
fn key_at(input: &BatchInput, level: u8) -> String {
    let (dir, name) = match input.rel.rsplit_once('/') {
        Some((d, n)) => (Some(d), n),
        None => (None, input.rel.as_str()),
    };
    let name = match level {
        0 => stem(Path::new(name)),
        1 => name.to_owned(),
        _ => format!("{name}~{:08x}", mix(fnv1a(input.path.as_os_str().as_encoded_bytes())) as u32),
    };
    match dir {
        Some(d) => format!("{d}/{name}"),
        None => name,
    }
}

/// Gives every input a key unique in the list, compared without case (see the module docs).
/// Depends only on the set of inputs, not on their order.
pub fn assign_keys(inputs: &mut [BatchInput]) {
    let mut level = vec![0u8; inputs.len()];
    loop {
        let mut groups: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, inp) in inputs.iter().enumerate() {
            groups.entry(key_at(inp, level[i]).to_lowercase()).or_default().push(i);
        }
        let mut changed = false;
        for members in groups.values().filter(|m| m.len() > 1) {
            for &i in members {
                if level[i] < 2 {
                    level[i] += 1;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    // Whatever still collides (a hash collision, or names built to collide) gets a counter,
    // in the order of the relative paths.
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by(|&a, &b| (&inputs[a].rel, &inputs[a].path).cmp(&(&inputs[b].rel, &inputs[b].path)));
    let mut used = std::collections::HashSet::new();
    for i in order {
        let base = key_at(&inputs[i], level[i]);
        let mut key = base.clone();
        let mut n = 2;
        while !used.insert(key.to_lowercase()) {
            key = format!("{base}~{n}");
            n += 1;
        }
        inputs[i].key = key;
    }
}

/// One shard of a batch: `index` of `count`, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shard {
    /// Which shard, from 1 to `count`.
    pub index: u32,
    /// How many shards.
    pub count: u32,
}

impl Shard {
    /// Parses `K/N` (1 ≤ K ≤ N).
    pub fn parse(s: &str) -> Result<Shard> {
        let bad = || Error::new(ErrorKind::Usage, format!("--shard takes K/N with 1 <= K <= N (as in 2/4), not {s:?}"));
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// The shard (1-based) an input with relative path `rel` belongs to among `count`.
    pub fn of(rel: &str, count: u32) -> u32 {
        1 + (mix(fnv1a(rel.as_bytes())) % u64::from(count.max(1))) as u32
    }

    /// True when `input` belongs to this shard.
    pub fn contains(&self, input: &BatchInput) -> bool {
        Shard::of(&input.rel, self.count) == self.index
    }
}
