#!/usr/bin/env bash
# Issue 15, session 11 (the gzip compressor): `heapconv profile` of the issue's shape and
# `heapconv merge` of the frames1m pair, OLD build vs NEW build interleaved, RUNS rounds
# (default 3). Prints wall, user, sys and peak RSS per run, the compressed bytes each build
# wrote, and whether the decompressed outputs are identical. Outputs go to OUT_DIR.
#   RUNS=3 bash benches/gzip.sh OLD_BINARY NEW_BINARY [OUT_DIR]
# TRACE (default target/bench/issue15.pftrace) and PAIR (default the frames1m pair of
# benches/merge-family.sh under $BENCH_DIR, default target/bench) pick other inputs.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$1; NEW=$2; O=${3:-/tmp/heapconv-gzip-bench}; RUNS=${RUNS:-3}
TRACE=${TRACE:-target/bench/issue15.pftrace}
P=${BENCH_DIR:-target/bench}/pairs
PAIR=${PAIR:-"$P/frames1m.a.pb.gz $P/frames1m.b.pb.gz"}
T="%e s wall, %U s user, %S s sys, %M KB peak"
mkdir -p "$O"
[ -f "$TRACE" ] || ./target/release/synth --shape issue15 -o "$TRACE" -q
# shellcheck disable=SC2086
[ -f ${PAIR%% *} ] || bash benches/merge-family.sh "$OLD" "$NEW" frames1m >/dev/null
for _ in $(seq "$RUNS"); do
  for who in old new; do
    H=$OLD; [ $who = new ] && H=$NEW
    rm -rf "$O/p-$who"
    /usr/bin/time -f "profile $who: $T" "$H" profile "$TRACE" -o "$O/p-$who" -q
    # shellcheck disable=SC2086
    /usr/bin/time -f "merge $who: $T" "$H" merge $PAIR -o "$O/m-$who.pb.gz" -q
  done
done 2>&1
for who in old new; do
  echo "$who wrote: profile $(cat "$O"/p-$who/*.pb.gz | wc -c) bytes, merge $(wc -c < "$O/m-$who.pb.gz") bytes"
done
for f in "$O"/p-old/*.pb.gz "$O/m-old.pb.gz"; do
  g=${f/p-old/p-new}; g=${g/m-old/m-new}
  [ "$(zcat "$f" | sha256sum)" = "$(zcat "$g" | sha256sum)" ] || echo "DIFFERENT (decompressed): $f"
  gzip -t "$g" || echo "gzip -t fails: $g"
done
echo "outputs compared: $(ls "$O/p-old" | wc -l) profile files and the merge"
