#!/usr/bin/env bash
# test_async.sh - async command steps (engine.md §9) through the real binary:
# the start command's handle holds the attempt; the job (started with
# `spore step detach`, its own session) outlives a SIGKILLed worker; a second
# worker probes it (alive) and its result arrives through the watch; a job
# that dies is probed dead and retried; the hard deadline stops the job and,
# for an unsafe effect, parks the run in needs-intervention; a crash at the
# hold-attempt failpoints converges; capabilities and validation.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
results="$tmp/results"
mkdir -p "$results"
job="$root/tests/fixtures/bin/async-job.sh"
watch="$root/tests/fixtures/bin/async-watch.sh"

# workflow <file> <effect> <maxAttempts> <job seconds> <timeoutMs> <hooks JSON members>
workflow() {
  cat >"$1" <<JSON
{"format": "runspore.workflow/0.1", "name": "async-test", "start": "job",
 "actions": {"job": {"kind": "command", "effect": "$2", "retry": {"maxAttempts": $3},
   "argv": ["$spore", "step", "detach", "--log", "$tmp/job.log", "--", "$job", "$results", "$4"],
   "async": {"timeoutMs": "$5", "probeEveryMs": "300" $6}}},
 "nodes": {"job": {"kind": "activity", "action": "job", "outcomes": {"ok": "done"}},
           "done": {"kind": "complete", "output": {"\$get": ["nodes", "job", "output"]}}}}
JSON
}
probe_hook=', "probe": {"command": {"argv": ["'"$spore"'", "step", "probe-pid"]}}'
watch_hook=', "watch": {"command": {"argv": ["'"$watch"'", "'"$results"'"]}}'
job_count() { grep -c "^$1 " "$SPORE_TEST_LOG" || true; }

# ---- capabilities and validation ----
sp capabilities --json
expect_rc 0 "capabilities"
expect_json '(.actionKinds | index("command") and index("external") and index("native"))
  and (.asyncKinds | index("command")) and .resultChannels == ["store","watch"]
  and (.sandbox | has("bubblewrap") and has("works") and has("seccomp") and has("userNamespaces")
       and has("landlockAbi"))
  and (.agentTransports | index("exec"))
  and ((.agentTransports | index("local")) != null) == .sandbox.works
  and .componentWorlds == ["spore:runner@0.1"]
  and (.storeAdapters | index("sqlite") and index("postgres"))' "capabilities shape"
workflow "$tmp/component.json" idempotent 1 1 60000 ', "probe": {"component": {"module": "x.wasm"}}'
SPORE_DISABLED_KINDS=component expect_error 2 action.capability-missing \
  "a component hook this host cannot run" -- validate "$tmp/component.json"
expect_error 2 component.invalid-module "a component hook whose module is missing" -- validate "$tmp/component.json"
workflow "$tmp/badlease.json" idempotent 1 1 1000 ', "leaseMs": "1000"'
expect_error 2 action.invalid "leaseMs not shorter than timeoutMs" -- validate "$tmp/badlease.json"

# ---- the job outlives a SIGKILLed worker; a second worker probes and watches it ----
# The job sleeps 8 s: the probe below must find it still running, and under
# the sanitizers on a loaded machine the status checks before it took over 2 s.
workflow "$tmp/watch.json" idempotent 1 8 60000 "$probe_hook$watch_hook"
sp start "$tmp/watch.json" --db "$db" --key w1 --json
run=$(jq -r .runId <<<"$out")
start_bg worker-a worker --db "$db" --poll-ms 50
wait_for 10 grep -q '^job-start ' "$SPORE_TEST_LOG" || fail "the job did not start"
wait_for 10 bash -c "'$spore' status $run --db '$db' --json | jq -e '.step.state == \"held\"'" ||
  fail "the step was not held"
kill -KILL "$bg_pid"
wait "$bg_pid" 2>/dev/null || true
jobpid=$(awk '$1 == "job-start" {print $3}' "$SPORE_TEST_LOG")
kill -0 "$jobpid" 2>/dev/null || fail "the job died with the worker"
sp status "$run" --db "$db" --json
expect_json '.status == "running" and .step.kind == "command" and .step.state == "held"
  and .step.probe == "alive" and (.step.holder.pid == ($p | tonumber))
  and (.step.deadlineMs | test("^[0-9]+$"))' "a second process probes the job alive" \
  --arg p "$jobpid"
sp worker --run "$run" --until-parked --db "$db" --poll-ms 50 --json
expect_rc 0 "a second worker finishes the run through the watch"
expect_json '.status == "completed" and .result.output.slept == 8 and
  .result.output.pid == ($p | tonumber)' "the result came from the job" --arg p "$jobpid"
[ "$(job_count job-start)" = 1 ] || fail "the job started $(job_count job-start) times, want once"

# ---- a job that dies without a result is probed dead, then retried ----
workflow "$tmp/dies.json" idempotent 2 30 60000 "$probe_hook"
sp start "$tmp/dies.json" --db "$db" --key d1 --json
run=$(jq -r .runId <<<"$out")
start_bg worker-b worker --db "$db" --poll-ms 50
wait_for 10 bash -c "[ \$(grep -c '^job-start' '$SPORE_TEST_LOG') -ge 2 ]" || fail "job 1 did not start"
first=$(awk '$1 == "job-start" {p = $3} END {print p}' "$SPORE_TEST_LOG")
kill -KILL "$first"
wait_for 10 bash -c "[ \$(grep -c '^job-start' '$SPORE_TEST_LOG') -ge 3 ]" ||
  fail "the dead job was not retried"
