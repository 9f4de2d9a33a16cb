#!/usr/bin/env python3
"""Independent oracle for heapconv's heapprofd fixtures.

Decodes binary Perfetto traces with Google's own schema (PyPI `perfetto`,
`perfetto_trace_pb2`) and computes what `traceconv profile --alloc` would
write for each (pid, heap, dump): file name, sample types and, per callsite,
the four values. It shares no code with heapconv (src/).

Two independent computations are made and must agree, else the script fails:

  1. "tp": a line-by-line emulation of trace_processor's importer
     (ProfileModule::ParseProfilePacket, ProfilePacketSequenceState::
     AddAllocation with its per-(process, callsite) deltas and per-source-iid
     corrections, StackProfileSequenceState interning, MappingTracker
     interning) followed by traceconv's SQL views (Total = rows with
     size >= 0, Unreleased = all rows, ts <= dump ts).
  2. "model": the documented model: for a (pid, heap) the value at dump T is
     the sum, over callstack keys (sequence, generation, iid) whose frames
     resolve to the same callsite, of the latest cumulative value at or
     before T; Unreleased = allocated - freed; dump_at_max uses self_max for
     sizes and self_max_count for counts only if orig_sampling_interval_bytes
     > 0; a (pid, heap) dump where nothing changed gets no file.

Function names: `stack` holds the raw names from the trace (root first);
`function_names` holds what traceconv writes into pprof Function.name:
llvm-demangled when demangling succeeds (llvm-cxxfilt, from Debian's llvm),
plus " [annotation]" (aot/interp/jit/common-frame/common-frame-interp) when
both are non-empty.

Usage:
  expected_oracle.py --json OUT.json FIXTURE.pftrace...   # write expectations
  expected_oracle.py --markdown FIXTURE.pftrace...        # tables for README
  expected_oracle.py --check-reference DIR                # compare with real
      traceconv output in DIR/cases/*.pftrace + DIR/expected/<case>/*.raw.txt
"""

import argparse
import collections
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import zlib

try:
  from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pt
except ImportError as e:  # pragma: no cover
  sys.exit('expected_oracle.py: %s (run .ci/install-oracles.sh and use '
           'target/oracle-venv/bin/python)' % e)

ART_HEAP = 'com.android.art'
MALLOC_HEAP = 'libc.malloc'
CLOCK_MONOTONIC_COARSE = 4
CLOCK_BOOTTIME = 6


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------
def read_packets(path):
  with open(path, 'rb') as f:
    data = f.read()
  if data[:2] == b'\x1f\x8b':
    data = gzip.decompress(data)
  trace = pt.Trace()
  trace.ParseFromString(data)
  out = []
  for p in trace.packet:
    if p.HasField('compressed_packets'):
      inner = pt.Trace()
      inner.ParseFromString(zlib.decompress(p.compressed_packets))
      out.extend(inner.packet)
    else:
      out.append(p)
  return out


def mapping_name(components):
  # ProfilePacketUtils::MakeMappingName: "/" before each component; a leading
  # "//" (one component that already was a full path) loses one "/".
  name = ''.join('/' + c for c in components)
  if name.startswith('//'):
    name = name[1:]
  return name


def build_id_hex(raw):
  if len(raw) == 33:  # assumed to be an already-hex Chrome module id
    return raw.decode('latin-1')
  return raw.hex()


def b2s(b):
  return b.decode('utf-8', errors='replace') if isinstance(b, bytes) else b


