//! `heapconv diff`.

use std::path::PathBuf;

use clap::Args;
use heapconv::Error;
use heapconv::pipeline::diff::{DiffRunOptions, GrowthLimit, run_diff};
use heapconv::pipeline::load::{SymbolSources, merge_options};

use crate::cli::args::{LoadArgs, PruneArg, ToFormatArg, findings};
use crate::cli::ui::{self, Ui};

#[derive(Args, Debug)]
#[command(mut_arg("to", |a| a.help(ToFormatArg::OF_DIFF)))]
#[command(mut_arg("prune_below", |a| a.help(PruneArg::OF_DIFF)))]
pub(crate) struct DiffArgs {
    /// The baseline profile (any kind heapconv reads).
    base: PathBuf,
    /// The profile to compare with it.
    new: PathBuf,
    /// Output file, `-` for standard output.
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    to: ToFormatArg,
    #[command(flatten)]
    prune: PruneArg,
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
    select: LoadArgs,
}

/// `--fail-if-growth`: a size or a percentage.
fn parse_growth_limit(s: &str) -> Result<GrowthLimit, Error> {
    GrowthLimit::parse(s).map_err(|e| {
        Error::new(
            e.kind(),
            format!("--fail-if-growth takes a size (10MB, 512KiB, 1000) or a percentage (5%), not {s:?}"),
        )
    })
}

impl DiffArgs {
    /// Arguments -> pipeline options, and where symbols come from.
    pub(crate) fn options(&self, ui: &Ui) -> Result<(DiffRunOptions, SymbolSources), Error> {
        let limit = self.fail_if_growth.as_deref().map(parse_growth_limit).transpose()?;
        let (load, sources) = self.select.load(ui)?;
        let opts = DiffRunOptions {
            load,
            merge: merge_options(&self.select.sample_types),
            format: self.to.to.0,
            normalize: self.normalize,
            fail_if_growth: limit,
            top: self.top,
            sample_type: self.sample_type.clone(),
            prune_below: self.prune.prune_below,
        };
        Ok((opts, sources))
    }
}

pub(crate) fn run(ui: &Ui, a: DiffArgs) -> Result<u8, Error> {
    let (opts, sources) = a.options(ui)?;
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
    use super::*;

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
