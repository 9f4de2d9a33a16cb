#!/usr/bin/env bash
# A batch of N small heapprofd traces (default 1000) converted by one `heapconv convert DIR`:
# throughput and CPU utilisation ((user + sys) / wall; 2.0 means both cores of a 2-core
# machine busy the whole time), with one worker thread and with the default (one per core).
#
#   cargo build --release
#   benches/batch.sh [N] [FORMAT]        # FORMAT: pprof (default), folded, svg, json
#
# The traces are written by the test-data crate's `synth` binary (heapprofd's layout: interned callstacks, two
# dumps per process, one or two processes), each about 20 KB. The machine's load average is
# printed before and after each run: other work on the machine takes CPU from the batch, so
# utilisation and throughput are only comparable between runs at similar load.
set -euo pipefail

N=${1:-1000}
FORMAT=${2:-pprof}
HEAPCONV=${HEAPCONV:-$(dirname "$0")/../target/release/heapconv}
SYNTH=${SYNTH:-$(dirname "$0")/../target/release/synth}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

echo "writing $N traces to $WORK/in"
mkdir -p "$WORK/in"
for i in $(seq 1 "$N"); do
    "$SYNTH" -q -o "$WORK/in/trace_$(printf %04d "$i").pftrace" \
        --callstacks $((60 + i % 40)) --depth 16 --dumps 2 --processes $((1 + i % 2)) --seed "$i"
done
BYTES=$(du -sb "$WORK/in" | cut -f1)
echo "$N traces, $BYTES bytes; $(nproc) cores"

run() {
    local label=$1
    shift
    rm -rf "$WORK/out"
    local load_before load_after
    load_before=$(cut -d' ' -f1-3 /proc/loadavg)
    local TIMEFORMAT='%R %U %S'
    local t
    t=$({ time "$HEAPCONV" convert "$WORK/in" --to "$FORMAT" -o "$WORK/out" -q "$@" 2>/dev/null; } 2>&1)
    load_after=$(cut -d' ' -f1-3 /proc/loadavg)
    read -r wall user sys <<<"$t"
    local files
    files=$(find "$WORK/out" -type f | wc -l)
    awk -v l="$label" -v w="$wall" -v u="$user" -v s="$sys" -v n="$N" -v b="$BYTES" -v f="$files" \
        -v lb="$load_before" -v la="$load_after" 'BEGIN {
        printf "%-10s wall %6.2f s  user %6.2f s  sys %5.2f s  CPU %4.2f cores  %7.1f traces/s  %6.1f MB/s  %d files  load %s -> %s\n",
            l, w, u, s, (u + s) / w, n / w, b / w / 1e6, f, lb, la }'
}

run "-j 1" -j 1
run "default"
run "-j 1" -j 1
run "default"