# --------------------------------------------------------------------------
# Trace-wide interning (MappingTracker, VirtualMemoryMapping, callsites)
# --------------------------------------------------------------------------
class Tables:

  def __init__(self):
    self.mappings = {}       # params -> id
    self.mapping_info = []   # id -> dict
    self.frames = {}         # (mapping, rel_pc, name) -> id
    self.frame_info = []     # id -> (mapping, rel_pc, name)
    self.callsites = {}      # (parent, frame, depth) -> id
    self.callsite_info = []  # id -> (parent, frame, depth)
    self.stats = collections.Counter()

  def intern_mapping(self, build_id, exact_offset, start_offset, start, end,
                     load_bias, name):
    key = (build_id, exact_offset, start_offset, start, end, load_bias, name)
    if key not in self.mappings:
      self.mappings[key] = len(self.mapping_info)
      self.mapping_info.append(dict(
          name=name, build_id=build_id_hex(build_id), start=start, end=end,
          exact_offset=exact_offset, start_offset=start_offset,
          load_bias=load_bias))
    return self.mappings[key]

  def intern_frame(self, mapping, rel_pc, name):
    key = (mapping, rel_pc, name)
    if key not in self.frames:
      self.frames[key] = len(self.frame_info)
      self.frame_info.append(key)
    return self.frames[key]

  def intern_callsite(self, parent, frame, depth):
    key = (parent, frame, depth)
    if key not in self.callsites:
      self.callsites[key] = len(self.callsite_info)
      self.callsite_info.append(key)
    return self.callsites[key]

  def frames_of(self, callsite):
    out = []
    while callsite is not None:
      parent, frame, _ = self.callsite_info[callsite]
      out.append(frame)
      callsite = parent
    return out[::-1]  # root first


# --------------------------------------------------------------------------
# Per-sequence state
# --------------------------------------------------------------------------
class Generation:
  """One incremental-state generation of one sequence: its interned data,
  StackProfileSequenceState caches and ProfilePacketSequenceState."""

  def __init__(self, seq, number, tables):
    self.seq = seq
    self.number = number
    self.t = tables
    self.interned = collections.defaultdict(dict)  # field -> iid -> msg
    # StackProfileSequenceState caches
    self.cached_mappings = {}
    self.cached_frames = {}
    self.cached_callstacks = {}
    # ProfilePacketSequenceState
    self.prev_index = None
    self.strings = {0: b''}
    self.inline_mappings = {}
    self.inline_frames = {}
    self.inline_callstacks = {}
    self.pending = []
    self.prev_alloc = {}
    self.prev_free = {}
    self.seen = {}
    self.alloc_corr = {}
    self.free_corr = {}

  # ---- InternedData lookups (StackProfileSequenceState) -------------------
  def lookup(self, field, iid):
    msg = self.interned[field].get(iid)
    if msg is None:
      self.t.stats['interned_lookup_failed_' + field] += 1
    return msg

  def mapping(self, iid):
    if iid in self.cached_mappings:
      return self.cached_mappings[iid]
    m = self.lookup('mappings', iid)
    if m is None and iid == 0:
      # Current trace_processor (2026) treats mapping_id 0 as a "dummy" frame with no real
      # mapping (name "", no build id), instead of dropping the frame as older versions did.
      mid = self.t.intern_mapping(b'', 0, 0, 0, 0, 0, '')
      self.cached_mappings[iid] = mid
      return mid
    if m is None:
      self.t.stats['stackprofile_invalid_mapping_id'] += 1
      return None
    comps = []
    for sid in m.path_string_ids:
      s = self.lookup('mapping_paths', sid)
      if s is None:
        break
      comps.append(b2s(s.str))
    if m.build_id == 0:
      bid = b''
    else:
      s = self.lookup('build_ids', m.build_id)
      if s is None:
        return None
      bid = s.str
    mid = self.t.intern_mapping(bid, m.exact_offset, m.start_offset, m.start,
                                m.end, m.load_bias, mapping_name(comps))
    self.cached_mappings[iid] = mid
    return mid

  def frame(self, iid):
    if iid in self.cached_frames:
      return self.cached_frames[iid]
    f = self.lookup('frames', iid)
    if f is None:
      self.t.stats['stackprofile_invalid_frame_id'] += 1
      return None
    mid = self.mapping(f.mapping_id)
    if mid is None:
      return None
    if f.function_name_id == 0:
      name = ''
    else:
      s = self.lookup('function_names', f.function_name_id)
      if s is None:
        return None
      name = b2s(s.str)
    fid = self.t.intern_frame(mid, f.rel_pc, name)
    self.cached_frames[iid] = fid
    return fid

  def interned_callstack(self, iid):
    if iid in self.cached_callstacks:
      return self.cached_callstacks[iid]
    c = self.lookup('callstacks', iid)
    if c is None:
      self.t.stats['stackprofile_invalid_callstack_id'] += 1
      return None
    parent = None
    for depth, fiid in enumerate(c.frame_ids):
      fid = self.frame(fiid)
      if fid is None:
        return None
      parent = self.t.intern_callsite(parent, fid, depth)
    if parent is None:
      self.t.stats['stackprofile_empty_callstack'] += 1
      return None
    self.cached_callstacks[iid] = parent
    return parent

  def find_callstack(self, iid):
    if iid in self.inline_callstacks:
      return self.inline_callstacks[iid]
    return self.interned_callstack(iid)

  # ---- legacy inline tables (ProfilePacketSequenceState::Add*) ------------
  def add_inline(self, pp):
    for s in pp.strings:
      self.strings[s.iid] = s.str
    for m in pp.mappings:
      if m.build_id not in self.strings:
        self.t.stats['stackprofile_invalid_string_id'] += 1
        continue
      comps = []
      for sid in m.path_string_ids:
        if sid not in self.strings:
          self.t.stats['stackprofile_invalid_string_id'] += 1
          break
        comps.append(b2s(self.strings[sid]))
      self.inline_mappings[m.iid] = self.t.intern_mapping(
          self.strings[m.build_id], m.exact_offset, m.start_offset, m.start,
          m.end, m.load_bias, mapping_name(comps))
    for f in pp.frames:
      if f.mapping_id not in self.inline_mappings:
        self.t.stats['stackprofile_invalid_mapping_id'] += 1
        continue
      if f.function_name_id not in self.strings:
        self.t.stats['stackprofile_invalid_string_id'] += 1
        continue
      self.inline_frames[f.iid] = self.t.intern_frame(
          self.inline_mappings[f.mapping_id], f.rel_pc,
          b2s(self.strings[f.function_name_id]))
    for c in pp.callstacks:
      parent = None
      ok = True
      for depth, fiid in enumerate(c.frame_ids):
        if fiid not in self.inline_frames:
          self.t.stats['stackprofile_invalid_frame_id'] += 1
          ok = False
          break
        parent = self.t.intern_callsite(parent, self.inline_frames[fiid], depth)
      if not ok:
        continue
      if parent is None:
        self.t.stats['stackprofile_empty_callstack'] += 1
        continue
      self.inline_callstacks[c.iid] = parent

  def finalize_profile(self, oracle):
    for a in self.pending:
      oracle.add_allocation(self, a)
    self.pending = []
    self.strings = {}  # TP clears the inline tables (iid 0 included)
    self.inline_mappings = {}
    self.inline_frames = {}
    self.inline_callstacks = {}


