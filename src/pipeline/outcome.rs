//! How a run ends, for single runs and batches alike: one outcome type, one precedence.
//!
//! | outcome | exit code |
//! |---|---|
//! | [`RunOutcome::Ok`] | 0 |
//! | (an error) | 1 (2 for a usage error) |
//! | [`RunOutcome::Partial`]: the input is damaged or a dump never finished; what was complete was written | 3 |
//! | [`RunOutcome::SymbolsGateFailed`]: symbol coverage below the minimum | 4 |
//! | [`RunOutcome::GrowthGateFailed`]: growth above the limit | 5 |
//! | [`RunOutcome::DataLoss`]: strict, and the input says data was lost (outputs are written) | 6 |
//!
//! Worst first: a failure, then a failed gate, then data lost under strict, then a partial
//! result. A batch ends with the worst outcome of its inputs.

use serde::Serialize;

/// How a run (or a batch) went, ordered from best to worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunOutcome {
    /// Every input converted completely and passed its gates.
    Ok,
    /// Some input was damaged (or a dump never finished); no gate failed.
    Partial,
    /// Strict: some input says data was lost; no gate failed.
    DataLoss,
    /// Symbolization coverage was below the minimum asked for.
    #[serde(rename = "gate-failed")]
    SymbolsGateFailed,
    /// The growth of a diff was above the limit.
    GrowthGateFailed,
    /// Some input failed (batches only: a single run that fails ends in an error).
    Failed,
}

/// What a run found, judged by [`RunOutcome::judge`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Findings {
    /// The input was damaged, or a dump never finished.
    pub partial: bool,
    /// The input says data was lost.
    pub data_lost: bool,
    /// The symbolization gate failed.
    pub symbols_gate_failed: bool,
    /// The growth gate failed.
    pub growth_gate_failed: bool,
}

impl RunOutcome {
    /// The outcome of a run that got through: a failed gate beats data lost under `strict`,
    /// which beats a partial result.
    pub fn judge(f: Findings, strict: bool) -> RunOutcome {
        if f.growth_gate_failed {
            RunOutcome::GrowthGateFailed
        } else if f.symbols_gate_failed {
            RunOutcome::SymbolsGateFailed
        } else if strict && f.data_lost {
            RunOutcome::DataLoss
        } else if f.partial {
            RunOutcome::Partial
        } else {
            RunOutcome::Ok
        }
    }

    /// The worst of several outcomes (a batch's).
    pub fn worst(outcomes: impl IntoIterator<Item = RunOutcome>) -> RunOutcome {
        outcomes.into_iter().max().unwrap_or(RunOutcome::Ok)
    }

    /// The process exit code.
    pub fn exit_code(self) -> u8 {
        match self {
            RunOutcome::Ok => 0,
            RunOutcome::Failed => 1,
            RunOutcome::Partial => 3,
            RunOutcome::SymbolsGateFailed => 4,
            RunOutcome::GrowthGateFailed => 5,
            RunOutcome::DataLoss => 6,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_beat_strict_beats_partial() {
        let all = Findings { partial: true, data_lost: true, symbols_gate_failed: true, growth_gate_failed: false };
        assert_eq!(RunOutcome::judge(all, true).exit_code(), 4);
        let f = Findings { symbols_gate_failed: false, ..all };
        assert_eq!(RunOutcome::judge(f, true).exit_code(), 6);
        assert_eq!(RunOutcome::judge(f, false).exit_code(), 3);
        assert_eq!(RunOutcome::judge(Findings::default(), true).exit_code(), 0);
        let worst = RunOutcome::worst([RunOutcome::Partial, RunOutcome::Failed, RunOutcome::SymbolsGateFailed]);
        assert_eq!(worst.exit_code(), 1);
    }
}
