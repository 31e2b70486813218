#!/usr/bin/env bash
# The bash completion (scripts/completion/chopsim.bash): commands, a command's options, fixed option values and the
# names of the shipped run configs, hardware and clusters, as bash would offer them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
chopsim=$(realpath "${1:-$root/build/app/chopsim}")
cd "$root"
# shellcheck source=/dev/null
source scripts/completion/chopsim.bash
complete -p chopsim | grep -q -- "-F _chopsim" || { echo "completion: not registered"; exit 1; }

offered() {  # the words bash offers after the command line "$@" (the last word is being completed)
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  _chopsim
  printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}
expect() {  # expect WORDS... -- LINE...: every WORD offered for LINE
  local words=() line=()
  while [[ $1 != -- ]]; do words+=("$1"); shift; done
  shift
  line=("$@")
  local got
  got=$(offered "${line[@]}")
  for word in "${words[@]}"; do
    [[ " $got" == *" $word "* ]] || { echo "completion: '$word' not offered for '${line[*]}' (got: $got)"; exit 1; }
  done
}
expect run report replay -- chopsim r
expect --engine --out --set -- chopsim run --
expect fast simgrid -- chopsim run x.yaml --engine ""
expect nemo megatron foundry hf -- chopsim import --format ""
expect llama3-8b-fsdp -- chopsim run llama3
expect H100-SXM5-80GB MI300X -- chopsim import --hardware ""
expect dgx-h100 -- chopsim import --cluster dgx
expect kineto nsys-sqlite -- chopsim ingest --format ""
# Every option `chopsim run --help` lists is offered.
for option in $("$chopsim" --help 2>&1 | sed -n '/^  run /,/^  sweep /{/^  sweep /!p}' | grep -oE -- '--[a-z-]+' | sort -u); do
  expect "$option" -- chopsim run --
done
echo "completion: ok"
