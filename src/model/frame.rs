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
        let fixed = fix_template_ctor(&raw[underscores - 1..]);
        let sym = fixed.as_str();
        if let Ok(sym) = cpp_demangle::Symbol::new(sym.as_bytes()) {
            let opts = cpp_demangle::DemangleOptions::new();
            if let Ok(s) = sym.demangle_with_options(&opts) {
                if s != raw {
                    let s = if has_inheriting_ctor(fixed.as_bytes()) { inheriting_ctor_named(&s) } else { s };
                    return Some(llvm_style(&s));
                }
            }
        }
    }
    None
}

/// cpp_demangle reads the first parameter of a templated constructor or destructor
/// (`…C2IS3_EEPKcRKS3_`) as a return type and drops it, although constructors have none. This
/// inserts an explicit `void` return type after the template arguments so that every
/// parameter is printed, as LLVM does. Names without that shape are returned unchanged.
fn fix_template_ctor(sym: &str) -> String {
    let b = sym.as_bytes();
    let mut i = 0;
    while i + 2 < b.len() {
        let ctor =
            (b[i] == b'C' && matches!(b[i + 1], b'1'..=b'5')) || (b[i] == b'D' && matches!(b[i + 1], b'0'..=b'5'));
        // A ctor/dtor name ends a nested name: it is followed by template args `I` or `E`.
        if ctor && i > 0 && b[i + 2] == b'I' {
            if let Some(end) = skip_template_args(b, i + 3) {
                // `end` is just past the template args' `E`; the nested name closes with `E`.
                if b.get(end) == Some(&b'E') && end + 1 < b.len() {
                    return format!("{}v{}", &sym[..end + 1], &sym[end + 1..]);
                }
            }
            return sym.to_owned();
        }
        if b[i].is_ascii_digit() {
            // <source-name>: a length, then that many bytes (which may hold anything).
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let n: usize = sym[start..i].parse().unwrap_or(0);
            i += n;
            continue;
        }
        i += 1;
    }
    sym.to_owned()
}

/// Whether a mangled name holds an inheriting constructor (`CI1 <base class>` to `CI5`; GCC writes `CI4` for its unified constructor), read
/// past `<source-name>`s so that a name's own bytes are not taken for one.
fn has_inheriting_ctor(b: &[u8]) -> bool {
    let mut i = 0;
    while i + 2 < b.len() {
        if b[i] == b'C' && b[i + 1] == b'I' && matches!(b[i + 2], b'1'..=b'5') {
            return true;
        }
        if b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let n: usize = std::str::from_utf8(&b[start..i]).ok().and_then(|d| d.parse().ok()).unwrap_or(0);
            i = i.saturating_add(n);
            continue;
        }
        i += 1;
    }
    false
}

