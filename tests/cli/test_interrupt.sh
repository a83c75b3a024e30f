#!/usr/bin/env bash
# test_interrupt.sh - SIGINT during a step (cli.md §4, §6; engine.md §3):
#
# - a `spore worker` whose step outlives the grace period stops on SIGINT
#   within about two grace periods: it waits one grace period for the step,
#   then stops it (the step's process group is killed), finishes the attempt
#   with what the runner reported (unknown / command.stopped, so the kernel
#   decides at once: retry) and exits 130 with {"interrupted": true};
# - another worker then runs the step again as attempt 2 with the same effect
#   key, and the run completes with attempt 2's output;
# - the same for `spore run`: exit 130, the status with "interrupted": true;
#   the next `run` of the key resumes it (created false) and completes it.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

grace=500
input='{"sleep": 30, "sleepAttempt": 1}'

# interrupt <bg pid> <run ID> <what>: SIGINT once attempt 1 of `work` runs;
# checks the stop and the attempt 1 result.
interrupt() {
  local pid=$1 run=$2 what=$3 pgid t0 elapsed
  wait_for 10 log_has start "$run" work 1 || fail "$what: attempt 1 never started"
  pgid=$(log_field start "$run" work 1 7)
  t0=$(now_ms)
  kill -INT "$pid"
  wait_bg "$pid" 10
  elapsed=$(($(now_ms) - t0))
  [ "$bg_rc" -eq 130 ] || fail "$what: exit $bg_rc after SIGINT, want 130"
  # One grace period waiting for the step, then its stop; "about two grace
  # periods" in all, with a second of slack for a slow (sanitizer) build.
  [ "$elapsed" -ge "$grace" ] || fail "$what: exited after $elapsed ms, before the $grace ms grace period"
  [ "$elapsed" -le $((2 * grace + 1000)) ] || fail "$what: exited after $elapsed ms, want about two grace periods ($grace ms)"
  echo "$what: exit 130 after $elapsed ms (grace $grace ms)"
  wait_for 5 group_gone "$pgid" || fail "$what: the stopped step's process group $pgid is still alive"
  [ "$(log_count end "$run" work 1)" -eq 0 ] || fail "$what: attempt 1 was not stopped, it finished"
  sp events "$run" --db "$db" --json
  expect_json '(.events | length) == 2 and .events[1].id == ("att:" + $inv + ".1")
      and .events[1].payload.status == "unknown" and .events[1].payload.error.code == "command.stopped"
      and .events[1].consumedRevision == "2"
      and (.events[1].diagnostics | map(.code) == ["activity.retry-scheduled"])' \
    "$what: attempt 1 finished as stopped, the retry decided" --arg inv "$(log_field start "$run" work 1 5)"
  sp status "$run" --db "$db" --json
  expect_json '.status == "running" and .invocation.attempt == 2 and .result == null' "$what: status after the stop"
}

# check_attempt2 <run ID> <what>: attempt 2 ran once with attempt 1's effect key.
check_attempt2() {
  local run=$1 what=$2 key1 key2
  key1=$(log_field start "$run" work 1 5)
  key2=$(log_field start "$run" work 2 5)
  [ -n "$key1" ] && [ "$key1" = "$key2" ] || fail "$what: effect keys differ: attempt 1 '$key1', attempt 2 '$key2'"
  [ "$(log_count start "$run" work)" -eq 2 ] || fail "$what: the step started $(log_count start "$run" work) times, want 2"
  [ "$(log_count end "$run" work 2)" -eq 1 ] || fail "$what: attempt 2 did not finish once"
  sp status "$run" --db "$db" --json
  expect_json '.status == "completed" and .result.output == {"node": "work", "attempt": 2, "effectKey": $key}' \
    "$what: completed by attempt 2" --arg key "$key1"
}

# ---- a worker ----
sp start "$wf/retry.json" --key w --input "$input" --db "$db" --json
expect_rc 0 "start"
run_w=$(jq -r .runId <<<"$out")
start_bg worker1 worker --db "$db" --poll-ms 50 --grace-ms "$grace" --json
interrupt "$bg_pid" "$run_w" "worker"
jq -e '.format == "spore.cli/0.1" and .interrupted == true' "$tmp/worker1.out" >/dev/null ||
  fail "worker --json after SIGINT: $(cat "$tmp/worker1.out")"
[ "$(log_count start "$run_w" work 2)" -eq 0 ] || fail "the interrupted worker started attempt 2"

# Another worker takes attempt 2.
start_bg worker2 worker --db "$db" --poll-ms 50 --json
worker2=$bg_pid
wait_for 15 status_is "$run_w" completed || fail "the second worker did not complete the run (status $(run_status "$run_w"))"
check_attempt2 "$run_w" "worker"
kill -INT "$worker2"
wait_bg "$worker2" 10
[ "$bg_rc" -eq 130 ] || fail "idle worker after SIGINT: exit $bg_rc, want 130"

# ---- spore run ----
start_bg run1 run "$wf/retry.json" --key r --input "$input" --db "$db" --grace-ms "$grace" --json
run_pid=$bg_pid
run_of_key() { "$spore" list --db "$db" --json | jq -r --arg k "$1" '.runs[] | select(.startKey == $k) | .runId'; }
has_run_of_key() { [ -n "$(run_of_key "$1")" ]; }
wait_for 10 has_run_of_key r || fail "spore run did not create its run"
run_r=$(run_of_key r)
interrupt "$run_pid" "$run_r" "run"
jq -e --arg id "$run_r" '.format == "spore.cli/0.1" and .interrupted == true and .runId == $id
    and .status == "running" and .created == true' "$tmp/run1.out" >/dev/null ||
  fail "run --json after SIGINT: $(cat "$tmp/run1.out")"
sp run "$wf/retry.json" --key r --input "$input" --db "$db" --json
expect_rc 0 "run again after the interrupt"
expect_json '.created == false and .status == "completed"' "run again after the interrupt"
check_attempt2 "$run_r" "run"

finish
