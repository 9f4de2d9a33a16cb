//! pprof profiles (raw and gzip): the reader, every encoder, and a round trip.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| heapconv_fuzz::pprof_reader(data));
