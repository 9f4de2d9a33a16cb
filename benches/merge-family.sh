#!/usr/bin/env bash
# `heapconv merge` against `go tool pprof -proto` on every input pair of issue 15's benchmark
# family, interleaved in one run (RUNS rounds, default 1), with the old build beside:
#   bash benches/merge-family.sh OLD_BINARY NEW_BINARY [PAIR_NAME...]
# Pairs (made on first use under $BENCH_DIR, default target/bench; the trace pairs are the two largest pprofs that
# `profile` writes for a `synth --shape issue15` family member):
#   AB        /work/bench/A.pb + B.pb if present (BENCHMARKS.md "Merging two ~40 MB pprof files")
#   shape     benches/pprof-shape.py 1 and 2 (200k locations, 160k functions, 120 mappings)
#   i15       the issue-15 shape itself (synth --shape issue15)
#   frames60k frames1m depth16 depth128 mappings1000   (synth --shape issue15 --frames 60000 ...)
#   big300k   the classic 300k-callstack trace (synth --callstacks 300000 --depth 30 --dumps 4)
#   goheap    two real Go heap profiles (180k samples, 7 MB each) written by benches/goheap
#   gofix     the two largest real Go heap profiles in /work/fixtures-real/pprof if present
# Prints wall, user, sys and peak RSS per run, and whether NEW's output is byte-identical to
# OLD's and has go's samples (folded stacks of the default type, both outputs read by NEW).
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$1; NEW=$2; shift 2
PAIRS=${*:-AB shape i15 frames60k frames1m depth16 depth128 mappings1000 big300k goheap gofix}
RUNS=${RUNS:-1}; B=${BENCH_DIR:-target/bench}; P=$B/pairs; mkdir -p "$P"; P=$(cd "$P" && pwd)
SYNTH=${SYNTH:-./target/release/synth}
T="%e s wall, %U s user, %S s sys, %M KB peak"
trace_pair() { # name, synth flags...
  local name=$1; shift
  [ -f "$P/$name.a.pb.gz" ] && return
  "$SYNTH" -o "$P/t.pftrace" "$@" -q
  rm -rf "$P/t"; "$NEW" profile "$P/t.pftrace" -o "$P/t" -q
  # shellcheck disable=SC2012
  set -- $(ls -S "$P"/t/*.pb.gz | head -2)
  mv "$1" "$P/$name.a.pb.gz"; mv "$2" "$P/$name.b.pb.gz"; rm -rf "$P/t" "$P/t.pftrace"
}
for name in $PAIRS; do
  case $name in
  AB) [ -f /work/bench/A.pb ] || continue; pair="/work/bench/A.pb /work/bench/B.pb" ;;
  shape)
    [ -f $B/shape1.pb ] || python3 benches/pprof-shape.py 1 $B/shape1.pb
    [ -f $B/shape2.pb ] || python3 benches/pprof-shape.py 2 $B/shape2.pb
    pair="$B/shape1.pb $B/shape2.pb" ;;
  goheap)
    if [ ! -f "$P/goheap.b.pb.gz" ]; then
      (cd benches/goheap && go build -o "$P/goheap" .)
      "$P/goheap" "$P/goheap.a.pb.gz" 180000 1; "$P/goheap" "$P/goheap.b.pb.gz" 180000 2
    fi
    pair="$P/goheap.a.pb.gz $P/goheap.b.pb.gz" ;;
  gofix)
    d=/work/fixtures-real/pprof; [ -d $d ] || continue
    pair="$d/go-heap-big.pprof $d/go-heap-default-alloc_space.pprof" ;;
  i15) trace_pair i15 --shape issue15; pair="$P/i15.a.pb.gz $P/i15.b.pb.gz" ;;
  frames60k) trace_pair "$name" --shape issue15 --frames 60000; pair="$P/$name.a.pb.gz $P/$name.b.pb.gz" ;;
  frames1m) trace_pair "$name" --shape issue15 --frames 1000000; pair="$P/$name.a.pb.gz $P/$name.b.pb.gz" ;;
  depth16) trace_pair "$name" --shape issue15 --depth 16; pair="$P/$name.a.pb.gz $P/$name.b.pb.gz" ;;
  depth128) trace_pair "$name" --shape issue15 --depth 128; pair="$P/$name.a.pb.gz $P/$name.b.pb.gz" ;;
  mappings1000) trace_pair "$name" --shape issue15 --mappings 1000; pair="$P/$name.a.pb.gz $P/$name.b.pb.gz" ;;
  big300k) trace_pair "$name" --callstacks 300000 --depth 30 --dumps 4 --processes 2; pair="$P/$name.a.pb.gz $P/$name.b.pb.gz" ;;
  *) echo "unknown pair $name"; exit 2 ;;
  esac
  for _ in $(seq "$RUNS"); do
    # shellcheck disable=SC2086
    /usr/bin/time -f "$name new: $T" "$NEW" merge $pair -o $B/m-new.pb.gz -q
    # shellcheck disable=SC2086
    /usr/bin/time -f "$name old: $T" "$OLD" merge $pair -o $B/m-old.pb.gz -q
    /usr/bin/time -f "$name go: $T" sh -c "go tool pprof -proto $pair > $B/m-go.pb.gz 2>/dev/null"
  done 2>&1
  # Decompressed: the gzip members depend on the build's compressor (libdeflate, or igzip with --features isal).
  cmp -s <(gzip -dc $B/m-new.pb.gz) <(gzip -dc $B/m-old.pb.gz) && echo "$name: new output identical to old (decompressed)" || echo "$name: new output DIFFERS from old (decompressed)"
  "$NEW" convert $B/m-new.pb.gz --to folded -o $B/m-new.folded -q
  "$NEW" convert $B/m-go.pb.gz --to folded -o $B/m-go.folded -q
  cmp -s $B/m-new.folded $B/m-go.folded && echo "$name: same samples as go (folded)" || echo "$name: samples DIFFER from go's (folded)"
done
