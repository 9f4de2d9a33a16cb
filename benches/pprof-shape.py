#!/usr/bin/env python3
"""Writes a heap pprof (uncompressed) of issue 15's big-frame shape, for the merge benchmark:
200,000 locations, 160,000 functions, 120 mappings, SAMPLES samples of 29 frames sharing
prefixes (by SEED). Protobuf bytes written by hand (no schema needed).

    python3 benches/pprof-shape.py SEED OUT.pb [SAMPLES]
"""
import random, sys
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7f; n >>= 7
        if n: out.append(b | 0x80)
        else: out.append(b); return bytes(out)
def key(f, wt): return varint((f << 3) | wt)
def ld(f, b): return key(f, 2) + varint(len(b)) + b
def vi(f, n): return key(f, 0) + varint(n)
def packed(f, xs): return ld(f, b''.join(varint(x) for x in xs))
seed, out = int(sys.argv[1]), sys.argv[2]
rng = random.Random(seed)
strings = ['']; sidx = {'': 0}
def s(x):
    if x not in sidx: sidx[x] = len(strings); strings.append(x)
    return sidx[x]
parts = []
parts.append(ld(1, vi(1, s('alloc_objects')) + vi(2, s('count'))))
parts.append(ld(1, vi(1, s('alloc_space')) + vi(2, s('bytes'))))
parts.append(ld(1, vi(1, s('inuse_objects')) + vi(2, s('count'))))
parts.append(ld(1, vi(1, s('inuse_space')) + vi(2, s('bytes'))))
NM, NF, NL = 120, 160000, 200000
for m in range(1, NM + 1):
    parts.append(ld(3, vi(1, m) + vi(2, m << 32) + vi(3, (m << 32) + (1 << 28)) + vi(5, s('/system/lib64/libm%d.so' % m)) + vi(6, s('%040x' % (m * 7919)))))
for f in range(1, NF + 1):
    parts.append(ld(5, vi(1, f) + vi(2, s('ns%d::Class%d::method%d' % (f % 97, f % 1013, f))) + vi(4, s('src/file%d.cc' % (f % 4000)))))
for l in range(1, NL + 1):
    m = 1 + l % NM
    fn = 1 + (l * 7) % NF
    parts.append(ld(4, vi(1, l) + vi(2, m) + vi(3, (m << 32) + 0x1000 + 16 * l) + ld(4, vi(1, fn) + vi(2, 1 + l % 900))))
prefixes = [[rng.randrange(NL) + 1 for _ in range(12)] for _ in range(500)]
for i in range(int(sys.argv[3]) if len(sys.argv) > 3 else 300000):
    p = prefixes[rng.randrange(500)]
    cut = 6 + rng.randrange(7)
    stack = [rng.randrange(NL) + 1 for _ in range(29 - cut)] + p[:cut][::-1]  # leaf first
    n = 1 + rng.randrange(50)
    parts.append(ld(2, packed(1, stack) + packed(2, [n, n * 64, n // 2, n * 32])))
parts.append(vi(14, 3))
body = b''.join(parts) + b''.join(ld(6, x.encode()) for x in strings)
open(out, 'wb').write(body)
print(out, len(body))
