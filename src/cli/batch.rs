//! Batches on the command line: the options every converting command shares
//! (`--inputs-from`, `--jobs`, `--shard`, `--summary-json`, …), when a command runs as a batch,
//! and how a batch reports on standard error (a progress bar and a last line of counts on a
//! terminal; in CI, nothing when every input went well, else one line per failed or damaged
//! input and the counts; one line per input with `-v`). The work is
//! [`heapconv::pipeline::batch`], given each command's per-input function.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use heapconv::pipeline::RunOutcome;
use heapconv::pipeline::batch::{
    self, BatchInput, BatchSummary, Done, InputResult, ListOptions, Shard, Status, Wanted,
};
use heapconv::pipeline::select::{make_dir, write_file};
use heapconv::{Error, ErrorKind};

use crate::cli::ui::Ui;

/// Where the inputs come from, besides the positional arguments, and how many threads work.
#[derive(Args, Debug, Default)]
pub(crate) struct InputListArgs {
    /// Read more inputs from FILE, one per line (`-`: standard input): paths, directories or
    /// patterns. Empty lines and lines starting with `#` are skipped.
    #[arg(long, value_name = "FILE")]
    pub(crate) inputs_from: Vec<PathBuf>,
    /// Worker threads (default, or 0: one per core).
    #[arg(short = 'j', long, value_name = "N")]
    pub(crate) jobs: Option<usize>,
}

/// The options of a batch.
#[derive(Args, Debug, Default)]
pub(crate) struct BatchArgs {
    #[command(flatten)]
    pub(crate) list: InputListArgs,
    /// Convert every input on its own into -o DIR (see docs/batches.md). A directory or
    /// a pattern among the inputs, --inputs-from, --shard or --summary-json imply it.
    #[arg(long)]
    pub(crate) batch: bool,
    /// Convert only shard K of N (1 <= K <= N): a fixed partition of the inputs by a hash of
    /// their relative paths, so that N CI jobs together convert every input exactly once.
    #[arg(long, value_name = "K/N")]
    pub(crate) shard: Option<String>,
    /// Write a JSON report of the batch to FILE: per input its status, error, warnings,
    /// outputs, totals, symbolization coverage and time.
    #[arg(long, value_name = "FILE")]
    pub(crate) summary_json: Option<PathBuf>,
    /// Leave wall-clock times out of --summary-json (the rest is the same from run to run).
    #[arg(long)]
    pub(crate) summary_no_times: bool,
}

impl BatchArgs {
    /// True when the arguments ask for a batch, whatever the number of inputs.
    pub(crate) fn asked(&self, positional: &[PathBuf]) -> bool {
        self.batch
            || !self.list.inputs_from.is_empty()
            || self.shard.is_some()
            || self.summary_json.is_some()
            || positional.iter().any(|p| p.as_os_str() != "-" && (p.is_dir() || batch::is_pattern(p)))
    }
}

/// `-o` of a batch: a directory.
pub(crate) fn out_dir(output: Option<&Path>, command: &str) -> Result<PathBuf, Error> {
    match output {
        Some(p) if p.as_os_str() != "-" => Ok(p.to_path_buf()),
        _ => Err(Error::new(
            ErrorKind::Usage,
            format!("`heapconv {command}` of several inputs writes files: give -o DIR (created if needed)"),
        )),
    }
}

/// What a batch command needs besides its work.
pub(crate) struct Plan<'a> {
    pub(crate) command: &'a str,
    pub(crate) positional: &'a [PathBuf],
    pub(crate) args: &'a BatchArgs,
    pub(crate) out: &'a Path,
    pub(crate) wanted: Wanted,
    pub(crate) file_exts: &'a [&'a str],
    pub(crate) min_symbolized: Option<f64>,
    /// `--strict`: an input that lost data fails the batch (exit 6).
    pub(crate) strict: bool,
    /// The run's ProGuard/R8 maps: what they did goes into the summary.
    pub(crate) proguard: Option<&'a heapconv::pipeline::load::ProguardMaps>,
}

