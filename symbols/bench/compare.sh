#!/usr/bin/env bash
# Side-by-side benchmark of heapconv's offline symbolizer (gimli/addr2line)
# against llvm-symbolizer, on the SQLite library built by build-sqlite.sh,
# with a check that both give the same answers. BENCHMARKS.md
# ("Offline symbolization") records the figures.
#
#   bash symbols/bench/compare.sh            # both parts
#   PART=addr2line bash symbols/bench/compare.sh   # only part 1
#   PART=trace     bash symbols/bench/compare.sh   # only part 2
#
# Part 1 (addr2line): N (default 100000) random addresses in FUNC symbols
#   (random-addrs.py), symbolized by
#     llvm-symbolizer --inlines --output-style=JSON --obj=target/bench/libsqlite3.so
#     heapconv addr2line --obj target/bench/libsqlite3.so
#   RUNS (default 3) runs each, interleaved, timed by /usr/bin/time; the median
#   wall time and peak RSS are printed. compare-answers.py then compares, per
#   address, (FunctionName, FileName, Line) innermost first.
# Part 2 (trace): a heapprofd trace with FRAMES (default 15000) distinct frames
#   in the library (make-sqlite-trace.py, encoded by
#   ../shared/tools/perfetto_encode.py), symbolized by `heapconv symbolize`
#   (RUNS runs, median); for reference llvm-symbolizer on the same addresses
#   (what `traceconv symbolize` spends its time in; traceconv itself cannot be
#   built here). check-module-symbols.py compares the ModuleSymbols written with
#   llvm-symbolizer's answers.
#
# Builds what is missing: target/bench/libsqlite3.so (build-sqlite.sh) and
# target/release/heapconv (cargo build --release). Part 2 needs
# target/oracle-venv (bash .ci/install-oracles.sh). LLVM_SYMBOLIZER overrides
# the llvm-symbolizer binary. Outputs stay in target/bench/. Exits 1 when any
# answer differs (after printing all figures).
set -euo pipefail
export LC_ALL=C

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
cd "$REPO"
OUT=target/bench
LIB=$OUT/libsqlite3.so
HEAPCONV=./target/release/heapconv
N="${N:-100000}"
FRAMES="${FRAMES:-15000}"
RUNS="${RUNS:-3}"
PART="${PART:-all}"
PY="$REPO/target/oracle-venv/bin/python"
ENC="$REPO/../shared/tools/perfetto_encode.py"
mkdir -p "$OUT"

LLVM_SYMBOLIZER="${LLVM_SYMBOLIZER:-$(command -v llvm-symbolizer || true)}"
if [ -z "$LLVM_SYMBOLIZER" ]; then
  for c in /usr/lib/llvm-*/bin/llvm-symbolizer; do [ -x "$c" ] && LLVM_SYMBOLIZER="$c"; done
fi
if [ -z "$LLVM_SYMBOLIZER" ] || [ ! -x "$LLVM_SYMBOLIZER" ]; then
  echo "compare.sh: llvm-symbolizer not found (apt-get install -y llvm, or set LLVM_SYMBOLIZER)" >&2
  exit 1
fi
if [ ! -x /usr/bin/time ]; then
  echo "compare.sh: /usr/bin/time missing (apt-get install -y time)" >&2
  exit 1
fi

[ -f "$LIB" ] || bash "$HERE/build-sqlite.sh"
cargo build --release -q

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, $(free -g | awk '/^Mem:/ {print $2}') GiB; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "versions: $("$LLVM_SYMBOLIZER" --version | sed -n 's/^ *\(.*LLVM version .*\)/\1/p' | head -n 1); heapconv $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?') (+ working tree), $(rustc --version)"
echo "library: $LIB, $(stat -c %s "$LIB") bytes, build id $(readelf -nW "$LIB" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')"

# median WALL_SECONDS... / median KB...: prints the middle value (lower middle for even counts).
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# timed NAME OUTFILE INFILE CMD...: one run; appends "wall kb" to $OUT/times.NAME.
timed() {
  local name="$1" outfile="$2" infile="$3"
  shift 3
  /usr/bin/time -f "%e s %M KB" -o "$OUT/time.tmp" "$@" < "$infile" > "$outfile"
  local t
  t="$(tail -n 1 "$OUT/time.tmp")"
  printf '  %-22s %s\n' "$name" "$t"
  echo "$t" | awk '{ print $1, $3 }' >> "$OUT/times.$name"
}

