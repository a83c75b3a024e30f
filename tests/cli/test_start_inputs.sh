#!/usr/bin/env bash
# test_start_inputs.sh - `spore start <workflow> --inputs <file>` through the
# real binary and a real store file (docs/cli.md, docs/step-path.md "Many
# starts, one commit"):
#
# - one run per non-blank line, each with its line's input and, with --key,
#   the start key <prefix>-<line>; a line that is not JSON (or holds a NUL
#   byte) fails alone (exit 2, the other runs started); the same command
#   again names the same runs (created: false) and starts nothing new;
# - 2,500 lines start (in three calls of at most a thousand; that a call is
#   one durable commit is counted by engine.test_step_counts), each run with
#   its key and input;
# - every run started so works: `spore resume` runs each to completion,
#   each step once;
# - bad use is refused before any store exists: --inputs beside --input,
#   a missing file, more than 10,000 lines.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

inputs="$tmp/inputs.jsonl"
printf '{"n":1}\n\n{"n":3\n{"n":4}\n{}\n' >"$inputs"

# ---- lines, keys, a refused line, the same command again ----
sp start "$wf/three-steps.json" --inputs "$inputs" --key bf --db "$db" --json
expect_rc 2 "a line that is not JSON: exit 2"
expect_json '.started == 3 and .existing == 0 and .refused == 1' "three started, one refused"
expect_json '[.runs[].line] == [1, 3, 4, 5]' "blank line 2 skipped"
expect_json '.runs[1].error.code == "json.invalid"' "line 3 refused as json.invalid"
expect_json '[.runs[0, 2, 3].startKey] == ["bf-1", "bf-4", "bf-5"]' "keys <prefix>-<line>"
[ "$(sql "SELECT count(*) FROM runs")" = 3 ] || fail "want 3 runs in the store"
run4=$(jq -r '.runs[2].runId' <<<"$out")
[ "$(sql "SELECT body FROM events WHERE run_id = '$run4' AND sequence = 1" | jq -c .input)" = '{"n":4}' ] ||
  fail "run of line 4 did not start with its line's input"

sp start "$wf/three-steps.json" --inputs "$inputs" --key bf --db "$db"
expect_rc 2 "again: the refused line again"
grep -qx '0 started, 3 existing, 1 refused' <<<"$out" || fail "again: want 0 started, 3 existing: $out"
[ "$(sql "SELECT count(*) FROM runs")" = 3 ] || fail "again: a run was added"

# ---- 2,500 lines: three calls ----
many="$tmp/many.jsonl"
for i in $(seq 1 2500); do echo "{\"i\":$i}"; done >"$many"
db2="$tmp/many.db"
sp start "$wf/three-steps.json" --inputs "$many" --key m --db "$db2" --json
expect_rc 0 "2500 lines"
expect_json '.started == 2500 and .refused == 0' "2500 started"
[ "$(sqlite3 "$db2" "SELECT count(*) FROM runs")" = 2500 ] || fail "want 2500 runs"
[ "$(sqlite3 "$db2" "SELECT count(*) FROM runs WHERE start_key = 'm-1234'")" = 1 ] || fail "no run for line 1234"
[ "$(sqlite3 "$db2" "SELECT e.body FROM runs r JOIN events e ON e.run_id = r.run_id AND e.sequence = 1
                     WHERE r.start_key = 'm-2500'" | jq -c .input)" = '{"i":2500}' ] || fail "line 2500's input"

# ---- a NUL byte inside a line refuses that line; a last line without its newline counts ----
printf '{"n":1}\n{}\0junk\n{"n":3}' >"$tmp/nul.jsonl"
sp start "$wf/three-steps.json" --inputs "$tmp/nul.jsonl" --db "$tmp/nul.db" --json
expect_rc 2 "a NUL byte in line 2"
expect_json '.started == 2 and .refused == 1 and .runs[1].error.code == "json.invalid"' "line 2 refused"

# ---- every run works ----
: >"$SPORE_TEST_LOG"
for run in $(sql "SELECT run_id FROM runs"); do
  sp resume "$run" --db "$db" --json
  expect_rc 0 "resume $run"
  expect_json '.status == "completed"' "run $run completed"
  for node in a b c; do
    [ "$(log_count start "$run" "$node")" = 1 ] || fail "$run: step $node ran $(log_count start "$run" "$node") times"
  done
done

# ---- refused before any store exists ----
fresh="$tmp/fresh.db"
sp start "$wf/three-steps.json" --inputs "$inputs" --input '{}' --db "$fresh" --json
expect_rc 2 "--inputs with --input"
sp start "$wf/three-steps.json" --inputs "$tmp/none.jsonl" --db "$fresh" --json
expect_rc 2 "a missing --inputs file"
seq 1 10001 | sed 's/.*/{}/' | head -c -1 >"$tmp/too-many.jsonl" # the last line without its newline
sp start "$wf/three-steps.json" --inputs "$tmp/too-many.jsonl" --db "$fresh" --json
expect_rc 2 "more than 10000 lines"
expect_json '.error.code == "usage"' "too many lines: usage"
[ ! -e "$fresh" ] || fail "a refused --inputs created a store"

finish
