#!/usr/bin/env bash
# Seeds the corpus of fuzz targets from the repository's fixtures:
#   fuzz/seed.sh [TARGET...]     (no argument: every target)
# Copies into fuzz/corpus/TARGET/ (git-ignored; libFuzzer adds what it finds there):
#   - the fixtures of the decoder the target reads (see `sources` below),
#   - the minimized findings committed under tests/data/fuzz/TARGET/ (regression inputs),
#   - for pprof_reader, a gzip copy of each pprof; for hprof_reader, the hprof dumps the
#     library makes (`cargo run --release --example fuzz_seeds`: there are no hprof fixtures).
# Files already present are kept, so the corpus grows across runs. Copies are named after
# their path so seeds from different directories do not collide.
# Adding a target: add a line to `sources` naming its fixtures (globs from the repo root).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
cd "$root"
shopt -s nullglob globstar

sources() {
  case "$1" in
    perfetto_heapprofd | perfetto_to_outputs)
      echo tests/data/*.pftrace tests/data/*.pftrace.gz tests/data/symbolize/*.pftrace \
        tests/data/traceconv/**/*.pftrace ;;
    ddm_alloc_records)
      echo tests/data/ddm/*.alloc tests/data/ddm/*.real tests/data/ddm/*.jdwp ;;
    perfetto_heap_graph)
      echo tests/data/heapgraph/*.pftrace tests/data/heapgraph/*.pftrace.gz \
        tests/data/traceconv/cases/heap_graph_small.pftrace ;;
    pprof_reader)
      # traceconv's and heapconv's pprof files, raw, and legacy text heap profiles; gzip
      # copies are made below.
      echo tests/data/traceconv/expected/**/*.pb tests/data/traceconv/symbolize/*.pb \
        tests/data/legacy-heap/*.heap ;;
    hprof_reader)
      # No hprof fixtures: generated below (heapconv_testdata::hprof, and the heap-graph fixtures
      # as hprof).
      ;;
    symbol_file)
      # Every ELF file of the symbol fixtures (binaries, debug files, the build-id tree).
      for f in symbols/** symbols/.debug/* symbols/buildid-tree/**/.build-id/**; do
        [ -f "$f" ] && [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && echo "$f"
      done | sort -u ;;
    proguard_map)
      echo tests/data/proguard/*.map ;;
    *) echo "seed.sh: unknown target $1" >&2; return 1 ;;
  esac
}

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=($(sed -n 's/^name = "\(.*\)"$/\1/p' "$here/Cargo.toml" | grep -v '^heapconv-fuzz$'))
fi
for t in "${targets[@]}"; do
  dir="$here/corpus/$t"
  mkdir -p "$dir"
  n=0
  for f in $(sources "$t") tests/data/fuzz/"$t"/*; do
    [ -f "$f" ] || continue
    dest="$dir/seed-$(echo "$f" | tr '/' '_')"
    [ -e "$dest" ] || cp "$f" "$dest"
    n=$((n + 1))
  done
  case "$t" in
    pprof_reader)
      # Gzip-compressed copies, as pprof files usually are (`.pb.gz`).
      for f in $(sources "$t"); do
        dest="$dir/seed-$(echo "$f" | tr '/' '_').gz"
        [ -e "$dest" ] || gzip -9nc "$f" >"$dest"
        n=$((n + 1))
      done ;;
    hprof_reader)
      # hprof dumps made by the library (fuzz/src/lib.rs `hprof_seeds`), once per corpus (the
      # example builds heapconv in release mode).
      if compgen -G "$dir/seed-gen-*" >/dev/null; then
        echo "seed.sh: $t: generated seeds already there (remove $dir/seed-gen-* to remake them)"
        n=$((n + $(ls "$dir"/seed-gen-* | wc -l)))
      else
        gen="$(mktemp -d "${TMPDIR:-/tmp}/heapconv-seeds.XXXXXX")"
        cargo run --release --quiet --example fuzz_seeds -- hprof_reader "$gen" >&2
        for f in "$gen"/*; do
          cp "$f" "$dir/seed-gen-$(basename "$f")"
          n=$((n + 1))
        done
        # Gzip copies of the Android samples, for the whole-file gzip path.
        for f in "$gen"/android-sample-*; do
          gzip -9nc "$f" >"$dir/seed-gen-$(basename "$f").gz"
          n=$((n + 1))
        done
        rm -rf "$gen"
      fi ;;
  esac
  echo "seed.sh: $t: $n seed files; corpus now $(ls "$dir" | wc -l) inputs"
done
