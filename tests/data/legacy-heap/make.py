#!/usr/bin/env python3
"""Writes the legacy text heap profiles in this directory (issue 14): the text that
gperftools' heap profiler and old Go runtimes wrote, written here by hand (no heapconv code).
`python3 tests/data/legacy-heap/make.py` rewrites them; tests/it/pprof_real.rs compares
heapconv with `go tool pprof` run live on each.

Each file holds a shape go's legacy_profile.go reads by its own rule:
  gperftools.heap  `@ heapprofile` (period 1, values as written), allocation totals that differ
                   from the in-use ones (4 sample types), a comment and blank lines, a
                   MAPPED_LIBRARIES section in /proc/self/maps form: the main binary at
                   0x400000, a writable (left out) piece, libc in two adjacent executable
                   pieces (joined), [vdso], and an address outside every mapping.
  heap_v2.heap     `@ heap_v2/524288`: every value unsampled (1 / (1 - exp(-avg/524288))),
                   a sample whose in-use pair is 0 (freed), objects from 16 B to 4 MiB.
  go_heap.heap     `@ heap/1048576`, old Go's text (debug=1): rate taken as half, `#` lines
                   with the symbolized stack after each sample, no mappings at all.
  inuse_only.heap  `@ heapprofile` whose allocation totals equal the in-use ones: the two
                   types objects/space.
  brief_maps.heap  `@ heapz_v2/524288` with a `--- Memory map: ---` section in the pprof
                   tools' brief form (`start-end: file`), an `attr=value` line whose `$attr`
                   the later lines use, a `(@offset)`, [vdso] and [vsyscall].
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, text):
    with open(os.path.join(HERE, name), "w") as f:
        f.write(text)


MAPS = """\
MAPPED_LIBRARIES:
00400000-00452000 r-xp 00000000 08:01 131090     /usr/bin/server
00651000-00652000 rw-p 00051000 08:01 131090     /usr/bin/server
7f2a3c000000-7f2a3c100000 r-xp 00000000 08:01 262161     /lib/x86_64-linux-gnu/libc-2.31.so
7f2a3c100000-7f2a3c1bd000 r-xp 00100000 08:01 262161     /lib/x86_64-linux-gnu/libc-2.31.so
7f2a3c3bd000-7f2a3c3c1000 rw-p 001bd000 08:01 262161     /lib/x86_64-linux-gnu/libc-2.31.so
7ffd5a7f0000-7ffd5a7f2000 r-xp 00000000 00:00 0          [vdso]
"""

write("gperftools.heap", """\
heap profile:    6:   110592 [    15:   249856] @ heapprofile
     2:    65536 [     4:   131072] @ 0x00000000004005d1 0x0000000000400612 0x00007f2a3c021b45
     3:    12288 [     6:    24576] @ 0x00000000004005e9 0x0000000000400612 0x00007f2a3c021b45

# a comment line, then a blank one
     1:    32768 [     3:    90112] @ 0x00007f2a3c150123 0x0000000000400700 0x00007f2a3c021b45
     0:        0 [     1:     4096] @ 0x00007ffd5a7f0a10 0x0000000000400612
     0:        0 [     1:       16] @ 0x0000123456789abc
""" + MAPS)

write("heap_v2.heap", """\
heap profile:   13:  4261888 [   121:  4413600] @ heap_v2/524288
     1:  4194304 [     1:  4194304] @ 0x4005d1 0x400612
    10:    65536 [    40:   262144] @ 0x4005e9 0x400612
     2:     2048 [    50:    51200] @ 0x400700 0x400612
     0:        0 [    30:      480] @ 0x400710 0x400612
""" + MAPS)

write("go_heap.heap", """\
heap profile: 4: 266528 [123: 11284472] @ heap/1048576
1: 262144 [4: 376832] @ 0x28d9f 0x2a201 0x2a28a 0x2624d 0x26188 0x94ca3 0x94a0b 0x17add6 0x17ab1f 0x1e5d9
#	0x28d9f	runtime.mallocgc+0x17f	/usr/local/go/src/runtime/malloc.go:1015
#	0x2a201	runtime.makeslice+0x71	/usr/local/go/src/runtime/slice.go:83

1: 2048 [8: 16384] @ 0x2a201 0x17ab1f 0x1e5d9
#	0x2a201	runtime.makeslice+0x71	/usr/local/go/src/runtime/slice.go:83

2: 2336 [111: 10891256] @ 0x94ca3 0x1e5d9

# runtime.MemStats
# Alloc = 266528
""")

write("inuse_only.heap", """\
heap profile:    3:     3072 [     3:     3072] @ heapprofile
     1:     1024 [     1:     1024] @ 0x00000000004005d1 0x0000000000400612
     2:     2048 [     2:     2048] @ 0x00000000004005e9 0x0000000000400612
""" + MAPS)

write("brief_maps.heap", """\
heap profile:    4:   12288 [     4:   12288] @ heapz_v2/524288
     1:     9216 [     1:     9216] @ 0xc635c8 0x42ecc3 0x7f47a4b80123
     3:     3072 [     3:     3072] @ 0x7f47a5430010 0x42ecc3 0xc635c8
--- Memory map: ---
\tsource=/home
  00400000-00fcb000: $source/server_main
  7f47a4b73000-7f47a4d21000: /lib/libc-2.15.so (@1000)
  7f47a542f000-7f47a5447000: /lib/libpthread-2.15.so
  7fff63dfe000-7fff63e00000: [vdso]
  ffffffffff600000-ffffffffff601000: [vsyscall]
""")
