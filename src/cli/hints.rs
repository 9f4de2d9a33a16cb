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

/// What follows an error's message for its hint: the flags that change the setting.
pub(crate) fn hint_text(h: &Hint) -> String {
    match h {
        Hint::PprofSizeLimit => " (--max-pprof-mib raises it)".to_owned(),
        Hint::SampleTypes => "; choose types every input has with --sample-types (names, or meanings: total-count, \
                              total-size, unreleased-count, unreleased-size)"
            .to_owned(),
        Hint::ChooseOne { by, or_directory, matched } => format!(
            "; choose one with {}{}:\n{matched}",
            flags(by),
            if *or_directory {
                ", or give -o an existing directory (or a path ending in /) to write them all"
            } else {
                ""
            }
        ),
        Hint::NoMatch { by } => format!(" {} (see `heapconv inspect`)", flags(by)),
        _ => String::new(),
    }
}

/// The error with its hint written into its message, for errors passed on as text (a
/// batch's per-input errors).
pub(crate) fn written_out(e: Error) -> Error {
    e.with_hint_written(hint_text)
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
        assert_eq!(hint_text(&h), " --pid/--timestamps (see `heapconv inspect`)");
        assert_eq!(
            hint_text(&Hint::ChooseOne { by: &[Selector::Dump], or_directory: false, matched: String::new() }),
            "; choose one with --dump:\n"
        );
    }
}
