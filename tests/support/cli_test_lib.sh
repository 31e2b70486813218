# Shared by the command-line tests (tests/*/*_cli_test.sh); source it after setting `chopsim` to the binary.
# Gives: $work, a temporary folder removed on exit; fail MESSAGE, which counts a failure in $failures;
# expect_exit CODE DESCRIPTION ARGS..., which runs chopsim ARGS with stdout in $work/out.txt and stderr in
# $work/err.txt and fails (printing stderr) unless the exit code is CODE.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_exit() {  # expect_exit CODE DESCRIPTION ARGS...
  local code=$1 what=$2
  shift 2
  "$chopsim" "$@" >"$work/out.txt" 2>"$work/err.txt"
  local got=$?
  if [ $got -ne "$code" ]; then
    fail "$what: exit $got, expected $code"
    cat "$work/err.txt"
  fi
}
