#!/usr/bin/env bash
# Issue 15 side-by-side figures (BENCHMARKS.md, "Issue 15"), RUNS rounds (default 2), interleaved:
#   flame: `convert --to svg` and `--to folded` of one dump (`--pid 1000`, its last) of the
#          300k-callstack synthetic trace and of the issue's shape, OLD build vs NEW build (bytes
#          compared), and `profile` of the whole trace with its wall time per dump written;
#   symbolize: `heapconv symbolize` of the mixed SQLite trace (44k callstacks, 59k frames in 4
#          mappings, 13.7k of them in libsqlite3.so) vs `llvm-symbolizer` on its 13.7k addresses;
#   merge: `heapconv merge` vs `go tool pprof -proto` on the existing pair (A.pb, B.pb), on
#          the two largest pprofs `profile` writes for the 300k trace, and on two pprofs of the
#          issue's big-frame shape (benches/pprof-shape.py: 200k locations, 160k functions,
#          120 mappings, 300k samples).
#   profile: `heapconv profile` of the issue's shape (`synth --shape issue15`, 90.8 MB), OLD vs
#          NEW, outputs compared (decompressed always; compressed bytes too, which differ
#          from builds before the parallel gzip members, and before libdeflate's (session 10)).
#   bash benches/issue15.sh OLD_BINARY NEW_BINARY [flame|symbolize|merge|profile]...
# Prints wall, user, sys and peak RSS per run. On a loaded machine compare user+sys (CPU) and
# peak RSS, not wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$1; NEW=$2; shift 2; PARTS=${*:-flame symbolize merge profile}; RUNS=${RUNS:-2}
B=target/bench; mkdir -p "$B"
# Where the flame and symbolize parts write their outputs (BENCH_OUT; default a new temporary
# directory: target/bench holds the shared inputs, read-only for most users).
O=${BENCH_OUT:-$(mktemp -d)}; mkdir -p "$O"; echo "outputs in $O"
T="%e s wall, %U s user, %S s sys, %M KB peak"
[ -f $B/big300k.pftrace ] || ./target/release/synth -o $B/big300k.pftrace --callstacks 300000 --depth 30 --dumps 4 --processes 2
for part in $PARTS; do
  case $part in
  flame)
    # Both traces: the 300k synthetic one and the issue's shape; `profile`'s wall time divided
    # by the dumps it writes is the per-dump time `convert --to svg` of one dump is held to.
    [ -f $B/issue15.pftrace ] || ./target/release/synth --shape issue15 -o $B/issue15.pftrace -q
    for t in big300k issue15; do
      for _ in $(seq "$RUNS"); do
        for who in old new; do
          H=$OLD; [ $who = new ] && H=$NEW
          /usr/bin/time -f "$t svg $who: $T" "$H" convert $B/$t.pftrace --pid 1000 --to svg -o $O/f-$t-$who.svg -q
          /usr/bin/time -f "$t folded $who: $T" "$H" convert $B/$t.pftrace --pid 1000 --to folded -o $O/f-$t-$who.folded -q
          rm -rf $O/fp-$who
          /usr/bin/time -o $O/profile.time -f "%e %U %S %M" "$H" profile $B/$t.pftrace -o $O/fp-$who -q
          read -r w u s m < $O/profile.time
          n=$(ls $O/fp-$who | wc -l)
          echo "$t profile $who: $w s wall, $u s user, $s s sys, $m KB peak; $n dumps: per dump" \
            "$(echo "scale=3; $w / $n" | bc) s wall, $(echo "scale=3; ($u + $s) / $n" | bc) s CPU"
        done
      done 2>&1
      cmp $O/f-$t-old.svg $O/f-$t-new.svg && echo "$t svg identical"
      cmp $O/f-$t-old.folded $O/f-$t-new.folded && echo "$t folded identical"
    done ;;
  symbolize)
    [ -f $B/libsqlite3.so ] || bash symbols/bench/build-sqlite.sh
    if [ ! -f $B/mixed.pftrace ]; then
      python3 symbols/bench/make-sqlite-trace.py $B/mixed.textproto $B/mixed.addrs --frames 13700 \
        --other-frames 45300 --callstacks 44000 --depth 30
      target/oracle-venv/bin/python ../shared/tools/perfetto_encode.py $B/mixed.textproto $B/mixed.pftrace
    fi
    # The outputs go to $O (BENCH_OUT), never into the inputs' directory.
    for _ in $(seq "$RUNS"); do
      /usr/bin/time -f "symbolize new: $T" "$NEW" symbolize $B/mixed.pftrace --symbol-dir $B -o $O/mixed.symbols.pb -q
      /usr/bin/time -f "symbolize old: $T" "$OLD" symbolize $B/mixed.pftrace --symbol-dir $B -o $O/mixed.symbols-old.pb -q
      /usr/bin/time -f "llvm-symbolizer: $T" llvm-symbolizer --inlines --output-style=JSON --obj=$B/libsqlite3.so \
        < $B/mixed.addrs > $O/mixed.llvm.jsonl
    done 2>&1
    cmp $O/mixed.symbols.pb $O/mixed.symbols-old.pb && echo "symbolize identical to OLD"
    target/oracle-venv/bin/python symbols/bench/check-module-symbols.py $O/mixed.symbols.pb $O/mixed.llvm.jsonl ;;
  merge)
    [ -d $B/fp-new ] || "$NEW" profile $B/big300k.pftrace -o $B/fp-new -q
    # shellcheck disable=SC2012
    # (`read` meets EOF without a newline and returns 1: not an error here, under set -e.)
    read -r P1 P2 < <(ls -S $B/fp-new/*.pb.gz | head -2 | tr '\n' ' ') || true
    [ -f $B/shape1.pb ] || python3 benches/pprof-shape.py 1 $B/shape1.pb
    [ -f $B/shape2.pb ] || python3 benches/pprof-shape.py 2 $B/shape2.pb
    for pair in "$B/A.pb $B/B.pb" "$P1 $P2" "$B/shape1.pb $B/shape2.pb"; do
      [ -f "${pair%% *}" ] || continue
      for _ in $(seq "$RUNS"); do
        # shellcheck disable=SC2086
        /usr/bin/time -f "merge heapconv ($pair): $T" "$NEW" merge $pair -o $O/merge.pb.gz -q
        /usr/bin/time -f "merge go ($pair): $T" sh -c "go tool pprof -proto $pair > $O/merge-go.pb.gz 2>/dev/null"
      done 2>&1
    done ;;
  profile)
    [ -f $B/issue15.pftrace ] || ./target/release/synth --shape issue15 -o $B/issue15.pftrace -q
    for _ in $(seq "$RUNS"); do
      for who in old new; do
        H=$OLD; [ $who = new ] && H=$NEW
        rm -rf $O/p15-$who; /usr/bin/time -f "profile $who: $T" "$H" profile $B/issue15.pftrace -o $O/p15-$who -q
      done
    done 2>&1
    for f in $O/p15-old/*.pb.gz; do
      g=$O/p15-new/$(basename "$f")
      [ "$(zcat "$f" | sha256sum)" = "$(zcat "$g" | sha256sum)" ] || echo "DIFFERENT (decompressed): $f"
      cmp -s "$f" "$g" || echo "compressed bytes differ: $f"
    done
    echo "profile outputs compared: $(ls $O/p15-old | wc -l) files" ;;
  esac
done
