#!/usr/bin/env bash
# Regenerates tests/golden/*.json, the reference predictions of every shipped config.
# Run it only when a change of predictions is intended, and say in the commit why they moved.
# Usage: scripts/update-goldens.sh [CONFIG.yaml...]   (default: every config in configs/ and configs/validation/)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/app/chopsim ] || bash scripts/build.sh
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(configs/*.yaml configs/validation/*.yaml)
for config in "${configs[@]}"; do
  name=$(basename "$config" .yaml)
  ./build/app/chopsim run "$config" --out "$out/$name" >/dev/null
  python3 - "$out/$name/summary.json" "tests/golden/$name.json" "$config" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
golden = {
    "config": sys.argv[3],
    "iteration_time_s": summary["iteration_time_s"],
    "tokens_per_s": summary["tokens_per_s"],
    "mfu": summary["mfu"],
    "peak_bytes_per_gpu": summary["memory"]["peak_bytes_per_gpu"],
}
with open(sys.argv[2], "w") as f:
    json.dump(golden, f, indent=2, sort_keys=True)
    f.write("\n")
PY
  echo "updated tests/golden/$name.json"
done
