//! `heapconv profile`.

use std::path::PathBuf;

use clap::Args;
use heapconv::Error;
use heapconv::pipeline::load::refuse_pprof;
use heapconv::pipeline::profile::{ProfileOptions, profile_one, run_java_heap_profile, run_profile};

use crate::cli::args::{
    AnnotationsArg, DecodeArgs, JavaHeapArg, PidArg, StrictArgs, SymbolArgs, TimestampsArg, findings,
};
use crate::cli::batch::{self, BatchArgs, Plan};
use crate::cli::ui::Ui;

#[derive(Args, Debug)]
#[command(mut_arg("no_annotations", |a| a.help(AnnotationsArg::NAMED)))]
#[command(mut_arg("java_heap", |a| a.help(JavaHeapArg::AS_TRACECONV)))]
pub(crate) struct ProfileArgs {
    /// The trace (`-` for standard input; gzip is detected). Several traces, directories or
    /// patterns: a batch, each trace's files in `-o DIR/<name>/`.
    #[arg(required_unless_present = "inputs_from", value_name = "TRACE")]
    pub(crate) traces: Vec<PathBuf>,
    /// Directory for the pprof files (created if needed).
    #[arg(long, short = 'o', default_value = ".")]
    pub(crate) output_dir: PathBuf,
    #[command(flatten)]
    pid: PidArg,
    #[command(flatten)]
    timestamps: TimestampsArg,
    #[command(flatten)]
    annotations: AnnotationsArg,
    /// Write uncompressed .pb files, named exactly as traceconv names them.
    #[arg(long)]
    pub(crate) raw: bool,
    #[command(flatten)]
    java_heap: JavaHeapArg,
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
            pids: self.pid.pids(),
            timestamps: self.timestamps.timestamps.clone(),
            annotations: self.annotations.annotations(),
            raw: self.raw,
            decode: self.decode.options(),
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
        let java_heap = a.java_heap.java_heap;
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
    let run =
        if a.java_heap.java_heap { run_java_heap_profile(trace, &opts)? } else { run_profile(trace, &opts, &tick)? };
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
