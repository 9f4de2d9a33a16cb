#!/usr/bin/env bash
# Regenerates BENCHMARKS.md: one table per command, one row per output format and tool (this
# build, an optional BASE build, an optional ALT build, the peer tool), with the median wall
# time, CPU time and peak RSS of RUNS interleaved rounds, the ratios to this build, the exact
# commands and the commits.
#
#   bash benches/report.sh [BASE_BINARY [ALT_BINARY]]
#   QUICK=1 bash benches/report.sh          # a smoke run: small inputs, one round (a few minutes)
#
# BASE is the build to compare with (e.g. main before a change, built with the same gzip
# backend: `git worktree add /tmp/base COMMIT && cargo build --release --manifest-path
# /tmp/base/Cargo.toml`); ALT another build of this commit (e.g. with another gzip backend:
# `cargo build --release --features isal --target-dir target/isal`). Environment:
#   RUNS=3             rounds (QUICK: 1); every tool runs once per round, interleaved
#   ONLY="profile …"   the commands to measure (default: all of them, see `tables` below)
#   STATUS="…"         how the machine was (default: "provisional (loaded machine)"; say
#                      "idle" only when nothing else ran: load average below 1 before the start)
#   BASE_LABEL, ALT_LABEL, NEW_LABEL   names of the builds in the tables (default: the path)
#   OUT=BENCHMARKS.md  the file written; BENCH_DIR=target/bench/report the inputs (made once)
# Needs what .ci/install-oracles.sh installs (go, llvm-symbolizer, hprof-conv, Java with
# ProGuard, the Python venv with Perfetto's schema) and gcc (the SQLite library symbolized).
# Inputs are made once and reused. A full run should take 10-15 minutes on 2 idle cores (an
# estimate from the figures of its commands; only QUICK=1 has been timed: 2-4 minutes loaded,
# plus building SQLite and the hprof bench the first time).
set -euo pipefail
cd "$(dirname "$0")/.."
exec </dev/null
QUICK=${QUICK:-0}
RUNS=${RUNS:-$([ "$QUICK" = 1 ] && echo 1 || echo 3)}
ARGS="$*"; BASE=${1:-}; ALT=${2:-}
[ -n "$BASE" ] && BASE=$(realpath "$BASE")
[ -n "$ALT" ] && ALT=$(realpath "$ALT")
OUT=${OUT:-BENCHMARKS.md}
STATUS=${STATUS:-provisional (loaded machine)}
ONLY=${ONLY:-profile convert symbolize merge top diff hprof-conv retrace batch}
B=${BENCH_DIR:-target/bench/report}
[ "$QUICK" = 1 ] && B=${BENCH_DIR:-target/bench/report-quick}
mkdir -p "$B"; B=$(realpath "$B")
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
START=$(date -u +"%Y-%m-%d %H:%M UTC"); LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

echo "building (release) …" >&2
cargo build --release --quiet --workspace
cargo build --release --quiet --example retrace
NEW=$(realpath target/release/heapconv)
NEW_LABEL=${NEW_LABEL:-heapconv $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src Cargo.toml Cargo.lock || echo -dirty)}
BASE_LABEL=${BASE_LABEL:-$BASE}; ALT_LABEL=${ALT_LABEL:-$ALT}
SYNTH=target/release/synth
HPROF_CONV=/usr/lib/android-sdk/platform-tools/hprof-conv
RETRACE_JAVA="java -cp /usr/share/java/proguard.jar:/usr/share/java/retrace.jar proguard.retrace.ReTrace"

# --- inputs (made once under $B) --------------------------------------------------------------
# The sizes of a full run are those of issue 15's figures; QUICK uses small ones.
if [ "$QUICK" = 1 ]; then
  TRACE_FLAGS="--shape issue15 --callstacks 20000 --frames 20000 --dumps 2"
  SQL_FLAGS="--frames 2000 --other-frames 3000 --callstacks 4000 --depth 30"
  HPROF_MB=8; MAP_MB=5; FRAMES=20000; BATCH=40
