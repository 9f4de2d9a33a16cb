//! What a batch says of itself: per input ([`InputResult`]) and in all ([`BatchSummary`]).

use super::shard::Shard;
use crate::model::{FlatProfile, Profile, ValueKind, ValueType};
use crate::pipeline::outcome::{Findings, RunOutcome};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// What one profile holds: its name and the total of each sample type, by meaning
/// (`total-count`, `total-size`, `unreleased-count`, `unreleased-size`; other types as
/// `other:TYPE/UNIT`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProfileTotals {
    /// Which profile (process, pid, heap, dump, time).
    pub profile: String,
    /// Samples (distinct stacks with a value).
    pub samples: usize,
    /// Totals by sample type.
    pub totals: BTreeMap<String, i64>,
}

fn totals_key(t: &ValueType) -> String {
    match t.kind {
        ValueKind::TotalCount => "total-count".to_owned(),
        ValueKind::TotalSize => "total-size".to_owned(),
        ValueKind::UnreleasedCount => "unreleased-count".to_owned(),
        ValueKind::UnreleasedSize => "unreleased-size".to_owned(),
        ValueKind::Other => format!("other:{}/{}", t.name, t.unit),
    }
}

impl ProfileTotals {
    /// The totals of a profile.
    pub fn of(p: &Profile) -> ProfileTotals {
        let mut totals = BTreeMap::new();
        for (i, t) in p.header.sample_types.iter().enumerate() {
            *totals.entry(totals_key(t)).or_insert(0) += p.total(i);
        }
        ProfileTotals { profile: p.header.meta.describe(), samples: p.sample_count(), totals }
    }

    /// The totals of a profile with frame lists (pprof input).
    pub fn of_flat(p: &FlatProfile) -> ProfileTotals {
        let mut totals = BTreeMap::new();
        for (i, t) in p.header.sample_types.iter().enumerate() {
            *totals.entry(totals_key(t)).or_insert(0) += p.total(i);
        }
        ProfileTotals { profile: p.header.meta.describe(), samples: p.sample_count(), totals }
    }
}

/// How an input fared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Converted completely.
    Ok,
    /// Damaged (truncated, corrupt) or with unfinished dumps: what was complete was converted.
    Partial,
    /// Nothing converted: the error says why.
    Failed,
}

/// One file a batch wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutputFile {
    /// Path relative to the output directory, `/`-separated.
    pub path: String,
    /// Size in bytes.
    pub bytes: u64,
}

/// Symbolization coverage of an input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Coverage {
    /// Native frames seen.
    pub frames: u64,
    /// Native frames given symbols.
    pub frames_symbolized: u64,
    /// `frames_symbolized / frames`, in percent (100 when there are no frames).
    pub frame_percent: f64,
    /// Bytes on fully symbolized stacks, in percent.
    pub byte_percent: f64,
    /// Mappings without symbols (path, frames), in mapping order.
    pub unsymbolized_mappings: Vec<String>,
}

/// The `--min-symbolized` gate of an input.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gate {
    /// The least coverage allowed, in percent of frames.
    pub min_symbolized: f64,
    /// The coverage reached.
    pub actual: f64,
    /// Whether it passed.
    pub passed: bool,
}

/// Wall-clock time an input took: the only value of a summary that changes between runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputClock {
    /// Seconds from opening the input to its last output.
    pub elapsed_s: f64,
}

/// What one input of a batch did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputResult {
    /// The input's path.
    pub input: String,
    /// Its path relative to its root.
    pub rel: String,
    /// Its output key.
    pub key: String,
    /// What its content is (`perfetto-trace`, `ddm-alloc-blob`, `hprof`, `pprof`, …), or null
    /// when it could not be read.
    pub kind: Option<&'static str>,
    /// How it fared.
    pub status: Status,
    /// Why it failed.
    pub error: Option<String>,
    /// The error's kind (`io`, `malformed`, `truncated`, `unsupported`, `limit-exceeded`,
    /// `usage`, `no-data`, `internal`).
    pub error_kind: Option<&'static str>,
    /// What the user should know: data loss, damage, problems found, dumps that never ended.
    pub warnings: Vec<String>,
    /// What the input says was lost (see [`crate::model::TraceReport::data_loss`]; for `hprof-conv`, arrays
    /// whose values the dump does not hold): `--strict` fails the batch on any.
    pub data_loss: Vec<String>,
    /// Files written, in order.
    pub outputs: Vec<OutputFile>,
    /// What each converted profile holds.
    pub profiles: Vec<ProfileTotals>,
    /// Symbolization coverage, when the work reported one (the command-line batches always
    /// count it for traces and pprof inputs; `None` for inputs without native frames).
    pub symbolization: Option<Coverage>,
    /// The `--min-symbolized` gate, when one was set and there was something to measure.
    pub gate: Option<Gate>,
    /// Command-specific figures (`hprof`, `hprof-conv`).
    pub details: Option<serde_json::Value>,
    /// Wall-clock time (left out with `--summary-no-times`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_clock: Option<InputClock>,
}

