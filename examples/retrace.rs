//! Deobfuscates a Java stack trace (`at class.method(File:line)` lines) with a ProGuard/R8 map,
//! printing one `at` line per original frame: heapconv's side of the ReTrace benchmark in
//! BENCHMARKS.md (`cargo run --release --example retrace MAP STACK`).

use std::io::Write;

use heapconv::symbolize::proguard::{ProguardMap, Retracer};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let map = ProguardMap::open(std::path::Path::new(&args[1]), None).expect("map");
    let r = Retracer::new(&map);
    let text = std::fs::read_to_string(&args[2]).expect("stack");
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in text.lines() {
        let Some(rest) = line.trim_start().strip_prefix("at ") else {
            writeln!(out, "{line}").unwrap();
            continue;
        };
        let (Some(open), true) = (rest.find('('), rest.ends_with(')')) else { continue };
        let (qualified, loc) = (&rest[..open], &rest[open + 1..rest.len() - 1]);
        let Some(dot) = qualified.rfind('.') else { continue };
        let line_no = loc.rsplit_once(':').and_then(|(_, n)| n.parse().ok());
        match r.frame(&qualified[..dot], &qualified[dot + 1..], line_no) {
            Some(t) => {
                for o in t.frames {
                    writeln!(
                        out,
                        "\tat {}.{}({}:{})",
                        o.class,
                        o.method,
                        o.file.as_deref().unwrap_or("Unknown Source"),
                        o.line
                    )
                    .unwrap();
                }
            }
            None => writeln!(out, "{line}").unwrap(),
        }
    }
}
