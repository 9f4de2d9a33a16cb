//! Deobfuscates a Java stack trace (`at class.method(File:line)` lines) with a ProGuard/R8 map,
//! printing one `at` line per original frame: heapconv's side of the ReTrace benchmark in
//! BENCHMARKS.md (`cargo run --release --example retrace MAP STACK`). The frames go through
//! [`Retracer::frames_with`] as one batch: each distinct frame answered once, classes read in
//! parallel and dropped once answered.

use std::io::Write;

use heapconv::symbolize::proguard::{FrameQuery, ProguardMap, Retracer};

fn main() {
    // `HEAPCONV_TIMINGS=1`: the time at the end of each step on stderr.
    let t0 = std::time::Instant::now();
    let tm = |w: &str| {
        if std::env::var_os("HEAPCONV_TIMINGS").is_some() {
            eprintln!("{w}: {:?}", t0.elapsed())
        }
    };
    let args: Vec<String> = std::env::args().collect();
    let map = ProguardMap::open(std::path::Path::new(&args[1]), None).expect("map");
    tm("index");
    let r = Retracer::new(&map);
    let text = std::fs::read_to_string(&args[2]).expect("stack");
    // Each input line: printed as is (`None`), left out (`Some(u32::MAX)`: an `at` line that
    // does not parse), or frame `Some(k)` of the batch.
    let mut lines: Vec<Option<u32>> = Vec::new();
    let mut queries: Vec<FrameQuery<'_>> = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("at ") else {
            lines.push(None);
            continue;
        };
        let (Some(open), true) = (rest.find('('), rest.ends_with(')')) else {
            lines.push(Some(u32::MAX));
            continue;
        };
        let (qualified, loc) = (&rest[..open], &rest[open + 1..rest.len() - 1]);
        let Some(dot) = qualified.rfind('.') else {
            lines.push(Some(u32::MAX));
            continue;
        };
        let line_no = loc.rsplit_once(':').and_then(|(_, n)| n.parse().ok());
        lines.push(Some(queries.len() as u32));
        queries.push(FrameQuery { class: &qualified[..dot], method: &qualified[dot + 1..], line: line_no });
    }
    tm("queries");
    let answers = r.frames_with(&queries, |_, t| {
        // Each original frame as ReTrace prints it, `\tat class.method(file:line)\n`, into a
        // string of the exact size (the line's digits written by hand: `fmt` costs more than
        // the rest of the answer).
        let digits = |mut n: u32, out: &mut [u8; 10]| {
            let mut i = out.len();
            loop {
                i -= 1;
                out[i] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    return i;
                }
            }
        };
        let mut num = [0u8; 10];
        let len: usize = t
            .frames
            .iter()
            .map(|o| {
                let file = o.file.as_deref().unwrap_or("Unknown Source");
                9 + o.class.len() + o.method.len() + file.len() + (num.len() - digits(o.line, &mut num))
            })
            .sum();
        let mut s = String::with_capacity(len);
        for o in &t.frames {
            s.push_str("\tat ");
            s.push_str(&o.class);
            s.push('.');
            s.push_str(&o.method);
            s.push('(');
            s.push_str(o.file.as_deref().unwrap_or("Unknown Source"));
            s.push(':');
            let i = digits(o.line, &mut num);
            s.push_str(std::str::from_utf8(&num[i..]).unwrap_or_default());
            s.push_str(")\n");
        }
        debug_assert_eq!(s.len(), len);
        s.into_boxed_str()
    });
    tm("answers");
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for (line, k) in text.lines().zip(lines) {
        match k {
            Some(u32::MAX) => {}
            Some(k) => match answers[k as usize].as_deref() {
                Some(s) => out.write_all(s.as_bytes()).unwrap(),
                None => writeln!(out, "{line}").unwrap(),
            },
            None => writeln!(out, "{line}").unwrap(),
        }
    }
    drop(out);
    tm("written");
    // The process ends here: its 200,000 answers are left to the OS, not freed one by one
    // (a tenth of the run, freeing from the main thread what the workers allocated).
    std::mem::forget(answers);
}
