#!/usr/bin/env bash
# test_agent_classify.sh - A1 through the real binary: `spore agent classify
# --json` on every fixture under tests/fixtures/agent/ gives the outcome its
# expected.json names (status, code, retryable, taint, breaker, stepId, and
# when given rule, line, output, errorContains, tailContains, events,
# resultFile), and the text mode agrees on the code; plus the CLI's own
# errors (usage, unreadable files, a bad --exit or --step-id: exit 2).
#
# usage: test_agent_classify.sh <spore> <repo-root> <agent_fixture>
set -euo pipefail
fixture_bin=${3:?usage: test_agent_classify.sh <spore> <repo-root> <agent_fixture>}
fixture_bin=$(cd "$(dirname "$fixture_bin")" && pwd)/$(basename "$fixture_bin")
source "$(dirname "$0")/../cli/lib.sh" "$1" "$2"

cases=0
for dir in tests/fixtures/agent/*/; do
  name=$(basename "$dir")
  exp="$dir/expected.json"
  [ -f "$exp" ] || continue
  cases=$((cases + 1))
  stdout="$dir/stdout"
  if [ -f "$dir/stdout.gen.json" ]; then
    "$fixture_bin" gen "$dir/stdout.gen.json" "$tmp/$name.stdout"
    stdout="$tmp/$name.stdout"
  fi
  args=(--stdout "$stdout" --stderr "$dir/stderr" --step-id "$(jq -r .stepId "$exp")")
  how=$(cat "$dir/exit")
  case "$how" in
    lost-stream) args+=(--lost-stream) ;;
    *) args+=(--exit "$how") ;;
  esac
  if [ -f "$dir/result.json" ]; then
    args+=(--result-file "$dir/result.json")
  elif [ -f "$dir/result.json.gen.json" ]; then
    "$fixture_bin" gen "$dir/result.json.gen.json" "$tmp/$name.result.json"
    args+=(--result-file "$tmp/$name.result.json")
  fi
  secret=$(jq -r '.secretFile // empty' "$exp")
  [ -n "$secret" ] && args+=(--secret-file "$dir/$secret")
  sp agent classify "${args[@]}" --json
  expect_rc 0 "$name: classify"
  jq -e --slurpfile e "$exp" '
    $e[0] as $x | .outcome as $o |
    $o.status == $x.status and $o.code == $x.code and $o.retryable == $x.retryable and
    $o.taint == $x.taint and $o.breaker == $x.breaker and $o.details.stepId == $x.stepId and
    (if $x.rule then $o.details.rule == $x.rule else true end) and
    (if $x.line then $o.details.line == $x.line else true end) and
    (if $x.output then $o.output == $x.output else true end) and
    (if $x.events then $o.details.events == $x.events else true end) and
    (if $x.errorContains then ($o.error | contains($x.errorContains)) else true end) and
    (if $x.tailContains then ($o.details.stderrTail | contains($x.tailContains)) else true end) and
    (if $x.resultFile then ($o.details.resultFile | contains($x.resultFile)) else true end)' \
    <<<"$out" >/dev/null || fail "$name: got ${out:0:600}"
  if [ -n "$secret" ]; then
    ! grep -q -F -- "$(head -c 40 "$dir/$secret")" <<<"$out" || fail "$name: the secret leaked"
  fi
  want_code=$(jq -r '.code // empty' "$exp")
  sp agent classify "${args[@]}"
  expect_rc 0 "$name: classify (text)"
  if [ -n "$want_code" ]; then
    grep -q "^code *$want_code\$" <<<"$out" || fail "$name: text output lacks code $want_code: ${out:0:300}"
  else
    grep -q "^status *success\$" <<<"$out" || fail "$name: text output is not a success: ${out:0:300}"
  fi
done
[ "$cases" -ge 60 ] || fail "only $cases fixtures found"

# The command's own errors.
d=tests/fixtures/agent/two-results
sp agent classify --stdout "$d/stdout" --stderr "$d/stderr" --step-id fix-0123456789ab --json
expect_rc 2 "no --exit"
expect_json '.error.code == "usage"' "no --exit: usage"
sp agent classify --exit 300 --stdout "$d/stdout" --stderr "$d/stderr" --step-id fix-0123456789ab --json
expect_rc 2 "--exit 300"
expect_json '.error.code == "usage.invalid-value"' "--exit 300: usage.invalid-value"
sp agent classify --exit 0 --stdout "$d/stdout" --stderr "$d/stderr" --step-id Bad_Id --json
expect_rc 2 "a bad --step-id"
expect_json '.error.code == "usage.invalid-value"' "a bad --step-id: usage.invalid-value"
sp agent classify --exit 0 --stdout "$tmp/missing" --stderr "$d/stderr" --step-id fix-0123456789ab --json
expect_rc 2 "an unreadable --stdout"
expect_json '.error.code == "file.unreadable"' "file.unreadable"
sp agent classify --help
expect_rc 0 "--help"
sp agent frobnicate
expect_rc 2 "an unknown agent subcommand"

finish
