#!/usr/bin/env bash
# The bad-input suite (issue 16): every case of manifest.tsv (made by make_cases.py) runs chopsim on one malformed
# input or one misuse of the command line and checks that
#   * the exit code is the expected one (2: bad input), within 60 s (no hang) and without a crash;
#   * the message contains the expected word and, for a file case, names the file;
#   * nothing is left in the output folder (no partial output, no temporary file) and nothing new beside the input;
#   * the input is unchanged (SHA-256 before and after).
# Usage: run.sh CHOPSIM SOURCE_DIR [ID-PATTERN]   (exit 77 = skipped: no python3 with h5py for the store cases)
set -u
chopsim=$1
source_dir=$2
pattern=${3:-}
here="$source_dir/tests/bad_inputs"
source "$source_dir/tests/support/cli_test_lib.sh"

# Shared fixtures: a valid store to damage, a read-only folder, a symlink to an existing file.
"$chopsim" ingest "$source_dir/tests/traces/fixtures/rocprofv3_kernel_trace.csv" -o "$work/valid.h5" >/dev/null ||
  { echo "cannot make the valid store"; exit 1; }
mkdir -p "$work/ro" && chmod 555 "$work/ro"
# Root writes into read-only folders: the read-only cases only mean something for other users.
read_only_works=1
touch "$work/ro/probe" 2>/dev/null && { read_only_works=0; rm -f "$work/ro/probe"; }
echo "keep" > "$work/victim" && ln -s "$work/victim" "$work/link"
have_h5py=1
/usr/bin/env python3 -c "import h5py" 2>/dev/null || have_h5py=0

declare -A by_kind
total=0 skipped=0
while IFS=$'\t' read -r id file command code word; do
  [[ -z "$id" || "$id" == \#* ]] && continue
  [[ -n "$pattern" && ! "$id" =~ $pattern ]] && continue
  if [[ "$command" == *"{ro}"* && "$read_only_works" -eq 0 ]]; then skipped=$((skipped + 1)); continue; fi
  input=""
  case "$file" in
    -) ;;
    @store:*)
      if [ "$have_h5py" -eq 0 ]; then skipped=$((skipped + 1)); continue; fi
      input="$work/$id.h5"
      python3 "$here/store_damage.py" "$work/valid.h5" "${file#@store:}" "$input" || { fail "$id: cannot damage"; continue; }
      ;;
    @sparse_2gb:*)  # 2 GB of zeros that take no disk: memory must stay bounded, the answer come quickly
      input="$work/made/$id/${file#@sparse_2gb:}"
      mkdir -p "$(dirname "$input")" && truncate -s 2G "$input"
      ;;
    @fifo:*)  # a named pipe where a file is expected: reading it would block forever
      input="$work/made/$id/${file#@fifo:}"
      mkdir -p "$(dirname "$input")" && mkfifo "$input"
      ;;
    *) input="$here/$file" ;;
  esac
  out="$work/out-$id"
  mkdir -p "$out"
  before_listing=""
  before_hash=""
  if [ -n "$input" ] && [ -f "$input" ] && [[ "$file" != @* ]]; then
    before_hash=$(sha256sum "$input" | cut -d' ' -f1)
    before_listing=$(ls -A "$(dirname "$input")")
  fi
  expanded=${command//\{none\}/}
  expanded=${expanded//\{in\}/$input}
  expanded=${expanded//\{out\}/$out}
  expanded=${expanded//\{src\}/$source_dir}
  expanded=${expanded//\{ro\}/$work/ro}
  expanded=${expanded//\{link\}/$work/link}
  read -r -a argv <<< "$expanded"
  timeout 60 "$chopsim" "${argv[@]}" >"$work/stdout" 2>"$work/stderr"
  got=$?
  total=$((total + 1))
  kind=${id%%_*}
  by_kind[$kind]=$(( ${by_kind[$kind]:-0} + 1 ))
  message=$(cat "$work/stderr")
  if [ "$got" -eq 124 ]; then
    fail "$id: no answer within 60 s"
  elif [ "$got" -ne "$code" ]; then
    fail "$id: exit $got, expected $code: $(head -c 400 "$work/stderr")"
  fi
  if [ -n "$word" ] && ! grep -qiF -- "$word" "$work/stderr"; then
    fail "$id: the message does not say '$word': $(head -c 400 "$work/stderr")"
  fi
  if [ -n "$input" ] && [ "$code" -ne 0 ] && [[ "$file" != @store:* ]] && ! grep -qF -- "$(basename "$input")" "$work/stderr"; then
    fail "$id: the message does not name $(basename "$input"): $(head -c 400 "$work/stderr")"
  fi
  if [ "$code" -ne 0 ]; then
    left=$(find "$out" -mindepth 1 | head -3)
    [ -z "$left" ] || fail "$id: left in the output folder: $left"
  fi
  if [ -n "$before_hash" ]; then
    [ "$(sha256sum "$input" | cut -d' ' -f1)" = "$before_hash" ] || fail "$id: the input changed"
    [ "$(ls -A "$(dirname "$input")")" = "$before_listing" ] || fail "$id: files appeared beside the input"
  fi
  [ "$(cat "$work/victim")" = "keep" ] || fail "$id: wrote through the symlink"
  rm -rf "$out" "$work/made"
done < "$here/manifest.tsv"
chmod 755 "$work/ro"

summary=""
for kind in $(printf '%s\n' "${!by_kind[@]}" | sort); do summary+=" $kind ${by_kind[$kind]},"; done
echo "bad inputs: $total cases ($skipped skipped: store cases without h5py, read-only folders as root):${summary%,};" \
  "$failures failed"
[ "$failures" -eq 0 ] || exit 1
