//! A trace file converted end to end: every dump selected and encoded to pprof, folded, SVG and JSON.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| heapconv_fuzz::perfetto_to_outputs(data));
