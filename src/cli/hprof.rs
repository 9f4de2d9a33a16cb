//! `heapconv hprof` (a trace's Java heap graphs to hprof) and `heapconv hprof-conv` (Android
//! heap dumps to the standard format).

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use heapconv::pipeline::batch::Wanted;
use heapconv::pipeline::hprof::{HprofDestination, HprofRunOptions, hprof_one, run_hprof};
use heapconv::pipeline::hprof_conv::{HprofConvRunOptions, hprof_conv_one, run_hprof_conv};
use heapconv::pipeline::load::refuse_pprof;
use heapconv::pipeline::outcome::Findings;
use heapconv::{Error, ErrorKind};

use crate::cli::args::{DecodeArgs, PidArg, ProguardArgs, StrictArgs, TimestampsArg, is_dir_arg};
use crate::cli::batch::{self, BatchArgs, Plan, out_dir};
use crate::cli::ui::{self, Ui};

#[derive(Args, Debug)]
pub(crate) struct HprofArgs {
    /// The trace (gzip is detected). Several traces, directories or patterns: a batch, each
    /// trace's dumps in `-o DIR/<name>/`.
    #[arg(required_unless_present = "inputs_from", value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// Output file, `-` for standard output, or a directory (existing, or ending in `/`) for
    /// one `java_heap_dump.N.PID.hprof` per dump.
    #[arg(short, long)]
    output: PathBuf,
    #[command(flatten)]
    pid: PidArg,
    #[command(flatten)]
    timestamps: TimestampsArg,
    /// Write Android's `JAVA PROFILE 1.0.3` (heap-info records, Android root tags), which
    /// `hprof-conv` and Android Studio read.
    #[arg(long)]
    android: bool,
    /// Print what was written as JSON on standard output.
    #[arg(long)]
    json: bool,
    // Class and field names are written deobfuscated with these maps.
    #[command(flatten)]
    proguard: ProguardArgs,
    #[command(flatten)]
    decode: DecodeArgs,
    #[command(flatten)]
    pub(crate) batch: BatchArgs,
    #[command(flatten)]
    strict: StrictArgs,
}

impl HprofArgs {
    /// Arguments -> pipeline options.
    pub(crate) fn options(&self, ui: &Ui) -> HprofRunOptions {
        let mut opts = HprofRunOptions {
            pids: self.pid.pids(),
            timestamps: self.timestamps.timestamps.clone(),
            proguard: self.proguard.maps(ui),
            ..HprofRunOptions::default()
        };
        opts.hprof.android = self.android;
        opts.graph.max_bundle_bytes = self.decode.max_bundle_bytes();
        opts
    }
}

pub(crate) fn run(ui: &Ui, a: HprofArgs) -> Result<u8, Error> {
    let opts = a.options(ui);
    if a.traces.len() > 1 || a.batch.asked(&a.traces) {
        let out = out_dir(Some(&a.output), "hprof")?;
        let plan = Plan {
            command: "hprof",
            positional: &a.traces,
            args: &a.batch,
            out: &out,
            wanted: Wanted::Traces,
            file_exts: &[],
            min_symbolized: None,
            strict: a.strict.strict,
            proguard: Some(&opts.proguard),
        };
        return batch::run(ui, &plan, &|i| {
            refuse_pprof(&i.path, "hprof")?;
            hprof_one(i, &out, &opts)
        });
    }
    let trace = &a.traces[0];
    refuse_pprof(trace, "hprof")?;
    let dest = if a.output.as_os_str() == "-" {
        if std::io::stdout().is_terminal() {
            return Err(ui::refuse_terminal("a binary heap dump", "use -o FILE or redirect standard output"));
        }
        HprofDestination::Stdout
    } else if is_dir_arg(&a.output) {
        HprofDestination::Dir(a.output.clone())
    } else {
        HprofDestination::File(a.output.clone())
    };
    let run = run_hprof(trace, &dest, &opts)?;
    if let Some(bytes) = &run.stdout {
        ui::write_stdout(bytes)?;
    }
    for w in &run.written {
        if !w.incomplete.is_empty() {
            ui.warn(&format!("{}: the heap graph is incomplete: {}", w.describe, w.incomplete.join("; ")));
        }
        let to = w.path.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "standard output".to_owned());
        if !a.json && (run.stdout.is_none() || ui.verbose > 0) {
            ui.info(&format!(
                "wrote {to}: {}, {} classes, {} instances, {} arrays, {} roots, {} bytes ({}-byte ids)",
                w.describe,
                w.summary.classes,
                w.summary.instances,
                w.summary.object_arrays + w.summary.primitive_arrays,
                w.summary.roots,
                w.summary.bytes,
                w.summary.id_size
            ));
        }
    }
    if a.json && run.stdout.is_none() {
        println!("{}", run.written_json_with(heapconv::pipeline::reports::deobfuscation_json(&opts.proguard).as_ref()));
    }
    ui.deobfuscation(&opts.proguard);
    if ui.verbose > 0 {
        for p in &run.report.problems {
            ui.warn(&p.message);
        }
    }
    if let Some(d) = &run.report.damage {
        ui.warn(&format!("input damaged, result is partial: {d}"));
    }
    let mut lost = run.report.data_loss();
    if lost.is_empty() {
        lost = run
            .written
            .iter()
            .filter(|w| !w.incomplete.is_empty())
            .map(|w| format!("{}: the heap graph is incomplete: {}", w.describe, w.incomplete.join("; ")))
            .collect();
    }
    Ok(a.strict.exit(Findings { partial: run.is_partial(), ..Findings::default() }, &lost))
}

