#!/usr/bin/env python3
"""Writes the regression inputs of fuzz findings that are smaller built by hand than minimized
by libFuzzer (whose byte-level minimizer cannot shrink an ELF file without breaking its offsets).
Each input reproduces its finding through the fuzz target's driver (fuzz/src/lib.rs), which
tests/fuzz_replay.rs runs on every file here; see FUZZING.md for the findings.

Deterministic: the same bytes on every run.  Usage: python3 tests/data/fuzz/make_inputs.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def elf64_with_symbols(symbols):
    """A minimal little-endian ELF64 shared object with only .text (16 bytes of `ret`),
    .symtab, .strtab and .shstrtab: no program headers, no DWARF. `symbols` are (name, value,
    size) function symbols in .text."""
    strtab = b"\0"
    syms = [b"\0" * 24]  # the null symbol
    for name, value, size in symbols:
        off = len(strtab)
        strtab += name.encode() + b"\0"
        # st_name, st_info (STB_GLOBAL << 4 | STT_FUNC), st_other, st_shndx (.text), st_value, st_size
        syms.append(struct.pack("<IBBHQQ", off, 0x12, 0, 1, value, size))
    symtab = b"".join(syms)
    text = b"\xc3" * 16
    shstrtab = b"\0.symtab\0.strtab\0.shstrtab\0.text\0"
    ehsize = 64
    text_off = ehsize
    symtab_off = text_off + len(text)
    strtab_off = symtab_off + len(symtab)
    shstrtab_off = strtab_off + len(strtab)
    shoff = (shstrtab_off + len(shstrtab) + 7) & ~7
    body = text + symtab + strtab + shstrtab
    body += b"\0" * (shoff - ehsize - len(body))

    def shdr(name, typ, off, size, link=0, info=0, align=1, entsize=0):
        return struct.pack("<IIQQQQIIQQ", name, typ, 0, 0, off, size, link, info, align, entsize)

    sections = [
        shdr(0, 0, 0, 0),
        struct.pack("<IIQQQQIIQQ", 27, 1, 6, 0x1000, text_off, len(text), 0, 0, 16, 0),  # .text: PROGBITS, AX
        shdr(1, 2, symtab_off, len(symtab), link=3, info=1, align=8, entsize=24),  # SHT_SYMTAB
        shdr(9, 3, strtab_off, len(strtab)),  # SHT_STRTAB
        shdr(17, 3, shstrtab_off, len(shstrtab)),  # SHT_STRTAB (section names)
    ]
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8  # ELF64, little endian, version 1
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH",
        3,  # ET_DYN
        62,  # EM_X86_64
        1,  # EV_CURRENT
        0,  # e_entry
        0,  # e_phoff
        shoff,
        0,  # e_flags
        ehsize,
        56,  # e_phentsize
        0,  # e_phnum
        64,  # e_shentsize
        len(sections),
        4,  # e_shstrndx
    )
    return header + body + b"".join(sections)


def write(rel, data):
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    print(f"{rel}: {len(data)} bytes")


# Finding 2 (symbol_file): a function symbol whose value + size overflows 64 bits (the fuzzer's
# input had value 0xed841701f0040000, size 0x8300009720030000). Looking up an address at or
# above its value (the driver looks up u64::MAX - 1) computed `start + size`.
write(
    "symbol_file/symbol-end-overflows.elf",
    elf64_with_symbols([("low", 0x1000, 0x10), ("wraps", 0xED841701F0040000, 0x8300009720030000)]),
)
