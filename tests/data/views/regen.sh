#!/usr/bin/env bash
# Regenerates the continuous-dump fixture of the cross-dump views and the timeline
# (tests/data/views/views.pftrace): make_views.py writes views.textproto from its tables of
# cumulative values, the encoder independent of heapconv (../shared/tools/perfetto_encode.py:
# Google's schema from PyPI `perfetto`) encodes it, and the result must decode back with that
# schema. Deterministic: a second run changes no byte.
#
#   bash .ci/install-oracles.sh          # once: target/oracle-venv
#   bash tests/data/views/regen.sh
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../../.." && pwd)"
PY="$REPO/target/oracle-venv/bin/python"
ENC="$REPO/../shared/tools/perfetto_encode.py"

if [ ! -x "$PY" ]; then
  echo "views/regen.sh: $PY missing; run: bash .ci/install-oracles.sh" >&2
  exit 1
fi
cd "$HERE"
"$PY" make_views.py > views.textproto
"$PY" "$ENC" views.textproto views.pftrace
"$PY" "$ENC" --decode views.pftrace >/dev/null
echo "views fixture: ok"
