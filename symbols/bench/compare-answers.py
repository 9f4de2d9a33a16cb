#!/usr/bin/env python3
"""Compares two symbolizers' answers, given as JSON lines shaped like
`llvm-symbolizer --output-style=JSON` (one line per address, same order):

    python3 symbols/bench/compare-answers.py REFERENCE.jsonl CANDIDATE.jsonl [--show N]

Per address, the list of (FunctionName, FileName, Line), innermost inline frame
first, must be equal. Normalized first: llvm-symbolizer 14 writes `??`,
`<invalid>` or "" for an unknown function or file and 0 for an unknown line,
and answers an unknown address with one all-empty frame; heapconv writes "",
0 and an empty list. So unknown names and files become "", and frames with no
function, no file and line 0 are dropped. Columns are not compared.

Prints the number of identical and differing addresses and the first N
differences (default 5); exits 1 when any address differs.
"""

import argparse
import json
import sys

UNKNOWN = {'??', '<invalid>', ''}


def norm(s):
  return '' if s is None or s in UNKNOWN else s


def frames(doc):
  out = []
  for f in doc.get('Symbol', []):
    t = (norm(f.get('FunctionName')), norm(f.get('FileName')), int(f.get('Line') or 0))
    if t != ('', '', 0):
      out.append(t)
  return out


def load(path):
  with open(path) as f:
    return [json.loads(line) for line in f if line.strip()]


def main():
  ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
  ap.add_argument('reference')
  ap.add_argument('candidate')
  ap.add_argument('--show', type=int, default=5)
  ap.add_argument('--names', default='reference,candidate', help='labels for the two files')
  args = ap.parse_args()
  ref_name, cand_name = args.names.split(',')
  ref, cand = load(args.reference), load(args.candidate)
  if len(ref) != len(cand):
    sys.exit('compare-answers.py: %d answers in %s, %d in %s' % (len(ref), args.reference, len(cand), args.candidate))
  same, diffs = 0, []
  kinds = {}
  for r, c in zip(ref, cand):
    if int(r['Address'], 16) != int(c['Address'], 16):
      sys.exit('compare-answers.py: addresses out of step: %s vs %s' % (r['Address'], c['Address']))
    fr, fc = frames(r), frames(c)
    if fr == fc:
      same += 1
      continue
    diffs.append((r['Address'], fr, fc))
    # A rough classification, to say what kind of difference dominates.
    if len(fr) != len(fc):
      k = 'inline depth'
    elif [x[0] for x in fr] != [x[0] for x in fc]:
      k = 'function name'
    elif [x[1] for x in fr] != [x[1] for x in fc]:
      k = 'file'
    else:
      k = 'line'
    kinds[k] = kinds.get(k, 0) + 1
  total = len(ref)
  print('%d of %d addresses identical, %d differ' % (same, total, len(diffs)))
  if kinds:
    print('differences by kind (first differing field): ' + ', '.join('%s %d' % kv for kv in sorted(kinds.items())))
  for addr, fr, fc in diffs[:args.show]:
    print('  %s' % addr)
    print('    %-10s %s' % (ref_name, fr))
    print('    %-10s %s' % (cand_name, fc))
  return 1 if diffs else 0


if __name__ == '__main__':
  sys.exit(main())
