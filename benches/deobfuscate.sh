#!/usr/bin/env bash
# The deobfuscation benchmark of BENCHMARKS.md: heapconv's retrace example against ProGuard's
# ReTrace on the same generated map and frames, interleaved, RUNS times each.
#   bash benches/deobfuscate.sh [RUNS=3] [FRAMES=200000]
# Needs Java and Debian's libproguard-java (.ci/install-oracles.sh installs both).
# The map and frames are made once under target/bench/deob (DEOB_DIR); the outputs of each run
# go to DEOB_OUT (default: a scratch directory under /tmp), so a shared read-only input
# directory works. HEAPCONV_RETRACE=path runs another build of the example (a side-by-side
# "before"), interleaved with this one.
set -euo pipefail
runs=${1:-3}
frames=${2:-200000}
dir=${DEOB_DIR:-target/bench/deob}
out=${DEOB_OUT:-${TMPDIR:-/tmp}/heapconv-deob}
mkdir -p "$dir" "$out"
if [ ! -s "$dir/big.map" ] || [ ! -s "$dir/big-$frames.stack" ]; then
  python3 benches/gen_proguard_map.py "$dir/big.map" "$dir/big-$frames.stack" 100 "$frames"
fi
cargo build --release --example retrace -q
fmt="%e s wall, %U s user, %S s sys, %M KB peak"
for i in $(seq "$runs"); do
  if [ -n "${HEAPCONV_RETRACE:-}" ]; then
    printf 'before   run %s: ' "$i"
    /usr/bin/time -f "$fmt" "$HEAPCONV_RETRACE" "$dir/big.map" "$dir/big-$frames.stack" 2>&1 >"$out/before.out" | tail -1
  fi
  printf 'heapconv run %s: ' "$i"
  /usr/bin/time -f "$fmt" target/release/examples/retrace "$dir/big.map" "$dir/big-$frames.stack" 2>&1 >"$out/heapconv.out" | tail -1
  printf 'ReTrace  run %s: ' "$i"
  /usr/bin/time -f "$fmt" java -cp /usr/share/java/proguard.jar:/usr/share/java/retrace.jar proguard.retrace.ReTrace \
    "$dir/big.map" "$dir/big-$frames.stack" 2>&1 >"$out/retrace.out" | tail -1
done
echo "lines: heapconv $(wc -l <"$out/heapconv.out"), ReTrace $(wc -l <"$out/retrace.out"), differing $(diff "$out/heapconv.out" "$out/retrace.out" | grep -c '^<' || true)"
if [ -n "${HEAPCONV_RETRACE:-}" ]; then
  cmp -s "$out/before.out" "$out/heapconv.out" && echo "before and now: identical" || echo "before and now: DIFFER"
fi
