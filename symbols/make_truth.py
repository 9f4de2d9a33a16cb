#!/usr/bin/env python3
"""Writes symbols/truth.json: what llvm-symbolizer says about addresses in the
test binaries of this symbol store, so tests can compare without llvm-symbolizer.

    python3 symbols/make_truth.py            # rewrite truth.json and the README tables
    python3 symbols/make_truth.py --check    # re-run llvm-symbolizer live, compare, exit 1 on a difference

Needs (Debian 12): llvm-symbolizer, llvm-dwarfdump, llvm-cxxfilt (package llvm,
LLVM 14) and binutils readelf. Python 3 standard library only.

For every binary: ELF facts (type, build id, PT_LOADs, load bias) and, for every
FUNC symbol of size > 0 in .symtab (the debug file's .symtab for stripped
binaries), grouped by (address, size) because C++ constructors/destructors have
aliases (C1/C2, D1/D2):

  * "start":  the symbol value;
  * "middle": start + size // 2 (may fall inside an instruction: line lookup
              does not care);
  * "last":   start + size - 1 (last byte of the last instruction);
  * "inline": the first line-table row address inside the function whose inline
              chain is deepest, if that depth is >= 2 (i.e. some inlined frame);
  * "return": every call-site return address of the function
              (DW_TAG_call_site / DW_AT_call_return_pc), with the callee name:
              what an unwinder reports for a caller frame. "past_end": true
              marks a return address == start + size (noreturn call as last
              instruction): it lies outside the function, as llvm-symbolizer shows.

Each address carries llvm-symbolizer's answer (`--inlines --output-style=JSON
--obj=FILE`), the "Symbol" array verbatim (innermost frame first), plus
"MangledName" when `--no-demangle` gives a different FunctionName.

Toolchain start-up functions without DWARF (_start, _dl_relocate_static_pie in
the executables) are kept and flagged "crt": true; _init, _fini,
frame_dummy, register_tm_clones, ... have size 0 and so are not listed.
"""

import json
import os
import re
import subprocess
import sys

SYM = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(SYM)

CRT_NAMES = {
    '_start', '_dl_relocate_static_pie', '_init', '_fini', 'deregister_tm_clones',
    'register_tm_clones', '__do_global_dtors_aux', 'frame_dummy', '__libc_csu_init',
    '__libc_csu_fini',
}


def registry_debug_path():
  base = os.path.join(SYM, 'buildid-tree', '.build-id')
  found = []
  for d in sorted(os.listdir(base)):
    for f in sorted(os.listdir(os.path.join(base, d))):
      if f.endswith('.debug'):
        found.append(os.path.join('buildid-tree', '.build-id', d, f))
  assert len(found) == 1, found
  return found[0]


def binaries():
  reg = registry_debug_path()
  return [
      dict(name='libwidget.so', path='libwidget.so', debug=None,
           sources=['src/widget.c', 'src/widget_inl.h', 'src/widget.h'],
           kind='shared library, C, unstripped (DWARF in the file)'),
      dict(name='libgadget.so', path='libgadget.so', debug='.debug/libgadget.so.debug',
           sources=['src/gadget.cc', 'src/gadget.h'],
           kind='shared library, C++, stripped; .gnu_debuglink -> .debug/libgadget.so.debug'),
      dict(name='libregistry.so', path=reg, debug=None,
           runtime_phdrs='libregistry.runtime-phdrs.txt',
           sources=['src/registry.c'],
           kind='debug-only file (objcopy --only-keep-debug) in a .build-id tree; '
                'the stripped runtime library is not stored'),
      dict(name='liboffset.so', path='liboffset.so', debug=None,
           sources=['src/offset.c'],
           kind='shared library, C, unstripped; linked at 0x200000 with 16 KiB pages '
                '(load bias 0x200000)'),
      dict(name='app-pie', path='app-pie', debug=None,
           sources=['src/app.cc', 'src/widget.h', 'src/gadget.h'],
           kind='PIE executable (ET_DYN), C++, unstripped'),
      dict(name='app-nopie', path='app-nopie', debug=None,
           sources=['src/app.cc', 'src/widget.h', 'src/gadget.h'],
           kind='non-PIE executable (ET_EXEC, -no-pie), C++, unstripped (load bias 0x400000)'),
      dict(name='mismatch/libwidget.so', path='mismatch/libwidget.so', debug=None,
           sources=['src/widget.c (-DWIDGET_MISMATCH)', 'src/widget_inl.h', 'src/widget.h'],
           kind='shared library named like libwidget.so but built with -DWIDGET_MISMATCH: '
                'other code, other build id'),
  ]


