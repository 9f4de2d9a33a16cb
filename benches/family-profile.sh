#!/usr/bin/env bash
# `heapconv profile` over issue 15's trace family, one axis at a time from the issue's shape
# (BENCHMARKS.md, "growth table"): for each member, the trace is made once by `synth` under
# $BENCH_DIR/family (default target/bench/family), then each build given is run on it in turn.
#   bash benches/family-profile.sh BINARY... [-- MEMBER...]
# Members: base frames60k frames1m depth16 depth64 depth128 callstacks100k callstacks1m dumps16
#          mappings10 mappings1000 names-shared (default: all but callstacks1m and dumps16,
#          which write 236-282 MB traces and take minutes each).
# Prints, per member: trace size, then per build wall, user, sys and peak RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do BINS+=("$1"); shift; done
[ $# -gt 0 ] && shift
MEMBERS=${*:-base frames60k frames1m depth16 depth64 depth128 callstacks100k mappings10 mappings1000 names-shared}
D=${BENCH_DIR:-target/bench}/family; mkdir -p "$D"
SYNTH=${SYNTH:-./target/release/synth}
T="%e s wall, %U s user, %S s sys, %M KB peak"
flags() {
  case $1 in
  base) ;; frames60k) echo --frames 60000 ;; frames1m) echo --frames 1000000 ;;
  depth16) echo --depth 16 ;; depth64) echo --depth 64 ;; depth128) echo --depth 128 ;;
  callstacks100k) echo --callstacks 100000 ;; callstacks1m) echo --callstacks 1000000 ;;
  dumps16) echo --dumps 16 ;; mappings10) echo --mappings 10 ;; mappings1000) echo --mappings 1000 ;;
  names-shared) echo --names shared ;; *) echo "unknown member $1" >&2; exit 2 ;;
  esac
}
for m in $MEMBERS; do
  f=$(flags "$m")
  # shellcheck disable=SC2086
  [ -f "$D/$m.pftrace" ] || "$SYNTH" -o "$D/$m.pftrace" --shape issue15 $f -q
  echo "$m: $(du -m "$D/$m.pftrace" | cut -f1) MB"
  for b in "${BINS[@]}"; do
    rm -rf "$D/out"
    /usr/bin/time -f "  $b: $T" "$b" profile "$D/$m.pftrace" -o "$D/out" -q
  done
done 2>&1
rm -rf "$D/out"
