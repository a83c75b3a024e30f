#!/usr/bin/env bash
# test_validate.sh - `spore validate`, `spore trace` and the global CLI
# behaviour (cli.md §1-3, §6-7), through the real binary.
#
# usage: bash test_validate.sh <path-to-spore> <repo-root>
#
# Asserts exit codes, the error code in text (stderr `spore: <code>: …`) and
# JSON (`{"error":{"code":…},"format":"spore.cli/0.1"}` on stdout), that every
# example validates, that every fixture in tests/fixtures/invalid/ fails with
# the code in its file name, that validate creates no file, and that trace
# reports a corrupted trace with its step and member.
set -euo pipefail

spore=${1:?usage: test_validate.sh <spore> <repo-root>}
root=${2:?usage: test_validate.sh <spore> <repo-root>}
spore=$(cd "$(dirname "$spore")" && pwd)/$(basename "$spore")
root=$(cd "$root" && pwd)
traces="$root/../shared/conformance/traces"

command -v jq >/dev/null || { echo "test_validate.sh: jq is required (scripts/deps.sh installs it)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failures=0
checks=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# run <name> <args...>: runs spore, keeping stdout, stderr and the exit code.
run() {
  local name=$1
  shift
  checks=$((checks + 1))
  set +e
  "$spore" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  rc=$?
  set -e
  out=$(cat "$tmp/$name.out")
  err=$(cat "$tmp/$name.err")
}

expect_rc() { # <want> <what>
  [ "$rc" -eq "$1" ] || fail "$2: exit $rc, want $1 (stdout: ${out:0:300}) (stderr: ${err:0:300})"
}

# The text error form: one stderr line `spore: <code>: <message>`, nothing on stdout.
expect_text_error() { # <code> <what>
  [[ "$err" == "spore: $1: "* ]] || fail "$2: stderr \"${err:0:300}\", want \"spore: $1: …\""
  [ -z "$out" ] || fail "$2: text-mode error printed on stdout: ${out:0:300}"
}

# The JSON error form on stdout.
expect_json_error() { # <code> <what>
  if ! jq -e --arg code "$1" \
      '.format == "spore.cli/0.1" and .error.code == $code and (.error.message | type == "string" and length > 0)' \
      <<<"$out" >/dev/null 2>&1; then
    fail "$2: stdout \"${out:0:300}\", want {\"error\":{\"code\":\"$1\",…},\"format\":\"spore.cli/0.1\"}"
  fi
}

# ---- every example validates ----
examples=("$root"/examples/*.json)
[ -e "${examples[0]}" ] || fail "no examples in $root/examples"
for wf in "${examples[@]}"; do
  name=$(basename "$wf" .json)
  run "example-$name" validate "$wf"
  expect_rc 0 "validate $name"
  [[ "$out" == "valid: $wf ("* ]] || fail "validate $name: stdout \"$out\", want \"valid: $wf (…\""
  text_bytes=$(sed -n 's/.* \([0-9][0-9]*\) package bytes.*/\1/p' <<<"$out")
  run "example-$name-json" validate --json "$wf"
  expect_rc 0 "validate --json $name"
  jq -e '.valid == true and .format == "spore.cli/0.1"
         and (.packageBytes | type == "string" and test("^(0|[1-9][0-9]*)$"))
         and (.packageDigest | test("^sha256:[0-9a-f]{64}$"))' <<<"$out" >/dev/null 2>&1 ||
    fail "validate --json $name: stdout \"$out\""
  json_bytes=$(jq -r '.packageBytes' <<<"$out" 2>/dev/null || true)
  [[ -n "$text_bytes" && "$text_bytes" = "$json_bytes" ]] ||
    fail "validate $name: text says $text_bytes package bytes, JSON says $json_bytes"
  [ -z "$err" ] || fail "validate $name: unexpected stderr: $err"
done

# The example commands exist and are executable (the engine runs argv[0] directly):
# `spore` (the running binary itself), an absolute path, or a path under the
# repository root (the examples run from there).
for wf in "${examples[@]}"; do
  for cmd in $(jq -r '.actions // {} | .[] | select(.kind == "command") | .argv[0]' "$wf"); do
    [ "$cmd" = spore ] && continue
    case "$cmd" in /*) path=$cmd ;; *) path=$root/$cmd ;; esac
    [ -x "$path" ] || fail "$(basename "$wf"): command $cmd is not an executable file (absolute, or under the repository root)"
  done
done

# The example steps behave as their workflows expect when called the way the
# command runner calls them (stdin = canonical input, SPORE_* environment).
step() { # <expected exit> <expected stdout> <script> <stdin> [VAR=value...]
  local want_rc=$1 want_out=$2 script=$3 input=$4 got got_rc
  shift 4
  checks=$((checks + 1))
  set +e
  got=$(cd "$root" && printf '%s' "$input" | env "$@" "$script" 2>"$tmp/step.err")
  got_rc=$?
  set -e
  [ "$got_rc" -eq "$want_rc" ] || fail "$script < $input: exit $got_rc, want $want_rc ($(cat "$tmp/step.err"))"
  [ "$got" = "$want_out" ] || fail "$script < $input: stdout $got, want $want_out"
}
ids=(SPORE_RUN_ID=run_example SPORE_EFFECT_KEY=inv_example SPORE_ATTEMPT=1 SPORE_EXAMPLES_STATE="$tmp/state")
step 0 '{"greeting":"hello, Ada"}' examples/bin/greet.sh '{"name":"Ada"}' "${ids[@]}"
step 0 '{"greeting":"hello, world"}' examples/bin/greet.sh 'null' "${ids[@]}"
step 0 '{"shout":"HELLO, ADA!","attempt":1}' examples/bin/shout.sh '{"text":"hello, Ada"}' "${ids[@]}"
step 1 '{"verdict":"red","findings":["no tests for the new branch","changelog entry missing"]}' \
  examples/bin/check.sh '{"subject":null}' "${ids[@]}"
step 0 '{"fixed":["x"],"effectKey":"inv_example"}' examples/bin/rework.sh '{"findings":["x"]}' "${ids[@]}"
step 0 '{"fixed":["x"],"effectKey":"inv_example"}' examples/bin/rework.sh '{"findings":["x"]}' "${ids[@]}"
step 0 '{"verdict":"ok","findings":[],"fixedBy":"inv_example"}' examples/bin/check.sh '{"subject":null}' "${ids[@]}"
step 1 '{"verdict":"red","findings":["no tests for the new branch","changelog entry missing"]}' \
  examples/bin/check.sh '{"subject":null}' "${ids[@]/run_example/run_other}"
step 0 "{\"deployed\":true,\"effectKey\":\"inv_example\",\"log\":\"$tmp/deploy.log\"}" \
  examples/bin/deploy.sh "{\"log\":\"$tmp/deploy.log\"}" "${ids[@]}"
checks=$((checks + 1))
[ "$(cat "$tmp/deploy.log")" = "inv_example" ] || fail "deploy.sh: log holds \"$(cat "$tmp/deploy.log")\", want the effect key once"

# ---- every invalid fixture fails with the code in its name ----
fixtures=("$root"/tests/fixtures/invalid/*.json)
[ "${#fixtures[@]}" -ge 4 ] || fail "want at least 4 invalid fixtures, found ${#fixtures[@]}"
for wf in "${fixtures[@]}"; do
  base=$(basename "$wf" .json)
  code=${base%%--*}
  [ "$code" != "$base" ] || { fail "fixture $base: name is not <code>--<what>.json"; continue; }
  run "fixture-$base" validate "$wf"
  expect_rc 2 "validate $base"
  expect_text_error "$code" "validate $base"
  run "fixture-$base-json" validate --json "$wf"
  expect_rc 2 "validate --json $base"
  expect_json_error "$code" "validate --json $base"
  [ -z "$err" ] || fail "validate --json $base: JSON-mode error also printed on stderr: $err"
done

# ---- unreadable file, bad JSON ----
run missing validate "$tmp/does-not-exist.json"
expect_rc 2 "validate of a missing file"
expect_text_error file.unreadable "validate of a missing file"
run missing-json validate --json "$tmp/does-not-exist.json"
expect_rc 2 "validate --json of a missing file"
expect_json_error file.unreadable "validate --json of a missing file"

printf '{"format": "runspore.workflow/0.1", "name": ' >"$tmp/truncated.json"
run badjson validate "$tmp/truncated.json"
expect_rc 2 "validate of truncated JSON"
expect_text_error json.invalid "validate of truncated JSON"
run badjson-json validate --json "$tmp/truncated.json"
expect_rc 2 "validate --json of truncated JSON"
expect_json_error json.invalid "validate --json of truncated JSON"
printf 'not json at all' >"$tmp/garbage.json"
run garbage validate "$tmp/garbage.json"
expect_rc 2 "validate of non-JSON"
expect_text_error json.invalid "validate of non-JSON"

# ---- usage errors ----
run unknown-command frobnicate
expect_rc 2 "unknown subcommand"
[[ "$err" == *frobnicate* ]] || fail "unknown subcommand: stderr does not name it: $err"
run no-command
expect_rc 2 "no subcommand"
run unknown-option validate --frobnicate "${examples[0]}"
expect_rc 2 "validate with an unknown option"
expect_text_error usage "validate with an unknown option"
run unknown-option-json validate --json --frobnicate "${examples[0]}"
expect_rc 2 "validate --json with an unknown option"
expect_json_error usage "validate --json with an unknown option"
run trace-unknown-option trace --frobnicate "$traces/01-linear-complete.json"
expect_rc 2 "trace with an unknown option"
expect_text_error usage "trace with an unknown option"
run two-files validate "${examples[0]}" "${examples[0]}"
expect_rc 2 "validate with two files"
expect_text_error usage "validate with two files"
run no-file validate
expect_rc 2 "validate without a file"
expect_text_error usage "validate without a file"
run trace-no-file trace
expect_rc 2 "trace without a file"
expect_text_error usage "trace without a file"

# ---- help and version ----
for sub in validate trace; do
  run "help-$sub" "$sub" --help
  expect_rc 0 "$sub --help"
  [[ "$out" == "usage: spore $sub"* ]] || fail "$sub --help: stdout \"${out:0:200}\""
done
run help --help
expect_rc 0 "spore --help"
[[ "$out" == *validate* && "$out" == *trace* ]] || fail "spore --help does not list validate and trace: $out"
run version --version
expect_rc 0 "spore --version"
[[ "$out" == spore\ * ]] || fail "spore --version: \"$out\" does not start with \"spore \""
[[ "$out" == *"semantics 0.1"* ]] || fail "spore --version: \"$out\" does not mention semantics 0.1"
[[ "$out" == *"semantics 0.2 for spore.workflow/0.2"* ]] || fail "spore --version: \"$out\" does not mention semantics 0.2"

# ---- validate never creates a database (or any other file) ----
mkdir "$tmp/cwd"
(
  cd "$tmp/cwd"
  unset SPORE_DB
  for wf in "${examples[@]}" "${fixtures[@]}"; do
    "$spore" validate "$wf" >/dev/null 2>&1 || true
    "$spore" validate --json "$wf" >/dev/null 2>&1 || true
  done
  "$spore" validate --db "$tmp/cwd/explicit.db" "${examples[0]}" >/dev/null 2>&1 || true
)
checks=$((checks + 1))
left=$(ls -A "$tmp/cwd")
[ -z "$left" ] || fail "validate created files in its working directory: $left"

# ---- trace: the golden corpus passes; a corrupted copy fails precisely ----
# (only where the conformance data is: a user's clone has none, CI has it)
if ! compgen -G "$traces/*.json" >/dev/null; then
  echo "test_validate.sh: skipped: the trace checks (no golden traces in $traces)"
else
  all_traces=("$traces"/*.json)
  n=${#all_traces[@]}
  [ "$n" -ge 48 ] || fail "want the 48 golden traces in $traces, found $n"
  run trace-all trace "${all_traces[@]}"
  expect_rc 0 "spore trace on every golden trace"
  last=$(tail -n 1 <<<"$out")
  [ "$last" = "$n passed, 0 failed" ] || fail "spore trace: last line \"$last\", want \"$n passed, 0 failed\""
  pass_lines=$(grep -c '^PASS ' <<<"$out" || true)
  [ "$pass_lines" -eq "$n" ] || fail "spore trace: $pass_lines PASS lines, want $n"

  run trace-json trace --json "$traces/01-linear-complete.json"
  expect_rc 0 "spore trace --json"
  jq -e '.format == "spore.cli/0.1" and .passed == 1 and .failed == 0
         and .traces[0].name == "linear-complete" and .traces[0].passed == true' <<<"$out" >/dev/null 2>&1 ||
    fail "spore trace --json: ${out:0:300}"

  zero="sha256:0000000000000000000000000000000000000000000000000000000000000000"
  jq --arg z "$zero" '.steps[1].expect.snapshotDigest = $z' "$traces/01-linear-complete.json" >"$tmp/corrupt-digest.json"
  run trace-corrupt trace "$tmp/corrupt-digest.json"
  expect_rc 1 "spore trace on a corrupted snapshotDigest"
  grep -q "^FAIL linear-complete .*: step 1: snapshotDigest$" <<<"$out" ||
    fail "corrupted snapshotDigest: no FAIL line naming step 1 and snapshotDigest: ${out:0:400}"
  grep -q "^  expected: \"$zero\"$" <<<"$out" || fail "corrupted snapshotDigest: expected value not shown: ${out:0:400}"
  grep -q '^  actual:   "sha256:[0-9a-f]\{64\}"$' <<<"$out" || fail "corrupted snapshotDigest: actual value not shown: ${out:0:400}"
  [ "$(tail -n 1 <<<"$out")" = "0 passed, 1 failed" ] || fail "corrupted snapshotDigest: last line \"$(tail -n 1 <<<"$out")\""

  jq '.steps[0].expect.commands[0].payload.notBeforeMs = "1001"' "$traces/01-linear-complete.json" >"$tmp/corrupt-command.json"
  run trace-corrupt-cmd trace "$traces/01-linear-complete.json" "$tmp/corrupt-command.json"
  expect_rc 1 "spore trace with one corrupted command payload"
  grep -q "^FAIL linear-complete .*: step 0: commands\[0\]\.payload$" <<<"$out" ||
    fail "corrupted command payload: no FAIL line naming step 0 and commands[0].payload: ${out:0:400}"
  [ "$(tail -n 1 <<<"$out")" = "1 passed, 1 failed" ] || fail "corrupted command payload: last line \"$(tail -n 1 <<<"$out")\""

  run trace-missing trace "$tmp/no-such-trace.json"
  expect_rc 1 "spore trace on a missing file"
  grep -q "^FAIL .*no-such-trace.json: file.unreadable" <<<"$out" || fail "spore trace on a missing file: ${out:0:300}"
fi

if [ "$failures" -ne 0 ]; then
  echo "test_validate.sh: $failures failed assertion(s) over $checks spore invocations" >&2
  exit 1
fi
echo "test_validate.sh: all assertions passed ($checks spore invocations)"