def run(args, stdin=None):
  r = subprocess.run(args, input=stdin, capture_output=True, text=True, cwd=SYM)
  if r.returncode != 0:
    sys.exit('make_truth: %s failed:\n%s' % (' '.join(args), r.stderr))
  return r.stdout


def tool(name):
  for cand in (name, '/usr/lib/llvm-14/bin/' + name):
    try:
      subprocess.run([cand, '--version'], capture_output=True, check=True)
      return cand
    except (OSError, subprocess.CalledProcessError):
      pass
  sys.exit('make_truth: %s not found (apt-get install -y llvm)' % name)


SYMBOLIZER = tool('llvm-symbolizer')
DWARFDUMP = tool('llvm-dwarfdump')
CXXFILT = tool('llvm-cxxfilt')


# ---- ELF facts ------------------------------------------------------------------

def parse_phdrs(text):
  loads, notes = [], []
  for line in text.splitlines():
    f = line.split()
    if f and f[0] in ('LOAD', 'NOTE'):
      flags = ' '.join(f[6:-1])
      seg = dict(p_offset=int(f[1], 16), p_vaddr=int(f[2], 16), p_filesz=int(f[4], 16),
                 p_memsz=int(f[5], 16), flags=flags, p_align=int(f[-1], 16))
      (loads if f[0] == 'LOAD' else notes).append(seg)
  return loads


def elf_facts(path):
  hdr = run(['readelf', '-hW', path])
  etype = re.search(r'Type:\s+(\w+)', hdr).group(1)
  loads = parse_phdrs(run(['readelf', '-lW', path]))
  notes = run(['readelf', '-nW', path])
  m = re.search(r'Build ID: ([0-9a-f]+)', notes)
  return dict(e_type=etype, build_id=m.group(1) if m else '', loads=loads)


def first_exec(loads):
  for l in loads:
    if 'E' in l['flags']:
      return l
  return None


# ---- symbols --------------------------------------------------------------------

def func_symbols(path):
  """FUNC symbols with size > 0 from .symtab (else .dynsym), grouped by (addr, size)."""
  out = run(['readelf', '-sW', path])
  tables, cur = {}, None
  for line in out.splitlines():
    m = re.match(r"Symbol table '(\.\w+)'", line)
    if m:
      cur = tables.setdefault(m.group(1), [])
      continue
    f = line.split()
    if cur is None or len(f) < 8 or not f[0].endswith(':'):
      continue
    value, size, typ, bind, ndx, name = f[1], f[2], f[3], f[4], f[6], f[7]
    if typ != 'FUNC' or ndx == 'UND':
      continue
    size = int(size, 16) if size.startswith('0x') else int(size)
    if size == 0:
      continue
    cur.append((int(value, 16), size, bind, name.split('@')[0]))
  syms = tables.get('.symtab') or tables.get('.dynsym') or []
  groups = {}
  for addr, size, bind, name in syms:
    g = groups.setdefault((addr, size), {'names': [], 'binds': set()})
    if name not in g['names']:
      g['names'].append(name)
    g['binds'].add(bind)
  return groups


def demangle(names):
  out = run([CXXFILT], stdin='\n'.join(names) + '\n').splitlines()
  return dict(zip(names, out))


# ---- DWARF: line rows and call sites ---------------------------------------------

def line_rows(path):
  rows = set()
  for line in run([DWARFDUMP, '--debug-line', path]).splitlines():
    m = re.match(r'^0x([0-9a-f]{16}) ', line)
    if m and 'end_sequence' not in line:
      rows.add(int(m.group(1), 16))
  return sorted(rows)


