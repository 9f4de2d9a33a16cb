//! `heapconv inspect`.

use std::path::PathBuf;

use clap::Args;
use heapconv::Error;
use heapconv::pipeline::inspect::run_inspect_input;
use heapconv::pipeline::outcome::{Findings, RunOutcome};

use crate::cli::args::{DdmArgs, DecodeArgs};
use crate::cli::ui;

#[derive(Args, Debug)]
pub(crate) struct InspectArgs {
    /// The trace, DDM allocation-record capture or HPROF heap dump (`-` for standard input;
    /// gzip is detected).
    input: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    pub(crate) decode: DecodeArgs,
    #[command(flatten)]
    ddm: DdmArgs,
}

pub(crate) fn run(a: InspectArgs) -> Result<u8, Error> {
    let decode = a.decode.options();
    let inspection = run_inspect_input(&a.input, &decode, &a.ddm.choices().options())?;
    let text = inspection.render(a.json);
    ui::write_stdout_unflushed(text.as_bytes())?;
    let findings = Findings { partial: inspection.is_partial(), ..Findings::default() };
    Ok(RunOutcome::judge(findings, false).exit_code())
}
