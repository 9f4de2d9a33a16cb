#!/usr/bin/env python3
"""Writes the heapprofd traces of tests/data/symbolize/ (as .textproto), their
expectations (expected.json) and README.md, from ../../../symbols/truth.json.

    python3 tests/data/symbolize/make_traces.py      # (regen.sh runs it, then encodes)

Python 3 standard library only; every number comes from symbols/truth.json
(ELF facts and llvm-symbolizer answers), so rebuilding the store
(symbols/build.sh + symbols/make_truth.py) and re-running this keeps traces and
expectations consistent.

Geometry of a mapping, as heapprofd/libunwindstack would report the executable
segment of a library loaded so that its ELF vaddr V is at runtime address
base + V (base = the library's load address minus its first p_vaddr):
  start        = base + align_down(p_vaddr, 4 KiB) of the first executable PT_LOAD
  end          = start + align_up(p_memsz, 4 KiB)
  exact_offset = apk_offset + p_offset          (file offset of this mapping)
  start_offset = apk_offset                     (file offset of the ELF; 0 unless in an APK)
  load_bias    = p_vaddr - p_offset             (libunwindstack; 0x200000 for liboffset.so)
  rel_pc       = pc - start + (exact_offset - start_offset) + load_bias = ELF vaddr
A mapping may override load_bias / exact_offset to imitate perf-style or
Android 10 traces; its rel_pcs are then (ELF vaddr - correction) where
correction is traceconv's §4.2 load-bias fix, so that the corrected address is
again the truth address.
"""

import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..', '..'))
SYM = os.path.join(REPO, 'symbols')

with open(os.path.join(SYM, 'truth.json')) as f:
  TRUTH = json.load(f)
B = TRUTH['binaries']

PAGE = 0x1000
UNKNOWN_BUILD_ID = hashlib.sha1(b'heapconv: a build id that matches no file').hexdigest()


def align_down(x, a):
  return x - x % a if a else x


def align_up(x, a):
  return align_down(x + a - 1, a)


# ---- truth lookups ------------------------------------------------------------------

def func(binary, name):
  for f in B[binary]['functions']:
    if name in f['names'] or name in f['demangled']:
      return f
  raise KeyError((binary, name))


def addr_entry(binary, name, kind, callee=None, nth=0):
  f = func(binary, name)
  hits = [a for a in f['addresses'] if a['kind'] == kind and
          (callee is None or a.get('callee') == callee)]
  if len(hits) <= nth:
    raise KeyError((binary, name, kind, callee))
  return hits[nth]


def find_entry(binary, address):
  for f in B[binary]['functions']:
    for a in f['addresses']:
      if a['address'] == address:
        return f, a
  raise KeyError((binary, hex(address)))


# ---- the symbol store, for lookup expectations ------------------------------------------

def store_files():
  """relative path (to REPO) -> hex build id, for every ELF file of the store."""
  files = {}
  for b in B.values():
    files[os.path.join('symbols', b['path'])] = b['build_id']
    if b['debug_file']:
      files[os.path.join('symbols', b['debug_file'])] = b['build_id']
  return files


FILES = store_files()


def find_mode(path, build_id_hex, roots):
  """traceconv 'find' mode: first candidate whose build id matches (§4.1)."""
  if not build_id_hex:
    return None
  parts = [p for p in path.split('/') if p]
  dirname, filename = '/'.join(parts[:-1]), parts[-1]
  apk = 'base.apk!'
  for root in roots:
    cands = [os.path.join(root, dirname, filename)]
    if filename.startswith(apk):
      cands.append(os.path.join(root, dirname, filename[len(apk):]))
    cands.append(os.path.join(root, filename))
    if filename.startswith(apk):
      cands.append(os.path.join(root, filename[len(apk):]))
    cands.append(os.path.join(root, '.build-id', build_id_hex[:2], build_id_hex[2:] + '.debug'))
    for c in cands:
      c = os.path.normpath(c)
      if FILES.get(c) == build_id_hex:
        return c
  return None


def index_mode(build_id_hex, root='symbols'):
  """traceconv 'index' mode: every file under root with that build id (the walk
  order decides which one wins when there are several)."""
  if not build_id_hex:
    return []
  return sorted(p for p, b in FILES.items() if b == build_id_hex and p.startswith(root + '/'))


# ---- mappings and frames ----------------------------------------------------------------

