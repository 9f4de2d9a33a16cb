//! Phase timings for people tuning heapconv: with `HEAPCONV_TIMINGS=1` in the environment,
//! the merge and encode stages print how long each of their phases took to standard error
//! (`heapconv: timing: PHASE MS ms`). Nothing else is affected: outputs never carry times.

use std::sync::OnceLock;
use std::time::Instant;

fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("HEAPCONV_TIMINGS").is_some_and(|v| !v.is_empty() && v != "0"))
}

/// A clock for the phases of one stage.
#[derive(Debug)]
pub struct Phases {
    stage: &'static str,
    last: Option<Instant>,
}

impl Phases {
    /// Starts timing the phases of `stage` (free when timings are off).
    pub fn start(stage: &'static str) -> Phases {
        Phases { stage, last: enabled().then(Instant::now) }
    }

    /// Ends phase `name`, printing its time when timings are on, and starts the next one.
    pub fn done(&mut self, name: &str) {
        if let Some(last) = self.last {
            let now = Instant::now();
            eprintln!("heapconv: timing: {}/{name} {:.1} ms", self.stage, now.duration_since(last).as_secs_f64() * 1e3);
            self.last = Some(now);
        }
    }
}

/// With timings on, prints `heapconv: timing: STAGE/WHAT at MS ms`: the time since the first
/// call of this function in the process (for the critical path of a stage whose phases run on
/// several threads; the first call marks the start).
pub fn at(stage: &str, what: &str) {
    static START: OnceLock<Instant> = OnceLock::new();
    if enabled() {
        let start = *START.get_or_init(Instant::now);
        eprintln!("heapconv: timing: {stage}/{what} at {:.1} ms", start.elapsed().as_secs_f64() * 1e3);
    }
}
