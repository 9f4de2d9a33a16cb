#!/usr/bin/env bash
# The deobfuscation benchmark of BENCHMARKS.md: heapconv's retrace example against ProGuard's
# ReTrace on the same generated map and frames, interleaved, RUNS times each.
#   bash benches/deobfuscate.sh [RUNS=3] [FRAMES=200000]
# Needs Java and Debian's libproguard-java (.ci/install-oracles.sh installs both).
set -euo pipefail
runs=${1:-3}
frames=${2:-200000}
dir=target/bench/deob
mkdir -p "$dir"
if [ ! -s "$dir/big.map" ] || [ ! -s "$dir/big-$frames.stack" ]; then
  python3 benches/gen_proguard_map.py "$dir/big.map" "$dir/big-$frames.stack" 100 "$frames"
fi
cargo build --release --example retrace -q
fmt="%e s wall, %U s user, %S s sys, %M KB peak"
for i in $(seq "$runs"); do
  printf 'heapconv run %s: ' "$i"
  /usr/bin/time -f "$fmt" target/release/examples/retrace "$dir/big.map" "$dir/big-$frames.stack" 2>&1 >"$dir/heapconv.out" | tail -1
  printf 'ReTrace  run %s: ' "$i"
  /usr/bin/time -f "$fmt" java -cp /usr/share/java/proguard.jar:/usr/share/java/retrace.jar proguard.retrace.ReTrace \
    "$dir/big.map" "$dir/big-$frames.stack" 2>&1 >"$dir/retrace.out" | tail -1
done
echo "lines: heapconv $(wc -l <"$dir/heapconv.out"), ReTrace $(wc -l <"$dir/retrace.out"), differing $(diff "$dir/heapconv.out" "$dir/retrace.out" | grep -c '^<' || true)"
