//! `heapconv top`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use heapconv::pipeline::load::{decode_options, merge_options};
use heapconv::pipeline::reports::{deobfuscation_json, with_deobfuscation};
use heapconv::pipeline::top::{HeapTopRunOptions, TopGroup, TopRun, TopRunOptions, run_top};
use heapconv::{Error, ErrorKind};

use crate::cli::args::{SelectArgs, findings, parse_dump};
use crate::cli::batch::InputListArgs;
use crate::cli::merge::expand_inputs;
use crate::cli::ui::{self, Ui};

#[derive(ValueEnum, Clone, Copy, Debug)]
enum TopByArg {
    Function,
    Mapping,
    Stack,
    /// Classes of a Java heap by retained size (the only grouping, and the default, for an
    /// HPROF heap dump or a trace's heap graphs).
    Class,
}

#[derive(Args, Debug)]
pub(crate) struct TopArgs {
    /// Inputs (any kind; several are merged first; directories and patterns stand for the
    /// inputs in them).
    #[arg(required_unless_present = "inputs_from", value_name = "INPUT")]
    inputs: Vec<PathBuf>,
    /// What to group by. Default: function; class for a Java heap (an HPROF heap dump, or a
    /// trace's heap graphs).
    #[arg(long, value_enum)]
    by: Option<TopByArg>,
    /// Rows to show (0: all). For a Java heap: classes.
    #[arg(short = 'n', long = "count", default_value_t = 20, value_name = "N")]
    count: usize,
    /// Show the trace's Java heap graphs (java_hprof data source) rather than its heapprofd
    /// dumps; --pid and --dump select one. A trace with no heapprofd dump has its heap graphs
    /// shown without this flag.
    #[arg(long)]
    java_heap: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The sample type shown: a type name or a meaning (`unreleased-size`, …). Default: the
    /// profile's default type.
    #[arg(long, value_name = "T")]
    sample_type: Option<String>,
    #[command(flatten)]
    select: SelectArgs,
    #[command(flatten)]
    pub(crate) list: InputListArgs,
}

pub(crate) fn run(ui: &Ui, a: TopArgs) -> Result<u8, Error> {
    let (load, sources) = a.select.load(ui)?;
    let opts = TopRunOptions {
        load,
        merge: merge_options(&a.select.sample_types),
        by: match a.by {
            None | Some(TopByArg::Function) | Some(TopByArg::Class) => TopGroup::Function,
            Some(TopByArg::Mapping) => TopGroup::Mapping,
            Some(TopByArg::Stack) => TopGroup::Stack,
        },
        count: a.count,
        sample_type: a.sample_type.clone(),
    };
    let mut heap_opts = HeapTopRunOptions {
        pids: a.select.pid.into_iter().collect(),
        dump: parse_dump(&a.select.dump)?,
        decode: decode_options(a.select.decode.max_bundle_bytes()),
        java_heap: a.java_heap,
        object_size: a.select.object_size.size(),
        proguard: sources.proguard.clone(),
        ..HeapTopRunOptions::default()
    };
    heap_opts.top.classes = if a.count == 0 { usize::MAX } else { a.count };
    let run = run_top(&expand_inputs(&a.inputs, &a.list)?, &opts, &heap_opts)?;
    let (gate_ok, damaged, lost) = match &run {
        TopRun::Table(_, inputs) => {
            if matches!(a.by, Some(TopByArg::Class)) {
                return Err(Error::new(
                    ErrorKind::Usage,
                    "--by class is for Java heaps (an HPROF heap dump, or a trace's heap graphs)",
                ));
            }
            let (gate_ok, damaged) = ui.inputs(inputs, &sources);
            (gate_ok, damaged, ui::inputs_data_loss(inputs))
        }
        TopRun::Heap(_, report) => {
            ui.deobfuscation(&sources.proguard);
            if !opts.load.filter.is_empty() {
                return Err(Error::new(
                    ErrorKind::Usage,
                    "a Java heap is shown by class (retained size), which stack filters (--focus, --hide, --tag-focus, ...) do not apply to; filter its dominator tree with `convert --to pprof|folded|svg|html` instead",
                ));
            }
            if matches!(a.by, Some(TopByArg::Function | TopByArg::Mapping | TopByArg::Stack)) || a.sample_type.is_some()
            {
                return Err(Error::new(
                    ErrorKind::Usage,
                    "a Java heap is shown by class (retained size); --by function|mapping|stack and --sample-type are for profiles",
                ));
            }
            (true, ui.problems(report), report.data_loss())
        }
    };
    let mut text = run.render(a.json);
    if a.json {
        text = with_deobfuscation(&text, deobfuscation_json(&sources.proguard).as_ref());
    }
    ui::write_stdout_unflushed(text.as_bytes())?;
    Ok(a.select.strict.exit(findings(gate_ok, damaged), &lost))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    #[test]
    fn top_defaults_equal_option_defaults() {
        let Command::Top(a) = Cli::try_parse_from(["heapconv", "top", "a.pb"]).unwrap().command else { panic!("top") };
        let d = TopRunOptions::default();
        assert!(a.by.is_none() && d.by == TopGroup::Function);
        let h = HeapTopRunOptions::default();
        assert_eq!(a.java_heap, h.java_heap);
        assert_eq!(a.count, h.top.classes);
        assert_eq!(parse_dump(&a.select.dump).unwrap(), h.dump);
        assert_eq!(a.select.object_size.size(), h.object_size);
        assert_eq!(a.sample_type.is_some(), d.sample_type.is_some());
        assert_eq!(a.count, 20, "like the top lists of convert --to json");
    }
}