# --------------------------------------------------------------------------
# The oracle
# --------------------------------------------------------------------------
class Oracle:

  def __init__(self, packets):
    self.t = Tables()
    self.rows = []        # (ts, pid, heap, callsite, count, size)
    self.dumps = collections.OrderedDict()  # (pid, heap, ts) -> info
    self.model_obs = []   # (pid, heap, ts, key, callsite, values)
    self.dropped = collections.defaultdict(list)
    self.snapshots = []
    for p in packets:
      if p.HasField('clock_snapshot'):
        snap = {c.clock_id: c.timestamp for c in p.clock_snapshot.clocks}
        if CLOCK_MONOTONIC_COARSE in snap and CLOCK_BOOTTIME in snap:
          self.snapshots.append(
              (snap[CLOCK_MONOTONIC_COARSE], snap[CLOCK_BOOTTIME]))
    self.snapshots.sort()
    self._tokenize_and_parse(packets)

  def convert_ts(self, t):
    if not self.snapshots:
      return None
    a, b = self.snapshots[0]
    for sa, sb in self.snapshots:
      if sa <= t:
        a, b = sa, sb
    return t - a + b

  def _tokenize_and_parse(self, packets):
    seqs = {}  # seq id -> [generation, valid]
    to_parse = []
    last_ts = 0
    for order, p in enumerate(packets):
      if p.HasField('timestamp'):
        last_ts = p.timestamp
      seq = p.trusted_packet_sequence_id
      st = seqs.get(seq)
      if st is None:
        st = seqs[seq] = [Generation(seq, 0, self.t), False]
      cleared = p.incremental_state_cleared or (p.sequence_flags & 1)
      if cleared:
        st[0] = Generation(seq, st[0].number + 1, self.t)
        st[1] = True
      elif p.previous_packet_dropped:
        st[1] = False
        self.t.stats['previous_packet_dropped'] += 1
      if (p.sequence_flags & 2) and not st[1]:
        self.t.stats['packet_dropped_needs_incremental_state'] += 1
        continue
      gen = st[0]
      if p.HasField('interned_data'):
        if not st[1]:
          self.t.stats['interned_data_ignored_invalid_state'] += 1
        else:
          idata = p.interned_data
          for field in ('function_names', 'frames', 'callstacks', 'build_ids',
                        'mapping_paths', 'mappings'):
            for msg in getattr(idata, field):
              if not msg.HasField('iid'):
                self.t.stats['interned_without_iid'] += 1
                continue
              # TP keeps the first copy of an iid within a generation.
              gen.interned[field].setdefault(msg.iid, msg)
      if p.HasField('profile_packet'):
        to_parse.append((last_ts, order, gen, p.profile_packet))
    ordered = sorted(to_parse, key=lambda x: (x[0], x[1]))
    if [x[1] for x in ordered] != [x[1] for x in to_parse]:
      self.t.stats['profile_packets_reordered_by_ts'] += 1
    for _, _, gen, pp in ordered:
      self._parse_profile_packet(gen, pp)

  def _parse_profile_packet(self, gen, pp):
    # SetProfilePacketIndex
    if (gen.prev_index is None and pp.index != 0) or (
        gen.prev_index is not None and gen.prev_index + 1 != pp.index):
      self.t.stats['heapprofd_missing_packet'] += 1
    gen.prev_index = pp.index
    gen.add_inline(pp)
    for e in pp.process_dumps:
      raw = e.timestamp
      conv = self.convert_ts(raw)
      ts = raw if conv is None else conv
      heap = e.heap_name if e.heap_name else 'unknown'
      key = (e.pid, heap, ts)
      info = self.dumps.get(key)
      if info is None:
        info = self.dumps[key] = dict(
            pid=e.pid, heap=heap, ts_raw=raw, ts_converted=ts,
            traceconv_writes=conv is not None, flags=set(),
            sampling_interval_bytes=None, orig_sampling_interval_bytes=None)
      for flag in ('from_startup', 'rejected_concurrent', 'disconnected',
                   'buffer_overran', 'buffer_corrupted', 'hit_guardrail'):
        if getattr(e, flag):
          info['flags'].add(flag)
      if e.client_error:
        info['flags'].add('client_error=' +
                          pt.ProfilePacket.ProcessHeapSamples.ClientError.Name(
                              e.client_error))
      if e.HasField('sampling_interval_bytes'):
        info['sampling_interval_bytes'] = e.sampling_interval_bytes
      if e.HasField('orig_sampling_interval_bytes'):
        info['orig_sampling_interval_bytes'] = e.orig_sampling_interval_bytes
      trust_max_count = e.orig_sampling_interval_bytes > 0
      for s in e.samples:
        if s.HasField('self_max'):
          vals = (s.self_max_count if trust_max_count else 0, s.self_max, 0, 0)
        else:
          vals = (s.alloc_count, s.self_allocated, s.free_count, s.self_freed)
        gen.pending.append(dict(pid=e.pid, heap=heap, ts=ts, iid=s.callstack_id,
                                alloc_count=vals[0], self_allocated=vals[1],
                                free_count=vals[2], self_freed=vals[3]))
    if not pp.continued:
      gen.finalize_profile(self)

  # ProfilePacketSequenceState::AddAllocation
  def add_allocation(self, gen, a):
    cs = gen.find_callstack(a['iid'])
    if cs is None:
      self.dropped[(a['pid'], a['heap'], a['ts'])].append(a['iid'])
      return
    self.model_obs.append((a['pid'], a['heap'], a['ts'],
                           # keyed by callsite too: an inline iid re-defined
                           # by a later chain as another callsite has its own
                           # counters (TP keys prev_alloc_ by callsite)
                           (gen.seq, gen.number, a['iid'], cs), cs,
                           (a['alloc_count'], a['self_allocated'],
                            a['free_count'], a['self_freed'])))
    alloc_row = [a['alloc_count'], a['self_allocated']]
    free_row = [-a['free_count'], -a['self_freed']]
    k = (a['pid'], cs)
    prev_alloc = gen.prev_alloc.setdefault(k, [0, 0])
    prev_free = gen.prev_free.setdefault(k, [0, 0])
    seen = gen.seen.setdefault((a['pid'], a['iid'], a['heap']), set())
    if cs not in seen:
      seen.add(cs)
      gen.alloc_corr[a['iid']] = list(prev_alloc)
      gen.free_corr[a['iid']] = list(prev_free)
    if a['iid'] in gen.alloc_corr:
      alloc_row = [x + y for x, y in zip(alloc_row, gen.alloc_corr[a['iid']])]
    if a['iid'] in gen.free_corr:
      free_row = [x + y for x, y in zip(free_row, gen.free_corr[a['iid']])]
    alloc_delta = [x - y for x, y in zip(alloc_row, prev_alloc)]
    free_delta = [x - y for x, y in zip(free_row, prev_free)]
    if (alloc_delta[0] < 0 or alloc_delta[1] < 0 or free_delta[0] > 0 or
        free_delta[1] > 0):
      self.t.stats['heapprofd_malformed_packet'] += 1
      return
    if alloc_delta[0] or alloc_delta[1]:
      self.rows.append((a['ts'], a['pid'], a['heap'], cs) + tuple(alloc_delta))
    if a['heap'] != ART_HEAP and (free_delta[0] or free_delta[1]):
      self.rows.append((a['ts'], a['pid'], a['heap'], cs) + tuple(free_delta))
    prev_alloc[:] = alloc_row
    prev_free[:] = free_row

  # ---- traceconv's views over the rows ------------------------------------
  def tp_profiles(self):
    order = []
    for ts, pid, heap, *_ in self.rows:
      if (pid, heap, ts) not in order:
        order.append((pid, heap, ts))
    out = []
    for pid, heap, ts in order:
      per = collections.OrderedDict()
      for rts, rpid, rheap, cs, count, size in self.rows:
        if rpid != pid or rheap != heap or rts > ts:
          continue
        v = per.setdefault(cs, [0, 0, 0, 0])
        if size >= 0:
          v[0] += count
          v[1] += size
        v[2] += count
        v[3] += size
      out.append(((pid, heap, ts), sorted(per.items())))
    return out

  def model_profiles(self):
    keys_by_ph = collections.defaultdict(list)
    for pid, heap, ts, key, cs, vals in self.model_obs:
      keys_by_ph[(pid, heap)].append((ts, key, cs, vals))
    out = {}
    for (pid, heap), obs in keys_by_ph.items():
      times = sorted({o[0] for o in obs})
      prev = None
      for t in times:
        latest = {}
        for ts, key, cs, vals in obs:
          if ts <= t:
            latest[key] = (cs, vals)  # obs are in time order
        per = {}
        for cs, vals in latest.values():
          v = per.setdefault(cs, [0, 0, 0, 0])
          for i in range(4):
            v[i] += vals[i]
        per = {cs: (v[0], v[1], v[0] - v[2], v[1] - v[3])
               for cs, v in per.items() if any(v)}
        if per != prev:
          out[(pid, heap, t)] = per
        prev = per
    return out


