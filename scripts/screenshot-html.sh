#!/usr/bin/env bash
# Regenerates the picture of the HTML report in docs/html.md: `pgplan diff --format html` of the story's
# recorded plans, rendered by headless Chromium (Debian: apt-get install chromium).
#
#   ./scripts/screenshot-html.sh          (writes docs/html-diff.png)
set -euo pipefail
cd "$(dirname "$0")/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cargo run --quiet -- diff --format html fixtures/story/before.pg16.json fixtures/story/partial_index.pg16.json >"$work/diff.html"
chromium --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update \
  --disable-sync --no-first-run --hide-scrollbars --user-data-dir="$work/profile" \
  --window-size=1280,900 --screenshot="$work/diff.png" "file://$work/diff.html" 2>/dev/null
mv "$work/diff.png" docs/html-diff.png
echo docs/html-diff.png
