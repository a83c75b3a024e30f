#!/usr/bin/env bash
# test_unsafe.sh - an unsafe step killed mid-effect (cli.md §6; engine.md H6's
# unsafe case), through the real binary and real processes:
#
# `spore run` is SIGKILLed while the unsafe step sleeps after its effect. The
# step's process group dies with it (no orphan). The next `run` exits 4
# (needs-intervention, diagnostic invocation.unknown on the expired result)
# without running the step again; `resolve --complete` is applied, repeating
# it is a duplicate; the run then completes with the resolved output, and the
# effect happened exactly once.
# The two other answers, each after its own kill: `resolve --retry` runs the
# step again (attempt 2, same effect key: a person decided the effect had not
# happened) and the run completes with its output; `resolve --fail` fails the
# run (exit 1) with operator.failed and the operator's message.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

input='{"effect": true, "sleep": 30}'
start_bg run1 run "$wf/unsafe.json" --key deploy-1 --input "$input" --db "$db" --json
run_pid=$bg_pid
wait_for 10 grep -q '^effect ' "$SPORE_TEST_LOG" || fail "the unsafe step never performed its effect"
run_id=$(awk '$1 == "effect" {print $2; exit}' "$SPORE_TEST_LOG")
pgid=$(log_field effect "$run_id" deploy 1 7)
[ -n "$pgid" ] || fail "no process group logged for the step"
group_alive "$pgid" || fail "the step is not running before the kill"

kill -KILL "$run_pid"
wait_bg "$run_pid" 5
[ "$bg_rc" -eq 137 ] || fail "spore run killed with SIGKILL: exit $bg_rc, want 137"
wait_for 5 group_gone "$pgid" || fail "the step's process group $pgid outlived the killed spore run"
[ "$(log_count end "$run_id" deploy)" -eq 0 ] || fail "the killed step still finished"

sp status "$run_id" --db "$db" --json
expect_rc 0 "status after the kill"
expect_json '.status == "running" and .invocation.nodeId == "deploy"' "status after the kill"

# ---- the next run: needs intervention (exit 4), the step does not run again ----
sp run "$wf/unsafe.json" --key deploy-1 --input "$input" --db "$db" --json
expect_rc 4 "run after the kill"
expect_json '.created == false and .status == "needs-intervention" and .runId == $id
    and .invocation.nodeId == "deploy" and .invocation.attempt == 1 and .result == null' \
  "run after the kill" --arg id "$run_id"
inv=$(jq -r '.invocation.invocationId' <<<"$out")
[[ "$inv" =~ ^inv_[0-9a-f]{32}$ ]] || fail "no outstanding invocation in the status: ${out:0:400}"
sp run "$wf/unsafe.json" --key deploy-1 --input "$input" --db "$db"
expect_rc 4 "run again, still needs intervention (text)"
grep -q "^status  *needs-intervention$" <<<"$out" || fail "run (text): $out"
grep -q "^invocation  *$inv attempt 1 " <<<"$out" || fail "run (text): no invocation line: $out"
sp worker --run "$run_id" --until-parked --db "$db" --json
expect_rc 4 "worker --until-parked at needs-intervention"
[ "$(log_count start "$run_id" deploy)" -eq 1 ] || fail "the unsafe step ran $(log_count start "$run_id" deploy) times before resolve"

sp events "$run_id" --db "$db" --json
expect_json '(.events | length) == 2 and .events[1].id == ("att:" + $inv + ".1")
    and .events[1].payload.status == "expired" and .events[1].consumedRevision == "2"
    and (.events[1].diagnostics | map(.code) == ["invocation.unknown"])' \
  "events after the kill" --arg inv "$inv"

# ---- resolve: applied, then the same request is a duplicate ----
sp resolve "$run_id" "$inv" --complete ok --output '{"deployed": "by hand"}' --id fix-1 --db "$db" --json
expect_rc 0 "resolve --complete"
expect_json '.runId == $id and .invocationId == $inv and .requestId == "fix-1" and .disposition == "applied"' \
  "resolve --complete" --arg id "$run_id" --arg inv "$inv"
sp resolve "$run_id" "$inv" --complete ok --output '{"deployed": "by hand"}' --id fix-1 --db "$db" --json
expect_rc 0 "resolve --complete again"
expect_json '.requestId == "fix-1" and .disposition == "duplicate"' "resolve --complete again"
sp resolve "$run_id" "$inv" --complete ok --output '{"deployed": "by hand"}' --id fix-1 --db "$db"
expect_rc 0 "resolve --complete again (text)"
[ "$out" = "resolve $inv of $run_id: duplicate" ] || fail "resolve again (text): \"$out\""
sp resolve "$run_id" "$inv" --retry --id fix-1 --db "$db" --json
expect_rc 2 "resolve reusing a request ID for another answer"

