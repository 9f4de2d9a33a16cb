#!/usr/bin/env bash
# Installs the independent "oracle" tools heapconv's tests and fixtures use:
#   * Go (Debian golang-go) for `go tool pprof -raw`;
#   * llvm-cxxfilt (Debian llvm) for tests/data/expected_oracle.py;
#   * Android's hprof-conv (Debian hprof-conv, at /usr/lib/android-sdk/platform-tools/) for the
#     hprof tests, and a JDK (javac, java: Debian openjdk-17-jdk-headless) for tests/it/hprof.rs;
#   * a Python venv at $REPO/target/oracle-venv with PyPI `perfetto` and
#     `protobuf` (Google's trace schema, for ../shared/tools/perfetto_encode.py
#     and tests/data/expected_oracle.py). Debian's python3-protobuf is too old.
#   * speedscope's file-format schema (npm package `speedscope`, pinned, unpacked in
#     $REPO/target/oracle-npm/) and Python `jsonschema` (in $REPO/target/oracle-py, on
#     PYTHONPATH beside the venv) for tests/it/viewer_formats.rs.
# Idempotent. Runs as root on a fresh Debian 12 machine (no sudo).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO/target/oracle-venv"
PY="${PYTHON:-python3}"

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# --- Debian packages ---------------------------------------------------------
pkgs=()
command -v go >/dev/null 2>&1 || pkgs+=(golang-go)
command -v llvm-cxxfilt >/dev/null 2>&1 || pkgs+=(llvm)
# Android's hprof-conv (not on PATH): reads the 1.0.3 heap dumps `heapconv hprof --android` writes,
# and is what `heapconv hprof-conv` must match byte for byte.
[ -x /usr/lib/android-sdk/platform-tools/hprof-conv ] || pkgs+=(hprof-conv)
{ command -v javac >/dev/null 2>&1 && command -v java >/dev/null 2>&1; } || pkgs+=(openjdk-17-jdk-headless)
# ProGuard and its ReTrace (Debian libproguard-java): the deobfuscation oracle (tests/it/deobfuscate.rs)
# and the obfuscator that makes the Java fixtures' mapping files.
[ -f /usr/share/java/retrace.jar ] && [ -f /usr/share/java/proguard.jar ] || pkgs+=(libproguard-java)
if [ "${#pkgs[@]}" -gt 0 ]; then
  apt_install "${pkgs[@]}"
fi

# --- Python venv with Google's Perfetto schema ---------------------------------
venv_ok() {
  [ -x "$VENV/bin/python" ] &&
    "$VENV/bin/python" -c 'import google.protobuf, perfetto.protos.perfetto.trace.perfetto_trace_pb2' \
      >/dev/null 2>&1
}

if ! venv_ok; then
  mkdir -p "$REPO/target"
  if ! { [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -m pip --version >/dev/null 2>&1; }; then
    rm -rf "$VENV"
    if ! "$PY" -m venv "$VENV" >/dev/null 2>&1; then
      # python3 -m venv without ensurepip: fall back to virtualenv.
      rm -rf "$VENV"
      "$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore virtualenv
      "$PY" -m virtualenv -q "$VENV"
    fi
  fi
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check perfetto protobuf
  venv_ok || { echo "install-oracles: perfetto/protobuf not importable in $VENV" >&2; exit 1; }
fi

# --- A browser for the HTML report's tests (tests/it/html.rs) -------------------
# Debian's chromium, driven by the npm package playwright-core (pinned; it uses the installed
# browser through executablePath and downloads none) from tests/browser/check_report.mjs.
PLAYWRIGHT_CORE_VERSION=1.65.1
BROWSER_DIR="$REPO/target/browser"
browser_pkgs=()
command -v chromium >/dev/null 2>&1 || browser_pkgs+=(chromium)
{ command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; } || browser_pkgs+=(nodejs npm)
if [ "${#browser_pkgs[@]}" -gt 0 ]; then
  apt_install "${browser_pkgs[@]}"
fi
if [ "$(node -p "try { require('$BROWSER_DIR/node_modules/playwright-core/package.json').version } catch (e) { '' }" 2>/dev/null)" != "$PLAYWRIGHT_CORE_VERSION" ]; then
  mkdir -p "$BROWSER_DIR"
  npm install --prefix "$BROWSER_DIR" --no-audit --no-fund --silent "playwright-core@$PLAYWRIGHT_CORE_VERSION" >/dev/null
fi
# --- speedscope's file-format schema and a JSON-schema validator (--to speedscope) --------
# The npm package `speedscope`, pinned, unpacked (not installed: only its schema file is used)
# into target/oracle-npm/speedscope-VERSION/; Python `jsonschema` validates against it.
SPEEDSCOPE_VERSION=1.25.0
SPEEDSCOPE_DIR="$REPO/target/oracle-npm/speedscope-$SPEEDSCOPE_VERSION"
if [ ! -f "$SPEEDSCOPE_DIR/package/dist/release/file-format-schema.json" ]; then
  command -v npm >/dev/null 2>&1 || apt_install npm
  mkdir -p "$SPEEDSCOPE_DIR"
  (cd "$SPEEDSCOPE_DIR" && npm pack --silent "speedscope@$SPEEDSCOPE_VERSION" >/dev/null &&
    tar xzf "speedscope-$SPEEDSCOPE_VERSION.tgz" package/dist/release/file-format-schema.json package/LICENSE)
fi
# The package's tarball stays there: tests/it/viewer_formats.rs unpacks its web app (dist/release)
# to open a --to speedscope output in it (chromium, playwright-core above).
[ -f "$SPEEDSCOPE_DIR/speedscope-$SPEEDSCOPE_VERSION.tgz" ] ||
  (cd "$SPEEDSCOPE_DIR" && npm pack --silent "speedscope@$SPEEDSCOPE_VERSION" >/dev/null)
# jsonschema goes to its own directory (PYTHONPATH=target/oracle-py), beside the venv.
PYLIB="$REPO/target/oracle-py"
PYTHONPATH="$PYLIB" "$VENV/bin/python" -c 'import jsonschema' >/dev/null 2>&1 ||
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --target "$PYLIB" 'jsonschema==4.23.0'

# --- Versions ------------------------------------------------------------------
go version
llvm-cxxfilt --version | head -n 2 | tail -n 1 | sed 's/^ */llvm-cxxfilt: /'
echo "hprof-conv: $(dpkg-query -W -f '${Version}' hprof-conv 2>/dev/null || echo missing)"
javac -version 2>&1
echo "venv: $VENV ($("$VENV/bin/python" --version 2>&1))"
"$VENV/bin/python" -m pip list --disable-pip-version-check 2>/dev/null | grep -Ei '^(perfetto|protobuf) '
echo "chromium: $(chromium --version 2>/dev/null || echo missing); node $(node --version); playwright-core $PLAYWRIGHT_CORE_VERSION"
echo "speedscope schema: $SPEEDSCOPE_DIR (jsonschema $(PYTHONPATH="$PYLIB" "$VENV/bin/python" -c 'import jsonschema.validators, importlib.metadata as m; print(m.version("jsonschema"))'))"
