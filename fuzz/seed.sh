#!/usr/bin/env bash
# Seeds the corpus of fuzz targets from the repository's fixtures:
#   fuzz/seed.sh [TARGET...]     (no argument: every target)
# Copies into fuzz/corpus/TARGET/ (git-ignored; libFuzzer adds what it finds there):
#   - the fixtures of the decoder the target reads (see `sources` below),
#   - the minimized findings committed under tests/data/fuzz/TARGET/ (regression inputs).
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
    symbol_file)
      # Every ELF file of the symbol fixtures (binaries, debug files, the build-id tree).
      for f in symbols/** symbols/.debug/* symbols/buildid-tree/**/.build-id/**; do
        [ -f "$f" ] && [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && echo "$f"
      done | sort -u ;;
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
  echo "seed.sh: $t: $n seed files; corpus now $(ls "$dir" | wc -l) inputs"
done
