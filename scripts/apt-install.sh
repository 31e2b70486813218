#!/usr/bin/env bash
# Installs the given Debian packages that are not installed yet (sudo when not root), quietly; prints what it does.
# Shared by setup-debian.sh, setup-browser.sh and fuzz.sh.
# Usage: scripts/apt-install.sh LABEL PACKAGE...
set -euo pipefail
label=$1
shift
missing=()
for package in "$@"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "$label: all $# packages already installed"
  exit 0
fi
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
echo "$label: installing ${missing[*]}"
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