def call_sites(path):
  """[(return_pc, callee name or '(indirect)', tail_call)] from DW_TAG_call_site."""
  dies, order, cur = {}, [], None
  for line in run([DWARFDUMP, '--debug-info', path]).splitlines():
    m = re.match(r'^0x([0-9a-f]{8}):\s+(DW_TAG_\w+|NULL)', line)
    if m:
      cur = {'tag': m.group(2)}
      dies[int(m.group(1), 16)] = cur
      order.append(cur)
      continue
    m = re.match(r'^\s+(DW_AT_\w+)\s+\((.*)\)\s*$', line)
    if m and cur is not None:
      cur[m.group(1)] = m.group(2)

  def ref(v):
    m = re.match(r'0x([0-9a-f]+)', v or '')
    return int(m.group(1), 16) if m else None

  def name_of(off, depth=0):
    d = dies.get(off)
    if d is None or depth > 8:
      return None
    for key in ('DW_AT_linkage_name', 'DW_AT_name'):
      if key in d:
        return d[key].strip('"')
    for key in ('DW_AT_specification', 'DW_AT_abstract_origin'):
      if key in d:
        n = name_of(ref(d[key]), depth + 1)
        if n:
          return n
    return None

  sites = []
  for d in order:
    if d['tag'] not in ('DW_TAG_call_site', 'DW_TAG_GNU_call_site'):
      continue
    pc = ref(d.get('DW_AT_call_return_pc') or d.get('DW_AT_low_pc'))
    if pc is None:
      continue
    origin = ref(d.get('DW_AT_call_origin') or d.get('DW_AT_abstract_origin'))
    callee = name_of(origin) if origin is not None else None
    sites.append((pc, callee or '(indirect)', 'DW_AT_call_tail_call' in d))
  return sorted(set(sites))


# ---- llvm-symbolizer -------------------------------------------------------------

def symbolize(obj, addrs, demangle_names=True):
  args = [SYMBOLIZER, '--inlines', '--output-style=JSON', '--obj=' + obj]
  if not demangle_names:
    args.append('--no-demangle')
  out = run(args, stdin=''.join('0x%x\n' % a for a in addrs))
  res = {}
  for line in out.splitlines():
    if not line.strip():
      continue
    j = json.loads(line)
    res[int(j['Address'], 16)] = j.get('Symbol', [])
  missing = [a for a in addrs if a not in res]
  assert not missing, (obj, missing[:5])
  return res


_TMPDIR = None


def without_symtab(path):
  """A temp copy of `path` without .symtab (DWARF and .dynsym kept)."""
  global _TMPDIR
  import tempfile
  if _TMPDIR is None:
    _TMPDIR = tempfile.TemporaryDirectory(prefix='make_truth.')
  out = os.path.join(_TMPDIR.name, path.replace('/', '_'))
  secs = run(['readelf', '-SW', path])
  if '.symtab' not in secs:
    return path
  # (objcopy -R .symtab does not remove it; --strip-all keeping .debug_* does.)
  run(['objcopy', '--strip-all', '--keep-section=.debug_*', path, out])
  return out


def llvm_version():
  out = run([SYMBOLIZER, '--version'])
  m = re.search(r'LLVM version ([\w.\-]+)', out)
  return 'llvm-symbolizer ' + (m.group(1) if m else out.split('\n')[1].strip())


# ---- one binary --------------------------------------------------------------------

