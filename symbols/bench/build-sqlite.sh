#!/usr/bin/env bash
# Builds a large real shared library with DWARF, for symbolization benchmarks:
# the SQLite amalgamation (sqlite3.c, ~9 MB of C) that the `libsqlite3-sys`
# crate ships for its `bundled` feature, compiled with gcc into
#   target/bench/libsqlite3.so         (nothing here is committed)
#
#   bash symbols/bench/build-sqlite.sh            # build (fetches the crate once)
#   python3 symbols/bench/random-addrs.py 100000  # addresses to symbolize
#
# The crate comes through cargo itself (a throw-away project with
# `cargo add libsqlite3-sys --features bundled && cargo fetch`), so no other
# download tool is needed; an already-fetched copy in ~/.cargo/registry is reused.
# LIBSQLITE3_SYS_VERSION pins the crate version (default: the newest cargo picks).
set -euo pipefail
export LC_ALL=C

SYM="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO="$(cd "$SYM/.." && pwd)"
OUT="$REPO/target/bench"
CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
mkdir -p "$OUT"

find_amalgamation() {
  ls -d "$CARGO_HOME"/registry/src/*/libsqlite3-sys-"${LIBSQLITE3_SYS_VERSION:-}"*/sqlite3/sqlite3.c 2>/dev/null |
    sort -V | tail -n 1
}

src="$(find_amalgamation || true)"
if [ -z "$src" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  (
    cd "$tmp"
    cargo new -q --lib fetch-sqlite
    cd fetch-sqlite
    spec="libsqlite3-sys${LIBSQLITE3_SYS_VERSION:+@$LIBSQLITE3_SYS_VERSION}"
    cargo add -q "$spec" --features bundled
    cargo fetch -q
  )
  src="$(find_amalgamation || true)"
fi
if [ -z "$src" ] || [ ! -f "$src" ]; then
  echo "build-sqlite.sh: sqlite3.c not found under $CARGO_HOME/registry/src/*/libsqlite3-sys-*/sqlite3/" >&2
  exit 1
fi
srcdir="$(dirname "$src")"
echo "amalgamation: $src ($(stat -c %s "$src") bytes)"

start=$(date +%s.%N)
# Same DWARF/frame-pointer/build-id choices as symbols/build.sh; paths mapped to
# /sqlite so the DWARF does not depend on the registry location.
( cd "$srcdir" && gcc -O2 -g -gdwarf-5 -fno-omit-frame-pointer -shared -fPIC \
    "-ffile-prefix-map=$srcdir=/sqlite" -Wl,--build-id=sha1 \
    -o "$OUT/libsqlite3.so" sqlite3.c -lpthread -ldl )
end=$(date +%s.%N)

size=$(stat -c %s "$OUT/libsqlite3.so")
bid=$(readelf -nW "$OUT/libsqlite3.so" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p')
nfunc=$(readelf -sW --syms "$OUT/libsqlite3.so" | awk '/^Symbol table/ { t = $3 } t == "\x27.symtab\x27" && $4 == "FUNC" && $3 != 0 && $7 != "UND"' | wc -l)
awk -v f="$OUT/libsqlite3.so" -v s="$size" -v b="$bid" -v n="$nfunc" -v t0="$start" -v t1="$end" \
  'BEGIN { printf "built %s: %d bytes (%.1f MiB), build id %s, %d FUNC symbols of size > 0 in .symtab, compiled in %.1f s\n", f, s, s / 1048576, b, n, t1 - t0 }'
