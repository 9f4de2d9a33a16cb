//! Frames: one program counter in a mapping (native) or one method (managed).

use super::mapping::MappingId;
use super::strings::StringId;

/// Index of a [`Frame`] in the profile tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameId(pub u32);

/// One source-level function in a frame: a symbolized native frame has one per inlined
/// function, innermost first.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Line {
    /// Function name for display (demangled).
    pub function: StringId,
    /// Function name as the symbol source gave it (may be mangled).
    pub system_name: StringId,
    /// Source file, or empty.
    pub file: StringId,
    /// Line number, 0 if unknown.
    pub line: u32,
    /// Column, 0 if unknown.
    pub column: u32,
}

/// A stack frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The mapping the PC lies in; `None` for frames without one (managed code, dummies).
    pub mapping: Option<MappingId>,
    /// PC relative to the ELF load (an ELF virtual address, as libunwindstack computes it).
    pub rel_pc: u64,
    /// Name exactly as the input gave it (possibly mangled); empty if none.
    pub raw_name: StringId,
    /// Name for display: `raw_name` demangled when it is a mangled C++ or Rust symbol.
    pub name: StringId,
    /// Symbolized source lines, innermost first; empty until symbolized.
    pub lines: Vec<Line>,
}

/// Demangles a C++ (Itanium) or Rust (legacy and v0) symbol as LLVM's demangler does; `None` when `raw` is not a
/// mangled name (or fails to demangle), in which case callers show `raw` as it is.
pub fn demangle(raw: &str) -> Option<String> {
    if raw.len() < 3 {
        return None;
    }
    // Rust v0 (`_R…`). Legacy Rust names (`_ZN…17h<hash>E`) are valid Itanium names and are
    // demangled below as LLVM does, keeping the `::h<hash>` segment (traceconv parity).
    if raw.starts_with("_R") {
        if let Ok(d) = rustc_demangle::try_demangle(raw) {
            let s = format!("{d:#}");
            if s != raw {
                return Some(s);
            }
        }
    }
    let body = raw.trim_start_matches('_');
    let underscores = raw.len() - body.len();
    if (1..=4).contains(&underscores) && body.starts_with('Z') {
        let sym = &raw[underscores - 1..];
        if let Ok(sym) = cpp_demangle::Symbol::new(sym.as_bytes()) {
            let opts = cpp_demangle::DemangleOptions::new();
            if let Ok(s) = sym.demangle_with_options(&opts) {
                if s != raw {
                    return Some(s);
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn demangles_cpp_like_llvm() {
        assert_eq!(demangle("_ZN3foo6Widget5buildEv").as_deref(), Some("foo::Widget::build()"));
        assert_eq!(demangle("_ZN3foo4Pool4growEm").as_deref(), Some("foo::Pool::grow(unsigned long)"));
        assert_eq!(demangle("__ZN3foo4Pool4growEm").as_deref(), Some("foo::Pool::grow(unsigned long)"));
    }

    #[test]
    fn demangles_rust() {
        assert_eq!(
            demangle("_ZN4core3ptr13drop_in_place17h0123456789abcdefE").as_deref(),
            Some("core::ptr::drop_in_place::h0123456789abcdef")
        );
        assert_eq!(demangle("_RNvCs1234_7mycrate3foo").as_deref(), Some("mycrate::foo"));
    }

    #[test]
    fn leaves_plain_names() {
        assert_eq!(demangle("malloc"), None);
        assert_eq!(demangle("Parser::parse()"), None);
        assert_eq!(demangle("android.os.Looper.loop"), None);
        assert_eq!(demangle(""), None);
        assert_eq!(demangle("_Z"), None);
    }
}