# --------------------------------------------------------------------------
# Names: llvm demangling + traceconv annotations
# --------------------------------------------------------------------------
_DEMANGLE_CACHE = {}


def llvm_demangle(name):
  if name in _DEMANGLE_CACHE:
    return _DEMANGLE_CACHE[name]
  exe = shutil.which('llvm-cxxfilt') or next(
      (p for p in ('/usr/lib/llvm-14/bin/llvm-cxxfilt',) if os.path.exists(p)),
      None)
  if exe is None:
    sys.exit('expected_oracle.py: llvm-cxxfilt not found (apt-get install llvm)')
  res = name
  if name:
    out = subprocess.run([exe, name], capture_output=True, text=True,
                         check=True).stdout.rstrip('\n')
    res = out if out else name
  _DEMANGLE_CACHE[name] = res
  return res


def classify_map(name):
  # AnnotatedCallsites::ClassifyMap
  if not name:
    return 'other'
  if name.startswith('/memfd:jit-cache') or name.startswith(
      '/memfd:jit-zygote-cache'):
    return 'jit'
  slash = name.rfind('/')
  if slash != -1:
    suffix = name[slash:]
    if suffix.startswith('/libart.so') or suffix.startswith('/libartd.so'):
      return 'libart'
  dot = name.rfind('.')
  if dot != -1:
    suffix = name[dot:]
    if suffix.startswith('.so'):
      return 'native'
    for ext in ('.dex', '.vdex', '.jar', '.apk'):
      if suffix.startswith(ext):
        return 'interp'
    for ext in ('.oat', '.odex'):
      if suffix.startswith(ext):
        return 'aot'
  return 'other'


