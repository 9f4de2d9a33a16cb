//! Clock conversion through ClockSnapshot packets, as Perfetto's trace processor does it:
//! for a time `t` on clock A, take the snapshot holding both A and the trace clock whose
//! A-value is the largest that is `<= t` (or the first snapshot if `t` precedes them all),
//! and return `t - A_snap + trace_snap`.

/// BOOTTIME, the default trace clock.
pub const BOOTTIME: u32 = 6;
/// CLOCK_MONOTONIC_COARSE, the clock of heapprofd dump timestamps.
pub const MONOTONIC_COARSE: u32 = 4;

/// Snapshots seen so far and the trace clock.
#[derive(Debug, Default)]
pub struct Clocks {
    snapshots: Vec<Vec<(u32, u64)>>,
    primary: Option<u32>,
}

impl Clocks {
    /// Records a snapshot: (clock id, timestamp) pairs; `primary` is its primary_trace_clock.
    pub fn add_snapshot(&mut self, clocks: Vec<(u32, u64)>, primary: Option<u32>) {
        if let Some(p) = primary.filter(|&p| p != 0) {
            self.primary = Some(p);
        }
        self.snapshots.push(clocks);
    }

    /// The trace clock id (BOOTTIME unless a snapshot says otherwise).
    pub fn trace_clock(&self) -> u32 {
        self.primary.unwrap_or(BOOTTIME)
    }

    /// Converts `t` on clock `from` to the trace clock; `None` when no snapshot links them.
    pub fn to_trace(&self, from: u32, t: u64) -> Option<i64> {
        let to = self.trace_clock();
        if from == to {
            return i64::try_from(t).ok();
        }
        let mut best: Option<(u64, u64)> = None; // (from value, to value)
        let mut first: Option<(u64, u64)> = None;
        for snap in &self.snapshots {
            let a = snap.iter().find(|c| c.0 == from).map(|c| c.1);
            let b = snap.iter().find(|c| c.0 == to).map(|c| c.1);
            let (Some(a), Some(b)) = (a, b) else { continue };
            if first.is_none_or(|(fa, _)| a < fa) {
                first = Some((a, b));
            }
            if a <= t && best.is_none_or(|(ba, _)| a >= ba) {
                best = Some((a, b));
            }
        }
        let (a, b) = best.or(first)?;
        let v = i128::from(t) - i128::from(a) + i128::from(b);
        i64::try_from(v).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_nearest_lower_snapshot() {
        let mut c = Clocks::default();
        c.add_snapshot(vec![(6, 1000), (4, 100)], None);
        c.add_snapshot(vec![(6, 5000), (4, 200)], None);
        assert_eq!(c.to_trace(4, 150), Some(1050));
        assert_eq!(c.to_trace(4, 250), Some(5050));
        // Earlier than every snapshot: the first one is used.
        assert_eq!(c.to_trace(4, 50), Some(950));
        assert_eq!(c.to_trace(6, 7), Some(7));
        assert_eq!(c.to_trace(3, 7), None);
    }

    #[test]
    fn negative_results_are_kept() {
        let mut c = Clocks::default();
        c.add_snapshot(vec![(6, 0), (4, 10)], None);
        assert_eq!(c.to_trace(4, 0), Some(-10));
    }
}
