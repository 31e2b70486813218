#!/usr/bin/env bash
# Regenerates the shell completion scripts from chopsim's command and option tables (chopsim completion SHELL):
# scripts/completion/chopsim.bash and scripts/completion/_chopsim. The completion_current ctest fails until this is
# run after a command or option changes. Usage: scripts/update-completion.sh [BUILD_DIR] (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
chopsim=${1:-build}/app/chopsim
"$chopsim" completion bash > scripts/completion/chopsim.bash.tmp
"$chopsim" completion zsh > scripts/completion/_chopsim.tmp
mv scripts/completion/chopsim.bash.tmp scripts/completion/chopsim.bash
mv scripts/completion/_chopsim.tmp scripts/completion/_chopsim
echo "scripts/completion: regenerated"
