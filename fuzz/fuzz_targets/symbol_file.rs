//! Symbol-file lookup on arbitrary ELF bytes: ELF facts, DWARF and symbol-table lookups, the symbolize stage.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| heapconv_fuzz::symbol_file(data));
