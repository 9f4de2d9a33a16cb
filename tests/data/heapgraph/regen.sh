#!/usr/bin/env bash
# Regenerates the Java heap graph fixtures (tests/data/heapgraph/*.pftrace) from their
# .textproto with the encoder independent of heapconv (../shared/tools/perfetto_encode.py:
# Google's schema from PyPI `perfetto`, plus the ART heap graph schema it registers itself),
# then checks that each decodes back with that schema. Deterministic.
#
#   bash .ci/install-oracles.sh               # once: target/oracle-venv
#   bash tests/data/heapgraph/regen.sh
#
# The reference case tests/data/traceconv/cases/heap_graph_small.pftrace is a copy of
# ../shared/reference/traceconv/ (refreshed by tests/data/regen.sh).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
PY="$REPO/target/oracle-venv/bin/python"
ENC="$REPO/../shared/tools/perfetto_encode.py"

if [ ! -x "$PY" ]; then
  echo "heapgraph/regen.sh: $PY missing; run: bash .ci/install-oracles.sh" >&2
  exit 1
fi
cd "$HERE"
# Every *.textproto here (the issue-14 shapes interleaved and no_roots included).
for tp in *.textproto; do
  "$PY" "$ENC" "$tp" "${tp%.textproto}.pftrace"
  "$PY" "$ENC" --decode "${tp%.textproto}.pftrace" >/dev/null
done
# Variants: whole-file gzip, and zlib compressed_packets bundles of 2 packets.
"$PY" "$ENC" --gzip continued.textproto continued.pftrace.gz
"$PY" "$ENC" --compress-packets 2 continued.textproto continued.zlib.pftrace
"$PY" "$ENC" --decode continued.pftrace.gz >/dev/null
"$PY" "$ENC" --decode continued.zlib.pftrace >/dev/null
echo "heap graph fixtures: ok"
