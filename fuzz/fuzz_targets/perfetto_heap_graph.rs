//! Perfetto heap graphs through the trace reader: dumps, analyses, and the dumps written as hprof.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| heapconv_fuzz::perfetto_heap_graph(data));
