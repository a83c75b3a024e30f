#!/usr/bin/env bash
# test_component_detached.sh - runners.md R1 and the example workflow
# (examples/runners/detached-job.json, its runner built from C) through the
# real binary:
# - the example runs end to end: the runner reads its granted folder,
#   starts its granted program detached, the step is held, a probe finds the
#   job gone and finishes the step;
# - R1: the job outlives a SIGKILLed worker; a second `spore worker` process
#   probes it through the runner (alive), then `step abandon` stops it
#   through the runner: the job is gone afterwards and the run proceeds (the
#   step's `failed` route); worker B probes every 50 ms meanwhile, and the
#   abandon fences the attempt before it stops the job, so no probe can
#   record the stopped job as the step's result (audit: expired abandoned);
# - the deadline (async.timeoutMs) stops the job through the runner too.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
source "$root/tests/cli/component.sh"
ex="$tmp/example"
cp -r "$root/examples/runners" "$ex"
cp "$runners/detached-job.wasm" "$ex/"

# ---- the example as a new user runs it ----
sp run "$ex/detached-job.json" --db "$db" --poll-ms 50 --json
expect_rc 0 "the example workflow completes"
expect_json '.status == "completed" and .result.output == {finished: true}' "the example's result"
run=$(jq -r .runId <<<"$out")
log=$(ls "${XDG_CACHE_HOME:-$HOME/.cache}/spore/logs/$run/"*.log /tmp/spore-cache-$(id -u)/logs/$run/*.log 2>/dev/null | head -n 1 || true)
[ -n "$log" ] && grep -q "greeting=hello from the sealed data folder" "$log" && grep -q "finished" "$log" ||
  fail "the job's output (its settings from the sealed folder) is not in the attempt log: ${log:-none}"
grep -q "detached-job: the job started" "$log" || fail "the runner's log line is not in the attempt log"

# ---- R1: SIGKILL the worker, probe from a second worker, abandon ----
jq --arg log "$SPORE_TEST_LOG" '.actions.job.config.args = ["300"] | .actions.job.retry.maxAttempts = 1
  | .actions.job.async.probeEveryMs = "50"
  | .actions.after = {kind: "command", effect: "idempotent",
      argv: ["/bin/sh", "-c", ("echo after $SPORE_RUN_ID >> " + $log)]}
  | .nodes.job.outcomes = {ok: "after", failed: "after"}
  | .nodes.after = {kind: "activity", action: "after", outcomes: {ok: "done"}}' \
  "$ex/detached-job.json" >"$ex/long.json"
sp start "$ex/long.json" --db "$db" --key r1 --json
run=$(jq -r .runId <<<"$out")
start_bg worker-a worker --db "$db" --poll-ms 50
wait_for 20 bash -c "'$spore' status $run --db '$db' --json | jq -e '.step.state == \"held\"'" ||
  fail "the step was not held"
sp status "$run" --db "$db" --json
jobpid=$(jq -r '.step.holder.process.pid' <<<"$out")
[[ "$jobpid" =~ $decimal ]] || fail "no job pid in the holder handle: $out"
kill -KILL "$bg_pid"
wait "$bg_pid" 2>/dev/null || true
sleep 0.2
kill -0 "$jobpid" 2>/dev/null || fail "the job died with the worker"
start_bg worker-b worker --db "$db" --poll-ms 50
sp status "$run" --db "$db" --json
expect_json '.status == "running" and .step.kind == "component" and .step.state == "held"
  and .step.probe == "alive"' "a second process probes the job alive through the runner"
sp step abandon "$run" --db "$db"
expect_rc 0 "abandon"
wait_for 10 bash -c "! kill -0 $jobpid 2>/dev/null || ps -o stat= -p $jobpid | grep -q Z" ||
  fail "the job is still running after the abandon"
wait_for 20 bash -c "grep -q 'after $run' '$SPORE_TEST_LOG'" || fail "the run did not proceed after the abandon"
wait_for 20 bash -c "'$spore' status $run --db '$db' --json | jq -e '.status == \"completed\"'" ||
  fail "the run did not complete: $(status_json "$run")"
sql "SELECT reason FROM audit WHERE kind = 'expired' AND run_id = '$run'" | grep -qx abandoned ||
  fail "the attempt was not expired as abandoned"
kill -INT "$bg_pid"
wait_bg "$bg_pid" 30

# ---- the deadline stops the job through the runner ----
jq '.actions.job.async.timeoutMs = "1500"' "$ex/long.json" >"$ex/deadline.json"
sp run "$ex/deadline.json" --db "$db" --key d1 --poll-ms 50 --json
expect_rc 0 "the run proceeds after the deadline"
run=$(jq -r .runId <<<"$out")
sql "SELECT reason FROM audit WHERE kind = 'expired' AND run_id = '$run'" | grep -qx deadline ||
  fail "the attempt was not expired at its deadline"
holder=$(sql "SELECT holder FROM attempts WHERE run_id = '$run'" | head -n 1)
dpid=$(jq -r '.process.pid' <<<"$holder")
[[ "$dpid" =~ $decimal ]] || fail "no job pid: $holder"
wait_for 10 bash -c "! kill -0 $dpid 2>/dev/null || ps -o stat= -p $dpid | grep -q Z" ||
  fail "the job outlived its deadline"
finish
