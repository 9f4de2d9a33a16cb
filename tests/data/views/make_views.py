#!/usr/bin/env python3
"""Writes views.textproto: a heapprofd trace with continuous dumps whose peak dump,
deltas and leak suspects are known by construction (see the tables below and the
comments written into the trace). Deterministic; run by regen.sh.

Values are CUMULATIVE per callstack, as heapprofd writes them:
(alloc_count, free_count) per dump; bytes = count * allocation size.
"""

import sys

# Trace clock = MONOTONIC_COARSE + 250 ms (the clock snapshot below).
OFFSET = 250_000_000

# pid 10 (com.example.leaky), sequence 3, five dumps at 1 s .. 5 s (raw clock).
# name -> (callstack iid, allocation size, [(alloc_count, free_count) per dump])
LEAKY_MALLOC = [
    # grows at every dump: the leak (unreleased 4, 8, 12, 16, 20 KiB)
    ("Leaky::grow", 1, 4096, [(1, 0), (2, 0), (3, 0), (4, 0), (5, 0)]),
    # grows, stays flat from dump 2 to 3, grows again (64, 128, 128, 192, 256 KiB)
    ("Cache::fill", 2, 65536, [(1, 0), (2, 0), (2, 0), (3, 0), (4, 0)]),
    # a burst: 256 KiB, 1 MiB, 2 MiB, then all freed -> dump 3 is the peak
    ("Burst::spike", 3, 262144, [(1, 0), (4, 0), (8, 0), (8, 8), (8, 8)]),
    # churn: allocates 10 x 16 KiB per interval and frees them (unreleased 0)
    ("Temp::churn", 4, 16384, [(10, 10), (20, 20), (30, 30), (40, 40), (50, 50)]),
]
# pid 10, heap com.android.art (Java sampling, no frees: two sample types only).
LEAKY_ART = [
    ("com.example.leaky.Loader.load", 5, 1024, [(5, 0), (10, 0), (15, 0), (20, 0), (25, 0)]),
]
# pid 20 (com.example.steady), sequence 5, three dumps at 1.5 s, 2.5 s, 3.5 s; dump 2 is
# identical to dump 1 (nothing changed); at dump 3 Steady::work frees its 32 KiB.
STEADY_MALLOC = [
    ("Steady::work", 1, 32768, [(1, 0), (1, 0), (1, 1)]),
    ("Steady::buffer", 2, 8192, [(1, 0), (1, 0), (1, 0)]),
]

MANGLED = {
    "Leaky::grow": "_ZN5Leaky4growEv",
    "Cache::fill": "_ZN5Cache4fillEv",
    "Burst::spike": "_ZN5Burst5spikeEv",
    "Temp::churn": "_ZN4Temp5churnEv",
    "Steady::work": "_ZN6Steady4workEv",
    "Steady::buffer": "_ZN6Steady6bufferEv",
}


def interned(app_lib, entries, art):
  """Interned data of one sequence: mappings, functions, frames, callstacks."""
  out = []
  paths = ["system", "lib64", "libc.so", "data", "app", app_lib, "oat", "base.odex"]
  for i, p in enumerate(paths, 1):
    out.append('mapping_paths { iid: %d str: "%s" }' % (i, p))
  out.append('build_ids { iid: 20 str: "\\x11\\x22\\x33\\x44\\x55\\x66\\x77\\x88\\x99\\xaa\\xbb\\xcc\\xdd\\xee\\xff\\x00\\x12\\x34\\x56\\x78" }')
  out.append('mappings { iid: 30 build_id: 20 start: 0x7a00000000 end: 0x7a000c0000 path_string_ids: 1 path_string_ids: 2 path_string_ids: 3 }')
  out.append('mappings { iid: 31 start: 0x7b00000000 end: 0x7b00080000 path_string_ids: 4 path_string_ids: 5 path_string_ids: 6 }')
  out.append('mappings { iid: 32 start: 0x7c00000000 end: 0x7c00400000 path_string_ids: 4 path_string_ids: 5 path_string_ids: 7 path_string_ids: 8 }')
  funcs = ["__start_thread", "malloc", "android.os.Looper.loop"]
  for name, *_ in entries:
    funcs.append(MANGLED.get(name, name))
  fid = {}
  for i, f in enumerate(funcs, 40):
    fid[f] = i
    out.append('function_names { iid: %d str: "%s" }' % (i, f))
  out.append('frames { iid: 60 function_name_id: %d mapping_id: 30 rel_pc: 0xb4d8c }' % fid["__start_thread"])
  out.append('frames { iid: 61 function_name_id: %d mapping_id: 30 rel_pc: 0x4a8b4 }' % fid["malloc"])
  out.append('frames { iid: 62 function_name_id: %d mapping_id: 32 rel_pc: 0x5e3a20 }' % fid["android.os.Looper.loop"])
  for n, (name, cs, _, _) in enumerate(entries):
    frame = 70 + n
    if name in art:
      out.append('frames { iid: %d function_name_id: %d mapping_id: 32 rel_pc: %#x }' % (frame, fid[name], 0x8c000 + 0x100 * n))
      out.append('callstacks { iid: %d frame_ids: 62 frame_ids: %d }' % (cs, frame))
    else:
      out.append('frames { iid: %d function_name_id: %d mapping_id: 31 rel_pc: %#x }' % (frame, fid[MANGLED[name]], 0x1c000 + 0x100 * n))
      out.append('callstacks { iid: %d frame_ids: 60 frame_ids: %d frame_ids: 61 }' % (cs, frame))
  return out