def annotate(t, frames):
  """AnnotatedCallsites::Get along one root-first frame list."""
  state = 'initial'
  out = []
  for fid in frames:
    mid, _, name = t.frame_info[fid]
    if state == 'keep_next':
      state, anno = 'erase_libart', ''
    elif name == 'art_jni_trampoline':
      state, anno = 'keep_next', 'common-frame'
    else:
      kind = classify_map(t.mapping_info[mid]['name'])
      if kind in ('interp', 'jit', 'aot'):
        if state == 'initial':
          state = 'erase_libart'
        anno = kind
      elif state == 'erase_libart' and kind == 'libart':
        if name.startswith(('nterp_', 'Nterp', 'ExecuteNterp',
                            'ExecuteSwitchImpl', '_ZN3art11interpreter')):
          anno = 'common-frame-interp'
        else:
          anno = 'common-frame'
      else:
        anno = ''
    out.append(anno)
  return out


def sample_types(heap):
  if heap == MALLOC_HEAP:
    return [['Total malloc count', 'count'], ['Total malloc size', 'bytes'],
            ['Unreleased malloc count', 'count'],
            ['Unreleased malloc size', 'bytes']]
  if heap == ART_HEAP:
    return [['Total allocation count', 'count'],
            ['Total allocation size', 'bytes']]
  return [['Total count', 'count'], ['Total size', 'bytes'],
          ['Unreleased count', 'count'], ['Unreleased size', 'bytes']]


