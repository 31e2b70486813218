#!/usr/bin/env bash
# Installs what the report's browser test needs (tests/report/browser_test.py): Debian's Chromium, driven headless
# through its DevTools protocol, and python3-websocket to speak it. Kept out of setup-debian.sh: Chromium is ~300 MB
# that the quick start does not need; without it the browser test is skipped with a message.
set -euo pipefail
packages=(chromium python3-websocket)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-browser: chromium and python3-websocket already installed"
  exit 0
fi
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
