#!/usr/bin/env bash
# Installs what the opt-in `isal` feature needs beyond Rust and a C compiler: nasm, autoconf,
# automake, libtool and make. They build ISA-L's igzip, which `cargo build --features isal` uses
# for the gzip members of `profile` and `merge` instead of libdeflate (the default): the
# `isal-sys` crate runs ISA-L's autotools build on the source it ships and assembles its x86
# code with nasm. Without them that build stops in `isal-sys` ("autoreconf: not found", or
# configure's "No modern nasm or yasm found"). The default build needs none of them; `.ci/run`
# installs them to keep the `isal` feature building.
# Idempotent and quiet: does nothing when every tool is there. Debian/Ubuntu (apt-get), as root
# or through sudo.
set -euo pipefail
need=()
for tool in nasm:nasm autoreconf:autoconf aclocal:automake libtoolize:libtool make:make; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool##*:}")
done
[ ${#need[@]} -eq 0 ] && exit 0
as_root=()
[ "$(id -u)" = 0 ] || as_root=(sudo)
echo "installing build tools for ISA-L: ${need[*]}" >&2
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
