#!/usr/bin/env python3
"""Writes small pprof profiles of odd shapes, protobuf bytes by hand (independent of heapconv's
encoder and of any protobuf library). Run from anywhere: `python3 tests/data/pprof-odd/make.py`;
the files land next to this script. See tests/data/README.md."""
import gzip, os

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def key(field, wire):
    return varint(field << 3 | wire)

def vfield(field, n):
    return key(field, 0) + varint(n)

def bfield(field, data):
    return key(field, 2) + varint(len(data)) + data

def packed(field, nums):
    return bfield(field, b"".join(varint(n & 0xFFFFFFFFFFFFFFFF) for n in nums))

class Strings:
    def __init__(self):
        self.table = [b""]
    def __call__(self, s):
        b = s if isinstance(s, bytes) else s.encode()
        if b not in self.table:
            self.table.append(b)
        return self.table.index(b)

def label(s, lab):
    """lab: (key, "string value") or (key, number, unit or None)."""
    if isinstance(lab[1], str):
        return bfield(3, vfield(1, s(lab[0])) + vfield(2, s(lab[1])))
    body = vfield(1, s(lab[0])) + vfield(3, lab[1] & 0xFFFFFFFFFFFFFFFF)
    if lab[2]:
        body += vfield(4, s(lab[2]))
    return bfield(3, body)

def profile(s, types, samples, mappings=(), locations=(), functions=(), period=None, default=None):
    """types: [(name, unit)]; samples: [([location ids, leaf first], [values])] or
    [([location ids], [values], [labels])] (see `label`);
    mappings: [(id, start, limit, offset, file)]; locations: [(id, mapping id, address, [function ids])];
    functions: [(id, name)]."""
    out = b""
    for name, unit in types:
        out += bfield(1, vfield(1, s(name)) + vfield(2, s(unit)))
    for sample in samples:
        locs, vals = sample[0], sample[1]
        labels = b"".join(label(s, l) for l in (sample[2] if len(sample) > 2 else ()))
        out += bfield(2, (packed(1, locs) if locs else b"") + packed(2, vals) + labels)
    for mid, start, limit, offset, file in mappings:
        out += bfield(3, vfield(1, mid) + vfield(2, start) + vfield(3, limit) + vfield(4, offset) + vfield(5, s(file)))
    for lid, mid, addr, funcs in locations:
        body = vfield(1, lid) + (vfield(2, mid) if mid else b"") + (vfield(3, addr) if addr else b"")
        for f in funcs:
            body += bfield(4, vfield(1, f) + vfield(2, 1))
        out += bfield(4, body)
    for fid, name in functions:
        out += bfield(5, vfield(1, fid) + vfield(2, s(name)) + vfield(3, s(name)))
    pt = period[0] if period else None
    if period:
        ps, pu = s(pt[0]), s(pt[1])
    dflt = s(default) if default is not None else None
    for t in s.table:
        out += bfield(6, t)
    if period:
        out += bfield(11, vfield(1, ps) + vfield(2, pu)) + vfield(12, period[1])
    if dflt:
        out += vfield(14, dflt)
    return out

HERE = os.path.dirname(os.path.abspath(__file__))

def write(name, data):
    # gzip with a fixed mtime so the bytes are reproducible.
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(gzip.compress(data, mtime=0))

# The only sample type is empty (""/""), as Go goroutine profiles of some versions write.
s = Strings()
write("empty-sample-type.pb.gz", profile(
    s, [("", "")],
    [([1, 2], [3]), ([2], [2])],
    locations=[(1, 0, 0, [1]), (2, 0, 0, [2])],
    functions=[(1, "main.worker"), (2, "main.main")],
))

# A sample with an empty stack (no locations) among ordinary ones; two types, no default.
s = Strings()
write("empty-stack.pb.gz", profile(
    s, [("samples", "count"), ("cpu", "nanoseconds")],
    [([1, 2], [2, 20000000]), ([], [5, 50000000]), ([2], [1, 10000000])],
    locations=[(1, 0, 0, [1]), (2, 0, 0, [2])],
    functions=[(1, "main.leaf"), (2, "main.main")],
    period=(("cpu", "nanoseconds"), 10000000),
))

# A function name that is not valid UTF-8 (bytes 0xff 0xfe in the middle).
s = Strings()
write("invalid-utf8.pb.gz", profile(
    s, [("samples", "count")],
    [([1, 2], [4])],
    locations=[(1, 0, 0, [1]), (2, 0, 0, [2])],
    functions=[(1, b"bad\xff\xfename"), (2, "main")],
))

# Unsymbolized addresses in mappings at a file offset, one address outside every mapping (no
# mapping id), and a default type that is the first of three (alloc_space).
s = Strings()
write("unsymbolized-offsets.pb.gz", profile(
    s, [("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_space", "bytes")],
    [([1, 2, 4], [1, 4096, 0]), ([3, 2, 4], [2, 100, 100]), ([5, 4], [1, 64, 64]), ([4], [3, 30, 0])],
    mappings=[(1, 0x7f0000001000, 0x7f0000009000, 0x22000, "/lib/libc-2.31.so"),
              (2, 0x400000, 0x500000, 0, "/usr/bin/server"),
              (3, 0x7ffe00000000, 0x7ffe00002000, 0, "[vdso]")],
    locations=[(1, 1, 0x7f0000001d0a, []), (2, 1, 0x7f0000002000, []), (3, 3, 0x7ffe000009b9, []),
               (4, 2, 0x4123ab, []), (5, 0, 0x7fff12345678, [])],
    default="alloc_space",
))

# String labels (as Go's pprof.Do/pprof.Labels put on CPU and goroutine samples) beside numeric
# ones: keys `thread` and `request` (a sample may have two values of one key), numeric `bytes`
# (unit bytes) and `object_id` (no unit), a sample without labels; a heap profile's four types.
s = Strings()
write("string-labels.pb.gz", profile(
    s, [("alloc_objects", "count"), ("alloc_space", "bytes"), ("inuse_objects", "count"), ("inuse_space", "bytes")],
    [([1, 2, 5], [4, 4096, 1, 1024], [("thread", "main"), ("request", "GET /a"), ("bytes", 1024, "bytes")]),
     ([1, 3, 5], [2, 65536, 2, 65536], [("thread", "worker-1"), ("request", "POST /b"), ("bytes", 32768, "bytes")]),
     ([1, 3, 5], [8, 800, 0, 0], [("thread", "worker-2"), ("request", "GET /a"), ("object_id", 7, None)]),
     ([4, 2, 5], [1, 10, 1, 10], [("thread", "main"), ("thread", "io"), ("request", "GET /health")]),
     ([4, 5], [3, 300, 3, 300], []),
     ([1, 2, 5], [16, 160, 16, 160], [("thread", "worker-1"), ("bytes", 10, "bytes")])],
    mappings=[(1, 0x400000, 0x500000, 0, "/usr/bin/server")],
    locations=[(1, 1, 0x401000, [1]), (2, 1, 0x402000, [2]), (3, 1, 0x403000, [3]),
               (4, 1, 0x404000, [4]), (5, 1, 0x405000, [5])],
    functions=[(1, "runtime.mallocgc"), (2, "main.handleGet"), (3, "main.handlePost"), (4, "main.health"),
               (5, "main.main")],
))
