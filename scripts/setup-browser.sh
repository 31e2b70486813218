#!/usr/bin/env bash
# Installs what the report's browser test needs (tests/report/browser_test.py): Debian's Chromium, driven headless
# through its DevTools protocol, and python3-websocket to speak it. Kept out of setup-debian.sh: Chromium is ~300 MB
# that the quick start does not need; without it the browser test is skipped with a message.
set -euo pipefail
bash "$(dirname "$0")/apt-install.sh" setup-browser chromium python3-websocket
