#!/usr/bin/env bash
# Regenerates docs/html-report.png, the README's picture of an HTML report: the report of
# examples/sample.pftrace (pid 4242) opened in headless chromium with a search for
# `ImageBuffer`, by tests/browser/check_report.mjs. Needs .ci/install-oracles.sh's browser.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO"
cargo build --release -q
mkdir -p target/tmp-html docs
target/release/heapconv convert examples/sample.pftrace --pid 4242 --to html -o target/tmp-html/sample.html
PLAYWRIGHT_CORE="$REPO/target/browser/node_modules/playwright-core" node tests/browser/check_report.mjs \
  target/tmp-html/sample.html \
  '{"search": "ImageBuffer", "width": 1000, "height": 720, "screenshot": "target/tmp-html/sample.png"}' >/dev/null
# 8-bit palette PNG: a few tens of KB.
if command -v pngquant >/dev/null 2>&1; then
  pngquant --force --quality 60-90 --output docs/html-report.png target/tmp-html/sample.png
else
  cp target/tmp-html/sample.png docs/html-report.png
fi
ls -l docs/html-report.png
