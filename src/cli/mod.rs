//! The command line: clap's types, one file per command (arguments -> pipeline options -> one
//! pipeline call -> exit code), the argument groups commands share, each flag declared once
//! ([`args`]), the flags of the library's hints ([`hints`]), messages and progress ([`ui`]),
//! and batches ([`batch`]).
//!
//! Exit codes: 0 success; 1 bad input, no data or I/O error; 2 usage error; 3 partial result
//! (the input is damaged or a dump never finished: what was complete was converted and written);
//! 4 symbolization coverage below `--min-symbolized`; 5 growth above `diff --fail-if-growth`;
//! 6 `--strict` and the input says data was lost (outputs are written). Codes 0 and 3-6 come
//! from [`heapconv::pipeline::RunOutcome`], which also decides which wins.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use heapconv::{Error, ErrorKind};

mod args;
mod batch;
mod convert;
mod deobfuscate;
mod diff;
mod generate;
mod hints;
mod hprof;
mod inspect;
mod merge;
mod profile;
mod symbolize;
mod timeline;
mod top;
mod ui;

use ui::Ui;

/// A run that failed with an error (bad input, no data, I/O).
const EXIT_INPUT: u8 = 1;
/// A usage error (clap's, or one the command finds).
const EXIT_USAGE: u8 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "heapconv",
    version,
    about = "Convert memory profiles (Perfetto traces with heapprofd dumps or Java heap graphs, Android DDM allocation records, HPROF heap dumps 1.0.1/1.0.2/1.0.3, pprof) to pprof, folded stacks, flame graphs, an HTML report, speedscope/DHAT/Chrome heap profiles and JSON",
    long_about = None,
    after_help = input_matrix()
)]
pub(crate) struct Cli {
    /// Print more (-v) or nothing but errors (-q).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Print nothing but errors.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Write one pprof per (pid, dump, heap), as `traceconv profile --alloc` does.
    Profile(profile::ProfileArgs),
    /// Convert a trace's heapprofd dumps or Java heap graphs, DDM allocation records (several
    /// captures are merged), an HPROF heap dump or a pprof profile to pprof, folded stacks, a
    /// flame graph SVG or a JSON summary.
    Convert(convert::ConvertArgs),
    /// Show what a trace holds (sequences, processes, heaps, dumps, flags and problems), a
    /// DDM capture (entries, threads, top classes and methods, stack depths), or an HPROF heap
    /// dump (records, heaps, classes, objects, roots, damage).
    Inspect(inspect::InspectArgs),
    /// Write a Java heap graph of a Perfetto trace (java_hprof data source) as an hprof heap
    /// dump (`JAVA PROFILE 1.0.2`, or Android's 1.0.3 with --android).
    ///
    /// Heap graphs do not record primitive values: every primitive field, static and array
    /// element is written as zero (array lengths, sizes, classes and references are the
    /// graph's). Stack traces are one empty placeholder.
    Hprof(hprof::HprofArgs),
    /// Convert an Android heap dump (JAVA PROFILE 1.0.3) to the standard format (1.0.2) that
    /// JVM tools read, byte for byte as Android's `hprof-conv` writes it (except for
    /// PRIMITIVE_ARRAY_NODATA records, which hprof-conv corrupts and heapconv writes as arrays
    /// of zeros). With --proguard-map, any HPROF version, written with deobfuscated class and
    /// field names.
    #[command(name = "hprof-conv")]
    HprofConv(hprof::HprofConvArgs),
    /// Symbolize a trace's native frames offline and write Perfetto ModuleSymbols packets, as
    /// `traceconv symbolize` does (`cat trace symbols > symbolized`).
    Symbolize(symbolize::SymbolizeArgs),
    /// Write ProGuard/R8 mapping files as Perfetto DeobfuscationMapping packets, as
    /// `traceconv deobfuscate` does (`cat trace mapping > deobfuscated`).
    Deobfuscate(deobfuscate::DeobfuscateArgs),
    /// Merge profiles of any kind (heapprofd traces, DDM captures, pprof files) into one:
    /// identical stacks summed, as `go tool pprof -proto A B` merges, in any order.
    Merge(merge::MergeArgs),
    /// Compare two profiles (any kind, or several dumps merged): NEW minus BASE as pprof (for
    /// `go tool pprof`), differential folded stacks, a differential flame graph or a JSON
    /// report of what grew; `--fail-if-growth` gates CI (exit code 5).
    Diff(diff::DiffArgs),
    /// A flat and cumulative table of the largest functions, mappings or stacks, as
    /// `go tool pprof -top` prints (several inputs are merged first).
    Top(top::TopArgs),
    /// Per process and heap, the totals of every dump of a trace over time (unreleased and
    /// total size and count) as CSV, JSON or an SVG line chart.
    Timeline(timeline::TimelineArgs),
    /// Symbolize addresses (hex, one per line on standard input) in one ELF file, printing one
    /// JSON line per address in llvm-symbolizer's `--output-style=JSON` shape.
    Addr2line(symbolize::Addr2lineArgs),
    /// Write the man pages or a shell's completion script, made from these definitions.
    #[command(hide = true)]
    Generate(generate::GenerateArgs),
}

