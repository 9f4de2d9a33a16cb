//! `heapconv deobfuscate`: ProGuard/R8 maps as Perfetto DeobfuscationMapping packets.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use heapconv::Error;
use heapconv::pipeline::deobfuscate::{DeobfuscateOptions, run_deobfuscate};

use crate::cli::args::ProguardArgs;
use crate::cli::ui::{self, Ui};

/// Arguments of `heapconv deobfuscate`.
#[derive(Args, Debug)]
pub(crate) struct DeobfuscateArgs {
    /// The trace the packets are for (not read, as traceconv does not read it: append the
    /// output to it, `cat TRACE OUT > deobfuscated`).
    #[arg(value_name = "TRACE")]
    trace: Option<PathBuf>,
    // The maps (one packet each).
    #[command(flatten)]
    proguard: ProguardArgs,
    /// Output file, or `-` for standard output (the default).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

impl DeobfuscateArgs {
    pub(crate) fn options(&self, ui: &Ui) -> DeobfuscateOptions {
        DeobfuscateOptions { maps: self.proguard.maps(ui) }
    }
}

pub(crate) fn run(ui: &Ui, a: DeobfuscateArgs) -> Result<u8, Error> {
    let opts = a.options(ui);
    let to_stdout = a.output.as_ref().is_none_or(|p| p.as_os_str() == "-");
    if to_stdout && std::io::stdout().is_terminal() {
        return Err(ui::refuse_terminal("binary DeobfuscationMapping packets", "use -o FILE or redirect"));
    }
    let out = if to_stdout { None } else { a.output.as_deref() };
    let inputs: Vec<PathBuf> = a.trace.iter().cloned().collect();
    let run = run_deobfuscate(out, &inputs, &opts)?;
    if to_stdout {
        ui::write_stdout(&run.packets)?;
    }
    for (map, pkg, classes) in &run.maps {
        ui.info(&format!(
            "{map}: {classes} classes{}",
            pkg.as_deref().map(|p| format!(" for {p}")).unwrap_or_default()
        ));
    }
    Ok(0)
}