def samples(entries, d):
  out = []
  for _, cs, size, series in entries:
    a, f = series[d]
    if a == 0 and f == 0:
      continue
    out.append('samples { callstack_id: %d self_allocated: %d self_freed: %d alloc_count: %d free_count: %d }'
               % (cs, a * size, f * size, a, f))
  return out


def heap_dump(pid, heap, raw, start, entries, d):
  return ('process_dumps { pid: %d heap_name: "%s" sampling_interval_bytes: 4096 orig_sampling_interval_bytes: 4096 '
          'start_timestamp: %d timestamp: %d\n      %s }' % (pid, heap, start, raw, "\n      ".join(samples(entries, d))))


def main():
  packets = []  # (trace time, order, text)
  packets.append((0, 0, 'packet { timestamp: 100 process_tree {\n'
                  '  processes { pid: 10 ppid: 1 uid: 10120 cmdline: "com.example.leaky" }\n'
                  '  processes { pid: 20 ppid: 1 uid: 10121 cmdline: "com.example.steady" } } }'))
  packets.append((0, 1, 'packet { timestamp: 100 clock_snapshot { clocks { clock_id: 6 timestamp: %d } '
                  'clocks { clock_id: 4 timestamp: 0 } primary_trace_clock: BUILTIN_CLOCK_BOOTTIME } }' % OFFSET))
  for seq, lib, entries, art in [(3, "libleaky.so", LEAKY_MALLOC + LEAKY_ART, {"com.example.leaky.Loader.load"}),
                                 (5, "libsteady.so", STEADY_MALLOC, set())]:
    packets.append((1, seq, 'packet { trusted_packet_sequence_id: %d trusted_pid: 900 timestamp: 200 '
                    'incremental_state_cleared: true\n  interned_data {\n    '
                    'build_ids { iid: 0 str: "" } mapping_paths { iid: 0 str: "" } function_names { iid: 0 str: "" }\n    %s\n  } }'
                    % (seq, "\n    ".join(interned(lib, entries, art)))))
  index = {3: 0, 5: 0}

  def chain(seq, raw, dumps):
    t = raw + OFFSET
    body = "\n    ".join(dumps)
    p1 = ('packet { trusted_packet_sequence_id: %d trusted_pid: 900 timestamp: %d\n  profile_packet { index: %d continued: true\n    %s } }'
          % (seq, t, index[seq], body))
    p2 = ('packet { trusted_packet_sequence_id: %d trusted_pid: 900 timestamp: %d profile_packet { index: %d continued: false } }'
          % (seq, t, index[seq] + 1))
    index[seq] += 2
    return p1 + "\n" + p2

  for d in range(5):
    raw = (d + 1) * 1_000_000_000
    start = d * 1_000_000_000
    packets.append((raw + OFFSET, 3, "# ---- pid 10, dump %d at raw %d (trace clock %d)\n" % (d + 1, raw, raw + OFFSET)
                    + chain(3, raw, [heap_dump(10, "libc.malloc", raw, start, LEAKY_MALLOC, d),
                                     heap_dump(10, "com.android.art", raw, start, LEAKY_ART, d)])))
  for d in range(3):
    raw = 1_500_000_000 + d * 1_000_000_000
    start = raw - 1_000_000_000
    packets.append((raw + OFFSET, 5, "# ---- pid 20, dump %d at raw %d (trace clock %d)\n" % (d + 1, raw, raw + OFFSET)
                    + chain(5, raw, [heap_dump(20, "libc.malloc", raw, start, STEADY_MALLOC, d)])))
  packets.sort(key=lambda p: (p[0], p[1]))
  out = sys.stdout
  for line in __doc__.strip().splitlines():
    out.write(("# " + line).rstrip() + "\n")
  out.write("# Generated by make_views.py; do not edit by hand.\n")
  for _, _, text in packets:
    out.write(text + "\n")


if __name__ == "__main__":
  main()
