//! `heapconv merge`.

use std::path::PathBuf;

use clap::Args;
use heapconv::pipeline::Format;
use heapconv::pipeline::load::{SymbolSources, merge_options};
use heapconv::pipeline::merge::{MergeRunOptions, run_merge, run_merge_pprof_to, timed_write};
use heapconv::{Error, ErrorKind};

use crate::cli::args::{LoadArgs, PruneArg, ToFormatArg, findings};
use crate::cli::batch::InputListArgs;
use crate::cli::ui::{self, Ui};

#[derive(Args, Debug)]
pub(crate) struct MergeArgs {
    /// Inputs: heapprofd traces (the selected dumps of every process and heap), DDM captures
    /// and pprof files (gzip or not), in any mix. `-` for standard input. Directories and
    /// patterns stand for the inputs in them.
    #[arg(required_unless_present = "inputs_from", value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// Output file, `-` for standard output.
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    to: ToFormatArg,
    /// The sample type the output shows (pprof: its default type), by name (`alloc_space`) or
    /// meaning (`total-size`). Default: the inputs' default type.
    #[arg(long, value_name = "NAME")]
    sample_type: Option<String>,
    #[command(flatten)]
    prune: PruneArg,
    #[command(flatten)]
    select: LoadArgs,
    #[command(flatten)]
    pub(crate) list: InputListArgs,
}

/// The inputs of `merge` and `top`: directories and patterns expanded, `--inputs-from` added.
pub(crate) fn expand_inputs(inputs: &[PathBuf], list: &InputListArgs) -> Result<Vec<PathBuf>, Error> {
    use heapconv::pipeline::batch::{Wanted, expand_args};
    let all = expand_args(inputs, &list.inputs_from, Wanted::Mergeable)?;
    if all.is_empty() {
        return Err(Error::new(ErrorKind::Usage, "no input given"));
    }
    Ok(all)
}

impl MergeArgs {
    /// Arguments -> pipeline options, and where symbols come from.
    pub(crate) fn options(&self, ui: &Ui) -> Result<(MergeRunOptions, SymbolSources), Error> {
        let (load, sources) = self.select.load(ui)?;
        let opts = MergeRunOptions {
            load,
            merge: merge_options(&self.select.sample_types),
            format: self.to.to.0,
            sample_type: self.sample_type.clone(),
            prune_below: self.prune.prune_below,
        };
        Ok((opts, sources))
    }
}

pub(crate) fn run(ui: &Ui, a: MergeArgs) -> Result<u8, Error> {
    let (opts, sources) = a.options(ui)?;
    let inputs = expand_inputs(&a.inputs, &a.list)?;
    let (profile, infos) = if opts.format == Format::Pprof && a.output.as_os_str() != "-" {
        // Written as it is encoded.
        run_merge_pprof_to(&inputs, &opts, &a.output)?
    } else {
        let run = run_merge(&inputs, &opts)?;
        timed_write(|| ui::write_output(&a.output, &run.bytes, opts.format.is_binary(), &inputs))?;
        (run.profile, run.inputs)
    };
    let samples = profile.sample_count();
    // The process ends next: the merged profile's tables (a block per frame and string) go
    // back to the system with it rather than being freed one by one first.
    std::mem::forget(profile);
    let (gate_ok, damaged) = ui.inputs(&infos, &sources);
    if a.output.as_os_str() != "-" {
        ui.info(&format!(
            "merged {} profile(s) from {} input(s): {} samples; wrote {}",
            infos.iter().map(|i| i.profiles).sum::<usize>(),
            infos.len(),
            samples,
            a.output.display()
        ));
    }
    Ok(a.select.strict.exit(findings(gate_ok, damaged), &ui::inputs_data_loss(&infos)))
}
