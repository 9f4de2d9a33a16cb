#!/usr/bin/env bash
# Regenerates every binary heapprofd fixture from its .textproto with an
# encoder independent of heapconv (Google's schema from PyPI `perfetto`, via
# ../shared/tools/perfetto_encode.py), then the derived variants (gzip, zlib
# compressed_packets, truncated copies), then expected.json with
# expected_oracle.py. Deterministic: running it twice gives identical bytes.
#
#   bash .ci/install-oracles.sh      # once: target/oracle-venv + Go
#   bash tests/data/regen.sh
#
# Needs llvm-cxxfilt (Debian package llvm; on the rust image already) for the
# demangled names in expected.json.
set -euo pipefail

DATA="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$DATA/../.." && pwd)"
PY="$REPO/target/oracle-venv/bin/python"
ENC="$REPO/../shared/tools/perfetto_encode.py"
REF="$REPO/../shared/reference/traceconv"

if [ ! -x "$PY" ]; then
  echo "regen.sh: $PY missing; run: bash .ci/install-oracles.sh" >&2
  exit 1
fi
if [ ! -f "$ENC" ]; then
  echo "regen.sh: encoder not found at $ENC" >&2
  exit 1
fi

cd "$DATA"

# 1. Self-contained copy of the real-traceconv reference cases: refreshes
#    traceconv/cases/* and traceconv/expected/<case>/*.raw.txt from ../shared
#    (never deletes: the .pb outputs kept beside them by the parity tests stay).
if [ -d "$REF" ]; then
  mkdir -p traceconv/cases traceconv/expected
  cp "$REF"/cases/* traceconv/cases/
  for d in "$REF"/expected/*/; do
    c="$(basename "$d")"
    mkdir -p "traceconv/expected/$c"
    cp "$d"/*.raw.txt "traceconv/expected/$c/"
  done
  chmod -R u+w traceconv
fi

# 2. Plain encodings (every *.textproto here, e.g. the issue-14 shapes
#    dumps_in_one_packet and untimed_chains).
FIXTURES=()
for tp in *.textproto; do
  FIXTURES+=("${tp%.textproto}")
  "$PY" "$ENC" "$tp" "${tp%.textproto}.pftrace"
done
"$PY" "$ENC" "$REPO/examples/sample.textproto" "$REPO/examples/sample.pftrace"

# 3. Variants: whole-file gzip and zlib compressed_packets bundles.
for f in continuous_recycle heaps_and_procs inline_q_chain; do
  "$PY" "$ENC" --gzip "$f.textproto" "$f.pftrace.gz"
done
"$PY" "$ENC" --compress-packets 2 interned_chain_spill.textproto interned_chain_spill.zlib.pftrace
"$PY" "$ENC" --compress-packets 3 continuous_recycle.textproto continuous_recycle.zlib.pftrace
"$PY" "$ENC" --compress-packets 4 sequences.textproto sequences.zlib.pftrace

# 4. Truncated copies (see README.md, "Truncated traces").
"$PY" - <<'EOF'
import gzip

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pt


def varint(buf, pos):
  shift = value = 0
  while True:
    b = buf[pos]
    pos += 1
    value |= (b & 0x7F) << shift
    shift += 7
    if not b & 0x80:
      return value, pos


def enc_varint(n):
  out = bytearray()
  while True:
    b = n & 0x7F
    n >>= 7
    out.append(b | (0x80 if n else 0))
    if not n:
      return bytes(out)


def frames(buf):
  """Top-level Trace framing: (start, len_start, payload_start, end)."""
  out, pos = [], 0
  while pos < len(buf):
    assert buf[pos] == 0x0A, 'unexpected tag at %d' % pos
    n, p = varint(buf, pos + 1)
    out.append((pos, pos + 1, p, p + n))
    pos = p + n
  return out


def write(name, data, src, note):
  with open(name, 'wb') as f:
    f.write(data)
  print('%-45s %5d of %5d bytes of %s: %s' % (name, len(data), len(src),
                                               src_name[src], note))


src_name = {}


def load(name):
  data = open(name, 'rb').read()
  src_name[data] = name
  return data


chain = load('interned_chain_spill.pftrace')
fr = frames(chain)
s, ls, ps, e = fr[-1]
write('interned_chain_spill.trunc-midpacket.pftrace', chain[:ps + (e - ps) // 2],
      chain, 'cut in the middle of the last packet (the closing ProfilePacket)')
write('interned_chain_spill.trunc-tag.pftrace', chain[:s + 1], chain,
      'ends right after the 0x0A tag of the last packet')
multi = [f for f in fr if f[2] - f[1] >= 2]
s, ls, ps, e = multi[-1]
write('interned_chain_spill.trunc-midvarint.pftrace', chain[:ls + 1], chain,
      'cut after the first byte of the 2-byte length varint of packet %d '
      '(the interned-data packet)' % fr.index(multi[-1]))

cont = load('continuous_recycle.pftrace')
fr = frames(cont)
cut = None
for s, ls, ps, e in fr:
  p = pt.TracePacket()
  p.ParseFromString(cont[ps:e])
  if p.HasField('profile_packet') and p.profile_packet.index == 11:
    cut = s
write('continuous_recycle.trunc-midchain.pftrace', cont[:cut], cont,
      'clean packet boundary inside the last chain: dump 5 has its samples '
      '(index 10) but not its interned callstack 7 nor the closing packet')

gz = load('continuous_recycle.pftrace.gz')
write('continuous_recycle.trunc-gzip.pftrace', gz[:len(gz) * 6 // 10], gz,
      'gzip stream (whole-file gzip, despite the name) cut at 60%')

z = load('interned_chain_spill.zlib.pftrace')
fr = frames(z)
s, ls, ps, e = fr[-1]
w = pt.TracePacket()
w.ParseFromString(z[ps:e])
half = w.compressed_packets[:len(w.compressed_packets) // 2]
inner = b'\x92\x03' + enc_varint(len(half)) + half  # field 50, wire type 2
write('interned_chain_spill.zlib.trunc-zlib.pftrace',
      z[:s] + b'\x0a' + enc_varint(len(inner)) + inner, z,
      'outer framing intact; the last compressed_packets zlib stream is cut '
      'in half (%d of %d bytes)' % (len(half), len(w.compressed_packets)))
EOF

# 5. Every encoded file must decode with Google's schema; every truncated one
#    must fail to, except the one cut on a packet boundary.
for f in *.pftrace *.pftrace.gz "$REPO/examples/sample.pftrace"; do
  case "$f" in
    *.trunc-midchain.*)
      # Cut on a packet boundary: a valid Trace whose last chain never closes.
      "$PY" "$ENC" --decode "$f" >/dev/null ;;
    *.trunc-*)
      if "$PY" "$ENC" --decode "$f" >/dev/null 2>&1; then
        echo "regen.sh: truncated $f unexpectedly decodes" >&2
        exit 1
      fi ;;
    *)
      "$PY" "$ENC" --decode "$f" >/dev/null ;;
  esac
done
echo "decode check: ok"

# 6. Expectations, and the oracle's own check against real traceconv output.
ARGS=()
for f in "${FIXTURES[@]}"; do ARGS+=("$f.pftrace"); done
"$PY" expected_oracle.py --json expected.json "${ARGS[@]}"
# The variants must give exactly the same expectations as their base trace.
"$PY" expected_oracle.py --json /dev/stdout continuous_recycle.pftrace.gz \
  heaps_and_procs.pftrace.gz inline_q_chain.pftrace.gz \
  interned_chain_spill.zlib.pftrace continuous_recycle.zlib.pftrace \
  sequences.zlib.pftrace | "$PY" -c '
import json, sys
variants = json.load(sys.stdin)
base = json.load(open("expected.json"))
for name, entries in variants.items():
    b = name.replace(".zlib", "")
    assert entries == base[b], name
print("variants match their base traces")
'
"$PY" expected_oracle.py --check-reference traceconv

# 7. Java heap graph fixtures (their own script).
bash "$DATA/heapgraph/regen.sh"

# 8. The continuous-dump fixture of the cross-dump views and the timeline (its own script).
bash "$DATA/views/regen.sh"
