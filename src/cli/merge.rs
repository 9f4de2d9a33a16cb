//! `heapconv merge`.

use std::path::PathBuf;

use clap::Args;
use heapconv::pipeline::Format;
use heapconv::pipeline::load::merge_options;
use heapconv::pipeline::merge::{MergeRunOptions, run_merge, run_merge_pprof_to, timed_write};
use heapconv::{Error, ErrorKind};

use crate::cli::args::{FormatArg, SelectArgs, findings};
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
    /// Output format.
    #[arg(long, value_enum, default_value = "pprof")]
    to: FormatArg,
    /// The sample type the output shows (pprof: its default type), by name (`alloc_space`) or
    /// meaning (`total-size`). Default: the inputs' default type.
    #[arg(long, value_name = "NAME")]
    sample_type: Option<String>,
    /// `--to html`: frames below this percentage of the total (in every sample type) are merged
    /// into one `[other]` frame per parent; 0 keeps every frame.
    #[arg(long, value_name = "PCT", default_value_t = 0.01)]
    prune_below: f64,
    #[command(flatten)]
    select: SelectArgs,
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

pub(crate) fn run(ui: &Ui, a: MergeArgs) -> Result<u8, Error> {
    let (load, sources) = a.select.load(ui)?;
    let opts = MergeRunOptions {
        load,
        merge: merge_options(&a.select.sample_types),
        format: a.to.0,
        sample_type: a.sample_type.clone(),
        prune_below: a.prune_below,
    };
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    #[test]
    fn merge_defaults_equal_option_defaults() {
        let args = ["heapconv", "merge", "a.pb", "b.pb", "-o", "m.pb.gz"];
        let Command::Merge(a) = Cli::try_parse_from(args).unwrap().command else { panic!("merge") };
        let d = MergeRunOptions::default();
        assert_eq!(a.to.0, d.format);
        let (got, _) = a.select.load(&Ui { verbose: 0, quiet: true }).unwrap();
        let want = d.load;
        assert_eq!(got.pids, want.pids);
        assert_eq!(got.heap, want.heap);
        assert_eq!(got.dump, want.dump);
        assert_eq!(got.annotations, want.annotations);
        assert_eq!(got.pprof.max_bytes, want.pprof.max_bytes);
        assert_eq!(got.decode.max_bundle_bytes, want.decode.max_bundle_bytes);
        assert_eq!(merge_options(&a.select.sample_types).sample_types, d.merge.sample_types);
        assert_eq!(a.sample_type, d.sample_type);
        assert_eq!(a.prune_below, d.prune_below);
        assert!(Cli::try_parse_from(["heapconv", "merge", "a.pb"]).is_err(), "-o is required");
    }
}
