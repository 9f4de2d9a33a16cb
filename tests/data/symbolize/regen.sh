#!/usr/bin/env bash
# Regenerates the symbolization fixtures of this directory:
#   1. make_traces.py: *.textproto, expected.json and README.md from
#      symbols/truth.json (rebuild that first with symbols/build.sh and
#      symbols/make_truth.py if the binaries changed);
#   2. encodes every .textproto into .pftrace with the independent encoder
#      (../shared/tools/perfetto_encode.py: Google's schema from PyPI perfetto);
#   3. decodes every .pftrace again as a check.
# Deterministic: running it twice changes no byte.
#
#   bash .ci/install-oracles.sh                 # once: target/oracle-venv
#   bash tests/data/symbolize/regen.sh
set -euo pipefail

DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$DIR/../../.." && pwd)"
PY="$REPO/target/oracle-venv/bin/python"
ENC="$REPO/../shared/tools/perfetto_encode.py"

if [ ! -x "$PY" ]; then
  echo "regen.sh: $PY missing; run: bash .ci/install-oracles.sh" >&2
  exit 1
fi
if [ ! -f "$ENC" ]; then
  echo "regen.sh: encoder not found at $ENC" >&2
  exit 1
fi

cd "$DIR"
python3 make_traces.py
for tp in *.textproto; do
  "$PY" "$ENC" "$tp" "${tp%.textproto}.pftrace"
  "$PY" "$ENC" --decode "${tp%.textproto}.pftrace" > /dev/null
done
ls -l *.pftrace
