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


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, value):
    """A protobuf field: an int is a varint (wire type 0), bytes are length-delimited (2)."""
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    return varint(num << 3 | 2) + varint(len(value)) + value


def heap_graph_trace(types, objects, roots):
    """A trace of one TracePacket (sequence 1) holding one complete HeapGraph (pid 1, index 0):
    `types` are (id, class name, object_size), `objects` (id, type id, self_size), `roots`
    (root type, object ids)."""
    hg = field(1, 1) + field(6, 0)
    for oid, tid, size in objects:
        hg += field(2, field(1, oid) + field(2, tid) + field(3, size))
    for rtype, ids in roots:
        hg += field(7, b"".join(field(1, i) for i in ids) + field(2, rtype))
    for tid, name, size in types:
        hg += field(9, field(1, tid) + field(3, name.encode()) + field(4, size))
    packet = field(10, 1) + field(8, 1000) + field(56, hg)
    return field(1, packet)


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


# Finding 3 (perfetto_heap_graph): a type whose object_size is 2^32. Written as hprof, its
# class was padded to its instance size with one primitive field per 8 bytes: 536 million
# fields (and as many strings) for one class, more than the u2 field count of a CLASS_DUMP.
write(
    "perfetto_heap_graph/huge-object-size.pftrace",
    heap_graph_trace([(1, "Huge", 1 << 32)], [(0x10, 1, 16)], [(1, [0x10])]),
)


# Finding 5 (pprof_reader): sample values whose sum passes 2^63. The fuzzer's input was an
# 870-byte legacy heap profile (`heapz_v2`) with mangled addresses; two samples of 6e18 bytes
# each, unscaled (rate 1), with allocation values, are the whole of it. The flame graph's total, the JSON summary's
# totals and the top table's total added them up with `+`: a wrapped (release) or panicking
# (debug) sum. Totals now stop at i64::MAX; the SVG is refused with an error (inferno adds the
# drawn values up again).
BIG = 6_000_000_000_000_000_000
write(
    "pprof_reader/values-sum-past-2-63.heap",
    (
        # In-use counts first, then allocated ones; they differ, so both pairs are kept.
        "heap profile:    2:     2 [     3:     3] @ heapz_v2/1\n"
        f"     1: {BIG} [     1: {BIG}] @ 0x1000\n"
        f"     1: {BIG} [     1: {BIG}] @ 0x2000\n"
    ).encode(),
)


# Finding 6 (pprof_reader): a legacy heap profile whose memory map holds a line that ends before
# it starts (9000-8000) followed by one of the same file that starts where it ends. Joining
# adjacent pieces (go's massageMappings) computed `offset + (limit - start)`: an overflow panic
# with overflow checks. Go's uint64 arithmetic wraps, and so does heapconv's now: the pieces
# stay apart, as go keeps them. The fuzzer's input was a 1,009-byte profile with mangled lines.
write(
    "pprof_reader/map-line-ends-before-it-starts.heap",
    (
        "heap profile:    1:     4096 [     1:     4096] @ heapprofile\n"
        "     1:     4096 [     1:     4096] @ 0x8100\n"
        "\n"
        "MAPPED_LIBRARIES:\n"
        "00009000-00008000 r-xp 00001000 08:01 7 /lib/libwraps.so\n"
        "00008000-0000a000 r-xp 00002000 08:01 7 /lib/libwraps.so\n"
    ).encode(),
)
