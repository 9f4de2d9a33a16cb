//! `heapconv diff`.

use std::path::PathBuf;

use clap::Args;
use heapconv::Error;
use heapconv::pipeline::diff::{DiffRunOptions, GrowthLimit, run_diff};
use heapconv::pipeline::load::merge_options;

use crate::cli::args::{FormatArg, SelectArgs, findings};
use crate::cli::ui::{self, Ui};

#[derive(Args, Debug)]
pub(crate) struct DiffArgs {
    /// The baseline profile (any kind heapconv reads).
    base: PathBuf,
    /// The profile to compare with it.
    new: PathBuf,
    /// Output file, `-` for standard output.
    #[arg(short, long)]
    output: PathBuf,
    /// Output format: pprof (NEW minus BASE, for `go tool pprof`), folded (`stack BEFORE
    /// AFTER`), svg (differential flame graph) or json (what grew most).
    #[arg(long, value_enum, default_value = "pprof")]
    to: FormatArg,
    /// `--to html`: frames below this percentage of the total (in every sample type, BASE or
    /// NEW) are merged into one `[other]` frame per parent; 0 keeps every frame.
    #[arg(long, value_name = "PCT", default_value_t = 0.01)]
    prune_below: f64,
    /// Scale BASE to NEW's total before comparing (outputs only; the gate compares totals as
    /// they are).
    #[arg(long)]
    normalize: bool,
    /// Exit with code 5 when the total of the compared sample type (bytes) grew by more than
    /// this: a size (`10MB`, `512KiB`, `1000`; K/M/G are powers of 1024) or a percentage of
    /// BASE (`5%`).
    #[arg(long, value_name = "BYTES|PCT")]
    fail_if_growth: Option<String>,
    /// Stacks and functions listed by `--to json`.
    #[arg(long, default_value_t = 20, value_name = "N")]
    top: usize,
    /// The sample type compared, by name (`alloc_space`) or meaning (`total-size`). Default:
    /// the default type if it is in bytes, else the first type in bytes, else the default type.
    #[arg(long, value_name = "NAME")]
    sample_type: Option<String>,
    #[command(flatten)]
    select: SelectArgs,
}

pub(crate) fn run(ui: &Ui, a: DiffArgs) -> Result<u8, Error> {
    let limit = a.fail_if_growth.as_deref().map(GrowthLimit::parse).transpose()?;
    let (load, sources) = a.select.load(ui)?;
    let opts = DiffRunOptions {
        load,
        merge: merge_options(&a.select.sample_types),
        format: a.to.0,
        normalize: a.normalize,
        fail_if_growth: limit,
        top: a.top,
        sample_type: a.sample_type.clone(),
        prune_below: a.prune_below,
    };
    let run = run_diff(&a.base, &a.new, &opts)?;
    let inputs = [a.base.clone(), a.new.clone()];
    ui::write_output(&a.output, &run.bytes, opts.format.is_binary(), &inputs)?;
    let (gate_ok, damaged) = ui.inputs(&run.inputs, &sources);
    let mut findings = findings(gate_ok, damaged);
    match &run.gate {
        Some(g) if !g.passed => {
            eprintln!("heapconv: error: growth gate failed: {}", g.message);
            findings.growth_gate_failed = true;
        }
        Some(g) => ui.info(&format!("growth gate passed: {}", g.message)),
        None => {}
    }
    Ok(a.select.strict.exit(findings, &ui::inputs_data_loss(&run.inputs)))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    #[test]
    fn diff_defaults_equal_option_defaults() {
        let Command::Diff(a) =
            Cli::try_parse_from(["heapconv", "diff", "a.pb", "b.pb", "-o", "d.pb.gz"]).unwrap().command
        else {
            panic!("diff")
        };
        let d = DiffRunOptions::default();
        assert_eq!(a.to.0, d.format);
        assert_eq!(a.normalize, d.normalize);
        assert_eq!(a.fail_if_growth.is_some(), d.fail_if_growth.is_some());
        assert_eq!(a.top, d.top);
        assert_eq!(a.prune_below, d.prune_below);
    }

    #[test]
    fn growth_limits_parse() {
        assert_eq!(GrowthLimit::parse("10MB").unwrap(), GrowthLimit::Bytes(10 << 20));
        assert_eq!(GrowthLimit::parse("512 KiB").unwrap(), GrowthLimit::Bytes(512 << 10));
        assert_eq!(GrowthLimit::parse("1.5G").unwrap(), GrowthLimit::Bytes(3 << 29));
        assert_eq!(GrowthLimit::parse("1000").unwrap(), GrowthLimit::Bytes(1000));
        assert_eq!(GrowthLimit::parse("5%").unwrap(), GrowthLimit::Percent(5.0));
        assert!(GrowthLimit::parse("-5%").is_err());
        assert!(GrowthLimit::parse("ten").is_err());
        assert!(GrowthLimit::parse("10 parsecs").is_err());
    }
}
