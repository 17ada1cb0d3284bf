#!/usr/bin/env bash
# Renders a volley index.html in headless Chromium (Debian's package), prints any console
# error, and writes a screenshot beside it. By hand: bench/report-screenshot.sh DIR/index.html
# Goal: the page renders with no console error; exits 1 when one is printed.
set -euo pipefail
page=$(realpath "${1:?usage: report-screenshot.sh INDEX.html}")
command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
log=$(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$profile" --enable-logging=stderr --v=0 \
  --window-size=1200,2600 --screenshot="${page%.html}.png" "file://$page" 2>&1 || true)
errors=$(grep -E 'CONSOLE|Uncaught' <<<"$log" | grep -iE 'error|uncaught' || true)
echo "screenshot: ${page%.html}.png"
if [ -n "$errors" ]; then echo "console errors:"; echo "$errors"; exit 1; fi
echo "no console errors"
