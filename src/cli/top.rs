//! `heapconv top`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use heapconv::pipeline::load::{SymbolSources, merge_options};
use heapconv::pipeline::reports::{deobfuscation_json, with_deobfuscation};
use heapconv::pipeline::top::{HeapTopRunOptions, TopGroup, TopRun, TopRunOptions, run_top};
use heapconv::{Error, ErrorKind};

use crate::cli::args::{JavaHeapArg, LoadArgs, findings};
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
#[command(mut_arg("java_heap", |a| a.help(JavaHeapArg::SHOWN)))]
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
    #[command(flatten)]
    java_heap: JavaHeapArg,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// The sample type shown: a type name or a meaning (`unreleased-size`, …). Default: the
    /// profile's default type.
    #[arg(long, value_name = "T")]
    sample_type: Option<String>,
    #[command(flatten)]
    select: LoadArgs,
    #[command(flatten)]
    pub(crate) list: InputListArgs,
}

impl TopArgs {
    /// Arguments -> pipeline options (of profiles, and of Java heaps), and where symbols come
    /// from.
    pub(crate) fn options(&self, ui: &Ui) -> Result<(TopRunOptions, HeapTopRunOptions, SymbolSources), Error> {
        let (load, sources) = self.select.load(ui)?;
        let opts = TopRunOptions {
            load,
            merge: merge_options(&self.select.sample_types),
            by: match self.by {
                None | Some(TopByArg::Function) | Some(TopByArg::Class) => TopGroup::Function,
                Some(TopByArg::Mapping) => TopGroup::Mapping,
                Some(TopByArg::Stack) => TopGroup::Stack,
            },
            count: self.count,
            sample_type: self.sample_type.clone(),
        };
        let mut heap_opts = HeapTopRunOptions {
            pids: self.select.selection.pid.pids(),
            dump: self.select.selection.dump.select()?,
            decode: self.select.decode.options(),
            java_heap: self.java_heap.java_heap,
            object_size: self.select.object_size.object_size.size(),
            proguard: sources.proguard.clone(),
            ..HeapTopRunOptions::default()
        };
        heap_opts.top.classes = if self.count == 0 { usize::MAX } else { self.count };
        Ok((opts, heap_opts, sources))
    }
}

pub(crate) fn run(ui: &Ui, a: TopArgs) -> Result<u8, Error> {
    let (opts, heap_opts, sources) = a.options(ui)?;
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
