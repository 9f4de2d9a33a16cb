//! The member-line grammar of a mapping file, read byte by byte on the hot path.
//!
//! [`member`] reads one field or method line of a class section into the [`proguard`] crate's
//! own record type ([`ProguardRecord`]), exactly as the crate's [`ProguardRecord::try_parse`]
//! reads it: the same records for the lines it accepts, `None` for the lines it rejects. Why
//! our own: a map is read almost whole when a large input names most of its classes, and the
//! crate's line parser (UTF-8 validation of every piece, `char` numeric tests, a `str` parse
//! per number) was a fifth of the time of the ReTrace benchmark; here the class's text is
//! validated once, and each line is cut at its ASCII delimiters in one pass. The crate stays
//! the oracle: the tests below compare both on every line of the fixture maps, of generated
//! maps, and of random lines made of the grammar's own characters; and it still reads the
//! lines that are not member lines (comments and column-0 lines are not on the hot path).

use proguard::{LineMapping, ProguardRecord};

/// The record of mapping line `line` (no `\n`), as [`ProguardRecord::try_parse`] gives it;
/// `None` where that is an error.
pub(super) fn member(line: &str) -> Option<ProguardRecord<'_>> {
    // Lines with a line break inside are the crate's to read (see `member_unbroken`).
    if memchr::memchr2(b'\r', b'\n', line.as_bytes()).is_some() {
        return ProguardRecord::try_parse(line.as_bytes()).ok();
    }
    member_unbroken(line)
}

/// [`member`] for a line known to hold neither `\r` nor `\n` (a class's lines, cut at `\n`,
/// when its text has no `\r`: checked once for the class, not once a line).
pub(super) fn member_unbroken(line: &str) -> Option<ProguardRecord<'_>> {
    let b = line.as_bytes();
    // Member lines start with a space or a tab. Anything else (comments, class lines, which a
    // class section only holds in odd maps) is the crate's to read, as are lines with a line
    // break inside (`member`): rare, and then every delimiter below is the only one that can
    // end its piece.
    if !matches!(b.first(), Some(b' ' | b'\t')) {
        return ProguardRecord::try_parse(b).ok();
    }
    let mut i = b.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(b.len());
    if b.get(i) == Some(&b'#') {
        return ProguardRecord::try_parse(b).ok();
    }
    // `[startline:endline:]`: digits that do not make a number (too long) are no range and
    // stay part of the type, as in the crate; a start without a valid end is an error.
    let (startline, endline) = match number(b, i) {
        Some((start, j)) => {
            if b.get(j) != Some(&b':') {
                return None;
            }
            let (end, k) = number(b, j + 1)?;
            if b.get(k) != Some(&b':') {
                return None;
            }
            i = k + 1;
            (Some(start), Some(end))
        }
        None => (None, None),
    };
    // `type ` (a type may be empty).
    let p = i + memchr::memchr(b' ', &b[i..])?;
    let ty = &line[i..p];
    i = p + 1;
    // `name` up to a space (a field) or `(` (a method).
    let p = i + memchr::memchr2(b' ', b'(', &b[i..])?;
    let original = &line[i..p];
    let mut arguments = None;
    let (mut original_startline, mut original_endline) = (None, None);
    if b[p] == b'(' {
        let q = p + 1 + memchr::memchr(b')', &b[p + 1..])?;
        arguments = Some(&line[p + 1..q]);
        i = q + 1;
        if b.get(i) == Some(&b':') {
            let (v, j) = number(b, i + 1)?;
            original_startline = Some(v);
            i = j;
            if b.get(i) == Some(&b':') {
                let (v, j) = number(b, i + 1)?;
                original_endline = Some(v);
                i = j;
            }
        }
    } else {
        i = p;
    }
    let obfuscated = line[i..].strip_prefix(" -> ")?;
    let Some(arguments) = arguments else {
        return Some(ProguardRecord::Field { ty, original, obfuscated });
    };
    let (original_class, original) = match memchr::memrchr(b'.', original.as_bytes()) {
        Some(d) => (Some(&original[..d]), &original[d + 1..]),
        None => (None, original),
    };
    let line_mapping = match (startline, endline, original_startline) {
        (Some(_), Some(_), _) => Some(LineMapping { startline, endline, original_startline, original_endline }),
        (None, None, Some(_)) => {
            Some(LineMapping { startline: None, endline: None, original_startline, original_endline })
        }
        _ => None,
    };
    Some(ProguardRecord::Method { ty, original, obfuscated, arguments, original_class, line_mapping })
}