impl Command {
    /// The `--jobs` of the command, if it has one.
    fn jobs(&self) -> Option<usize> {
        match self {
            Command::Convert(a) => a.batch.list.jobs,
            Command::Profile(a) => a.batch.list.jobs,
            Command::Symbolize(a) => a.batch.list.jobs,
            Command::Hprof(a) => a.batch.list.jobs,
            Command::HprofConv(a) => a.batch.list.jobs,
            Command::Merge(a) => a.list.jobs,
            Command::Timeline(a) => a.batch.list.jobs,
            Command::Top(a) => a.list.jobs,
            Command::Inspect(_)
            | Command::Diff(_)
            | Command::Addr2line(_)
            | Command::Deobfuscate(_)
            | Command::Generate(_) => None,
        }
    }
}

/// Runs one command; its exit code.
fn run(cli: Cli) -> Result<u8, Error> {
    let ui = Ui { verbose: cli.verbose, quiet: cli.quiet };
    match cli.command {
        Command::Profile(a) => profile::run(&ui, a),
        Command::Convert(a) => convert::run(&ui, a),
        Command::Inspect(a) => inspect::run(a),
        Command::Hprof(a) => hprof::run(&ui, a),
        Command::HprofConv(a) => hprof::run_conv(&ui, a),
        Command::Symbolize(a) => symbolize::run(&ui, a),
        Command::Deobfuscate(a) => deobfuscate::run(&ui, a),
        Command::Addr2line(a) => symbolize::run_addr2line(a),
        Command::Merge(a) => merge::run(&ui, a),
        Command::Diff(a) => diff::run(&ui, a),
        Command::Top(a) => top::run(&ui, a),
        Command::Timeline(a) => timeline::run(&ui, a),
        Command::Generate(a) => generate::run(a),
    }
}

/// The input x command matrix of `--help`, from the library's table: each input type with the
/// commands that read it ([`heapconv::pipeline::load::InputType::commands`]), then what some
/// commands make of a type.
fn input_matrix() -> String {
    use heapconv::pipeline::load::{Command as Reader, InputType};
    let mut s = String::from("Inputs (gzip is detected) and the commands that read them:\n");
    for t in InputType::ALL {
        let names: Vec<&str> = t.commands().into_iter().map(Reader::name).collect();
        s.push_str(&format!("  {}: {}\n", t.label(), names.join(", ")));
    }
    s.push_str(
        "convert and top read a Java heap (heap graph or HPROF dump) as a dominator or shortest-path tree;\n\
         hprof-conv reads HPROF 1.0.3 only (any version with --proguard-map).",
    );
    s
}

/// A hint for `--from T1 --to T2`: `--to` names the output format, and the end of a delta
/// is `--until` (or `--to-time`).
fn to_hint(e: &clap::Error) -> Option<&'static str> {
    use clap::error::{ContextKind, ContextValue, ErrorKind as ClapKind};
    if e.kind() != ClapKind::InvalidValue {
        return None;
    }
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) =
        (e.get(ContextKind::InvalidArg), e.get(ContextKind::InvalidValue))
    else {
        return None;
    };
    (arg.starts_with("--to ") && value.parse::<i64>().is_ok())
        .then_some("hint: --to names the output format; the newer dump of --view delta is --until T (or --to-time T)")
}