class Mapping:
  def __init__(self, binary, path, base, apk_offset=0, load_bias=None, exact_offset=None,
               build_id_hex=None, note=''):
    self.binary = binary
    self.path = path
    self.note = note
    self.exact_offset_unset = False
    if binary is None:  # a mapping outside the store
      self.build_id = build_id_hex or ''
      self.start, self.end = base, base + 0xf6000
      self.exact_offset, self.start_offset, self.load_bias = 0x4a000, 0, 0
      self.elf_load_bias = 0
      self.correction = 0
      return
    b = B[binary]
    fx = b['first_exec_load']
    self.build_id = b['build_id'] if build_id_hex is None else build_id_hex
    self.start = base + align_down(fx['p_vaddr'], PAGE)
    self.end = self.start + align_up(fx['p_memsz'], PAGE)
    self.start_offset = apk_offset
    self.exact_offset = apk_offset + fx['p_offset'] if exact_offset is None else exact_offset
    # exact_offset=0 imitates Android 10, which did not set the field at all.
    self.exact_offset_unset = exact_offset == 0
    self.elf_load_bias = fx['p_vaddr'] - fx['p_offset']
    self.load_bias = self.elf_load_bias if load_bias is None else load_bias
    # traceconv §4.2 (ComputeUserSpaceAddressCorrection), with the found file's
    # first executable PT_LOAD (p_vaddr, p_align are the same in a debug file).
    p_align = fx['p_align'] or 1
    off = self.exact_offset - self.start_offset
    real = align_down(fx['p_vaddr'], p_align) - align_down(off, p_align)
    self.correction = real - self.load_bias if real > self.load_bias else 0

  def components(self):
    return [p for p in self.path.split('/') if p]


class Frame:
  def __init__(self, mapping, vaddr=None, rel_pc=None, what=''):
    self.mapping = mapping
    self.what = what
    if vaddr is not None:
      self.vaddr = vaddr
      self.rel_pc = vaddr - mapping.correction
    else:
      self.vaddr = None
      self.rel_pc = rel_pc


def ret(m, fname, callee, nth=0):
  """Frame at the return address after `fname`'s call to `callee`."""
  a = addr_entry(m.binary, fname, 'return', callee, nth)
  return Frame(m, a['address'], what='%s: return address after call to %s' % (fname, callee))


def at(m, fname, kind):
  a = addr_entry(m.binary, fname, kind)
  return Frame(m, a['address'], what='%s: %s' % (fname, kind))


def ext(m, rel_pc, what):
  return Frame(m, rel_pc=rel_pc, what=what)


# ---- trace definitions ----------------------------------------------------------------