else
  TRACE_FLAGS="--shape issue15"
  SQL_FLAGS="--frames 13700 --other-frames 45300 --callstacks 44000 --depth 30"
  HPROF_MB=100; MAP_MB=100; FRAMES=200000; BATCH=1000
fi
want() { [[ " $ONLY " == *" $1 "* ]]; }
if want profile || want convert || want merge || want top || want diff; then
  [ -f "$B/trace.pftrace" ] || { echo "making $B/trace.pftrace (synth $TRACE_FLAGS)" >&2
    # shellcheck disable=SC2086
    "$SYNTH" $TRACE_FLAGS -o "$B/trace.pftrace" -q; }
  if [ ! -f "$B/pair.b.pb.gz" ]; then
    # The pair: the two largest pprofs `profile` writes for the trace (as benches/merge-family.sh).
    rm -rf "$B/pair"; "$NEW" profile "$B/trace.pftrace" -o "$B/pair" -q
    # shellcheck disable=SC2012
    set -- $(ls -S "$B"/pair/*.pb.gz | head -2)
    mv "$1" "$B/pair.a.pb.gz"; mv "$2" "$B/pair.b.pb.gz"; rm -rf "$B/pair"
  fi
fi
if want symbolize && [ ! -f "$B/mixed.pftrace" ]; then
  [ -f target/bench/libsqlite3.so ] || bash symbols/bench/build-sqlite.sh >&2
  # Its own symbol directory, so that the index walks only the library.
  mkdir -p "$B/sym"; cp target/bench/libsqlite3.so "$B/sym/"
  # shellcheck disable=SC2086
  python3 symbols/bench/make-sqlite-trace.py "$B/mixed.textproto" "$B/mixed.addrs" --library "$B/sym/libsqlite3.so" $SQL_FLAGS >&2
  target/oracle-venv/bin/python ../shared/tools/perfetto_encode.py "$B/mixed.textproto" "$B/mixed.pftrace"
fi
if want hprof-conv && [ ! -f "$B/android.hprof" ]; then
  HEAPCONV_HPROF_BENCH_MB=$HPROF_MB HEAPCONV_HPROF_DUMP="$B/android.hprof" cargo bench --quiet --bench hprof -- --list >/dev/null
fi
if want retrace && [ ! -f "$B/map.stack" ]; then
  python3 benches/gen_proguard_map.py "$B/map.txt" "$B/map.stack" "$MAP_MB" "$FRAMES" >&2
fi
if want batch && [ ! -d "$B/batch" ]; then
  mkdir -p "$B/batch.tmp"
  for i in $(seq 1 "$BATCH"); do # as benches/batch.sh
    "$SYNTH" -q -o "$B/batch.tmp/trace_$(printf %04d "$i").pftrace" \
      --callstacks $((60 + i % 40)) --depth 16 --dumps 2 --processes $((1 + i % 2)) --seed "$i"
  done
  mv "$B/batch.tmp" "$B/batch"
fi

# --- the rows: command | format | input | heapconv's command | peer | peer's command -----------
# `{H}` is the heapconv build, `{O}` a fresh scratch directory per run; inputs are under $B.
ROWS=$W/rows; : > "$ROWS"
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$ROWS"; }
R=$(realpath --relative-to=. "$B")
A=$R/pair.a.pb.gz; Bb=$R/pair.b.pb.gz
if want profile; then
  row profile "pprof (gzip)" "trace: every dump" "{H} profile $R/trace.pftrace -o {O}/p -q" "" ""
fi
if want convert; then
  for f in pprof:pb.gz folded:folded svg:svg html:html json:json speedscope:speedscope.json; do
    row convert "${f%%:*}" "trace: one dump" "{H} convert $R/trace.pftrace --pid 1000 --to ${f%%:*} -o {O}/out.${f#*:} -q" "" ""
  done
fi
if want symbolize; then
  row symbolize "ModuleSymbols" "SQLite trace" "{H} symbolize $R/mixed.pftrace --symbol-dir $R/sym -o {O}/s.pb -q" \
    llvm-symbolizer "llvm-symbolizer --inlines --output-style=JSON --obj=$R/sym/libsqlite3.so < $R/mixed.addrs > {O}/l.jsonl"
fi
if want merge; then
  row merge "pprof (gzip)" "pprof pair" "{H} merge $A $Bb -o {O}/m.pb.gz -q" \
    "go tool pprof" "go tool pprof -proto $A $Bb > {O}/g.pb.gz 2>/dev/null"
fi
if want top; then
  row top "text" "pprof pair" "{H} top $A $Bb > {O}/t.txt" \
    "go tool pprof" "go tool pprof -top $A $Bb > {O}/g.txt 2>/dev/null"
fi
if want diff; then
  row diff "pprof (gzip)" "pprof pair" "{H} diff $A $Bb -o {O}/d.pb.gz -q" \
    "go tool pprof" "go tool pprof -proto -diff_base $A $Bb > {O}/g.pb.gz 2>/dev/null"
fi
if want hprof-conv; then
  row hprof-conv "hprof 1.0.2" "Android heap dump" "{H} hprof-conv -q $R/android.hprof {O}/c.hprof" \
    "hprof-conv (Android)" "$HPROF_CONV $R/android.hprof {O}/c.hprof"
fi
if want retrace; then
  # The library's batch deobfuscation (`--proguard-map` of heapprofd frames) through its example;
  # the example is this commit's, so BASE and ALT do not run it.
  row retrace "frames" "R8 map, frames" "target/release/examples/retrace $R/map.txt $R/map.stack > {O}/r.out" \
    "ProGuard ReTrace" "$RETRACE_JAVA $R/map.txt $R/map.stack > {O}/r.out"
fi
if want batch; then
  row batch "pprof (gzip)" "small traces" "{H} convert $R/batch --to pprof -o {O}/b -q" "" ""
fi

# --- measure: RUNS rounds, every tool of every row once per round -------------------------------
RAW=$W/raw; : > "$RAW"
measure() { # row-number tool command
  rm -rf "$W/o"; mkdir -p "$W/o"
  local cmd=${3//\{O\}/$W/o} st=ok
  /usr/bin/time -f "%e %U %S %M" -o "$W/time" bash -c "$cmd" >/dev/null 2>"$W/err" || st=failed
  [ $st = ok ] || { echo "FAILED ($2): $cmd" >&2; tail -3 "$W/err" >&2; }
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$(tail -1 "$W/time")" "$st" >> "$RAW"
}
nrows=$(wc -l < "$ROWS")
for round in $(seq "$RUNS"); do
  echo "round $round of $RUNS ($nrows rows)" >&2
  n=0
  while IFS=$'\t' read -r cmdname fmt input ours peer peercmd; do
    n=$((n + 1))
    echo "  $cmdname $fmt" >&2
    measure "$n" new "${ours//\{H\}/$NEW}"
    if [[ $ours == *"{H}"* ]]; then
      [ -n "$BASE" ] && measure "$n" base "${ours//\{H\}/$BASE}"
      [ -n "$ALT" ] && measure "$n" alt "${ours//\{H\}/$ALT}"
    fi
    [ -n "$peer" ] && measure "$n" peer "$peercmd"
  done < "$ROWS"
done

# --- write the tables ---------------------------------------------------------------------------
sizes() { # name path: a line of the inputs table
  [ -e "$2" ] && printf '| %s | `%s` | %s |\n' "$1" "$(realpath --relative-to=. "$2")" "$(du -sh "$2" | cut -f1)"
}
{
  sizes "trace (synth ${TRACE_FLAGS})" "$B/trace.pftrace"
  sizes "pprof pair (the two largest pprofs of the trace)" "$B/pair.a.pb.gz"
  sizes "" "$B/pair.b.pb.gz"
  sizes "SQLite trace (make-sqlite-trace.py ${SQL_FLAGS})" "$B/mixed.pftrace"
  sizes "SQLite library (symbols/bench/build-sqlite.sh)" "$B/sym/libsqlite3.so"
  sizes "Android heap dump (benches/hprof.rs, ${HPROF_MB} MiB)" "$B/android.hprof"
  sizes "R8 map (gen_proguard_map.py, ${MAP_MB} MB)" "$B/map.txt"
  sizes "frames to retrace (${FRAMES})" "$B/map.stack"
  sizes "small traces (${BATCH}, as benches/batch.sh)" "$B/batch"
} > "$W/inputs" || true
export ROWS RAW OUT STATUS START RUNS QUICK NEW_LABEL BASE_LABEL ALT_LABEL
export LOAD_START LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)" END="$(date -u +"%H:%M UTC")"
export INPUTS=$W/inputs CPU_MODEL="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
export CORES="$(nproc)" MEM="$(free -g | awk '/^Mem:/ {print $2}') GiB" ARGS
python3 - <<'PY'
import os, statistics
env = os.environ
rows = [l.rstrip('\n').split('\t') for l in open(env['ROWS'])]
raw = {}
for l in open(env['RAW']):
    n, tool, t, st = l.rstrip('\n').split('\t')
    w, u, s, m = t.split()
    raw.setdefault((int(n), tool), []).append((float(w), float(u) + float(s), int(m), st))
labels = {'new': env['NEW_LABEL'], 'base': env.get('BASE_LABEL', ''), 'alt': env.get('ALT_LABEL', '')}
def med(xs): return statistics.median(xs)
def fmt_s(x): return f'{x:.2f} s' if x >= 0.1 else f'{x * 1000:.0f} ms'
def fmt_m(kb): return f'{kb / 1024:,.0f} MiB' if kb >= 10240 else f'{kb / 1024:.1f} MiB'
out = []
quick = env['QUICK'] == '1'
out.append('# Benchmarks\n')
out.append(f"Generated by `bash benches/report.sh{(' ' + env['ARGS']) if env['ARGS'] else ''}`"
           f"{' (QUICK=1: small inputs, one round)' if quick else ''} on {env['START']} - {env['END']}, "
           f"{env['RUNS']} round(s): **{env['STATUS']}**. Load average {env['LOAD_START']} at the start, "
           f"{env['LOAD_END']} at the end; {env['CORES']} cores ({env['CPU_MODEL']}), {env['MEM']}.\n")
out.append(f"Builds: **{labels['new']}** (the rows named heapconv)"
           + (f"; base: `{labels['base']}`" if labels['base'] else '')
           + (f"; alt: `{labels['alt']}`" if labels['alt'] else '') + '.\n')
out.append('Each figure is the median of the rounds: wall time, CPU time (user + sys) and peak RSS from '
           '`/usr/bin/time`. "÷ heapconv" is the tool\'s wall (CPU) time divided by heapconv\'s: above 1, '
           'heapconv is faster. Tools run interleaved, once per round, so a ratio compares runs made under '
           'the same load; on a loaded machine compare CPU times and ratios, not wall times.\n')
order = []
for i, r in enumerate(rows, 1):
    if r[0] not in order: order.append(r[0])
titles = {'profile': 'Traces to pprof: `profile` (peer: traceconv)',
          'convert': 'Any format: `convert`', 'symbolize': 'Symbolize: `symbolize` (peer: llvm-symbolizer)',
          'merge': 'Merge: `merge` (peer: go tool pprof)', 'top': 'Top: `top` (peer: go tool pprof)',
          'diff': 'Diff: `diff` (peer: go tool pprof)', 'hprof-conv': "HPROF conversion: `hprof-conv` (peer: Android's hprof-conv)",
          'retrace': 'Deobfuscation: the library through `examples/retrace` (peer: ProGuard ReTrace)',
          'batch': 'Batches: `convert DIR` of small traces'}
notes = {'profile': 'traceconv is not run here: it cannot be built or downloaded on this machine. '
                    'Issue 15 reports about 157 s and 3.4 GB for `traceconv profile` on a trace of this shape (not measured by us).',
         'convert': 'One dump (`--pid 1000`, its last) of the trace. No peer converts a heapprofd dump to these formats directly.',
         'symbolize': 'llvm-symbolizer looks up the same addresses (`mixed.addrs`) as the trace\'s frames in the library.',
         'retrace': 'The example is built from this commit only (BASE and ALT are not run).'}
for c in order:
    out.append(f'## {titles.get(c, c)}\n')
    if c in notes: out.append(notes[c] + '\n')
    out.append('| format | input | tool | wall | CPU | peak RSS | wall ÷ heapconv | CPU ÷ heapconv |')
    out.append('|---|---|---|---|---|---|---|---|')
    cmds = []
    for i, r in enumerate(rows, 1):
        if r[0] != c: continue
        _, fmt, inp, ours, peer, peercmd = r
        new = raw.get((i, 'new'))
        for tool, name in (('new', labels['new']), ('base', 'base'), ('alt', 'alt'), ('peer', peer)):
            xs = raw.get((i, tool))
            if not xs: continue
            w = med([x[0] for x in xs]); cpu = med([x[1] for x in xs]); m = med([x[2] for x in xs])
            failed = any(x[3] != 'ok' for x in xs)
            if tool == 'new' or not new:
                rw = rc = '1'
            else:
                nw = med([x[0] for x in new]); nc = med([x[1] for x in new])
                rw = f'{w / nw:.2f}' if nw else '-'; rc = f'{cpu / nc:.2f}' if nc else '-'
            name = ('**heapconv**' if tool == 'new' else name) + (' (FAILED)' if failed else '')
            out.append(f'| {fmt} | {inp} | {name} | {fmt_s(w)} | {fmt_s(cpu)} | {fmt_m(m)} | {rw} | {rc} |')
        cmds.append(ours.replace('{H}', 'heapconv').replace('{O}', 'OUT'))
        if peer: cmds.append(peercmd.replace('{O}', 'OUT'))
    out.append('\nCommands (`heapconv` is each build in turn, `OUT` a scratch directory):\n')
    out.append('```sh\n' + '\n'.join(dict.fromkeys(cmds)) + '\n```\n')
out.append('## Inputs\n')
out.append('Made once by `benches/report.sh` (under `BENCH_DIR`) and reused:\n')
out.append('| input | path | size |\n|---|---|---|')
out.append(open(env['INPUTS']).read().rstrip('\n') + '\n')
out.append('''## Method

* Run it with `bash benches/report.sh [BASE [ALT]]` from the repository (see the script's header
  for its settings); it builds the release binaries, makes the inputs once, runs every tool of
  every row once per round (interleaved) and rewrites this file. `QUICK=1` is a smoke run on
  small inputs. A full run should take 10-15 minutes on 2 idle cores.
* "Idle" means nothing else ran on the machine: load average below 1 before the start, and only
  the script's own load during it. Figures measured otherwise are marked provisional; compare
  ratios and CPU times there, not wall times.
* Before and after a change: build the old commit into its own directory and pass it as BASE,
  with the same gzip backend (the `isal` feature on both or on neither): compressed bytes differ
  between backends, never what they decompress to (`GUNZIP=1 bash benches/output-checksums.sh`
  compares two builds' outputs). ALT shows another build of this commit, e.g. the other backend.
* Finer tools for one question: `benches/issue15.sh`, `merge-family.sh`, `family-profile.sh`,
  `gzip.sh`, `compare-builds.sh`, `hprof-conv-compare.sh`, `deobfuscate.sh`, `batch.sh`, and
  `cargo bench` (criterion, throughput in bytes of input).
* History: the session-by-session log of how each figure was reached (what was tried, kept and
  dropped) is in git: `git show 9ce889d:BENCHMARKS.md`.
''')
open(env['OUT'], 'w').write('\n'.join(out))
PY
echo "wrote $OUT" >&2
