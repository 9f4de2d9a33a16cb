//! Perfetto trace reader and heapprofd decoding on arbitrary bytes (gzip, compressed_packets, interning, chains).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| heapconv_fuzz::perfetto_heapprofd(data));
