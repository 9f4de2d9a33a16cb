//! DDM allocation records (blob, chunk, JDWP) to a profile and every encoder.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| heapconv_fuzz::ddm_alloc_records(data));