def trace_basic():
  app = Mapping('app-pie', '/system/bin/app-pie', 0x5e1f0a400000)
  wid = Mapping('libwidget.so', '/data/app/com.example-1/lib/arm64/libwidget.so', 0x7a3c10200000)
  gad = Mapping('libgadget.so', '/system/lib64/libgadget.so', 0x7a3c10600000,
                note='stripped; DWARF via .gnu_debuglink in symbols/.debug/')
  reg = Mapping('libregistry.so', '/vendor/lib64/libregistry.so', 0x7a3c10a00000,
                note='only in symbols/buildid-tree/.build-id/')
  libc = Mapping(None, '/apex/com.android.runtime/lib64/bionic/libc.so', 0x7b5a0004a000,
                 build_id_hex=UNKNOWN_BUILD_ID, note='build id matches no file')
  plug = Mapping(None, '/data/local/tmp/libplugin.so', 0x7c0000001000, build_id_hex='',
                 note='empty build id: never symbolized')
  plug.exact_offset, plug.end = 0x1000, 0x7c0000003000
  malloc, calloc, realloc, strdup = (ext(libc, 0x4a2b0, 'libc malloc'),
                                     ext(libc, 0x4a6f0, 'libc calloc'),
                                     ext(libc, 0x4a9c0, 'libc realloc'),
                                     ext(libc, 0x5c140, 'libc strdup'))
  main_run = ret(app, 'main', '_ZN3app7Session3runEv')
  run_wd = ret(app, '_ZN3app7Session3runEv', 'widget_demo')
  run_gr = ret(app, '_ZN3app7Session3runEv', 'gadget_run')
  plug1, plug2 = ext(plug, 0x1a2c, 'libplugin (no build id)'), ext(plug, 0x1b40, 'libplugin (no build id)')
  stacks = [
      ('widget_new mallocs the struct',
       [main_run, run_wd, ret(wid, 'widget_demo', 'widget_new'), ret(wid, 'widget_new', 'malloc'), malloc]),
      ('widget_new callocs the buffer (malloc+memset of inline widget_alloc_zeroed became calloc)',
       [main_run, run_wd, ret(wid, 'widget_demo', 'widget_new'), ret(wid, 'widget_new', 'calloc'), calloc]),
      ('widget_append grows with realloc inside inline widget_grow',
       [main_run, run_wd, ret(wid, 'widget_demo', 'widget_append'), ret(wid, 'widget_append', 'realloc'),
        realloc]),
      ('gadget Arena: allocate -> new_block -> operator new',
       [main_run, run_gr, ret(gad, 'gadget_run', '_ZN6gadget5Arena8allocateEm'),
        ret(gad, '_ZN6gadget5Arena8allocateEm', '_ZN6gadget5Arena9new_blockEm'),
        ret(gad, '_ZN6gadget5Arena9new_blockEm', '_Znwm'), malloc]),
      ('gadget Ring<int>::grow -> operator new[] (via inline push in fill_rings)',
       [main_run, run_gr, ret(gad, 'gadget_run', 'fill_rings'),
        ret(gad, '_ZN6gadget12_GLOBAL__N_110fill_ringsERNS_4RingIiEERNS1_IdEEi', '_ZN6gadget4RingIiE4growEv'),
        ret(gad, '_ZN6gadget4RingIiE4growEv', '_Znam'), malloc]),
      ('app: std::vector<std::string>::push_back reallocates',
       [main_run, ret(app, '_ZN3app7Session3runEv',
                      '_ZNSt6vectorINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESaIS5_EE17_M_realloc_insertIJS5_EEEvN9__gnu_cxx17__normal_iteratorIPS5_S7_EEDpOT_'),
        ret(app, '_ZNSt6vectorINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESaIS5_EE17_M_realloc_insertIJS5_EEEvN9__gnu_cxx17__normal_iteratorIPS5_S7_EEDpOT_', '_Znwm'),
        malloc]),
      ('registry (debug file only in the .build-id tree), called from a plugin without build id',
       [plug1, plug2, ret(reg, 'reg_demo', 'reg_put'), ret(reg, 'reg_put', 'malloc'), malloc]),
      ('registry strdup',
       [plug1, plug2, ret(reg, 'reg_demo', 'reg_put'), ret(reg, 'reg_put', 'strdup'), strdup]),
      # Probes: synthetic leaf frames at function starts and inside inlined code.
      ('probe: function starts', [at(app, 'main', 'start'), at(wid, 'widget_new', 'start'),
                                  at(gad, 'gadget_run', 'start'), at(reg, 'reg_put', 'start')]),
      ('probe: 3-deep inline chain in libwidget (widget_new -> widget_alloc_zeroed -> widget_round_capacity)',
       [main_run, run_wd, at(wid, 'widget_new', 'inline')]),
      ('probe: inline chains in libgadget (Arena::allocate -> bump -> align_up; gadget_run 12 deep)',
       [main_run, run_gr, at(gad, 'gadget_run', 'inline'), at(gad, '_ZN6gadget5Arena8allocateEm', 'inline')]),
      ('probe: 4-deep inline chain in libregistry',
       [plug1, at(reg, 'reg_put', 'inline')]),
      ('probe: compiler clones (.cold, .isra.0) and middle/last bytes',
       [at(app, 'main.cold', 'start'), at(gad, 'gadget_run.cold', 'inline'),
        at(gad, '_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE12_M_constructIPcEEvT_S7_St20forward_iterator_tag.isra.0', 'start'),
        at(wid, 'widget_describe', 'middle'), at(wid, 'widget_demo', 'last')]),
      ('probe: return address one past the end of a function (noreturn call), lands in _fini',
       [main_run, Frame(app, [a for a in func(app.binary, '_ZNSt6vectorINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESaIS5_EE17_M_realloc_insertIJS5_EEEvN9__gnu_cxx17__normal_iteratorIPS5_S7_EEDpOT_')['addresses'] if a.get('past_end')][0]['address'],
                        what='_M_realloc_insert: return address after noreturn __throw_length_error (past end)')]),
  ]
  return dict(name='sym_basic', pid=4242, cmdline='/system/bin/app-pie', seq=5, producer_pid=612,
              mappings=[app, wid, gad, reg, libc, plug], stacks=stacks,
              about='PIE executable + unstripped, stripped(+debuglink) and build-id-tree libraries; '
                    'one mapping with an unknown build id (libc), one with an empty build id.')


