#!/usr/bin/env python3
"""Writes a heapprofd trace (Perfetto textproto) whose native frames are N
distinct random addresses in the benchmark library (target/bench/libsqlite3.so,
built by build-sqlite.sh), for the whole-trace symbolization benchmark:

    python3 symbols/bench/make-sqlite-trace.py OUT.textproto OUT.addrs [--frames 15000]
    target/oracle-venv/bin/python ../shared/tools/perfetto_encode.py OUT.textproto OUT.pftrace
    heapconv symbolize OUT.pftrace --symbol-dir target/bench -o symbols.pb

OUT.addrs gets the same addresses (hex, one per line, in frame order), the
input for llvm-symbolizer on exactly what `traceconv symbolize` would look up.

Layout (as tests/data/symbolize/*.textproto, which heapconv accepts): a
ProcessTree and a ClockSnapshot; one sequence whose first packet has
`sequence_flags: 1` (SEQ_INCREMENTAL_STATE_CLEARED) and interns "" at iid 0 in
build_ids / mapping_paths / function_names; one dump = a ProfilePacket
`continued: true` with the samples and the InternedData (raw 20-byte build id,
path components, one mapping, frames without names, callstacks), closed by an
empty ProfilePacket `continued: false`.

Mapping geometry, as heapprofd reports the executable segment of a library
loaded at `base`: start = base + align_down(p_vaddr of the exec PT_LOAD, 4 KiB),
end = start + align_up(p_memsz, 4 KiB), exact_offset = align_down(p_offset,
4 KiB), start_offset 0, load_bias 0. With p_vaddr == p_offset (as gcc/ld lay
out this library) traceconv's load-bias correction is 0, so rel_pc = ELF
virtual address and every frame must symbolize.

Frames are drawn as random-addrs.py draws them (same seed: a random function,
then a random offset in it), skipping repeats until N distinct addresses; they
are chained into callstacks of DEPTH frames (each frame used once), one sample
per callstack. Deterministic. Python 3 standard library + binutils readelf.
"""

import argparse
import importlib.util
import os
import random
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..'))
PAGE = 0x1000
BASE = 0x7a3c00000000  # where the library is "loaded"; any page-aligned value works
MAPPING_PATH = ['data', 'app', 'x', 'lib', 'arm64', 'libsqlite3.so']

_spec = importlib.util.spec_from_file_location('random_addrs', os.path.join(HERE, 'random-addrs.py'))
random_addrs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(random_addrs)


def align_down(x, a):
  return x - x % a


def align_up(x, a):
  return align_down(x + a - 1, a)


def build_id(path):
  out = subprocess.run(['readelf', '-nW', path], capture_output=True, text=True, check=True).stdout
  m = re.search(r'Build ID:\s*([0-9a-f]+)', out)
  if not m:
    sys.exit('make-sqlite-trace.py: no build id in %s' % path)
  return m.group(1)


def exec_load(path):
  """(p_offset, p_vaddr, p_memsz) of the first executable PT_LOAD."""
  out = subprocess.run(['readelf', '-lW', path], capture_output=True, text=True, check=True).stdout
  for line in out.splitlines():
    f = line.split()
    if f and f[0] == 'LOAD' and 'E' in f[6:-1]:
      return int(f[1], 16), int(f[2], 16), int(f[5], 16)
  sys.exit('make-sqlite-trace.py: no executable PT_LOAD in %s' % path)


def esc(b):
  return ''.join('\\x%02x' % c for c in b)


