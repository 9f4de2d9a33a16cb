#!/usr/bin/env bash
# Two builds of heapconv side by side on the same inputs, interleaved (RUNS each, default 3):
# `profile` of the 300k-callstack synthetic trace, `merge` of two ~40 MB pprofs, `symbolize`
# of the SQLite trace, `hprof-conv` of the ~100 MB synthetic Android dump. Prints wall, user,
# sys and peak RSS per run, then whether the two builds wrote the same bytes.
#   bash benches/compare-builds.sh OLD_BINARY NEW_BINARY
# Make OLD_BINARY from another commit with `git worktree add /tmp/old COMMIT && cargo build
# --release --manifest-path /tmp/old/Cargo.toml`. Inputs are made once under target/bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$1; NEW=$2; RUNS=${RUNS:-3}
B=target/bench; mkdir -p "$B"
T="%e s wall, %U s user, %S s sys, %M KB peak"
cargo build --release --quiet --workspace
[ -f $B/big300k.pftrace ] || ./target/release/synth -o $B/big300k.pftrace --callstacks 300000 --depth 30 --dumps 4 --processes 2
if [ ! -f $B/A.pb ]; then
  ./target/release/synth -o $B/t540k.pftrace --callstacks 540000 --depth 30 --dumps 2 --processes 1
  ./target/release/heapconv profile --raw $B/t540k.pftrace -o $B/t540k -q
  cp $B/t540k/heap_dump.1.1000.libc.malloc.pb $B/A.pb; cp $B/t540k/heap_dump.2.1000.libc.malloc.pb $B/B.pb
fi
[ -f $B/sqlite-15000.pftrace ] || PART=trace RUNS=0 bash symbols/bench/compare.sh >/dev/null 2>&1 || true
[ -f $B/android-synthetic.hprof ] || HEAPCONV_HPROF_DUMP=$B/android-synthetic.hprof cargo bench --quiet --bench hprof -- --list >/dev/null
for _ in $(seq "$RUNS"); do
  for who in old new; do
    H=$OLD; [ $who = new ] && H=$NEW
    rm -rf $B/p-$who
    /usr/bin/time -f "profile $who: $T" "$H" profile $B/big300k.pftrace -o $B/p-$who -q
    /usr/bin/time -f "merge $who: $T" "$H" merge $B/A.pb $B/B.pb -o $B/m-$who.pb.gz -q
    /usr/bin/time -f "symbolize $who: $T" "$H" symbolize $B/sqlite-15000.pftrace --symbol-dir $B -o $B/s-$who.pb -q
    /usr/bin/time -f "hprof-conv $who: $T" "$H" hprof-conv -q $B/android-synthetic.hprof $B/h-$who.hprof
  done
done
diff -r $B/p-old $B/p-new >/dev/null && echo "profile: same bytes" || echo "profile: outputs differ"
for f in m:merge:pb.gz s:symbolize:pb h:hprof-conv:hprof; do
  IFS=: read -r p name ext <<<"$f"
  cmp -s $B/$p-old.$ext $B/$p-new.$ext && echo "$name: same bytes" || echo "$name: outputs differ"
done