def trace_apk_nopie():
  app = Mapping('app-nopie', '/system/bin/app-nopie', 0, note='non-PIE, load bias 0x400000')
  wid = Mapping('libwidget.so', '/data/app/com.example-1/base.apk!libwidget.so', 0x7d2a00000000,
                apk_offset=0x1e000, note='uncompressed in the APK at file offset 0x1e000')
  gad = Mapping('libgadget.so', '/system/lib64/libgadget.so', 0x7d2a00400000)
  libc = Mapping(None, '/apex/com.android.runtime/lib64/bionic/libc.so', 0x7b5a0004a000,
                 build_id_hex=UNKNOWN_BUILD_ID, note='build id matches no file')
  malloc = ext(libc, 0x4a2b0, 'libc malloc')
  main_run = ret(app, 'main', '_ZN3app7Session3runEv')
  run_wd = ret(app, '_ZN3app7Session3runEv', 'widget_demo')
  run_gr = ret(app, '_ZN3app7Session3runEv', 'gadget_run')
  stacks = [
      ('widget_describe mallocs (library mapped from base.apk)',
       [main_run, run_wd, ret(wid, 'widget_demo', 'widget_describe'), ret(wid, 'widget_describe', 'malloc'),
        malloc]),
      ('Registry::intern -> std::vector<std::string>::_M_realloc_insert -> operator new',
       [main_run, run_gr,
        ret(gad, 'gadget_run', '_ZN6gadget8Registry6internERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE'),
        ret(gad, '_ZN6gadget8Registry6internERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE',
            '_ZNSt6vectorINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESaIS5_EE17_M_realloc_insertIJRKS5_EEEvN9__gnu_cxx17__normal_iteratorIPS5_S7_EEDpOT_'),
        ret(gad, '_ZNSt6vectorINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESaIS5_EE17_M_realloc_insertIJRKS5_EEEvN9__gnu_cxx17__normal_iteratorIPS5_S7_EEDpOT_', '_Znwm'),
        malloc]),
      ('app-nopie: Session constructor new[] (inline chain in main via make_unique)',
       [ret(app, 'main', '_Znam'), malloc]),
      ('probe: non-PIE starts and inline chains',
       [at(app, 'main', 'start'), at(app, '_ZN3app7Session3runEv', 'inline'),
        at(app, '_ZN3app12_GLOBAL__N_16repeatIZNS_7Session3runEvEUliE_EEiiT_', 'inline'),
        at(wid, 'widget_append', 'inline')]),
  ]
  return dict(name='sym_apk_nopie', pid=5151, cmdline='com.example.apk', seq=6, producer_pid=613,
              mappings=[app, wid, gad, libc], stacks=stacks,
              about='non-PIE executable (load bias 0x400000) and a library mapped straight from '
                    'an APK (`base.apk!libwidget.so`, start_offset 0x1e000, exact_offset 0x1f000).')


def offset_stacks(off, app, libc):
  malloc, calloc, realloc = (ext(libc, 0x4a2b0, 'libc malloc'), ext(libc, 0x4a6f0, 'libc calloc'),
                             ext(libc, 0x4a9c0, 'libc realloc'))
  main_run = ret(app, 'main', '_ZN3app7Session3runEv')
  return [
      ('off_put_varint reallocs inside a 3-deep inline chain',
       [main_run, ret(off, 'off_demo', 'off_put_varint'), ret(off, 'off_put_varint', 'realloc'), realloc]),
      ('off_new callocs', [main_run, ret(off, 'off_demo', 'off_new'), ret(off, 'off_new', 'calloc'), calloc]),
      ('off_crc_table mallocs (static function)',
       [main_run, ret(off, 'off_demo', 'off_crc32'), ret(off, 'off_crc32', 'off_crc_table'),
        ret(off, 'off_crc_table', 'malloc'), malloc]),
      ('probe: start and 4-deep inline chain',
       [at(off, 'off_new', 'start'), at(off, 'off_put_varint', 'inline')]),
  ]


def trace_load_bias():
  app = Mapping('app-pie', '/system/bin/app-pie', 0x5e1f0a400000)
  off = Mapping('liboffset.so', '/data/app/com.example-1/lib/arm64/liboffset.so', 0x7e0000000000 - 0x200000,
                note='first PT_LOAD at 0x200000; exec PT_LOAD p_offset 0x4000 p_vaddr 0x204000')
  libc = Mapping(None, '/apex/com.android.runtime/lib64/bionic/libc.so', 0x7b5a0004a000,
                 build_id_hex=UNKNOWN_BUILD_ID, note='build id matches no file')
  return dict(name='sym_load_bias', pid=6161, cmdline='/system/bin/app-pie', seq=7, producer_pid=614,
              mappings=[app, off, libc], stacks=offset_stacks(off, app, libc),
              about='liboffset.so with its real load bias 0x200000 (exec PT_LOAD p_offset 0x4000, '
                    'p_vaddr 0x204000): rel_pcs are ELF vaddrs, no correction applies.')