# report NAME...: median wall and RSS per tool, and the ratio to the first NAME.
report() {
  local base="" name w kb
  printf '%-22s %10s %12s %14s\n' tool "wall (med)" "peak RSS" "vs first"
  for name in "$@"; do
    # shellcheck disable=SC2046
    w="$(median $(awk '{ print $1 }' "$OUT/times.$name"))"
    # shellcheck disable=SC2046
    kb="$(median $(awk '{ print $2 }' "$OUT/times.$name"))"
    [ -n "$base" ] || base="$w"
    awk -v n="$name" -v w="$w" -v kb="$kb" -v b="$base" \
      'BEGIN { printf "%-22s %8.2f s %9.1f MiB %13.2fx\n", n, w, kb / 1024, (w > 0 ? b / w : 0) }'
  done
}

status=0

if [ "$PART" = all ] || [ "$PART" = addr2line ]; then
  ADDRS="$OUT/addrs-$N.txt"
  [ -s "$ADDRS" ] || python3 "$HERE/random-addrs.py" "$N" "$LIB" > "$ADDRS"
  echo
  echo "== part 1: $N addresses ($ADDRS), $RUNS runs each"
  rm -f "$OUT/times.llvm-symbolizer" "$OUT/times.heapconv-addr2line"
  for _ in $(seq "$RUNS"); do
    timed llvm-symbolizer "$OUT/llvm.jsonl" "$ADDRS" \
      "$LLVM_SYMBOLIZER" --inlines --output-style=JSON --obj="$LIB"
    timed heapconv-addr2line "$OUT/heapconv.jsonl" "$ADDRS" \
      "$HEAPCONV" addr2line --obj "$LIB"
  done
  report llvm-symbolizer heapconv-addr2line
  python3 "$HERE/compare-answers.py" "$OUT/llvm.jsonl" "$OUT/heapconv.jsonl" --names llvm,heapconv || status=1
fi

if [ "$PART" = all ] || [ "$PART" = trace ]; then
  if [ ! -x "$PY" ]; then
    echo "compare.sh: $PY missing; run: bash .ci/install-oracles.sh" >&2
    exit 1
  fi
  TP="$OUT/sqlite-$FRAMES.textproto"
  TRACE="$OUT/sqlite-$FRAMES.pftrace"
  TADDRS="$OUT/sqlite-$FRAMES.addrs"
  if [ ! -s "$TRACE" ] || [ "$TRACE" -ot "$LIB" ]; then
    python3 "$HERE/make-sqlite-trace.py" "$TP" "$TADDRS" --frames "$FRAMES" --library "$LIB"
    "$PY" "$ENC" "$TP" "$TRACE"
  fi
  echo
  echo "== part 2: whole trace $TRACE ($(stat -c %s "$TRACE") bytes, $FRAMES frames), $RUNS runs each"
  rm -f "$OUT/times.llvm-symbolizer-15k" "$OUT/times.heapconv-symbolize"
  for _ in $(seq "$RUNS"); do
    timed llvm-symbolizer-15k "$OUT/trace-llvm.jsonl" "$TADDRS" \
      "$LLVM_SYMBOLIZER" --inlines --output-style=JSON --obj="$LIB"
    timed heapconv-symbolize /dev/null /dev/null \
      "$HEAPCONV" symbolize "$TRACE" --symbol-dir "$OUT" -o "$OUT/sqlite-$FRAMES.symbols.pb" -q
  done
  report llvm-symbolizer-15k heapconv-symbolize
  "$HEAPCONV" symbolize "$TRACE" --symbol-dir "$OUT" -o /dev/null --json 2>&1 >/dev/null |
    "$PY" -c 'import json, sys; r = json.load(sys.stdin); print("heapconv symbolize: %d of %d frames symbolized" % (r["frames_symbolized"], r["frames"]))'
  "$PY" "$HERE/check-module-symbols.py" "$OUT/sqlite-$FRAMES.symbols.pb" "$OUT/trace-llvm.jsonl" || status=1
  echo "(traceconv cannot be built here; the issue quotes ~1.8 s for traceconv symbolize on 15k frames of this library)"
fi

exit "$status"