/// cpp_demangle (as GNU c++filt) prints an inheriting constructor with the name of the base
/// class it inherits from (`Derived<…>::Base(int*)`); LLVM prints the class it constructs
/// (`Derived<…>::Derived(int*)`). Renames the function to the last component of its scope,
/// without template arguments. A name of another shape is returned unchanged.
fn inheriting_ctor_named(s: &str) -> String {
    const ANON: &str = "(anonymous namespace)";
    let b = s.as_bytes();
    let mut depth = 0usize;
    // Depth-0 `::` positions before the parameter list, and where that list starts.
    let mut seps = Vec::new();
    let mut params = None;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'<' => depth += 1,
            b'>' => depth = depth.saturating_sub(1),
            b'(' if depth == 0 && s[i..].starts_with(ANON) => {
                i += ANON.len();
                continue;
            }
            b'(' if depth == 0 => {
                params = Some(i);
                break;
            }
            b'(' => depth += 1,
            b')' => depth = depth.saturating_sub(1),
            b':' if depth == 0 && b.get(i + 1) == Some(&b':') => {
                seps.push(i);
                i += 2;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    let (Some(params), Some(&last)) = (params, seps.last()) else { return s.to_owned() };
    let scope_start = seps.len().checked_sub(2).map_or(0, |k| seps[k] + 2);
    let class = &s[scope_start..last];
    let class = class.find('<').map_or(class, |k| &class[..k]);
    if class.is_empty() || class.starts_with('(') {
        return s.to_owned();
    }
    format!("{}{class}{}", &s[..last + 2], &s[params..])
}

/// From just after a template-args `I`, returns the index just past its closing `E`.
fn skip_template_args(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 1usize;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let n: usize = std::str::from_utf8(&b[start..i]).ok()?.parse().ok()?;
            i += n;
            continue;
        }
        match c {
            b'S' | b'T' => {
                // Substitutions and template params: S_, S3_, T_, T0_, or St/Sa/Ss/… .
                i += 1;
                if c == b'S' && i < b.len() && b[i].is_ascii_lowercase() {
                    i += 1;
                    continue;
                }
                while i < b.len() && b[i] != b'_' && (b[i].is_ascii_digit() || b[i].is_ascii_uppercase()) {
                    i += 1;
                }
                i += 1;
                continue;
            }
            b'I' | b'N' | b'L' => depth += 1,
            b'E' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Rewrites the few constructs that cpp_demangle prints differently from LLVM's demangler
/// (which traceconv and llvm-symbolizer use): `{lambda(int)#1}` is `'lambda'(int)` (`#2` is
/// `'lambda0'`, and so on), `{unnamed type#1}` is `'unnamed'`, and ` [clone .cold]` is
/// ` (.cold)`.
fn llvm_style(s: &str) -> String {
    if !s.contains('{') && !s.contains(" [clone ") {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(['{', '[']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("{lambda(") {
            // Find the matching ')' of the parameter list, then "#N}".
            let mut depth = 1usize;
            let mut end = None;
            for (j, c) in t.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(j);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            if let Some(j) = end {
                let params = &t[..j];
                let after = &t[j + 1..];
                if let Some(after) = after.strip_prefix('#') {
                    if let Some(k) = after.find('}') {
                        if let Ok(n) = after[..k].parse::<u32>() {
                            let suffix = if n > 1 { (n - 2).to_string() } else { String::new() };
                            out.push_str(&format!("'lambda{suffix}'({params})"));
                            rest = &after[k + 1..];
                            continue;
                        }
                    }
                }
            }
        } else if let Some(t) = tail.strip_prefix("{unnamed type#") {
            if let Some(k) = t.find('}') {
                if let Ok(n) = t[..k].parse::<u32>() {
                    let suffix = if n > 1 { (n - 2).to_string() } else { String::new() };
                    out.push_str(&format!("'unnamed{suffix}'"));
                    rest = &t[k + 1..];
                    continue;
                }
            }
        } else if let Some(t) = tail.strip_prefix("[clone ") {
            if out.ends_with(' ') {
                if let Some(k) = t.find(']') {
                    out.push('(');
                    out.push_str(&t[..k]);
                    out.push(')');
                    rest = &t[k + 1..];
                    continue;
                }
            }
        }
        out.push_str(&tail[..1]);
        rest = &tail[1..];
    }
    out.push_str(rest);
    out
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
    fn inheriting_constructors_are_named_after_their_class_as_llvm_does() {
        // Expected strings are llvm-cxxfilt's (LLVM 14); GNU c++filt names the base instead.
        for (mangled, llvm) in [
            (
                "_ZNSt15__uniq_ptr_dataIiSt14default_deleteIA_iELb1ELb1EECI2St15__uniq_ptr_implIiS2_EEPi",
                "std::__uniq_ptr_data<int, std::default_delete<int []>, true, true>::__uniq_ptr_data(int*)",
            ),
            (
                "_ZNSt15__uniq_ptr_dataIiSt14default_deleteIA_iELb1ELb1EECI1St15__uniq_ptr_implIiS2_EEPi",
                "std::__uniq_ptr_data<int, std::default_delete<int []>, true, true>::__uniq_ptr_data(int*)",
            ),
            ("_ZN12_GLOBAL__N_17DerivedCI2NS_4BaseEEi", "(anonymous namespace)::Derived::Derived(int)"),
            ("_ZN2ns7DerivedCI1NS_4BaseEEii", "ns::Derived::Derived(int, int)"),
            (
                "_ZNSt15__uniq_ptr_dataIiSt14default_deleteIA_iELb1ELb1EECI4St15__uniq_ptr_implIiS2_EEPi",
                "std::__uniq_ptr_data<int, std::default_delete<int []>, true, true>::__uniq_ptr_data(int*)",
            ),
            // `CI2` inside a source name is a name, not an inheriting constructor.
            ("_ZN3CI27DerivedC2Ev", "CI2::Derived::Derived()"),
        ] {
            assert_eq!(demangle(mangled).as_deref(), Some(llvm), "{mangled}");
        }
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
    fn formats_like_llvm() {
        assert_eq!(
            demangle("_ZN3app12_GLOBAL__N_16repeatIZNS_7Session3runEvEUliE_EEiiT_").as_deref(),
            Some(
                "int app::(anonymous namespace)::repeat<app::Session::run()::'lambda'(int)>(int, app::Session::run()::'lambda'(int))"
            )
        );
        assert_eq!(
            demangle("_ZN3app7SessionC2ERKNS_7OptionsE.cold").as_deref(),
            Some("app::Session::Session(app::Options const&) (.cold)")
        );
        assert_eq!(super::llvm_style("f({lambda()#3}) [clone .isra.0]"), "f('lambda1'()) (.isra.0)");
        assert_eq!(super::llvm_style("a::{unnamed type#1}::b"), "a::'unnamed'::b");
        // A templated constructor keeps its first parameter.
        assert_eq!(
            demangle("_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEC4IS3_EEPKcRKS3_").as_deref(),
            Some(
                "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::basic_string<std::allocator<char> >(char const*, std::allocator<char> const&)"
            )
        );
        assert_eq!(demangle("_ZN3FooC2Ev").as_deref(), Some("Foo::Foo()"));
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