# --------------------------------------------------------------------------
# Putting it together
# --------------------------------------------------------------------------
def expectations(path):
  o = Oracle(read_packets(path))
  t = o.t
  tp = o.tp_profiles()
  model = o.model_profiles()
  # Cross-check the two computations.
  tp_map = {k: {cs: tuple(v) for cs, v in per} for k, per in tp}
  if tp_map != model:
    raise SystemExit('%s: TP emulation and cumulative model disagree:\n'
                     'tp=%r\nmodel=%r' % (path, tp_map, model))
  entries = []
  for n, ((pid, heap, ts), per) in enumerate(tp, start=1):
    info = o.dumps[(pid, heap, ts)]
    samples = []
    for cs, v in per:
      frames = t.frames_of(cs)
      annos = annotate(t, frames)
      raw = [t.frame_info[f][2] for f in frames]
      names = []
      for r, anno in zip(raw, annos):
        d = llvm_demangle(r)
        names.append(d + ' [' + anno + ']' if anno and d else d)
      maps = [t.mapping_info[t.frame_info[f][0]] for f in frames]
      samples.append(dict(
          stack=raw, function_names=names,
          mappings=[m['name'] for m in maps],
          build_ids=[m['build_id'] for m in maps],
          rel_pcs=[t.frame_info[f][1] for f in frames],
          total_count=v[0], total_size=v[1], unreleased_count=v[2],
          unreleased_size=v[3]))
    e = dict(
        file='heap_dump.%d.%d.%s.pb' % (n, pid, heap), pid=pid, heap=heap,
        ts_raw=info['ts_raw'], ts_converted=info['ts_converted'],
        traceconv_writes=info['traceconv_writes'],
        sample_types=sample_types(heap),
        sampling_interval_bytes=info['sampling_interval_bytes'],
        orig_sampling_interval_bytes=info['orig_sampling_interval_bytes'],
        flags=sorted(info['flags']), samples=samples)
    if o.dropped.get((pid, heap, ts)):
      e['dropped_callstack_iids'] = o.dropped[(pid, heap, ts)]
    entries.append(e)
  return entries, o