def truth_for(b):
  path = b['path']
  symfile = b['debug'] or path
  facts = elf_facts(path)
  if b['debug']:
    dfacts = elf_facts(b['debug'])
    assert dfacts['build_id'] == facts['build_id'], (path, b['debug'])
  runtime_loads = facts['loads']
  if b.get('runtime_phdrs'):
    with open(os.path.join(SYM, b['runtime_phdrs'])) as f:
      runtime_loads = parse_phdrs(f.read())
  fx = first_exec(runtime_loads)
  load_bias = fx['p_vaddr'] - fx['p_offset']

  groups = func_symbols(symfile)
  rows = line_rows(symfile)
  sites = call_sites(symfile)

  # Candidate addresses per function.
  funcs = []
  for (start, size), g in sorted(groups.items()):
    end = start + size
    cand = [a for a in rows if start <= a < end]
    rets = [(pc, callee, tail) for (pc, callee, tail) in sites if start < pc <= end]
    funcs.append(dict(start=start, size=size, names=g['names'], binds=sorted(g['binds']),
                      cand=cand, rets=rets))

  all_addrs = set()
  for f in funcs:
    all_addrs.update([f['start'], f['start'] + f['size'] // 2, f['start'] + f['size'] - 1])
    all_addrs.update(f['cand'])
    all_addrs.update(pc for pc, _, _ in f['rets'])
  all_addrs = sorted(all_addrs)

  res = symbolize(path, all_addrs)
  res_mangled = symbolize(path, all_addrs, demangle_names=False)
  # llvm-symbolizer replaces the OUTERMOST frame's name with the ELF .symtab
  # symbol covering the address when there is one (so "gadget_run.cold",
  # "f(...) (.isra.0)" for compiler clones), while DWARF says "gadget_run".
  # The DWARF-only answer comes from a copy without .symtab.
  res_dwarf = symbolize(without_symtab(path), all_addrs)
  res_dbg = None
  if b['debug']:
    # llvm-symbolizer follows .gnu_debuglink into .debug/ for DWARF, but takes
    # symbols from the stripped file (.dynsym only); asking the debug file
    # directly (as an index-mode lookup by build id may do) can differ.
    res_dbg = symbolize(b['debug'], all_addrs)

  def annotate(raw, mangled, dwarf):
    syms = []
    for i, s in enumerate(raw):
      s = dict(s)
      if i < len(mangled) and mangled[i].get('FunctionName') != s.get('FunctionName'):
        s['MangledName'] = mangled[i].get('FunctionName')
      if i < len(dwarf) and dwarf[i].get('FunctionName') != s.get('FunctionName'):
        s['DwarfFunctionName'] = dwarf[i].get('FunctionName')
      syms.append(s)
    return syms

  def entry(kind, addr, extra=None):
    e = {'kind': kind, 'address': addr}
    if extra:
      e.update(extra)
    e['Symbol'] = annotate(res[addr], res_mangled[addr], res_dwarf[addr])
    if res_dbg is not None and res_dbg[addr] != res[addr]:
      e['Symbol_debug_file'] = res_dbg[addr]
    return e

  dem = demangle([n for f in funcs for n in f['names']])
  out_funcs = []
  for f in funcs:
    start, size = f['start'], f['size']
    addrs = [entry('start', start), entry('middle', start + size // 2),
             entry('last', start + size - 1)]
    best, best_depth = None, 1
    for a in f['cand']:
      if len(res[a]) > best_depth:
        best, best_depth = a, len(res[a])
    if best is not None:
      addrs.append(entry('inline', best))
    for pc, callee, tail in f['rets']:
      extra = {'callee': callee}
      if tail:
        extra['tail_call'] = True
      if pc == start + size:
        # A call to a noreturn function as the last instruction: the return
        # address is the first byte after the function (often another symbol).
        extra['past_end'] = True
      addrs.append(entry('return', pc, extra))
    top = res[start][-1] if res[start] else {}
    out_funcs.append({
        'names': f['names'],
        'demangled': [dem[n] for n in f['names']],
        'binding': f['binds'],
        'start': start,
        'size': size,
        'crt': any(n in CRT_NAMES for n in f['names']),
        'has_dwarf': bool(top.get('Line')),
        'max_inline_depth': best_depth,
        'addresses': addrs,
    })

  return {
      'path': path,
      'debug_file': b['debug'],
      'sources': b['sources'],
      'kind': b['kind'],
      'e_type': facts['e_type'],
      'position_independent': facts['e_type'] == 'DYN',
      'build_id': facts['build_id'],
      'loads': facts['loads'],
      'runtime_loads': runtime_loads if b.get('runtime_phdrs') else None,
      'first_exec_load': fx,
      'load_bias': load_bias,
      'functions': out_funcs,
  }


def build_truth():
  t = {
      'about': 'Generated by symbols/make_truth.py; see its docstring and symbols/README.md. '
               'Addresses are ELF virtual addresses (integers). Symbol arrays are '
               'llvm-symbolizer --inlines --output-style=JSON answers, innermost frame first.',
      'llvm_symbolizer': llvm_version(),
      'binaries': {},
  }
  for b in binaries():
    t['binaries'][b['name']] = truth_for(b)
  return t


# ---- README tables ---------------------------------------------------------------------

def fmt_syms(syms):
  parts = []
  for s in syms:
    name = s['FunctionName']
    if len(name) > 70:
      name = name[:69] + '…'
    parts.append('%s (%s:%d)' % (name, s['FileName'] or '??', s['Line']))
  return ' ← '.join(parts).replace('|', '\\|') if parts else '(none)'


README_PICK = {
    'libwidget.so': ['widget_new', 'widget_append', 'widget_fill', 'widget_demo'],
    'libgadget.so': ['_ZN6gadget5Arena8allocateEm', '_ZN6gadget4RingIiE4growEv',
                     '_ZN6gadget4RingIiE4pushERKi', 'gadget_run'],
    'libregistry.so': ['reg_put', 'reg_get', 'reg_resize', 'reg_demo'],
    'liboffset.so': ['off_put_varint', 'off_new', 'off_crc32', 'off_demo'],
    'app-pie': ['main', '_ZN3app7Session3runEv', '_ZN3app7SessionC2ERKNS_7OptionsE'],
    'app-nopie': ['main', '_ZN3app7Session3runEv', '_ZN3app7SessionC2ERKNS_7OptionsE'],
    'mismatch/libwidget.so': ['widget_new', 'widget_append'],
}


def readme_tables(t):
  out = []
  for name, b in t['binaries'].items():
    out.append('### %s\n' % name)
    out.append('`%s` — build id `%s`, %s, load bias 0x%x.\n' %
               (b['path'], b['build_id'], b['e_type'], b['load_bias']))
    out.append('| function | start | address | kind | llvm-symbolizer (innermost first) |')
    out.append('|---|---|---|---|---|')
    for f in b['functions']:
      if not set(f['names']) & set(README_PICK.get(name, [])):
        continue
      label = f['demangled'][0].replace('|', '\\|')
      for a in f['addresses']:
        if a['kind'] not in ('start', 'inline'):
          continue
        out.append('| `%s` | 0x%x | 0x%x | %s | %s |' %
                   (label, f['start'], a['address'], a['kind'], fmt_syms(a['Symbol'])))
      # one call-site return address into an allocator, if any
      for a in f['addresses']:
        if a['kind'] == 'return' and re.fullmatch(r'malloc|calloc|realloc|strdup|_Zn[wa]m', a.get('callee', '')):
          out.append('| `%s` | 0x%x | 0x%x | return after call to `%s` | %s |' %
                     (label, f['start'], a['address'], a['callee'], fmt_syms(a['Symbol'])))
          break
    out.append('')
  return '\n'.join(out)


def update_readme(t):
  p = os.path.join(SYM, 'README.md')
  if not os.path.exists(p):
    return
  with open(p) as f:
    s = f.read()
  begin, end = '<!-- truth:begin -->', '<!-- truth:end -->'
  if begin not in s or end not in s:
    return
  head, rest = s.split(begin, 1)
  _, tail = rest.split(end, 1)
  s = head + begin + '\n' + readme_tables(t) + '\n' + end + tail
  with open(p, 'w') as f:
    f.write(s)


def dump(t):
  """Indented JSON, except that each address entry (and each PT_LOAD) is one line."""
  def enc(v, ind):
    pad, pad1 = ' ' * ind, ' ' * (ind + 1)
    if isinstance(v, dict):
      if not v:
        return '{}'
      if 'kind' in v and 'Symbol' in v or 'p_vaddr' in v:
        return json.dumps(v, ensure_ascii=False)
      items = ['%s%s: %s' % (pad1, json.dumps(k), enc(x, ind + 1)) for k, x in v.items()]
      return '{\n' + ',\n'.join(items) + '\n' + pad + '}'
    if isinstance(v, list):
      if not v or all(not isinstance(x, (dict, list)) for x in v):
        return json.dumps(v, ensure_ascii=False)
      return '[\n' + ',\n'.join(pad1 + enc(x, ind + 1) for x in v) + '\n' + pad + ']'
    return json.dumps(v, ensure_ascii=False)
  return enc(t, 0) + '\n'


def main():
  t = build_truth()
  path = os.path.join(SYM, 'truth.json')
  if '--check' in sys.argv[1:]:
    with open(path) as f:
      old = f.read()
    new = dump(t)
    if old != new:
      import difflib
      d = difflib.unified_diff(old.splitlines(), new.splitlines(), 'truth.json', 'live', n=2, lineterm='')
      sys.stdout.write('\n'.join(list(d)[:80]) + '\n')
      sys.exit('make_truth --check: llvm-symbolizer now disagrees with truth.json')
    print('make_truth --check: truth.json matches live llvm-symbolizer (%s)' % t['llvm_symbolizer'])
    return
  with open(path, 'w') as f:
    f.write(dump(t))
  update_readme(t)
  n = sum(len(b['functions']) for b in t['binaries'].values())
  a = sum(len(f['addresses']) for b in t['binaries'].values() for f in b['functions'])
  print('wrote %s: %d binaries, %d functions, %d addresses' % (path, len(t['binaries']), n, a))


if __name__ == '__main__':
  main()