def trace_load_bias_zero():
  app = Mapping('app-pie', '/system/bin/app-pie', 0x5e1f0a400000)
  off = Mapping('liboffset.so', '/data/app/com.example-1/lib/arm64/liboffset.so', 0x7e0000000000 - 0x200000,
                load_bias=0, note='load_bias 0 as in perf-derived or Android 10 traces: correction +0x200000')
  wid = Mapping('libwidget.so', '/data/app/com.example-1/lib/arm64/libwidget.so', 0x7a3c10200000,
                load_bias=0, exact_offset=0,
                note='exact_offset not set (absent, as on Android 10; TP reads 0): correction +0x1000')
  libc = Mapping(None, '/apex/com.android.runtime/lib64/bionic/libc.so', 0x7b5a0004a000,
                 build_id_hex=UNKNOWN_BUILD_ID, note='build id matches no file')
  stacks = offset_stacks(off, app, libc)
  stacks.append(('libwidget with exact_offset unset: widget_new mallocs',
                 [ret(app, 'main', '_ZN3app7Session3runEv'), ret(app, '_ZN3app7Session3runEv', 'widget_demo'),
                  ret(wid, 'widget_demo', 'widget_new'), ret(wid, 'widget_new', 'malloc'),
                  ext(libc, 0x4a2b0, 'libc malloc')]))
  stacks.append(('probe: libwidget inline chain with exact_offset unset', [at(wid, 'widget_new', 'inline')]))
  return dict(name='sym_load_bias_zero', pid=6262, cmdline='/system/bin/app-pie', seq=8, producer_pid=615,
              mappings=[app, off, wid, libc], stacks=stacks,
              about='the §4.2 load-bias correction: liboffset.so with load_bias 0 (rel_pc = vaddr - 0x200000) '
                    'and libwidget.so with exact_offset 0 (rel_pc = vaddr - 0x1000).')


def trace_mismatch():
  wid = Mapping('mismatch/libwidget.so', '/data/app/com.example-1/lib/arm64/libwidget.so', 0x7a3c10200000,
                note='build id of symbols/mismatch/libwidget.so, not of symbols/libwidget.so')
  libc = Mapping(None, '/apex/com.android.runtime/lib64/bionic/libc.so', 0x7b5a0004a000,
                 build_id_hex=UNKNOWN_BUILD_ID, note='build id matches no file')
  stacks = [
      ('mismatch build: widget_demo -> widget_new -> malloc',
       [ret(wid, 'widget_demo', 'widget_new'), ret(wid, 'widget_new', 'malloc'), ext(libc, 0x4a2b0, 'libc malloc')]),
      ('probe: inline chain', [at(wid, 'widget_new', 'inline')]),
  ]
  return dict(name='sym_mismatch', pid=7373, cmdline='com.example.mismatch', seq=9, producer_pid=616,
              mappings=[wid, libc], stacks=stacks,
              about='a libwidget.so mapping whose build id is that of symbols/mismatch/libwidget.so. '
                    'Find mode with root symbols/ must reject symbols/libwidget.so (build id mismatch) '
                    'and find nothing, so no frame is symbolized; the expected lines below apply when '
                    'the binary is found: index mode over symbols/, or find mode with root '
                    'symbols/mismatch (see find_mismatch_dir in expected.json).')


TRACES = [trace_basic, trace_apk_nopie, trace_load_bias, trace_load_bias_zero, trace_mismatch]


# ---- emit ---------------------------------------------------------------------------------

def bytes_literal(hexstr):
  return '"' + ''.join('\\x%02x' % b for b in bytes.fromhex(hexstr)) + '"'


