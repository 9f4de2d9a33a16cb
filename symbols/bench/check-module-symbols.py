#!/usr/bin/env python3
"""Checks the ModuleSymbols packets written by `heapconv symbolize` against
llvm-symbolizer's answers (JSON lines, `--output-style=JSON`) for the same
addresses:

    target/oracle-venv/bin/python symbols/bench/check-module-symbols.py SYMBOLS.pb LLVM.jsonl [--show N]

Needs Google's trace schema (PyPI `perfetto` + `protobuf`, as in
target/oracle-venv; `bash .ci/install-oracles.sh`). Per address, the lines
(function_name, source_file_name, line_number), innermost first, are compared
with llvm-symbolizer's (FunctionName, FileName, Line), normalized as
compare-answers.py does (unknown name/file -> "", all-empty frames dropped; a
ModuleSymbols file name of "??" counts as unknown). Exits 1 on any difference
or missing address.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from importlib import import_module  # noqa: E402

try:
  from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pt
except ImportError as e:  # pragma: no cover
  sys.exit('check-module-symbols.py: missing dependency (%s); use target/oracle-venv/bin/python' % e)

cmp = import_module('compare-answers')


def main():
  ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  ap.add_argument('symbols')
  ap.add_argument('llvm')
  ap.add_argument('--show', type=int, default=5)
  args = ap.parse_args()
  trace = pt.Trace()
  with open(args.symbols, 'rb') as f:
    trace.ParseFromString(f.read())
  got = {}
  modules = 0
  for p in trace.packet:
    if not p.HasField('module_symbols'):
      continue
    modules += 1
    for a in p.module_symbols.address_symbols:
      lines = [(cmp.norm(l.function_name), cmp.norm(l.source_file_name), l.line_number) for l in a.lines]
      got[a.address] = [t for t in lines if t != ('', '', 0)]
  ref = cmp.load(args.llvm)
  same, diffs, missing = 0, [], 0
  for r in ref:
    addr = int(r['Address'], 16)
    want = cmp.frames(r)
    have = got.get(addr)
    if have is None:
      missing += 1
      if want:
        diffs.append((r['Address'], want, None))
      continue
    if have == want:
      same += 1
    else:
      diffs.append((r['Address'], want, have))
  print('ModuleSymbols: %d packets, %d addresses; against llvm-symbolizer: %d of %d identical, %d differ, '
        '%d missing' % (modules, len(got), same, len(ref), len(diffs), missing))
  for addr, want, have in diffs[:args.show]:
    print('  %s\n    llvm       %s\n    heapconv   %s' % (addr, want, have))
  return 1 if diffs or missing else 0


if __name__ == '__main__':
  sys.exit(main())