/// Keeps freed memory for reuse instead of handing it back to the kernel (glibc's malloc).
///
/// heapconv's stages each build large arrays (decoded samples, the merge's stacks, the sorted
/// output, encoded parts) and free the previous stage's. By default glibc maps large blocks
/// on their own and unmaps them when freed, and keeps one heap per thread, so each stage
/// touches fresh pages, which the kernel must zero, and every unmap interrupts the other
/// cores to flush their TLBs: a third of the CPU time of merging two 40 MB profiles. Here
/// every block comes from one heap, trimmed only past 1 GiB of free space, so pages are
/// reused: that merge takes 0.65-0.7 s instead of 0.75-0.8 s, for 10-25% more peak memory
/// (freed holes that a later, larger block does not fit in). Mapping only the blocks over
/// 32 MiB (glibc's largest threshold) kept the memory as it was but half the time gained
/// (the figures are in the session log, `git show 9ce889d:BENCHMARKS.md`). Called before any
/// other thread starts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_malloc() {
    use std::os::raw::c_int;
    unsafe extern "C" {
        fn mallopt(param: c_int, value: c_int) -> c_int;
    }
    // Parameter numbers from glibc's <malloc.h>.
    const M_TRIM_THRESHOLD: c_int = -1;
    const M_MMAP_MAX: c_int = -4;
    const M_ARENA_MAX: c_int = -8;
    // SAFETY: mallopt only sets allocator parameters; it is called before any other thread
    // exists, and a parameter it rejects is left as it was.
    unsafe {
        mallopt(M_MMAP_MAX, 0);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
        mallopt(M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_malloc() {}

/// For `profile`, which streams dumps through tables that grow to hundreds of megabytes: maps
/// every block of 1 MiB or more on its own and unmaps it when freed (glibc's default raises
/// that threshold to the size of the largest block freed so far, up to 32 MiB, after which
/// such blocks come from the heap and leave holes there). Peak RSS on the issue-15 shape:
/// 359 MiB with the default, 322-334 MiB with 4 MiB, 307 MiB with 1 MiB (`git show 9ce889d:BENCHMARKS.md`).
/// Called before any other thread starts.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_malloc_streaming() {
    use std::os::raw::c_int;
    unsafe extern "C" {
        fn mallopt(param: c_int, value: c_int) -> c_int;
    }
    // Parameter number from glibc's <malloc.h>.
    const M_MMAP_THRESHOLD: c_int = -3;
    // SAFETY: as in `tune_malloc`.
    unsafe {
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_malloc_streaming() {}

/// Parses the arguments, runs the command and prints its error, if any.
pub(crate) fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            if let Some(hint) = to_hint(&e) {
                eprintln!("{hint}");
            }
            return ExitCode::from(if e.use_stderr() { EXIT_USAGE } else { 0 });
        }
    };
    if matches!(cli.command, Command::Profile(_)) {
        tune_malloc_streaming();
    }
    // The commands that merge whole profiles in memory, stage after stage (not `profile` and
    // `convert` of traces, which stream through bounded buffers: they would only keep more);
    // and `symbolize`, whose threads (scan, reading, lookups, decoding) each free what the
    // next one can reuse: on the mixed SQLite trace a fifth fewer page faults and ~10% less
    // CPU (`git show 9ce889d:BENCHMARKS.md`, "Issue 15, session 12").
    if matches!(cli.command, Command::Merge(_) | Command::Diff(_) | Command::Top(_) | Command::Symbolize(_)) {
        tune_malloc();
    }
    if let Some(n) = cli.command.jobs() {
        if let Err(e) = rayon::ThreadPoolBuilder::new().num_threads(n).build_global() {
            eprintln!("heapconv: error: starting {n} worker thread(s): {e}");
            return ExitCode::from(EXIT_INPUT);
        }
    }
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let e = hints::written_out(e);
            eprintln!("heapconv: error: {e}");
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                eprintln!("  caused by: {s}");
                src = s.source();
            }
            ExitCode::from(if e.kind() == ErrorKind::Usage { EXIT_USAGE } else { EXIT_INPUT })
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;
    use clap::Parser;
    use heapconv::pipeline::DecodeOptions;
    use heapconv::pipeline::convert::ConvertOptions;
    use heapconv::pipeline::deobfuscate::DeobfuscateOptions;
    use heapconv::pipeline::diff::DiffRunOptions;
    use heapconv::pipeline::hprof::HprofRunOptions;
    use heapconv::pipeline::hprof_conv::HprofConvRunOptions;
    use heapconv::pipeline::load::{Command as Reader, InputType};
    use heapconv::pipeline::merge::MergeRunOptions;
    use heapconv::pipeline::profile::ProfileOptions;
    use heapconv::pipeline::timeline::TimelineOptions;
    use heapconv::pipeline::top::{HeapTopRunOptions, TopRunOptions};
    use heapconv::pipeline::views::ViewOptions;

    use super::*;

    /// The command `args` parse into.
    fn parse(args: &[&str]) -> Command {
        Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}")).command
    }

    /// Options compared whole, by their `Debug` text (not every option type has `PartialEq`).
    fn same<T: std::fmt::Debug>(what: &str, got: &T, want: &T) {
        assert_eq!(format!("{got:#?}"), format!("{want:#?}"), "{what}: the command line's defaults");
    }

    /// Each command given no option asks the pipeline for its options' `Default`: one value
    /// per setting, whichever side it is read from.
    #[test]
    fn every_command_defaults_to_its_pipeline_options_default() {
        let ui = Ui { verbose: 0, quiet: true };
        let Command::Convert(a) = parse(&["heapconv", "convert", "t"]) else { panic!("convert") };
        let Ok((convert::Asked::Convert(got), _)) = a.options(&ui) else { panic!("a conversion") };
        same("convert", &got, &ConvertOptions::default());
        let Command::Convert(a) = parse(&["heapconv", "convert", "t", "--view", "peak"]) else { panic!("convert") };
        let Ok((convert::Asked::View(got, _), _)) = a.options(&ui) else { panic!("a view") };
        same("convert --view", &got, &ViewOptions::default());
        let Command::Profile(a) = parse(&["heapconv", "profile", "t"]) else { panic!("profile") };
        same("profile", &a.options(&ui).0, &ProfileOptions::default());
        let Command::Hprof(a) = parse(&["heapconv", "hprof", "t", "-o", "x.hprof"]) else { panic!("hprof") };
        same("hprof", &a.options(&ui), &HprofRunOptions::default());
        let Command::HprofConv(a) = parse(&["heapconv", "hprof-conv", "a", "b"]) else { panic!("hprof-conv") };
        same("hprof-conv", &a.options(&ui), &HprofConvRunOptions::default());
        let Command::Deobfuscate(a) = parse(&["heapconv", "deobfuscate"]) else { panic!("deobfuscate") };
        same("deobfuscate", &a.options(&ui), &DeobfuscateOptions::default());
        let Command::Merge(a) = parse(&["heapconv", "merge", "a", "-o", "m"]) else { panic!("merge") };
        same("merge", &a.options(&ui).unwrap().0, &MergeRunOptions::default());
        let Command::Diff(a) = parse(&["heapconv", "diff", "a", "b", "-o", "d"]) else { panic!("diff") };
        same("diff", &a.options(&ui).unwrap().0, &DiffRunOptions::default());
        let Command::Top(a) = parse(&["heapconv", "top", "a"]) else { panic!("top") };
        let (got, got_heap, _) = a.options(&ui).unwrap();
        same("top", &got, &TopRunOptions::default());
        same("top of a Java heap", &got_heap, &HeapTopRunOptions::default());
        let Command::Timeline(a) = parse(&["heapconv", "timeline", "t"]) else { panic!("timeline") };
        same("timeline", &a.options(), &TimelineOptions::default());
        let Command::Inspect(a) = parse(&["heapconv", "inspect", "t"]) else { panic!("inspect") };
        same("inspect", &a.decode.options(), &DecodeOptions::default());
        let Command::Symbolize(a) = parse(&["heapconv", "symbolize", "t"]) else { panic!("symbolize") };
        same("symbolize", &a.decode.options(), &DecodeOptions::default());
    }

    #[test]
    fn help_matrix_and_input_table_agree() {
        let help = Cli::command().get_after_help().expect("an input matrix").to_string();
        let rows: Vec<&str> = help.lines().filter(|l| l.starts_with("  ")).collect();
        assert_eq!(rows.len(), InputType::ALL.len(), "one row per input type:\n{help}");
        for (row, t) in rows.iter().zip(InputType::ALL) {
            let (label, commands) = row.trim_start().rsplit_once(": ").expect("label: commands");
            assert_eq!(label, t.label());
            let listed: Vec<&str> = commands.split(", ").collect();
            let readers: Vec<&str> =
                Reader::ALL.into_iter().filter(|c| c.reads().contains(&t)).map(Reader::name).collect();
            assert_eq!(listed, readers, "{label}");
        }
    }

    #[test]
    fn every_command_of_the_input_table_is_a_subcommand() {
        let cli = Cli::command();
        for c in Reader::ALL {
            assert!(cli.find_subcommand(c.name()).is_some(), "{}", c.name());
            assert!(!c.reads().is_empty(), "{} reads nothing", c.name());
        }
        for t in InputType::ALL {
            assert!(!t.commands().is_empty(), "no command reads {t:?}");
        }
    }
}