def main():
  ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  ap.add_argument('textproto')
  ap.add_argument('addrs')
  ap.add_argument('--frames', type=int, default=15000)
  ap.add_argument('--depth', type=int, default=10)
  ap.add_argument('--library', default=os.path.join(REPO, 'target', 'bench', 'libsqlite3.so'))
  ap.add_argument('--seed', type=int, default=20260801)
  ap.add_argument('--callstacks', type=int, default=0,
                  help='mixed shape: this many callstacks of DEPTH frames sharing prefixes, drawn from the '
                       'library\'s frames and --other-frames frames in --other-mappings mappings with no '
                       'symbol file (issue 15: 44000 callstacks, depth 30, 45300 other frames, 3 mappings)')
  ap.add_argument('--other-frames', type=int, default=0)
  ap.add_argument('--other-mappings', type=int, default=3)
  args = ap.parse_args()
  if not os.path.exists(args.library):
    sys.exit('make-sqlite-trace.py: %s missing; run: bash symbols/bench/build-sqlite.sh' % args.library)

  ranges = random_addrs.func_ranges(args.library)
  rng = random.Random(args.seed)
  seen, addrs = set(), []
  while len(addrs) < args.frames:
    start, size = ranges[rng.randrange(len(ranges))]
    a = start + rng.randrange(size)
    if a not in seen:
      seen.add(a)
      addrs.append(a)

  bid = bytes.fromhex(build_id(args.library))
  p_offset, p_vaddr, p_memsz = exec_load(args.library)
  start = BASE + align_down(p_vaddr, PAGE)
  end = start + align_up(p_memsz, PAGE)
  exact_offset = align_down(p_offset, PAGE)

  nstacks = (len(addrs) + args.depth - 1) // args.depth
  # Mixed shape: frames of other mappings (no symbol file) and callstacks sharing prefixes.
  others = []  # (mapping iid, rel_pc)
  for k in range(args.other_frames):
    others.append((2 + k % args.other_mappings, 0x1000 + 4 * k))
  stacks = None
  if args.callstacks:
    nstacks = args.callstacks
    nframes = len(addrs) + len(others)
    share = args.depth * 3 // 8
    prefixes = [[rng.randrange(nframes) + 1 for _ in range(share)] for _ in range(64)]
    stacks = []
    for cs in range(nstacks):
      p = prefixes[cs % len(prefixes)]
      cut = share - rng.randrange(4)
      stacks.append(p[:cut] + [rng.randrange(nframes) + 1 for _ in range(args.depth - cut)])
  o = []
  w = o.append
  w('# heapconv symbolization benchmark trace (symbols/bench/make-sqlite-trace.py): %d distinct frames\n'
    % len(addrs))
  w('# in %s (build id %s), %d callstacks of depth %d. Frames carry no names.\n'
    % ('/' + '/'.join(MAPPING_PATH), bid.hex(), nstacks, args.depth))
  w('packet { timestamp: 1000 process_tree { processes { pid: 4242 ppid: 1 uid: 10042 '
    'cmdline: "com.example.sqlitebench" } } }\n')
  w('packet { timestamp: 1000 clock_snapshot { clocks { clock_id: 6 timestamp: 1000 } '
    'clocks { clock_id: 4 timestamp: 1000 } primary_trace_clock: BUILTIN_CLOCK_BOOTTIME } }\n')
  w('packet {\n  trusted_packet_sequence_id: 5\n  trusted_pid: 612\n  timestamp: 1500\n'
    '  sequence_flags: 1  # SEQ_INCREMENTAL_STATE_CLEARED\n  interned_data {\n'
    '    build_ids { iid: 0 str: "" }\n    mapping_paths { iid: 0 str: "" }\n'
    '    function_names { iid: 0 str: "" }\n  }\n}\n')
  w('packet {\n  trusted_packet_sequence_id: 5\n  trusted_pid: 612\n  timestamp: 5000\n'
    '  profile_packet {\n    index: 0\n    continued: true\n    process_dumps {\n'
    '      pid: 4242\n      heap_name: "libc.malloc"\n      sampling_interval_bytes: 4096\n'
    '      orig_sampling_interval_bytes: 4096\n      timestamp: 5000\n')
  for cs in range(1, nstacks + 1):
    n = 1 + cs % 7
    w('      samples { callstack_id: %d self_allocated: %d self_freed: %d alloc_count: %d free_count: %d }\n'
      % (cs, 4096 * n, 4096 * (n // 2), n, n // 2))
  w('    }\n  }\n  interned_data {\n')
  w('    build_ids { iid: 1 str: "%s" }  # %s\n' % (esc(bid), bid.hex()))
  for i, comp in enumerate(MAPPING_PATH, 1):
    w('    mapping_paths { iid: %d str: "%s" }\n' % (i, comp))
  w('    mappings { iid: 1 build_id: 1 %s start: 0x%x end: 0x%x start_offset: 0x0 exact_offset: 0x%x '
    'load_bias: 0x0 }\n' % (' '.join('path_string_ids: %d' % i for i in range(1, len(MAPPING_PATH) + 1)),
                            start, end, exact_offset))
  for k in range(args.other_mappings if others else 0):
    bid_k = bytes([0xb0 + k]) * 20
    w('    build_ids { iid: %d str: "%s" }\n' % (2 + k, esc(bid_k)))
    w('    mapping_paths { iid: %d str: "libother%d.so" }\n' % (100 + k, k))
    w('    mappings { iid: %d build_id: %d path_string_ids: %d start: 0x%x end: 0x%x '
      'start_offset: 0x0 exact_offset: 0x0 load_bias: 0x0 }\n'
      % (2 + k, 2 + k, 100 + k, 0x10000000 * (k + 1), 0x10000000 * (k + 1) + 0x1000000))
  for i, a in enumerate(addrs, 1):
    w('    frames { iid: %d function_name_id: 0 mapping_id: 1 rel_pc: 0x%x }\n' % (i, a))
  for i, (m, a) in enumerate(others, len(addrs) + 1):
    w('    frames { iid: %d function_name_id: 0 mapping_id: %d rel_pc: 0x%x }\n' % (i, m, a))
  for cs in range(nstacks):
    if stacks:
      ids = stacks[cs]
    else:
      ids = range(cs * args.depth + 1, min((cs + 1) * args.depth, len(addrs)) + 1)
    w('    callstacks { iid: %d %s }\n' % (cs + 1, ' '.join('frame_ids: %d' % i for i in ids)))
  w('  }\n}\n')
  w('packet {\n  trusted_packet_sequence_id: 5\n  trusted_pid: 612\n  timestamp: 5000\n'
    '  profile_packet { index: 1 continued: false }\n}\n')

  with open(args.textproto, 'w') as f:
    f.write(''.join(o))
  with open(args.addrs, 'w') as f:
    f.write(''.join('0x%x\n' % a for a in addrs))
  print('wrote %s: %d frames, %d callstacks, mapping 0x%x-0x%x exact_offset 0x%x, build id %s'
        % (args.textproto, len(addrs), nstacks, start, end, exact_offset, bid.hex()))


if __name__ == '__main__':
  main()