def fixture_name(path):
  base = os.path.basename(path)
  for suffix in ('.pftrace.gz', '.pftrace'):
    if base.endswith(suffix):
      return base[:-len(suffix)]
  return base


def markdown(name, entries, o):
  lines = ['#### `%s`' % name, '']
  for e in entries:
    head = '%s: pid %d, heap `%s`, ts raw %d -> converted %d' % (
        e['file'], e['pid'], e['heap'], e['ts_raw'], e['ts_converted'])
    if not e['traceconv_writes']:
      head += ' (traceconv writes nothing: no clock snapshot)'
    if e['flags']:
      head += '; flags: ' + ', '.join(e['flags'])
    if e.get('dropped_callstack_iids'):
      head += '; dropped callstack iids: %s' % e['dropped_callstack_iids']
    lines += [head, '',
              '| stack (root -> leaf, traceconv Function.name) | Tc | Ts | Uc | Us |',
              '|---|---:|---:|---:|---:|']
    for s in e['samples']:
      stack = ' > '.join('`%s`' % n if n else '""' for n in s['function_names'])
      lines.append('| %s | %d | %d | %d | %d |' % (
          stack, s['total_count'], s['total_size'], s['unreleased_count'],
          s['unreleased_size']))
    lines.append('')
  interesting = {k: v for k, v in o.t.stats.items()}
  if interesting:
    lines.append('TP-side stats seen: ' + ', '.join(
        '%s=%d' % kv for kv in sorted(interesting.items())))
    lines.append('')
  return '\n'.join(lines)


# ---- comparison with real traceconv output ---------------------------------
def parse_raw_txt(path):
  text = open(path, encoding='utf-8').read()
  samples_part = text.split('Samples:\n', 1)[1].split('Locations\n', 1)[0]
  loc_part = text.split('Locations\n', 1)[1].split('Mappings\n', 1)[0]
  map_part = text.split('Mappings\n', 1)[1]
  maps = {}
  for line in map_part.splitlines():
    # "<id>: 0x<start>/0x<limit>/0x<offset> <filename> <buildid> "
    m = re.match(r'^(\d+): 0x[0-9a-f]+/0x[0-9a-f]+/0x[0-9a-f]+ (.*) $', line)
    if m:
      fname, bid = m.group(2).rsplit(' ', 1)
      maps[int(m.group(1))] = (fname, bid)
  locs = {}
  for line in loc_part.splitlines():
    m = re.match(r'^\s*(\d+): 0x0 M=(\d+) (.*) :0 s=0(?:\((.*)\))?$', line)
    if m:
      shown, sysname = m.group(3), m.group(4)
      locs[int(m.group(1))] = (shown, sysname if sysname is not None else shown,
                               sysname is not None, int(m.group(2)))
  samples = []
  for line in samples_part.splitlines()[1:]:
    if ':' not in line:
      continue
    vals, ids = line.split(':', 1)
    samples.append(([int(v) for v in vals.split()],
                    [int(i) for i in ids.split()]))
  return samples, locs, maps


