//! The command line's words for the library's hints: the one place that turns a [`Hint`] (the
//! setting that would get past an error, by its meaning) into flags.

use heapconv::{Error, Hint, Selector};

/// The flag of a selection setting.
fn flag(s: Selector) -> &'static str {
    match s {
        Selector::Pid => "--pid",
        Selector::Heap => "--heap",
        Selector::Dump => "--dump",
        Selector::Timestamps => "--timestamps",
        _ => "the selection",
    }
}

/// The flags of selection settings, as `--pid/--heap/--dump`.
fn flags(by: &[Selector]) -> String {
    by.iter().map(|s| flag(*s)).collect::<Vec<_>>().join("/")
}

/// An error's message (its context) said in flags, for its hint: the flags after the
/// library's words, or the whole message in the command line's words.
pub(crate) fn in_flags(h: &Hint, context: &str) -> String {
    match h {
        Hint::PprofSizeLimit => format!("{context} (--max-pprof-mib raises it)"),
        Hint::SampleTypes => format!(
            "{context}; choose types every input has with --sample-types (names, or meanings: total-count, \
             total-size, unreleased-count, unreleased-size)"
        ),
        Hint::ChooseOne { by, or_directory, matched } => format!(
            "{context}; choose one with {}{}:\n{matched}",
            flags(by),
            if *or_directory {
                ", or give -o an existing directory (or a path ending in /) to write them all"
            } else {
                ""
            }
        ),
        Hint::NoMatch { by } => format!("{context} {} (see `heapconv inspect`)", flags(by)),
        Hint::SampleTypeIsForPprof { input } => {
            format!("{input}: --sample-type NAME chooses a type of a pprof input; for other inputs use --value")
        }
        Hint::FiltersNotForHeapReport { input } => format!(
            "{input}: --to json of a Java heap writes its class report (classes by retained size, largest \
             retainers), which stack filters (--focus, --hide, --tag-focus, ...) do not apply to; filter its \
             dominator tree with --to pprof, folded, svg, html or speedscope instead"
        ),
        Hint::SelectionNotForDdm => {
            "--pid, --heap and --dump select heapprofd dumps; a DDM allocation-record capture has one profile"
                .to_owned()
        }
        Hint::GrowthSizeNeedsBytes { sample_type, unit } => format!(
            "--fail-if-growth with a size needs a sample type in bytes; the profiles have {sample_type} ({unit}); \
             give a percentage"
        ),
        Hint::ViewChoosesItsDumps { view } => format!(
            "--dump picks one dump to convert; --view {view} chooses its dumps itself (with --view delta, use \
             --from/--until)"
        ),
        Hint::ViewOutputs { view, outputs, by_times, matched } => format!(
            "--view {view} makes {outputs} outputs; choose one with --pid/--heap{}, or give -o an existing directory \
             (or a path ending in /) to write them all:\n{matched}",
            if *by_times { " and --from/--until" } else { "" }
        ),
        Hint::LeakDumpsBelowTwo { dumps } => {
            format!("--leak-dumps must be at least 2 (growth is seen between two dumps), not {dumps}")
        }
        Hint::FromAfterUntil { from, until } => format!("--from {from} is after --until {until}"),
        _ => context.to_owned(),
    }
}

/// The error with its hint written into its message in flags (see [`in_flags`]).
pub(crate) fn written_out(e: Error) -> Error {
    e.with_hint_written(in_flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_read_as_the_messages_did() {
        let e = Error::new(heapconv::ErrorKind::Usage, "2 profiles match").with_hint(Hint::ChooseOne {
            by: &[Selector::Pid, Selector::Heap, Selector::Dump],
            or_directory: true,
            matched: "  a\n  b".to_owned(),
        });
        assert_eq!(
            written_out(e).context(),
            "2 profiles match; choose one with --pid/--heap/--dump, or give -o an existing directory (or a path \
             ending in /) to write them all:\n  a\n  b"
        );
        let h = Hint::NoMatch { by: &[Selector::Pid, Selector::Timestamps] };
        assert_eq!(
            in_flags(&h, "x: no dump matches"),
            "x: no dump matches --pid/--timestamps (see `heapconv inspect`)"
        );
        let h = Hint::ChooseOne { by: &[Selector::Dump], or_directory: false, matched: String::new() };
        assert_eq!(in_flags(&h, "2 dumps"), "2 dumps; choose one with --dump:\n");
        assert_eq!(in_flags(&Hint::FromAfterUntil { from: 5, until: 2 }, "ignored"), "--from 5 is after --until 2");
    }
}
