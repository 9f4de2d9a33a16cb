#!/usr/bin/env bash
# Rebuilds every test binary of the symbol store from symbols/src/.
#
#   bash symbols/build.sh            # rebuild into symbols/ (then run make_truth.py)
#   bash symbols/build.sh --check    # rebuild into a temp dir, compare with symbols/
#   bash symbols/build.sh OUTDIR     # rebuild into OUTDIR
#
# Toolchain: Debian 12 (bookworm) gcc/g++ 12.2.0 and GNU binutils 2.40, x86-64.
# Other versions build fine but give other bytes (and so other build ids and
# addresses than README.md / truth.json); the script warns about that.
#
# Deterministic: compilation runs in symbols/src with relative file names and
# -ffile-prefix-map=<abs symbols/src>=/src, so DW_AT_comp_dir is "/src" and
# sources appear as /src/widget.c etc. whatever the checkout path; no dates,
# no temp-file names end up in the output (-frandom-seed pins what could).
# Running it twice gives identical bytes (--check verifies).
set -euo pipefail
export LC_ALL=C TZ=UTC SOURCE_DATE_EPOCH=0

SYM="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$SYM/src"

check=0
OUT="$SYM"
case "${1:-}" in
  --check) check=1; OUT="$(mktemp -d)"; trap 'rm -rf "$OUT"' EXIT ;;
  "") ;;
  *) mkdir -p "$1"; OUT="$(cd "$1" && pwd)" ;;
esac

CC=gcc
CXX=g++
want_gcc="12.2.0"
have_gcc="$($CC -dumpfullversion)"
if [ "$have_gcc" != "$want_gcc" ]; then
  echo "build.sh: warning: gcc $have_gcc, expected $want_gcc (Debian 12); bytes will differ" >&2
fi
if ! ld --version | head -n1 | grep -q ' 2\.40$'; then
  echo "build.sh: warning: $(ld --version | head -n1), expected GNU ld 2.40; bytes will differ" >&2
fi

# ---- pinned flags (README.md repeats them) ----------------------------------
# DWARF 5 (gcc 12's default, stated explicitly), frame pointers, stable paths.
DBG=(-O2 -g -gdwarf-5 -fno-omit-frame-pointer "-ffile-prefix-map=$SRC=/src" -Wall -Wextra)
# Linker: sha1 build id, separate code segment, 4 KiB pages, lazy binding.
LNK=(-Wl,--build-id=sha1 -Wl,-z,separate-code -Wl,-z,max-page-size=0x1000
     -Wl,-z,common-page-size=0x1000 -Wl,-z,relro -Wl,--hash-style=gnu)
SHLIB=(-fPIC -shared)

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"; [ "$check" = 1 ] && rm -rf "$OUT"; true' EXIT

cd "$SRC"   # relative source names + prefix map => DW_AT_name "widget.c", comp_dir "/src"

build_id() {  # hex build id of an ELF file
  readelf -nW "$1" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p'
}

mkdir -p "$OUT" "$OUT/.debug" "$OUT/mismatch" "$OUT/loop"

# 1. libwidget.so: C shared library, unstripped, DWARF in the file.
$CC "${DBG[@]}" "${SHLIB[@]}" -frandom-seed=libwidget.so "${LNK[@]}" \
  -Wl,-soname,libwidget.so -o "$OUT/libwidget.so" widget.c

# 2. libgadget.so: C++ shared library, stripped, with .gnu_debuglink to
#    .debug/libgadget.so.debug (the "debug" subdirectory GDB and llvm-symbolizer
#    search next to the binary).
$CXX "${DBG[@]}" "${SHLIB[@]}" -frandom-seed=libgadget.so "${LNK[@]}" \
  -Wl,-soname,libgadget.so -o "$TMP/libgadget.so.full" gadget.cc
objcopy --only-keep-debug "$TMP/libgadget.so.full" "$OUT/.debug/libgadget.so.debug"
strip --strip-debug --strip-unneeded -o "$TMP/libgadget.so.stripped" "$TMP/libgadget.so.full"
( cd "$OUT/.debug" && objcopy --add-gnu-debuglink=libgadget.so.debug \
    "$TMP/libgadget.so.stripped" "$OUT/libgadget.so" )