/// One line about a finished input for standard error, or none.
fn line_for(ui: &Ui, r: &InputResult, strict: bool) -> Option<String> {
    let mut lines = Vec::new();
    if strict && r.status != Status::Failed {
        for l in &r.data_loss {
            lines.push(format!("heapconv: error: {}: --strict: data lost: {l}", r.input));
        }
    }
    match r.status {
        Status::Failed => {
            let e = r.error.as_deref().unwrap_or("failed");
            // Errors name their file almost always; name it when they do not.
            if e.contains(&r.input) {
                lines.push(format!("heapconv: error: {e}"));
            } else {
                lines.push(format!("heapconv: error: {}: {e}", r.input));
            }
        }
        Status::Partial if !ui.quiet => {
            let why = r.warnings.last().map(String::as_str).unwrap_or("damaged");
            lines.push(format!("heapconv: warning: {}: partial result: {why}", r.input));
        }
        _ => {}
    }
    if let Some(g) = r.gate.as_ref().filter(|g| !g.passed) {
        lines.push(format!(
            "heapconv: error: {}: symbolization coverage {:.1}% is below --min-symbolized {}%",
            r.input, g.actual, g.min_symbolized
        ));
    }
    if ui.verbose > 0 && !ui.quiet {
        let secs = r.wall_clock.as_ref().map(|c| format!(" in {:.3} s", c.elapsed_s)).unwrap_or_default();
        let status = match r.status {
            Status::Ok => "ok",
            Status::Partial => "partial",
            Status::Failed => "failed",
        };
        lines.push(format!("{status:<7} {} -> {} file(s){secs}", r.input, r.outputs.len()));
        if ui.verbose > 1 {
            for w in &r.warnings {
                lines.push(format!("        warning: {w}"));
            }
        }
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// Runs `work` on every input of the batch `plan` describes, and reports.
pub(crate) fn run(
    ui: &Ui,
    plan: &Plan<'_>,
    work: &(dyn Fn(&BatchInput) -> Result<Done, Error> + Sync),
) -> Result<u8, Error> {
    let start = Instant::now();
    let shard = plan.args.shard.as_deref().map(Shard::parse).transpose()?;
    let opts = ListOptions { wanted: plan.wanted, skip_dir: Some(plan.out.to_path_buf()) };
    let list = batch::list_inputs(plan.positional, &plan.args.list.inputs_from, &opts)?;
    if list.inputs.is_empty() {
        return Err(Error::new(ErrorKind::Usage, "no input given"));
    }
    if ui.verbose > 0 {
        for s in &list.skipped {
            ui.info(&format!(
                "skipped {}: not an input `heapconv {}` reads (by its content)",
                s.display(),
                plan.command
            ));
        }
    }
    let listed = list.inputs.len();
    let mine: Vec<BatchInput> = match shard {
        Some(s) => list.inputs.into_iter().filter(|i| s.contains(i)).collect(),
        None => list.inputs,
    };
    make_dir(plan.out)?;
    let pb = (!ui.quiet && std::io::stderr().is_terminal()).then(|| {
        let pb = indicatif::ProgressBar::new(mine.len() as u64);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} {wide_msg}")
        {
            pb.set_style(style.progress_chars("=> "));
        }
        pb
    });
    let done = |r: &InputResult| {
        if let Some(line) = line_for(ui, r, plan.strict) {
            match &pb {
                Some(pb) => pb.println(line),
                None => eprintln!("{line}"),
            }
        }
        if let Some(pb) = &pb {
            pb.set_message(r.input.clone());
            pb.inc(1);
        }
    };
    let run_opts = batch::RunOptions {
        jobs: None,
        out_dir: plan.out.to_path_buf(),
        min_symbolized: plan.min_symbolized,
        file_exts: plan.file_exts.iter().map(|s| (*s).to_owned()).collect(),
        no_times: plan.args.summary_no_times,
    };
    // Each input's error is passed on as text: its hint written out in flags.
    let work = |i: &BatchInput| work(i).map_err(crate::cli::hints::written_out);
    let results = batch::run_batch(&mine, &run_opts, &work, &done)?;
    if let Some(pb) = pb {
        pb.finish_and_clear();
    }
    let code = RunOutcome::worst(results.iter().map(|r| r.outcome(plan.strict))).exit_code();
    let elapsed = (!plan.args.summary_no_times).then(|| start.elapsed());
    let mut summary = BatchSummary::new(plan.command, plan.out, shard, listed, results, code, plan.strict, elapsed);
    summary.deobfuscation = plan.proguard.and_then(heapconv::pipeline::reports::deobfuscation_json);
    // In CI (not a terminal) a batch that went well prints nothing unless -v.
    let all_ok = summary.failed == 0
        && summary.partial == 0
        && summary.gate_failed == 0
        && !(plan.strict && summary.data_loss > 0);
    if !ui.quiet && (ui.verbose > 0 || std::io::stderr().is_terminal() || !all_ok) {
        let shard_text = shard.map(|s| format!(" (shard {}/{} of {listed})", s.index, s.count)).unwrap_or_default();
        let gate = if summary.gate_failed > 0 {
            format!(", {} below --min-symbolized", summary.gate_failed)
        } else {
            String::new()
        };
        eprintln!(
            "heapconv {}: {} input(s){shard_text}: {} ok, {} partial, {} failed{gate}; {} file(s) written under {}",
            plan.command,
            summary.inputs,
            summary.ok,
            summary.partial,
            summary.failed,
            summary.outputs,
            plan.out.display()
        );
    }
    if plan.file_exts == ["html"] {
        // Batches of HTML reports get an index linking them (beside them, unless an input's
        // report is called so).
        let taken = summary.results.iter().any(|r| r.outputs.iter().any(|o| o.path == "index.html"));
        let index = plan.out.join(if taken { "index.heapconv.html" } else { "index.html" });
        let inputs: Vec<PathBuf> = summary.results.iter().map(|r| PathBuf::from(&r.input)).collect();
        write_file(&index, &summary.html_index(), &inputs)?;
    }
    if let Some(path) = &plan.args.summary_json {
        let inputs: Vec<PathBuf> = summary.results.iter().map(|r| PathBuf::from(&r.input)).collect();
        write_file(path, summary.to_json().as_bytes(), &inputs)?;
    }
    Ok(code)
}
