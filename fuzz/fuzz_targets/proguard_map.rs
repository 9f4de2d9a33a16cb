//! ProGuard/R8 mapping files: the index, the table and lookups.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| heapconv_fuzz::proguard_map(data));