# ---- the run completes with the resolved output; the effect happened once ----
sp run "$wf/unsafe.json" --key deploy-1 --input "$input" --db "$db" --json
expect_rc 0 "run after resolve"
expect_json '.status == "completed" and .result.output == {"deployed": "by hand"}
    and .nodes.deploy.outcome == "ok" and .invocation == null' "run after resolve"
[ "$(log_count effect "$run_id" deploy)" -eq 1 ] || fail "the effect happened $(log_count effect "$run_id" deploy) times, want once"
[ "$(log_count start "$run_id" deploy)" -eq 1 ] || fail "the unsafe step started $(log_count start "$run_id" deploy) times, want once"
sp events "$run_id" --db "$db" --json
expect_json '(.events | map(.id)) == ["start", ("att:" + $inv + ".1"), "res:fix-1"]
    and (.events | map(.consumedRevision)) == ["1", "2", "3"]
    and .events[2].kind == "invocation.resolved"' "events after resolve" --arg inv "$inv"
[ "$(sql "select count(*) from attempts where run_id = '$run_id'")" -eq 1 ] ||
  fail "the unsafe invocation has more than one attempt"

# ---- kill_mid_effect <key> <input>: start `run`, SIGKILL it after the
# effect, run again (exit 4); sets run_id, inv ----
kill_mid_effect() {
  local key=$1 input=$2 pid pgid before
  before=$(grep -c '^effect ' "$SPORE_TEST_LOG" || true)
  start_bg "run-$key" run "$wf/unsafe.json" --key "$key" --input "$input" --db "$db" --json
  pid=$bg_pid
  wait_for 10 bash -c "[ \$(grep -c '^effect ' '$SPORE_TEST_LOG') -gt $before ]" || fail "$key: no effect"
  run_id=$(awk '$1 == "effect" {r = $2} END {print r}' "$SPORE_TEST_LOG")
  pgid=$(log_field effect "$run_id" deploy 1 7)
  kill -KILL "$pid"
  wait_bg "$pid" 5
  wait_for 5 group_gone "$pgid" || fail "$key: the step outlived the killed run"
  sp run "$wf/unsafe.json" --key "$key" --input "$input" --db "$db" --json
  expect_rc 4 "$key: run after the kill"
  inv=$(jq -r '.invocation.invocationId' <<<"$out")
}

# ---- resolve --retry: the step runs again, same effect key ----
kill_mid_effect deploy-2 '{"effect": true, "sleep": 30, "sleepAttempt": 1}'
sp resolve "$run_id" "$inv" --retry --db "$db" --json
expect_rc 0 "resolve --retry"
expect_json '.disposition == "applied" and (.requestId | test("^req_[0-9a-f]{16}$"))' "resolve --retry"
sp run "$wf/unsafe.json" --key deploy-2 --db "$db" --json
expect_rc 0 "run after resolve --retry"
key1=$(log_field effect "$run_id" deploy 1 5)
expect_json '.status == "completed" and .result.output == {"node": "deploy", "attempt": 2, "effectKey": $key}' \
  "run after resolve --retry" --arg key "$key1"
[ "$(log_count effect "$run_id" deploy)" -eq 2 ] && [ "$(log_field effect "$run_id" deploy 2 5)" = "$key1" ] ||
  fail "resolve --retry: want one more effect under the same key: $(grep "$run_id" "$SPORE_TEST_LOG")"

# ---- resolve --fail: the run fails with operator.failed ----
kill_mid_effect deploy-3 '{"effect": true, "sleep": 30}'
sp resolve "$run_id" "$inv" --fail "rolled back by hand" --id fail-1 --db "$db"
expect_rc 0 "resolve --fail (text)"
[ "$(head -n 1 <<<"$out")" = "resolve $inv of $run_id: applied" ] || fail "resolve --fail (text): \"$out\""
grep -qx "next: spore resume $run_id --db $db   (or a running spore worker takes it)" <<<"$out" ||
  fail "resolve --fail (text) does not say how to go on: \"$out\""
sp run "$wf/unsafe.json" --key deploy-3 --db "$db" --json
expect_rc 1 "run after resolve --fail"
expect_json '.status == "failed" and .result.error.code == "operator.failed"
    and .result.error.message == "rolled back by hand" and .result.error.nodeId == "deploy"' "run after resolve --fail"
[ "$(log_count start "$run_id" deploy)" -eq 1 ] || fail "resolve --fail ran the step again"

finish
