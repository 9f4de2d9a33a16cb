#!/usr/bin/env bash
# usage: benches/output-checksums.sh BIN OUTDIR
# Runs ~900 commands (every command and output format on every fixture of tests/data, the
# symbol store, DDM captures, heap graphs, the hprof files it writes, merges, diffs, batches)
# and records the sha256 of every output file, stdout, stderr and exit code in OUTDIR/SUMS.
# Run it with two builds and diff the two SUMS files: a refactor must keep every line.
# GUNZIP=1 sums gzip files decompressed (`profile`'s and large `merge` outputs' members are
# libdeflate's by default and igzip's with `--features isal`: the compressed bytes differ).
# BIG="a.pftrace b.pftrace" adds large traces (profile, convert, merge only; pid 1000, as the
# testdata crate's `synth` writes).
set -u
BIN=$(realpath "$1"); OUT=$(realpath -m "$2"); R=$(cd "$(dirname "$0")/.." && pwd); BIG=${BIG:-}
rm -rf "$OUT"; mkdir -p "$OUT"; cd "$OUT"
n=0
run() { # name, args...
  local name=$1; shift
  n=$((n+1))
  mkdir -p "o/$name"
  ( cd "o/$name" && "$BIN" "$@" >stdout 2>stderr; echo $? > rc )
  # strip the binary path from stderr (program name differs)
  sed -i "s#$(basename "$BIN")#heapconv#g; s#$OUT#OUTDIR#g" "o/$name/stderr" "o/$name/stdout"
  case $name in batch*) sort -o "o/$name/stderr" "o/$name/stderr";; esac
}
D=$R/tests/data
for t in $D/*.pftrace $D/*.pftrace.gz $D/heapgraph/*.pftrace $D/heapgraph/*.gz $D/symbolize/*.pftrace $R/examples/sample.pftrace; do
  [ -f "$t" ] || continue
  b=$(basename "$t")
  run "profile.$b" profile "$t" -o p
  run "profile-raw.$b" profile "$t" -o p --raw
  for f in pprof folded svg json; do run "convert.$f.$b" convert "$t" --to $f --dump all -o out/; done
  run "convert.total.$b" convert "$t" --to folded --dump all --view total-size -o out/
  run "inspect.$b" inspect "$t"
  run "timeline.$b" timeline "$t" --to csv
  run "timeline-json.$b" timeline "$t" --to json
  run "top.$b" top "$t" --dump all
  for v in peak delta leaks; do run "view.$v.$b" convert "$t" --view $v --to folded -o out/; run "viewj.$v.$b" convert "$t" --view $v --to json -o out/; done
done
for t in $BIG; do b=$(basename "$t")
  run "profile.$b" profile "$t" -o p
  run "convert.pprof.$b" convert "$t" --to pprof --pid 1000 -o out.pb.gz
  run "merge.$b" merge "$t" -o m.pb.gz
done
for t in $D/heapgraph/*.pftrace; do b=$(basename "$t")
  run "hprof.$b" hprof "$t" -o h/
  run "hprof-android.$b" hprof "$t" --android -o h/
  run "javaheap.$b" profile "$t" --java-heap -o jp
  run "top-class.$b" top "$t" --java-heap
  for by in dominator shortest-path; do run "javaconv.$by.$b" convert "$t" --java-heap --by $by --to folded -o out/; done
done
for t in $D/symbolize/*.pftrace; do b=$(basename "$t")
  run "symbolize.$b" symbolize "$t" --symbol-dir $R/symbols -o sym.pftrace
  run "symconv.$b" convert "$t" --symbol-dir $R/symbols --to folded --dump all -o out/
done
for t in $D/ddm/*.alloc $D/ddm/*.gz $D/ddm/*.jdwp $D/ddm/*.real; do b=$(basename "$t")
  for f in pprof folded json; do run "ddm.$f.$b" convert "$t" --to $f -o out.$f; done
  run "ddm-inspect.$b" inspect "$t"
done
run merge.ddm merge $D/ddm/art.alloc $D/ddm/dalvik.alloc -o m.pb.gz
run merge.traces merge $D/heaps_and_procs.pftrace $D/continuous_recycle.pftrace -o m.pb.gz
run merge.sample-folded merge $R/examples/sample.pftrace $D/names.pftrace --to folded -o m.folded
run diff.json diff $D/continuous_recycle.pftrace $R/examples/sample.pftrace --to json -o d.json
run diff.pprof diff $D/continuous_recycle.pftrace $R/examples/sample.pftrace -o d.pb.gz
run diff.svg diff $D/continuous_recycle.pftrace $R/examples/sample.pftrace --to svg -o d.svg
run diff.folded diff $D/continuous_recycle.pftrace $R/examples/sample.pftrace --to folded -o d.folded
run top.merge top $R/examples/sample.pftrace $D/names.pftrace --by mapping --json
run batch.convert convert $D --to folded -o bout/ --summary-json s.json --summary-no-times
run batch.profile profile $D/views $D/heapgraph -o bprof/ --summary-json s.json --summary-no-times
# pprof inputs: pprofs written by profile above
ps=$(ls o/profile.sample.pftrace/p/*.pb.gz | head -2)
[ -n "$ps" ] && run merge.pprof merge $ps -o mp.pb.gz && run top.pprof top $ps && run diff.pprof2 diff $ps --to json -o dp.json
# hprof files written above -> hprof-conv, inspect, top
for h in o/hprof-android.*/h/*; do [ -f "$h" ] || continue; b=$(basename "$h"); run "hprofconv.$b" hprof-conv "$OUT/$h" out.hprof; run "hprof-inspect.$b" inspect "$OUT/$h"; run "hprof-top.$b" top "$OUT/$h"; done
# GUNZIP=1: gzip files are summed decompressed (builds whose gzip members differ, same content).
digest() { if [ "${GUNZIP:-}" = 1 ] && gzip -t "$1" 2>/dev/null; then gzip -dc "$1" | sha256sum; else sha256sum < "$1"; fi; }
find o -type f | sort | while read f; do printf '%s  %s\n' "$(digest "$f" | cut -c1-16)" "$f"; done > SUMS
echo "$n runs, $(wc -l < SUMS) files"
