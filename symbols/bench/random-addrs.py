#!/usr/bin/env python3
"""Prints N random addresses (hex, one per line) inside FUNC symbols of the
benchmark library built by build-sqlite.sh. Deterministic: a fixed seed, and
functions are taken in address order, so the same library gives the same list.

    python3 symbols/bench/random-addrs.py N [LIBRARY] [--seed S]

LIBRARY defaults to target/bench/libsqlite3.so. Each address is drawn by first
choosing a function uniformly among the FUNC symbols of size > 0 in .symtab
(aliases at the same address counted once), then an offset uniformly in
[0, size). Needs only binutils readelf and the Python standard library.
"""

import argparse
import os
import random
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..'))


def func_ranges(path):
  out = subprocess.run(['readelf', '-sW', path], capture_output=True, text=True, check=True).stdout
  table, ranges = None, set()
  for line in out.splitlines():
    m = re.match(r"Symbol table '(\.\w+)'", line)
    if m:
      table = m.group(1)
      continue
    f = line.split()
    if table != '.symtab' or len(f) < 8 or not f[0].endswith(':'):
      continue
    if f[3] != 'FUNC' or f[6] == 'UND':
      continue
    size = int(f[2], 16) if f[2].startswith('0x') else int(f[2])
    if size > 0:
      ranges.add((int(f[1], 16), size))
  return sorted(ranges)


def main():
  ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  ap.add_argument('n', type=int)
  ap.add_argument('library', nargs='?', default=os.path.join(REPO, 'target', 'bench', 'libsqlite3.so'))
  ap.add_argument('--seed', type=int, default=20260801)
  args = ap.parse_args()
  if not os.path.exists(args.library):
    sys.exit('random-addrs.py: %s missing; run: bash symbols/bench/build-sqlite.sh' % args.library)
  ranges = func_ranges(args.library)
  if not ranges:
    sys.exit('random-addrs.py: no FUNC symbols with size > 0 in .symtab of %s' % args.library)
  rng = random.Random(args.seed)
  out = sys.stdout
  for _ in range(args.n):
    start, size = ranges[rng.randrange(len(ranges))]
    out.write('0x%x\n' % (start + rng.randrange(size)))


if __name__ == '__main__':
  main()