# 3. libregistry.so: only its debug file is kept, in a .build-id tree.
$CC "${DBG[@]}" "${SHLIB[@]}" -frandom-seed=libregistry.so "${LNK[@]}" \
  -Wl,-soname,libregistry.so -o "$TMP/libregistry.so.full" registry.c
bid="$(build_id "$TMP/libregistry.so.full")"
rm -rf "$OUT/buildid-tree"
mkdir -p "$OUT/buildid-tree/.build-id/${bid:0:2}"
objcopy --only-keep-debug "$TMP/libregistry.so.full" \
  "$OUT/buildid-tree/.build-id/${bid:0:2}/${bid:2}.debug"
# (the stripped runtime libregistry.so is deliberately not stored anywhere; its
# program headers are kept as text, because a debug-only file's p_offset values
# are not the runtime ones)
strip --strip-debug --strip-unneeded -o "$TMP/libregistry.so" "$TMP/libregistry.so.full"
readelf -lW "$TMP/libregistry.so" | sed "s|$TMP/||" > "$OUT/libregistry.runtime-phdrs.txt"

# 4. liboffset.so: first PT_LOAD at p_vaddr 0x200000 (-Ttext-segment), 16 KiB
#    max page size, so the executable PT_LOAD has p_offset 0x4000 and
#    p_vaddr 0x204000: load bias 0x200000.
$CC "${DBG[@]}" "${SHLIB[@]}" -frandom-seed=liboffset.so \
  -Wl,--build-id=sha1 -Wl,-z,separate-code -Wl,-z,max-page-size=0x4000 \
  -Wl,-z,common-page-size=0x4000 -Wl,-z,relro -Wl,--hash-style=gnu \
  -Wl,-Ttext-segment=0x200000 \
  -Wl,-soname,liboffset.so -o "$OUT/liboffset.so" offset.c

# 5. app-pie / app-nopie: C++ executables linked against the two libraries
#    (rpath $ORIGIN so they run from symbols/).
$CXX "${DBG[@]}" -fPIE -pie -frandom-seed=app-pie "${LNK[@]}" \
  -o "$OUT/app-pie" app.cc -L"$OUT" -lwidget -lgadget '-Wl,-rpath,$ORIGIN'
$CXX "${DBG[@]}" -fno-pie -no-pie -frandom-seed=app-nopie "${LNK[@]}" \
  -o "$OUT/app-nopie" app.cc -L"$OUT" -lwidget -lgadget '-Wl,-rpath,$ORIGIN'

# 6. mismatch/libwidget.so: same name and flags as libwidget.so but built with
#    -DWIDGET_MISMATCH (other constants and format string), so another build id.
$CC "${DBG[@]}" "${SHLIB[@]}" -DWIDGET_MISMATCH -frandom-seed=libwidget.so "${LNK[@]}" \
  -Wl,-soname,libwidget.so -o "$OUT/mismatch/libwidget.so" widget.c

# 7. A symlink loop for directory walkers: loop/self -> . (relative).
ln -sfn . "$OUT/loop/self"

chmod 0644 "$OUT/.debug/libgadget.so.debug" "$OUT"/buildid-tree/.build-id/*/*.debug

# ---- checksums ----------------------------------------------------------------
FILES=(libwidget.so libgadget.so .debug/libgadget.so.debug liboffset.so app-pie app-nopie
       mismatch/libwidget.so libregistry.runtime-phdrs.txt "buildid-tree/.build-id/${bid:0:2}/${bid:2}.debug")
if [ "$check" = 1 ]; then
  ( cd "$OUT" && sha256sum "${FILES[@]}" ) > "$TMP/SHA256SUMS.new"
  if diff -u "$SYM/SHA256SUMS" "$TMP/SHA256SUMS.new"; then
    echo "build.sh --check: rebuild is byte-identical to the committed binaries"
  else
    echo "build.sh --check: rebuild DIFFERS from the committed binaries" >&2
    exit 1
  fi
else
  ( cd "$OUT" && sha256sum "${FILES[@]}" ) > "$OUT/SHA256SUMS"
  for f in "${FILES[@]}"; do
    printf '%-60s %s %7d bytes\n' "$f" "$(build_id "$OUT/$f" 2>/dev/null)" "$(stat -c %s "$OUT/$f")"
  done
fi
