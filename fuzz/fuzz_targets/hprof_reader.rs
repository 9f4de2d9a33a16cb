//! HPROF heap dumps (gzip or not): the reader, the inspect report, every heap analysis and hprof-conv.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| heapconv_fuzz::hprof_reader(data));
