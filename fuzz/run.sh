#!/usr/bin/env bash
# Runs cargo-fuzz targets for a given time, one at a time, one job each:
#   fuzz/run.sh TARGET SECONDS [libFuzzer args...]
#   fuzz/run.sh all SECONDS [libFuzzer args...]
# Installs cargo-fuzz if missing, seeds the corpus (seed.sh), then runs the target with
# -max_total_time=SECONDS -rss_limit_mb=2048 -timeout=10. Crashes, timeouts and OOMs are written
# to fuzz/artifacts/TARGET/; the log of each run goes to fuzz/logs/TARGET-DATE.log.
#
# Works on the stable toolchain: RUSTC_BOOTSTRAP=1 lets stable rustc take the -Zsanitizer and
# other -Z flags cargo-fuzz passes. HEAPCONV_FUZZ_SANITIZER=none builds without AddressSanitizer
# (default: address). Exit status: 0 when every run ended without a finding and cargo fuzz itself
# did not fail (a build that fails is an error, not a clean run).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
exec </dev/null

if [ $# -lt 2 ]; then
  sed -n '2,4p' "$0" | sed 's/^# //' >&2
  exit 2
fi
target="$1"
seconds="$2"
shift 2

export RUSTC_BOOTSTRAP=1
# Thread-local records of threads still exiting are not leaks (see lsan.supp).
export LSAN_OPTIONS="suppressions=$here/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# The symbolize stage runs rayon; one thread keeps each run to one core.
export RAYON_NUM_THREADS="${RAYON_NUM_THREADS:-1}"
sanitizer="${HEAPCONV_FUZZ_SANITIZER:-address}"

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "run.sh: installing cargo-fuzz" >&2
  cargo install cargo-fuzz --locked
fi
# (heapconv is built without its `isal` feature here: see Cargo.toml.)

all_targets() {
  sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^heapconv-fuzz$'
}

if [ "$target" = all ]; then
  targets=($(all_targets))
else
  targets=("$target")
fi

# Files the targets hand over by path go to a scratch directory removed at exit.
scratch="$(mktemp -d "${TMPDIR:-/tmp}/heapconv-fuzz.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

status=0
mkdir -p logs
for t in "${targets[@]}"; do
  ./seed.sh "$t"
  mkdir -p "artifacts/$t"
  log="logs/$t-$(date -u +%Y%m%dT%H%M%SZ).log"
  echo "run.sh: $t for ${seconds}s (sanitizer: $sanitizer); log: fuzz/$log" >&2
  set +e
  TMPDIR="$scratch" cargo fuzz run --sanitizer "$sanitizer" --debug-assertions "$t" "corpus/$t" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    "$@" 2>&1 | tee "$log" | grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|stat::|==[0-9]+==|SUMMARY|Done|.*panicked at|artifact_prefix|Test unit written)'
  rc=${PIPESTATUS[0]}
  set -e
  if grep -qE 'Test unit written|SUMMARY: (libFuzzer|AddressSanitizer)|==[0-9]+== ERROR' "$log"; then
    echo "run.sh: $t: FINDING, see fuzz/$log and fuzz/artifacts/$t/" >&2
    status=1
  elif [ "$rc" -ne 0 ]; then
    # A build that failed, or a fuzzer that stopped early without a finding written.
    echo "run.sh: $t: cargo fuzz failed (exit $rc), see fuzz/$log" >&2
    status=1
  fi
  echo "run.sh: $t: corpus $(ls "corpus/$t" | wc -l) inputs" >&2
done
exit $status