sql "SELECT reason FROM audit WHERE kind = 'expired' AND run_id = '$run'" | grep -qx probe-dead ||
  fail "the attempt was not expired as probe-dead"
kill -INT "$bg_pid"
wait_bg "$bg_pid" 30
[ "$bg_rc" = 130 ] || fail "worker b exit $bg_rc, want 130"
sp status "$run" --db "$db" --json
expect_json '.step.attempt == 2 and .step.state == "held"' "attempt 2 holds the retried job"
pkill -KILL -f "$results 30" || true

# ---- the hard deadline stops the job; unsafe -> needs-intervention ----
workflow "$tmp/deadline.json" unsafe 3 30 1200 ""
before=$(job_count job-start)
sp run "$tmp/deadline.json" --db "$db" --key t1 --poll-ms 50 --json
expect_rc 4 "deadline passed on an unsafe async step"
expect_json '.status == "needs-intervention" and .invocation.state == "unknown"' "parked"
run=$(jq -r .runId <<<"$out")
sql "SELECT reason FROM audit WHERE kind = 'expired' AND run_id = '$run'" | grep -qx deadline ||
  fail "the attempt was not expired with reason deadline: $(sql "SELECT * FROM audit WHERE run_id = '$run'")"
tpid=$(awk '$1 == "job-start" {p = $3} END {print p}' "$SPORE_TEST_LOG")
[ "$(job_count job-start)" = $((before + 1)) ] || fail "the unsafe job started more than once"
wait_for 5 bash -c "! ps -o stat= -p $tpid | grep -qv Z" || fail "the job was not stopped at the deadline"

# ---- an async step nobody can observe: run exits 6 ----
workflow "$tmp/blind.json" idempotent 1 30 60000 ""
jq '.actions.job.argv = ["/bin/sh", "-c", "echo '"'"'{\"job\":1}'"'"'"]' "$tmp/blind.json" >"$tmp/blind2.json"
sp run "$tmp/blind2.json" --db "$db" --key b1 --json
expect_rc 6 "held by a handle no local hook can observe"
expect_json '.step.state == "held" and .step.holder == {"job":1} and .step.probe == null' "blind hold"
sp step abandon "$(jq -r .runId <<<"$out")" --db "$db"
expect_rc 0 "abandon the blind step"

# ---- a start whose stdout is not a handle: unknown (the job may be running) ----
jq '.actions.job.argv = ["/bin/sh", "-c", "echo not-json"]' "$tmp/blind.json" >"$tmp/malformed.json"
sp run "$tmp/malformed.json" --db "$db" --key m1 --json
expect_rc 1 "a malformed handle exhausts the single attempt"
expect_json '.result.error.code == "activity.attempts-exhausted"' "malformed handle -> unknown -> exhausted"

# ---- the 4 KiB handle bound: exactly 4096 canonical bytes hold, 4097 do not ----
printf '#!/bin/sh\nprintf %%s "\\""\nhead -c "$1" /dev/zero | tr "\\000" x\nprintf %%s "\\""\n' >"$tmp/handle.sh"
chmod +x "$tmp/handle.sh"
jq --arg s "$tmp/handle.sh" '.actions.job.argv = [$s, "4094"]' "$tmp/blind.json" >"$tmp/h4096.json"
sp run "$tmp/h4096.json" --db "$db" --key h4096 --json
expect_rc 6 "a 4096-byte handle holds the step"
expect_json '.step.state == "held" and (.step.holder | length) == 4094' "the 4096-byte handle is kept"
sp step abandon "$(jq -r .runId <<<"$out")" --db "$db"
jq --arg s "$tmp/handle.sh" '.actions.job.argv = [$s, "4095"]' "$tmp/blind.json" >"$tmp/h4097.json"
sp run "$tmp/h4097.json" --db "$db" --key h4097 --json
expect_rc 1 "a 4097-byte handle is not a handle"
sp events "$(jq -r .runId <<<"$out")" --db "$db" --json
expect_json '[.events[] | select(.kind == "activity.result") | .payload]
  | .[0].status == "unknown" and .[0].error.code == "command.malformed-handle"' "4097-byte handle"

# ---- crash at the hold-attempt failpoints, then restart ----
for point in store.hold-attempt.before-commit store.hold-attempt.after-commit; do
  workflow "$tmp/crash.json" idempotent 2 1 60000 "$probe_hook$watch_hook"
  before=$(job_count job-start)
  set +e
  SPORE_FAILPOINTS=$point "$spore" run "$tmp/crash.json" --db "$db" --key "c-$point" --poll-ms 50 \
    >"$tmp/crash.out" 2>"$tmp/crash.err"
  crc=$?
  set -e
  [ "$crc" = 134 ] || fail "$point: exit $crc, want 134 (abort)"
  sp run "$tmp/crash.json" --db "$db" --key "c-$point" --poll-ms 50 --json
  expect_rc 0 "$point: the run completes after a restart"
  expect_json '.status == "completed" and .result.output.slept == 1' "$point: result"
  started=$(($(job_count job-start) - before))
  if [ "$point" = store.hold-attempt.after-commit ]; then
    [ "$started" = 1 ] || fail "$point: the job started $started times; the hold was committed, want once"
  else
    [ "$started" -ge 1 ] && [ "$started" -le 2 ] || fail "$point: the job started $started times, want 1..2"
  fi
done

finish
