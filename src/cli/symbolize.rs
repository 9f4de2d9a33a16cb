//! `heapconv symbolize` (a trace's native frames, as ModuleSymbols packets) and
//! `heapconv addr2line` (addresses of one ELF file).

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;
use heapconv::pipeline::batch::Wanted;
use heapconv::pipeline::load::refuse_pprof;
use heapconv::pipeline::symbolize::{SYMBOLS_EXT, addr2line_json_lines, run_symbolize, symbolize_one};
use heapconv::{Error, ErrorKind};

use crate::cli::args::{DecodeArgs, StrictArgs, SymbolArgs, findings};
use crate::cli::batch::{self, BatchArgs, Plan, out_dir};
use crate::cli::ui::{self, Ui};

#[derive(Args, Debug)]
pub(crate) struct SymbolizeArgs {
    /// The trace (`-` for standard input; gzip is detected). Several traces, directories or
    /// patterns: a batch, writing `-o DIR/<name>.symbols.pftrace` per trace.
    #[arg(required_unless_present = "inputs_from", value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// Output file for the ModuleSymbols packets (`-` or none: standard output).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Print the report as JSON on standard error.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    symbols: SymbolArgs,
    #[command(flatten)]
    pub(crate) decode: DecodeArgs,
    #[command(flatten)]
    pub(crate) batch: BatchArgs,
    #[command(flatten)]
    strict: StrictArgs,
}

pub(crate) fn run(ui: &Ui, a: SymbolizeArgs) -> Result<u8, Error> {
    let sources = a.symbols.sources(ui);
    if !sources.proguard.is_empty() {
        ui.warn("symbolize writes native symbols only: the ProGuard maps are not used (see `heapconv deobfuscate`)");
    }
    let Some(opts) = sources.options().filter(|o| !o.symbol_dirs.is_empty()) else {
        return Err(Error::new(
            ErrorKind::Usage,
            "no symbol directories: give --symbol-dir DIR (repeatable) or set PERFETTO_BINARY_PATH",
        ));
    };
    let decode = a.decode.options();
    if a.traces.len() > 1 || a.batch.asked(&a.traces) {
        let out = out_dir(a.output.as_deref(), "symbolize")?;
        let plan = Plan {
            command: "symbolize",
            positional: &a.traces,
            args: &a.batch,
            out: &out,
            wanted: Wanted::Traces,
            file_exts: &[SYMBOLS_EXT],
            min_symbolized: sources.min_symbolized,
            strict: a.strict.strict,
            proguard: None,
        };
        return batch::run(ui, &plan, &|i| {
            refuse_pprof(&i.path, "symbolize")?;
            symbolize_one(i, &out, &opts, &decode)
        });
    }
    let trace = &a.traces[0];
    refuse_pprof(trace, "symbolize")?;
    let to_stdout = a.output.as_ref().is_none_or(|p| p.as_os_str() == "-");
    if to_stdout && std::io::stdout().is_terminal() {
        return Err(ui::refuse_terminal("binary ModuleSymbols packets", "use -o FILE or redirect"));
    }
    let out = if to_stdout { None } else { a.output.as_deref() };
    let run = run_symbolize(trace, out, &opts, &decode)?;
    if to_stdout {
        ui::write_stdout(&run.symbols)?;
    }
    if a.json {
        eprintln!("{}", serde_json::to_string_pretty(&run.report).expect("report serializes"));
    }
    let quiet_ui = Ui { verbose: ui.verbose, quiet: ui.quiet || a.json };
    let gate_ok = quiet_ui.symbols(&run.report, &sources);
    let damaged = ui.problems(&run.trace);
    Ok(a.strict.exit(findings(gate_ok, damaged), &run.trace.data_loss()))
}

#[derive(Args, Debug)]
pub(crate) struct Addr2lineArgs {
    /// The ELF file with DWARF (or a symbol table).
    #[arg(long)]
    obj: PathBuf,
}

pub(crate) fn run_addr2line(a: Addr2lineArgs) -> Result<u8, Error> {
    let mut addrs = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| Error::io("reading standard input", e))?;
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let v = u64::from_str_radix(t.trim_start_matches("0x"), 16)
            .map_err(|_| Error::new(ErrorKind::Usage, format!("not a hex address: {t:?}")))?;
        addrs.push(v);
    }
    let mut so = std::io::BufWriter::new(std::io::stdout().lock());
    for doc in addr2line_json_lines(&a.obj, &addrs) {
        writeln!(so, "{doc}").map_err(|e| Error::io("writing standard output", e))?;
    }
    so.flush().map_err(|e| Error::io("writing standard output", e))?;
    Ok(0)
}
