#!/usr/bin/env bash
# heapconv hprof-conv against Android's hprof-conv (Debian package hprof-conv) on the same
# synthetic ~100 MB Android heap dump (benches/hprof.rs writes it), with and without -z,
# three runs each, interleaved; then `heapconv inspect` on it (the whole reader: objects,
# references, classes, roots). Prints wall time, user CPU and peak RSS of every run, and
# checks that both tools wrote the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
exec </dev/null
HC=/usr/lib/android-sdk/platform-tools/hprof-conv
DIR=target/bench
DUMP=$DIR/android-synthetic.hprof
mkdir -p "$DIR"
cargo build --release --quiet
if [ ! -f "$DUMP" ]; then
  HEAPCONV_HPROF_DUMP="$DUMP" cargo bench --quiet --bench hprof -- --list >/dev/null
fi
ls -l "$DUMP"
T="%e s wall, %U s user, %S s sys, %M KB peak"
for run in 1 2 3; do
  for z in "" "-z"; do
    /usr/bin/time -f "hprof-conv $z: $T" "$HC" $z "$DUMP" "$DIR/theirs$z.hprof"
    /usr/bin/time -f "heapconv hprof-conv $z: $T" ./target/release/heapconv hprof-conv -q $z "$DUMP" "$DIR/ours$z.hprof"
    cmp "$DIR/theirs$z.hprof" "$DIR/ours$z.hprof" && echo "  identical output ($z)"
  done
  /usr/bin/time -f "heapconv inspect: $T" ./target/release/heapconv inspect "$DUMP" >/dev/null
done
