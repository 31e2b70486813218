#!/usr/bin/env bash
# Regenerates docs/img/run-report.png, the README's picture of the quick-start run's report page: the browser test
# (tests/report/browser_test.py, headless Chromium) renders every kind of page and screenshots each whole page; the
# run page's is kept. Needs a build (scripts/build.sh) and Chromium (scripts/setup-browser.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/app/chopsim ] || bash scripts/build.sh
bash scripts/setup-browser.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CHOPSIM_KEEP_PAGES=1 /usr/bin/python3 tests/report/browser_test.py build/app/chopsim configs docs "$work/pages"
mkdir -p docs/img
cp "$work/pages/run/report.png" docs/img/run-report.png
echo "wrote docs/img/run-report.png"