def textproto(t):
  maps = t['mappings']
  # Intern strings: path components, build ids.
  comps, bids = {}, {}
  for m in maps:
    for c in m.components():
      comps.setdefault(c, len(comps) + 1)
    if m.build_id:
      bids.setdefault(m.build_id, len(bids) + 1)
  map_iid = {id(m): i + 1 for i, m in enumerate(maps)}
  frames, frame_iid = [], {}
  callstacks = []
  for _, fr in t['stacks']:
    ids = []
    for f in fr:
      key = (id(f.mapping), f.rel_pc)
      if key not in frame_iid:
        frame_iid[key] = len(frames) + 1
        frames.append(f)
      ids.append(frame_iid[key])
    callstacks.append(ids)
  t['_frame_iid'] = frame_iid
  t['_frames'] = frames
  t['_callstacks'] = callstacks
  t['_map_iid'] = map_iid

  seq, ppid = t['seq'], t['producer_pid']
  L = []
  L.append('# heapconv symbolization fixture %s (generated by make_traces.py from symbols/truth.json;' % t['name'])
  L.append('# see README.md). %s' % t['about'])
  L.append('# Frames carry no function names (function_name_id 0), as in release builds.')
  L.append('packet { timestamp: 1000 process_tree { processes { pid: %d ppid: 1 uid: 10042 cmdline: "%s" } } }'
           % (t['pid'], t['cmdline']))
  L.append('packet { timestamp: 1000 clock_snapshot { clocks { clock_id: 6 timestamp: 1000 } '
           'clocks { clock_id: 4 timestamp: 1000 } primary_trace_clock: BUILTIN_CLOCK_BOOTTIME } }')
  L.append('packet {')
  L.append('  trusted_packet_sequence_id: %d' % seq)
  L.append('  trusted_pid: %d' % ppid)
  L.append('  timestamp: 1500')
  L.append('  sequence_flags: 1  # SEQ_INCREMENTAL_STATE_CLEARED')
  L.append('  interned_data {')
  L.append('    build_ids { iid: 0 str: "" }')
  L.append('    mapping_paths { iid: 0 str: "" }')
  L.append('    function_names { iid: 0 str: "" }')
  L.append('  }')
  L.append('}')
  L.append('packet {')
  L.append('  trusted_packet_sequence_id: %d' % seq)
  L.append('  trusted_pid: %d' % ppid)
  L.append('  timestamp: 5000')
  L.append('  profile_packet {')
  L.append('    index: 0')
  L.append('    continued: true')
  L.append('    process_dumps {')
  L.append('      pid: %d' % t['pid'])
  L.append('      heap_name: "libc.malloc"')
  L.append('      sampling_interval_bytes: 4096')
  L.append('      orig_sampling_interval_bytes: 4096')
  L.append('      timestamp: 5000')
  samples = []
  for i, _ in enumerate(callstacks):
    n = i + 1
    alloc, cnt = 4096 * n, n
    freed, fcnt = 4096 * (n // 2), n // 2
    samples.append((n, alloc, freed, cnt, fcnt))
    L.append('      samples { callstack_id: %d self_allocated: %d self_freed: %d alloc_count: %d free_count: %d }'
             % (n, alloc, freed, cnt, fcnt))
  t['_samples'] = samples
  L.append('    }')
  L.append('  }')
  L.append('  interned_data {')
  for bid, iid in bids.items():
    L.append('    build_ids { iid: %d str: %s }  # %s' % (iid, bytes_literal(bid), bid))
  for c, iid in comps.items():
    L.append('    mapping_paths { iid: %d str: "%s" }' % (iid, c))
  for m in maps:
    fields = ['iid: %d' % map_iid[id(m)], 'build_id: %d' % (bids[m.build_id] if m.build_id else 0)]
    fields += ['path_string_ids: %d' % comps[c] for c in m.components()]
    fields += ['start: 0x%x' % m.start, 'end: 0x%x' % m.end, 'start_offset: 0x%x' % m.start_offset]
    if not m.exact_offset_unset:
      fields.append('exact_offset: 0x%x' % m.exact_offset)
    fields.append('load_bias: 0x%x' % m.load_bias)
    L.append('    mappings { %s }  # %s' % (' '.join(fields), m.path))
  for f in frames:
    L.append('    frames { iid: %d function_name_id: 0 mapping_id: %d rel_pc: 0x%x }  # %s'
             % (frame_iid[(id(f.mapping), f.rel_pc)], map_iid[id(f.mapping)], f.rel_pc, f.what))
  for i, ids in enumerate(callstacks):
    L.append('    callstacks { iid: %d %s }  # %s' % (i + 1, ' '.join('frame_ids: %d' % x for x in ids),
                                                    t['stacks'][i][0]))
  L.append('  }')
  L.append('}')
  L.append('packet {')
  L.append('  trusted_packet_sequence_id: %d' % seq)
  L.append('  trusted_pid: %d' % ppid)
  L.append('  timestamp: 5000')
  L.append('  profile_packet { index: 1 continued: false }')
  L.append('}')
  return '\n'.join(L) + '\n'


def lines_of(symbols, key=None):
  out = []
  for s in symbols:
    name = s['FunctionName']
    if key == 'dwarf' and 'DwarfFunctionName' in s:
      name = s['DwarfFunctionName']
      if not name and not s['FileName']:
        continue  # no DWARF covers the address: a DWARF-only symbolizer finds nothing
    out.append({'function_name': name, 'source_file_name': s['FileName'] or '??',
                'line_number': s['Line']})
  return out


def expectations(t):
  maps = []
  for m in t['mappings']:
    maps.append({
        'iid': t['_map_iid'][id(m)],
        'path': m.path,
        'build_id': m.build_id,
        'start': m.start, 'end': m.end, 'start_offset': m.start_offset,
        'exact_offset': m.exact_offset, 'load_bias': m.load_bias,
        'binary': m.binary,
        'elf_load_bias': m.elf_load_bias,
        'correction': m.correction,
        'find_symbols_and_buildid_tree': find_mode(m.path, m.build_id, ['symbols', 'symbols/buildid-tree']),
        'find_symbols_only': find_mode(m.path, m.build_id, ['symbols']),
        'find_mismatch_dir': find_mode(m.path, m.build_id, ['symbols/mismatch']),
        'index_symbols': index_mode(m.build_id),
        'note': m.note,
    })
  frames = []
  for f in t['_frames']:
    m = f.mapping
    e = {'iid': t['_frame_iid'][(id(m), f.rel_pc)], 'mapping': t['_map_iid'][id(m)],
         'rel_pc': f.rel_pc, 'what': f.what}
    if m.binary is None or not m.build_id:
      e['symbolized'] = False
    else:
      e['symbolized'] = True
      e['address'] = f.rel_pc + m.correction
      fn, a = find_entry(m.binary, e['address'])
      assert e['address'] == f.vaddr
      e['truth'] = {'binary': m.binary, 'function': fn['names'][0], 'kind': a['kind']}
      e['lines'] = lines_of(a['Symbol'])
      dl = lines_of(a['Symbol'], 'dwarf')
      if dl != e['lines']:
        e['dwarf_lines'] = dl
      if 'Symbol_debug_file' in a:
        e['lines_debug_file'] = lines_of(a['Symbol_debug_file'])
    frames.append(e)
  stacks = []
  for i, ids in enumerate(t['_callstacks']):
    n, alloc, freed, cnt, fcnt = t['_samples'][i]
    stacks.append({'iid': i + 1, 'about': t['stacks'][i][0], 'frame_ids_root_first': ids,
                   'self_allocated': alloc, 'self_freed': freed, 'alloc_count': cnt, 'free_count': fcnt})
  return {'about': t['about'], 'pid': t['pid'], 'mappings': maps, 'frames': frames, 'callstacks': stacks}


def fmt_lines(lines):
  return ' ← '.join('%s (%s:%d)' % (l['function_name'], l['source_file_name'], l['line_number'])
                    for l in lines).replace('|', '\\|')


def short(s, n=110):
  return s if len(s) <= n else s[:n - 1] + '…'


def readme(all_exp):
  L = []
  L.append(README_HEAD)
  for name, e in all_exp.items():
    L.append('## `%s`\n' % name)
    L.append(e['about'] + '\n')
    L.append('Process pid %d. Mappings:\n' % e['pid'])
    L.append('| iid | path | build id | start–end | start_offset / exact_offset | load_bias | §4.2 correction | '
             'find (`symbols:symbols/buildid-tree`) | index (`symbols`) |')
    L.append('|---|---|---|---|---|---|---|---|---|')
    for m in e['mappings']:
      L.append('| %d | `%s` | %s | 0x%x–0x%x | 0x%x / 0x%x | 0x%x | %s | %s | %s |' % (
          m['iid'], m['path'], ('`%s`' % m['build_id']) if m['build_id'] else '(empty)',
          m['start'], m['end'], m['start_offset'], m['exact_offset'], m['load_bias'],
          ('+0x%x' % m['correction']) if m['correction'] else '0',
          ('`%s`' % m['find_symbols_and_buildid_tree']) if m['find_symbols_and_buildid_tree'] else 'not found',
          ', '.join('`%s`' % p for p in m['index_symbols']) or 'not found'))
    notes = ['%d: %s' % (m['iid'], m['note']) for m in e['mappings'] if m['note']]
    if notes:
      L.append('\nNotes: ' + '; '.join(notes) + '.\n')
    L.append('Frames (no names in the trace; expected lines innermost first, as llvm-symbolizer / '
             'traceconv give them):\n')
    L.append('| frame | mapping | rel_pc | address looked up | what | expected |')
    L.append('|---|---|---|---|---|---|')
    for f in e['frames']:
      if not f['symbolized']:
        exp = 'not symbolized'
        look = '—'
      else:
        exp = short(fmt_lines(f['lines']), 400)
        if 'dwarf_lines' in f:
          exp += '<br>DWARF names: ' + (short(fmt_lines(f['dwarf_lines']), 300) or
                                        'nothing (no DWARF here; only .symtab knows `_fini`)')
        if 'lines_debug_file' in f:
          exp += '<br>via the .debug file: ' + short(fmt_lines(f['lines_debug_file']), 300)
        look = '0x%x' % f['address']
      L.append('| %d | %d | 0x%x | %s | %s | %s |' % (f['iid'], f['mapping'], f['rel_pc'], look,
                                                     short(f['what'], 90).replace('|', '\\|'), exp))
    L.append('\nCallstacks (frame iids, root first):\n')
    for c in e['callstacks']:
      L.append('* %d: [%s] — %s' % (c['iid'], ', '.join(str(x) for x in c['frame_ids_root_first']), c['about']))
    L.append('')
  return '\n'.join(L) + '\n'


README_HEAD = '''# Symbolization fixtures: heapprofd traces over the test symbol store

Generated by `make_traces.py` from `../../../symbols/truth.json` and encoded by
`regen.sh` (Google's schema via `../../../../shared/tools/perfetto_encode.py`);
do not edit by hand: edit `make_traces.py` and run `bash tests/data/symbolize/regen.sh`.

| file | what |
|---|---|
| `*.textproto` | the traces (heapprofd layout: ClockSnapshot, ProcessTree, a sequence whose first packet has `sequence_flags: 1` and interns `""` at iid 0 in build_ids / mapping_paths / function_names; one dump = a ProfilePacket `continued: true` with the samples **and** the InternedData (build ids as raw bytes, path components, mappings, frames, callstacks), closed by an empty ProfilePacket `continued: false`) |
| `*.pftrace` | the same, encoded |
| `expected.json` | per trace: mappings (with the §4.2 correction and where find/index mode find the binary) and, per frame, the address looked up and the expected lines, innermost first |
| `make_traces.py`, `regen.sh` | generator and encoder driver |

The binaries are x86-64 (see `symbols/README.md`) although the paths look like
Android arm64 ones: symbolization only depends on build ids, paths and ELF
addresses, never on the architecture in the path.

**Symbol paths.** Find mode needs two roots, `symbols:symbols/buildid-tree`,
because `libregistry.so` only exists as `symbols/buildid-tree/.build-id/00/146f….debug`
(find mode looks for `<root>/.build-id/xx/….debug`). Index mode over `symbols`
finds everything (it walks into `.debug/`, `buildid-tree/.build-id/`, `mismatch/`
and must survive the `loop/self -> .` symlink); for `libgadget.so` two files have
the build id (`symbols/libgadget.so`, stripped, and `symbols/.debug/libgadget.so.debug`)
and traceconv keeps the first one its directory walk meets.

**Expected lines.** `lines` is llvm-symbolizer's answer on the file find mode
finds (for `libgadget.so`: the stripped file, whose DWARF llvm-symbolizer reads
through `.gnu_debuglink`), i.e. what `traceconv symbolize` writes into
ModuleSymbols (function name, file, line; an empty file becomes `??`). Two
variants are listed where they differ:

* `dwarf_lines` (README: "DWARF names"): llvm-symbolizer replaces the name of
  the **outermost** frame by the ELF `.symtab` symbol covering the address, so
  compiler clones come out as `main.cold`, `gadget_run.cold`, `f(...) (.isra.0)`.
  A DWARF-only symbolizer (gimli/addr2line) gives the DW_AT_name (`main`,
  `gadget_run`, ...). Either is acceptable; the difference is only that name.
* `lines_debug_file`: the same when llvm-symbolizer is given
  `symbols/.debug/libgadget.so.debug` directly (as index mode may pick it):
  that file has a `.symtab`, so the clone names appear.

**Address looked up** = `rel_pc` + the §4.2 correction of its mapping
(`real_bias = align_down(p_vaddr, p_align) - align_down(exact_offset - start_offset, p_align)`
with the first executable PT_LOAD of the found file; correction = `real_bias - load_bias` if positive).
ModuleSymbols carry the **uncorrected** rel_pc.

The `libc.so` mapping has a build id that matches no file
(`sha1("heapconv: a build id that matches no file")`), the `libplugin.so`
mapping an empty one: their frames stay unsymbolized.

'''


def main():
  all_exp = {}
  for mk in TRACES:
    t = mk()
    tp = textproto(t)
    with open(os.path.join(HERE, t['name'] + '.textproto'), 'w') as f:
      f.write(tp)
    all_exp[t['name']] = expectations(t)
  with open(os.path.join(HERE, 'expected.json'), 'w') as f:
    json.dump({'about': 'Generated by make_traces.py from symbols/truth.json; see README.md.',
               'truth_build_ids': {n: b['build_id'] for n, b in B.items()},
               'traces': all_exp}, f, indent=1)
    f.write('\n')
  with open(os.path.join(HERE, 'README.md'), 'w') as f:
    f.write(readme(all_exp))
  print('wrote %d traces' % len(all_exp))


if __name__ == '__main__':
  main()