#[derive(Args, Debug)]
pub(crate) struct HprofConvArgs {
    /// INPUT OUTPUT: the Android heap dump (`-` for standard input; gzip is detected) and the
    /// output file (`-` for standard output; written atomically, never over the input). With
    /// `-o DIR`: any number of heap dumps, directories or patterns, each written to
    /// `DIR/<name>.hprof`.
    #[arg(required_unless_present = "inputs_from", value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Output directory: convert every PATH into it (a batch).
    #[arg(short = 'o', long = "output-dir", value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Leave out the instances and arrays of the zygote and image heaps (class dumps and roots
    /// stay), as `hprof-conv -z`.
    #[arg(short = 'z')]
    app_only: bool,
    // Class and field names are written deobfuscated with these maps (every other byte is
    // converted as without them; any HPROF version is read).
    #[command(flatten)]
    proguard: ProguardArgs,
    #[command(flatten)]
    pub(crate) batch: BatchArgs,
    #[command(flatten)]
    strict: StrictArgs,
}

impl HprofConvArgs {
    /// Arguments -> pipeline options.
    pub(crate) fn options(&self, ui: &Ui) -> HprofConvRunOptions {
        HprofConvRunOptions { app_only: self.app_only, proguard: self.proguard.maps(ui) }
    }
}

pub(crate) fn run_conv(ui: &Ui, a: HprofConvArgs) -> Result<u8, Error> {
    let opts = a.options(ui);
    if a.output_dir.is_some() || a.batch.asked(&a.paths) {
        let out = out_dir(a.output_dir.as_deref(), "hprof-conv")?;
        let plan = Plan {
            command: "hprof-conv",
            positional: &a.paths,
            args: &a.batch,
            out: &out,
            wanted: Wanted::HeapDumps,
            file_exts: &["hprof"],
            min_symbolized: None,
            strict: a.strict.strict,
            proguard: Some(&opts.proguard),
        };
        return batch::run(ui, &plan, &|i| hprof_conv_one(i, &out, &opts));
    }
    let [input, output] = a.paths.as_slice() else {
        return Err(Error::new(ErrorKind::Usage, "hprof-conv takes INPUT OUTPUT, or -o DIR and any number of inputs"));
    };
    if output.as_os_str() == "-" && std::io::stdout().is_terminal() {
        return Err(ui::refuse_terminal("a binary heap dump", "give an output file or redirect"));
    }
    let r = run_hprof_conv(input, output, &opts)?;
    if !opts.proguard.is_empty() {
        ui.info(&format!(
            "rewrote {} records with deobfuscated names ({} class dumps renamed, {} stack frame/trace records rewritten, {} strings added): {} -> {} bytes",
            r.records, r.classes_renamed, r.frames_renamed, r.strings_added, r.bytes_in, r.bytes_out
        ));
        ui.deobfuscation(&opts.proguard);
        return Ok(a.strict.exit(Findings::default(), &r.data_loss()));
    }
    ui.info(&format!(
        "converted {} records ({} heap-dump records, {} sub-records): {} HEAP_DUMP_INFO dropped, {} Android roots written as ROOT_UNKNOWN{}; {} -> {} bytes",
        r.records,
        r.heap_dump_records,
        r.sub_records,
        r.heap_infos_dropped,
        r.roots_rewritten,
        if a.app_only { format!(", {} zygote/image objects dropped", r.objects_dropped) } else { String::new() },
        r.bytes_in,
        r.bytes_out
    ));
    if r.nodata_zero_filled + r.nodata_emptied > 0 {
        ui.warn(&format!(
            "{} PRIMITIVE_ARRAY_NODATA record(s) written as arrays of zeros and {} as empty arrays (Android's hprof-conv writes them corrupt)",
            r.nodata_zero_filled, r.nodata_emptied
        ));
    }
    ui.deobfuscation(&opts.proguard);
    Ok(a.strict.exit(Findings::default(), &r.data_loss()))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    #[test]
    fn hprof_needs_an_output() {
        assert!(Cli::try_parse_from(["heapconv", "hprof", "t.pftrace"]).is_err(), "-o is required");
    }

    #[test]
    fn hprof_conv_takes_z_anywhere() {
        for args in [["heapconv", "hprof-conv", "a", "b", "-z"], ["heapconv", "hprof-conv", "-z", "a", "b"]] {
            let Command::HprofConv(a) = Cli::try_parse_from(args).unwrap().command else { panic!("hprof-conv") };
            assert!(a.app_only && a.paths == [PathBuf::from("a"), PathBuf::from("b")] && a.output_dir.is_none());
        }
        assert!(Cli::try_parse_from(["heapconv", "hprof-conv"]).is_err());
        let Command::HprofConv(a) = Cli::try_parse_from([
            "heapconv",
            "hprof-conv",
            "a",
            "b",
            "--proguard-map",
            "m.txt",
            "--mapping-dir",
            "d",
            "--mapping-dir",
            "e",
        ])
        .unwrap()
        .command
        else {
            panic!("hprof-conv")
        };
        assert_eq!(a.proguard.mapping_dirs, [PathBuf::from("d"), PathBuf::from("e")]);
        assert_eq!(a.proguard.proguard_maps, ["m.txt"]);
    }
}
