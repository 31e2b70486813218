#!/usr/bin/env bash
# Fails when a C++ file (tracked, or new and not ignored) differs from what clang-format (with the repository's
# .clang-format) would write.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format not installed (scripts/setup-debian.sh installs it)"; exit 2; }
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' 2>/dev/null || find . -name '*.cpp' -o -name '*.hpp' -not -path './build*')
clang-format --dry-run --Werror "${files[@]}"
echo "check-format: ${#files[@]} files formatted"
