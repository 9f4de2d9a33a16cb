//! `heapconv profile`.

use std::path::PathBuf;

use clap::Args;
use heapconv::Error;
use heapconv::pipeline::load::{decode_options, refuse_pprof};
use heapconv::pipeline::profile::{ProfileOptions, profile_one, run_java_heap_profile, run_profile};

use crate::cli::args::{DecodeArgs, StrictArgs, SymbolArgs, findings};
use crate::cli::batch::{self, BatchArgs, Plan};
use crate::cli::ui::Ui;

#[derive(Args, Debug)]
pub(crate) struct ProfileArgs {
    /// The trace (`-` for standard input; gzip is detected). Several traces, directories or
    /// patterns: a batch, each trace's files in `-o DIR/<name>/`.
    #[arg(required_unless_present = "inputs_from", value_name = "TRACE")]
    pub(crate) traces: Vec<PathBuf>,
    /// Directory for the pprof files (created if needed).
    #[arg(long, short = 'o', default_value = ".")]
    pub(crate) output_dir: PathBuf,
    /// Only this process.
    #[arg(long)]
    pub(crate) pid: Option<u64>,
    /// Only dumps at these trace-clock timestamps (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub(crate) timestamps: Vec<i64>,
    /// Do not annotate ART frames ([jit], [aot], [interp], [common-frame]).
    #[arg(long)]
    pub(crate) no_annotations: bool,
    /// Write uncompressed .pb files, named exactly as traceconv names them.
    #[arg(long)]
    pub(crate) raw: bool,
    /// Convert the Java heap graphs instead (`traceconv profile --java-heap`): one
    /// `java_heap_dump.N.PID.pb` per dump, the shortest-path tree from the GC roots.
    #[arg(long)]
    java_heap: bool,
    #[command(flatten)]
    symbols: SymbolArgs,
    #[command(flatten)]
    pub(crate) decode: DecodeArgs,
    #[command(flatten)]
    pub(crate) batch: BatchArgs,
    #[command(flatten)]
    strict: StrictArgs,
}

impl ProfileArgs {
    pub(crate) fn options(&self, ui: &Ui) -> (ProfileOptions, heapconv::pipeline::load::SymbolSources) {
        let sources = self.symbols.sources(ui);
        let opts = ProfileOptions {
            output_dir: self.output_dir.clone(),
            pids: self.pid.into_iter().collect(),
            timestamps: self.timestamps.clone(),
            annotations: !self.no_annotations,
            raw: self.raw,
            decode: decode_options(self.decode.max_bundle_bytes()),
            symbols: sources.clone(),
        };
        (opts, sources)
    }
}

pub(crate) fn run(ui: &Ui, a: ProfileArgs) -> Result<u8, Error> {
    let (opts, sources) = a.options(ui);
    if a.traces.len() > 1 || a.batch.asked(&a.traces) {
        let plan = Plan {
            command: "profile",
            positional: &a.traces,
            args: &a.batch,
            out: &opts.output_dir,
            wanted: heapconv::pipeline::batch::Wanted::Traces,
            file_exts: &[],
            min_symbolized: sources.min_symbolized,
            strict: a.strict.strict,
            proguard: Some(&sources.proguard),
        };
        let mut opts = opts.clone();
        // A batch summary always reports each input's symbolization coverage.
        opts.symbols.always_report = true;
        let java_heap = a.java_heap;
        return batch::run(ui, &plan, &|i| {
            refuse_pprof(&i.path, "profile")?;
            profile_one(i, &opts.output_dir, &opts, java_heap)
        });
    }
    let trace = &a.traces[0];
    refuse_pprof(trace, "profile")?;
    let pb = ui.progress_bar();
    let tick = |n: usize| {
        if let Some(pb) = &pb {
            pb.set_message(format!("{n} profile(s) encoded"));
            pb.tick();
        }
    };
    let run = if a.java_heap { run_java_heap_profile(trace, &opts)? } else { run_profile(trace, &opts, &tick)? };
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let keep = |d: &heapconv::model::DumpReport| run.converted.keeps(d);
    let damaged = ui.problems_of(&run.report, &keep);
    ui.deobfuscation(&sources.proguard);
    let gate_ok = run.symbols.as_ref().is_none_or(|r| ui.symbols(r, &sources));
    let lost = run.report.data_loss_of(&keep);
    if run.written.is_empty() {
        ui.info("No profile matched; nothing written.");
    } else {
        ui.info(&format!("Wrote {} profile(s) to {}", run.written.len(), opts.output_dir.display()));
        if ui.verbose > 0 {
            for w in &run.written {
                ui.info(&format!("  {}", w.display()));
            }
        }
    }
    Ok(a.strict.exit(findings(gate_ok, damaged), &lost))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    #[test]
    fn profile_defaults_equal_option_defaults() {
        let Command::Profile(a) = Cli::try_parse_from(["heapconv", "profile", "t.pftrace"]).unwrap().command else {
            panic!("profile")
        };
        let (got, _) = a.options(&Ui { verbose: 0, quiet: true });
        let d = ProfileOptions::default();
        assert_eq!(got.output_dir, d.output_dir);
        assert_eq!(got.pids, d.pids);
        assert_eq!(got.timestamps, d.timestamps);
        assert_eq!(got.annotations, d.annotations);
        assert_eq!(got.raw, d.raw);
        assert_eq!(got.decode.max_bundle_bytes, d.decode.max_bundle_bytes);
    }
}