def check_reference(ref_dir):
  failures = 0
  checked = 0
  for case_file in sorted(os.listdir(os.path.join(ref_dir, 'cases'))):
    if not (case_file.endswith('.pftrace') or case_file.endswith('.pftrace.gz')):
      continue
    case = fixture_name(case_file)
    exp_dir = os.path.join(ref_dir, 'expected',
                           case + ('.gz' if case_file.endswith('.gz') else ''))
    if not os.path.isdir(exp_dir):
      exp_dir = os.path.join(ref_dir, 'expected', case)
    entries, _ = expectations(os.path.join(ref_dir, 'cases', case_file))
    entries = [e for e in entries if e['traceconv_writes']]
    want_files = sorted(f[:-len('.raw.txt')] + '.pb'
                        for f in os.listdir(exp_dir) if f.endswith('.raw.txt')
                        ) if os.path.isdir(exp_dir) else []
    if case == 'heap_graph_small':
      continue
    got_files = sorted(e['file'] for e in entries)
    if got_files != want_files:
      print('FAIL %s: files %s != traceconv %s' % (case, got_files, want_files))
      failures += 1
      continue
    for e in entries:
      samples, locs, maps = parse_raw_txt(
          os.path.join(exp_dir, e['file'][:-3] + '.raw.txt'))
      want = sorted(
          (tuple(locs[i][1] for i in ids[::-1]),
           tuple(maps[locs[i][3]] for i in ids[::-1]), tuple(v))
          for v, ids in samples)
      got = sorted(
          (tuple(s['stack']), tuple(zip(s['mappings'], s['build_ids'])),
           tuple([s['total_count'], s['total_size']] +
                 ([] if e['heap'] == ART_HEAP else
                  [s['unreleased_count'], s['unreleased_size']])))
          for s in e['samples'])
      if want != got:
        print('FAIL %s %s:\n  traceconv %r\n  oracle    %r' % (
            case, e['file'], want, got))
        failures += 1
        continue
      # Display names: pprof's own demangler rewrites Function.name when it
      # equals system_name (e.g. strips "(...)"), so only names that
      # traceconv changed (demangled or annotated) are comparable.
      want_s = sorted(((tuple(locs[i][1] for i in ids[::-1]), tuple(v)),
                       [locs[i] for i in ids[::-1]]) for v, ids in samples)
      got_s = sorted(((tuple(s['stack']),
                       tuple([s['total_count'], s['total_size']] +
                             ([] if e['heap'] == ART_HEAP else
                              [s['unreleased_count'], s['unreleased_size']]))),
                      s) for s in e['samples'])
      bad = []
      for (_, wl), (_, gs) in zip(want_s, got_s):
        for loc, name, raw in zip(wl, gs['function_names'], gs['stack']):
          if name != raw and (loc[0] != name or not loc[2]):
            bad.append((loc[0], name))
      if bad:
        print('FAIL %s %s names (traceconv, oracle): %r' % (case, e['file'], bad))
        failures += 1
        continue
      checked += 1
  print('reference check: %d profiles agree, %d failures' % (checked, failures))
  return failures == 0


def main():
  ap = argparse.ArgumentParser(description=__doc__,
                               formatter_class=argparse.RawTextHelpFormatter)
  ap.add_argument('traces', nargs='*')
  ap.add_argument('--json', help='write {fixture: [profiles]} here')
  ap.add_argument('--markdown', action='store_true')
  ap.add_argument('--check-reference', metavar='DIR')
  args = ap.parse_args()
  ok = True
  if args.check_reference:
    ok = check_reference(args.check_reference)
  result = collections.OrderedDict()
  for path in args.traces:
    entries, o = expectations(path)
    result[fixture_name(path)] = entries
    if args.markdown:
      print(markdown(fixture_name(path), entries, o))
  if args.json:
    with open(args.json, 'w', encoding='utf-8') as f:
      json.dump(result, f, indent=1, sort_keys=False)
      f.write('\n')
  return 0 if ok else 1


if __name__ == '__main__':
  sys.exit(main())
