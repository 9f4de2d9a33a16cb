//! `gzip-backends BACKEND[,BACKEND...] FILE...`: for each backend, the files' bytes cut into
//! 1 MiB pieces, each compressed as one gzip member, read back (checked), and one line: MB in,
//! MB out, ratio, CPU seconds of this thread and ms per MB. Backends: `ldN` libdeflate level N,
//! `zrsN` zlib-rs level N, `zrsNr` / `zrsNh` with the Rle / HuffmanOnly strategy, `isalN` ISA-L
//! igzip level N (0, 1, 3).
use std::io::Read;

const PIECE: usize = 1 << 20;

fn thread_cpu() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write to.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn compress(backend: &str, piece: &[u8], out: &mut [u8], ld: &mut Option<libdeflater::Compressor>) -> usize {
    if let Some(level) = backend.strip_prefix("ld") {
        let level = level.parse().expect("ldN");
        let c = ld.get_or_insert_with(|| libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level).unwrap()));
        c.gzip_compress(piece, out).unwrap()
    } else if let Some(rest) = backend.strip_prefix("zrs") {
        let strategy = match &rest[1..] {
            "" => zlib_rs::Strategy::Default,
            "r" => zlib_rs::Strategy::Rle,
            "h" => zlib_rs::Strategy::HuffmanOnly,
            s => panic!("strategy {s}"),
        };
        let level = rest[..1].parse().expect("zrsN");
        let config = zlib_rs::DeflateConfig { level, window_bits: 31, strategy, ..Default::default() };
        let (compressed, rc) = zlib_rs::compress_slice(out, piece, config);
        assert_eq!(rc, zlib_rs::ReturnCode::Ok);
        compressed.len()
    } else if let Some(level) = backend.strip_prefix("isal") {
        let level = match level {
            "0" => isal::CompressionLevel::Zero,
            "1" => isal::CompressionLevel::One,
            "3" => isal::CompressionLevel::Three,
            l => panic!("isal level {l}"),
        };
        isal::compress_into(piece, out, level, isal::Codec::Gzip).unwrap()
    } else {
        panic!("backend {backend}")
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut data = Vec::new();
    for f in &args[1..] {
        data.extend(std::fs::read(f).expect("an input file"));
    }
    let mb = data.len() as f64 / 1e6;
    for backend in args[0].split(',') {
        let mut out = vec![0u8; 2 * PIECE];
        let mut all = Vec::new();
        let mut ld = None;
        let mut cpu = 0.0;
        for piece in data.chunks(PIECE) {
            let t = thread_cpu();
            let n = compress(backend, piece, &mut out, &mut ld);
            cpu += thread_cpu() - t;
            all.extend_from_slice(&out[..n]);
        }
        let mut back = Vec::new();
        flate2::read::MultiGzDecoder::new(&all[..]).read_to_end(&mut back).unwrap();
        assert!(back == data, "{backend}: read back differs");
        println!(
            "{backend:7} in {mb:7.1} MB out {:7.1} MB ratio {:.3} cpu {cpu:6.3} s {:5.2} ms/MB",
            all.len() as f64 / 1e6,
            all.len() as f64 / data.len() as f64,
            cpu * 1e3 / mb
        );
    }
}