/// The decimal number of the ASCII digits at `b[i..]` and the index after them; `None` when
/// there are none or they overflow `usize` (the crate's `str::parse::<usize>`).
fn number(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let mut v: usize = 0;
    let mut j = i;
    while let Some(&c) = b.get(j) {
        if !c.is_ascii_digit() {
            break;
        }
        v = v.checked_mul(10)?.checked_add(usize::from(c - b'0'))?;
        j += 1;
    }
    (j > i).then_some((v, j))
}

/// The R8 metadata line R8 writes after nearly every class line, `{"id":"sourceFile",
/// "fileName":"Name.java"}` (`rest` is the line after `#` and blanks), read without a JSON
/// parser: the file name when the line is exactly that with a name free of `"` and `\`
/// (anything else goes to the JSON parser, which reads it the same way).
pub(super) fn source_file_fast(rest: &str) -> Option<&str> {
    let name = rest
        .trim_end_matches([' ', '\t', '\r', '\n'])
        .strip_prefix(r#"{"id":"sourceFile","fileName":""#)?
        .strip_suffix("\"}")?;
    (!name.bytes().any(|c| c == b'"' || c == b'\\' || c < 0x20)).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ours and the crate's record for `line`, which must agree.
    fn check(line: &str) {
        let theirs = ProguardRecord::try_parse(line.as_bytes()).ok();
        assert_eq!(member(line), theirs, "line {line:?}");
    }

    #[test]
    fn member_lines_read_as_the_crate_reads_them() {
        for line in [
            "    java.lang.String field0 -> a",
            "    1:10:void method0(int,java.lang.String):1977:1986 -> a",
            "    11:20:void com.bigapp.util.Helper677.inlined0(int):367:367 -> b",
            "    11:20:void com.bigapp.util.Helper677.inlined0(int):367 -> b",
            "    void a() -> b",
            "    void a():12 -> b",
            "    void a():12:14 -> b",
            "\t1:1:void a() -> b",
            "    1:1:void a() -> b\r",
            "    1:1:void a() -> b\r\r",
            "    1:1:void a() -> b\rc",
            "\r    1:1:void a() -> b",
            "    1:1: a() -> b",
            "    1:1:void  a() -> b",
            "    1:1:void a( -> b",
            "    1:1:void a() ->b",
            "    1:1:void a() -> ",
            "    1:1:void a() -> b c",
            "    1:void a() -> b",
            "    1::void a() -> b",
            "    99999999999999999999:1:void a() -> b",
            "    1:99999999999999999999:void a() -> b",
            "    1:2:void a():99999999999999999999 -> b",
            "    1:2:void a():3:99999999999999999999 -> b",
            "    1:2:void a():3: -> b",
            "    1:2:void a(): -> b",
            "    1:2:void a():x -> b",
            "    1:2:void .a() -> b",
            "    1:2:void a.() -> b",
            "    1:2:void a.b.c(int[],long) -> d",
            "    int f",
            "    int f -> ",
            "    int f->g",
            "    int",
            "    ",
            "    # a comment",
            "    #{\"id\":\"com.android.tools.r8.synthesized\"}",
            "    \u{c}1:2:void a() -> b",
            "    1:2:void ä() -> ö",
            "    1:2:vö²d a() -> b",
            "    ²1:2:void a() -> b",
            "    1:2:void a(x)y -> b",
            "    1:2:void a() :3 -> b",
            "a -> b:",
            "a.b.C -> a:",
            "# compiler: R8",
            "#{\"id\":\"sourceFile\",\"fileName\":\"A.java\"}",
            "\t\u{1}",
            "",
        ] {
            check(line);
        }
    }

    #[test]
    fn fixture_and_generated_maps_read_as_the_crate_reads_them() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/proguard");
        let mut lines = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "map") {
                for line in std::fs::read_to_string(&p).unwrap().lines() {
                    check(line);
                    lines += 1;
                }
            }
        }
        assert!(lines > 30, "{lines}");
        // A map shaped as benches/gen_proguard_map.py writes one (R8's shapes: fields,
        // ranges, inline chains, metadata), with ProGuard's shapes (no ranges, `:0:0`).
        let text = generated_map(300);
        for line in text.lines() {
            check(line);
        }
        assert!(text.lines().count() > 10_000);
        // A map named by the environment (the benchmark's 100 MB one, say).
        if let Some(p) = std::env::var_os("HEAPCONV_ORACLE_MAP") {
            let text = std::fs::read_to_string(p).unwrap();
            let n = crate::symbolize::proguard::member_lines_as_the_crate_reads_them(&text).unwrap();
            eprintln!("HEAPCONV_ORACLE_MAP: {n} lines read alike");
        }
        // Real maps, where there are some: the crate's own test maps (R8 and ProGuard output)
        // in the local registry copy of its sources.
        let home = std::env::var_os("CARGO_HOME")
            .map(std::path::PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".cargo")));
        if let Some(Ok(regs)) = home.map(|h| std::fs::read_dir(h.join("registry/src"))) {
            for reg in regs.flatten() {
                let res = reg.path().join("proguard-5.10.5/tests/res");
                for e in std::fs::read_dir(res).into_iter().flatten().flatten() {
                    if let Ok(text) = std::fs::read_to_string(e.path()) {
                        text.lines().for_each(check);
                    }
                }
            }
        }
    }

    /// A map file indexed in pieces in parallel (unit tests do so from 4 KiB) is the map
    /// indexed in one pass: the same classes, names, lines and sections; and a bad map gives
    /// the same error, whichever piece holds the bad line.
    #[test]
    fn a_file_indexed_in_pieces_is_the_map_indexed_in_one_pass() {
        use crate::symbolize::proguard::ProguardMap;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mapping.txt");
        let text = generated_map(300);
        // Without and with a last line without its newline.
        for text in [text.clone(), text.trim_end().to_owned()] {
            std::fs::write(&path, &text).unwrap();
            let file = ProguardMap::open(&path, None).unwrap();
            let mem = ProguardMap::from_bytes(path.display().to_string(), None, text.into_bytes()).unwrap();
            assert_eq!(file.classes().collect::<Vec<_>>(), mem.classes().collect::<Vec<_>>());
            assert_eq!(file.class_count(), 300);
            for (a, b) in file.entries.iter().zip(&mem.entries) {
                assert_eq!((a.section.clone(), a.line), (b.section.clone(), b.line));
            }
            assert_eq!(file.packages, mem.packages);
            for (obf, _) in mem.classes() {
                assert_eq!(file.classes.get(obf), mem.classes.get(obf));
            }
        }
        // Errors: a class mapped twice across pieces, a bad class line late in the file, a
        // member line after a long header and no class.
        let late = text.len() * 9 / 10;
        let cut = late + text[late..].find("\ncom.").unwrap() + 1;
        let twice = format!("{}com.bigapp.X -> a.b3:\n{}", &text[..cut], &text[cut..]);
        let bad = format!("{}not a class line\n{}", &text[..cut], &text[cut..]);
        let orphan = format!("{}    void a() -> b\n{}", "# header\n".repeat(5000), text);
        for bad_text in [twice, bad, orphan] {
            std::fs::write(&path, &bad_text).unwrap();
            let file = ProguardMap::open(&path, None).unwrap_err();
            let mem = ProguardMap::from_bytes(path.display().to_string(), None, bad_text.into_bytes()).unwrap_err();
            assert_eq!(file.to_string(), mem.to_string());
            assert!(file.to_string().contains("mapping.txt:"), "{file}");
        }
    }

    /// A map of `classes` classes as the benchmark's generator writes them, with a few
    /// ProGuard-style classes between.
    fn generated_map(classes: usize) -> String {
        use std::fmt::Write as _;
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let mut s = String::from("# compiler: R8\n# compiler_version: 8.5.35\n# min_api: 24\n");
        for k in 0..classes {
            let _ = writeln!(s, "com.bigapp.feature{}.Component{k} -> a.b{k}:", k % 7);
            let _ = writeln!(s, "# {{\"id\":\"sourceFile\",\"fileName\":\"Component{k}.java\"}}");
            for f in 0..next(12) {
                let _ = writeln!(s, "    java.lang.String field{f}OfComponent{k} -> {}", (b'a' + f as u8) as char);
            }
            let mut line = 1;
            for m in 0..next(30) + 1 {
                let obf = format!("{}{}", (b'a' + (m % 26) as u8) as char, if m >= 26 { "a" } else { "" });
                let n = next(20) + 1;
                let orig = next(3000) + 1;
                if k % 10 == 9 {
                    // ProGuard: no ranges, or `:0:0`-less original lines only.
                    match next(3) {
                        0 => {
                            let _ = writeln!(s, "    void method{m}OfComponent{k}(int) -> {obf}");
                        }
                        1 => {
                            let _ = writeln!(s, "    {line}:{}:void method{m}OfComponent{k}() -> {obf}", line + n);
                        }
                        _ => {
                            let _ = writeln!(
                                s,
                                "    java.util.List method{m}(int[],java.lang.String[][]):{orig}:{} -> {obf}",
                                orig + n
                            );
                        }
                    }
                } else {
                    for h in 0..next(3) {
                        let _ = writeln!(
                            s,
                            "    {line}:{}:void com.bigapp.util.Helper{}.inlined{h}(int):{}:{} -> {obf}",
                            line + n,
                            next(1000),
                            orig + h,
                            orig + h
                        );
                    }
                    let _ = writeln!(
                        s,
                        "    {line}:{}:void method{m}OfComponent{k}(int,java.lang.String):{orig}:{} -> {obf}",
                        line + n,
                        orig + n
                    );
                    if next(20) == 0 {
                        s.push_str("      # {\"id\":\"com.android.tools.r8.synthesized\"}\n");
                    }
                }
                line += n + 1;
            }
        }
        s
    }

    #[test]
    fn random_lines_of_the_grammar_read_as_the_crate_reads_them() {
        // Lines made of the characters the grammar cuts at, digits and letters, and a few
        // non-ASCII ones: every branch of both parsers, and then some.
        let alphabet: Vec<char> = " \t\r:().,->#0123456789abz[]$²é\u{c}".chars().collect();
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n as u64) as usize
        };
        let pieces = ["    ", "1:2:", "void ", "a(", "int", ")", ":3", ":4", " -> ", "b", "\r", "99999999999999999999"];
        for _ in 0..100_000 {
            let mut line = String::new();
            for _ in 0..next(12) {
                if next(2) == 0 {
                    line.push_str(pieces[next(pieces.len())]);
                } else {
                    line.push(alphabet[next(alphabet.len())]);
                }
            }
            check(&line);
        }
    }

    #[test]
    fn source_file_fast_path_agrees_with_json() {
        for rest in [
            r#"{"id":"sourceFile","fileName":"A.java"}"#,
            r#"{"id":"sourceFile","fileName":"A.java"}  "#,
            r#"{"id":"sourceFile","fileName":""}"#,
            r#"{"id":"sourceFile","fileName":"A\"B.java"}"#,
            r#"{"id":"sourceFile","fileName":"A\\u0041.java"}"#,
            r#"{"id":"sourceFile","fileName":"A.java","x":1}"#,
            r#"{"fileName":"A.java","id":"sourceFile"}"#,
            "{\"id\":\"sourceFile\",\"fileName\":\"A.java\"}\u{3000}",
        ] {
            let fast = source_file_fast(rest);
            let json = serde_json::from_str::<super::super::members::Meta<'_>>(rest).ok().and_then(|h| match h {
                super::super::members::Meta::SourceFile { file_name } => Some(file_name),
                _ => None,
            });
            if let Some(f) = fast {
                assert_eq!(Some(f), json, "{rest}");
            }
        }
        assert_eq!(source_file_fast(r#"{"id":"sourceFile","fileName":"A.java"}"#), Some("A.java"));
        assert_eq!(source_file_fast(r#"{"id":"sourceFile","fileName":"A\"B.java"}"#), None);
    }
}