impl InputResult {
    /// True when the input passed its gate (or had none).
    pub fn gate_passed(&self) -> bool {
        self.gate.as_ref().is_none_or(|g| g.passed)
    }

    /// How this input went; with `strict`, data it lost makes it [`RunOutcome::DataLoss`].
    pub fn outcome(&self, strict: bool) -> RunOutcome {
        if self.status == Status::Failed {
            return RunOutcome::Failed;
        }
        let findings = Findings {
            partial: self.status == Status::Partial,
            data_lost: !self.data_loss.is_empty(),
            symbols_gate_failed: !self.gate_passed(),
            growth_gate_failed: false,
        };
        RunOutcome::judge(findings, strict)
    }
}

pub(super) fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Wall-clock figures of a whole batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchClock {
    /// Seconds from listing the inputs to the last result.
    pub elapsed_s: f64,
}

/// The `--summary-json` document (schema `heapconv-batch-summary/1`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchSummary {
    /// `heapconv-batch-summary/1`.
    pub schema: &'static str,
    /// The command (`convert`, `profile`, …).
    pub command: String,
    /// The output directory as given.
    pub output_dir: String,
    /// The shard this run converted, if it was one.
    pub shard: Option<Shard>,
    /// Inputs listed (all shards).
    pub inputs_listed: usize,
    /// Inputs this run converted (its shard).
    pub inputs: usize,
    /// Inputs converted completely.
    pub ok: usize,
    /// Inputs converted in part.
    pub partial: usize,
    /// Inputs that failed.
    pub failed: usize,
    /// Inputs below `--min-symbolized`.
    pub gate_failed: usize,
    /// Inputs that say data was lost (the ones `--strict` fails on).
    pub data_loss: usize,
    /// Files written.
    pub outputs: usize,
    /// The outcome.
    pub outcome: RunOutcome,
    /// The process exit code.
    pub exit_code: u8,
    /// Per input, in list order (sorted by relative path).
    pub results: Vec<InputResult>,
    /// Wall-clock figures (left out with `--summary-no-times`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wall_clock: Option<BatchClock>,
    /// What the ProGuard/R8 maps did over the batch (left out without maps): per map, what it
    /// was applied to and how many names it deobfuscated; the names no map deobfuscated (a
    /// `DeobfuscationReport`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deobfuscation: Option<serde_json::Value>,
}

impl BatchSummary {
    /// The summary of `results` (`strict`: `--strict` was given).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        command: &str,
        output_dir: &Path,
        shard: Option<Shard>,
        inputs_listed: usize,
        results: Vec<InputResult>,
        exit_code: u8,
        strict: bool,
        elapsed: Option<Duration>,
    ) -> BatchSummary {
        let count = |s: Status| results.iter().filter(|r| r.status == s).count();
        BatchSummary {
            schema: "heapconv-batch-summary/1",
            command: command.to_owned(),
            output_dir: output_dir.display().to_string(),
            shard,
            inputs_listed,
            inputs: results.len(),
            ok: count(Status::Ok),
            partial: count(Status::Partial),
            failed: count(Status::Failed),
            gate_failed: results.iter().filter(|r| !r.gate_passed()).count(),
            data_loss: results.iter().filter(|r| !r.data_loss.is_empty()).count(),
            outputs: results.iter().map(|r| r.outputs.len()).sum(),
            outcome: RunOutcome::worst(results.iter().map(|r| r.outcome(strict))),
            exit_code,
            results,
            wall_clock: elapsed.map(|e| BatchClock { elapsed_s: (e.as_secs_f64() * 1e6).round() / 1e6 }),
            deobfuscation: None,
        }
    }

    /// The `index.html` of a batch of HTML reports: each input with its reports and totals.
    pub fn html_index(&self) -> Vec<u8> {
        let rows: Vec<crate::encode::html::IndexRow> = self
            .results
            .iter()
            .map(|r| crate::encode::html::IndexRow {
                input: r.input.clone(),
                status: serde_json::to_value(r.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                links: r.outputs.iter().filter(|o| o.path.ends_with(".html")).map(|o| o.path.clone()).collect(),
                profiles: r
                    .profiles
                    .iter()
                    .map(|p| (p.profile.clone(), p.totals.iter().map(|(k, v)| (k.clone(), *v)).collect()))
                    .collect(),
                note: r.error.clone().or_else(|| (!r.warnings.is_empty()).then(|| r.warnings.join("; "))),
            })
            .collect();
        let title = format!(
            "heapconv {}: {} input(s), {} ok, {} partial, {} failed",
            self.command, self.inputs, self.ok, self.partial, self.failed
        );
        crate::encode::html::encode_index(&title, &rows)
    }

    /// The summary as pretty JSON, ending with a newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("the summary serializes");
        s.push('\n');
        s
    }
}
