#!/usr/bin/env bash
# test_takeover.sh - H7 (engine.md §11, §12): `kill -9` of a worker mid-step
# with a second worker running on the same host.
#
# Worker A (default 10 s lease) claims the step, which sleeps. Worker B (all
# defaults) is started and takes its lock file. A is SIGKILLed. B sees that
# A's lock is free (A is dead for certain) and expires the attempt at once
# with reason owner-dead; the kernel retries; B runs attempt 2 and completes
# the run. Asserted: attempt 2's step starts, and the expired result is
# accepted, less than one second after the kill (the lease alone would take
# up to 10 s); the audit row says owner-dead; attempt 1's process group died
# with A (no orphan) and never finished; attempt 2 has the same effect key.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

sp start "$wf/retry.json" --key h7 --input '{"sleep": 30, "sleepAttempt": 1}' --db "$db" --json
expect_rc 0 "start"
id=$(jq -r .runId <<<"$out")

start_bg worker-a worker --db "$db" --json
wa=$bg_pid
wait_for 10 log_has start "$id" work 1 || fail "worker A never started attempt 1"
pgid=$(log_field start "$id" work 1 7)
key=$(log_field start "$id" work 1 5)
inv=$(sql "select invocation_id from invocations where run_id = '$id'")
lease_until=$(sql "select lease_until_ms from attempts where attempt_id = '$inv.1'")

start_bg worker-b worker --db "$db" --json
wb=$bg_pid
two_locks() { [ "$(find "$db.workers" -name '*.lock' | wc -l)" -eq 2 ]; }
wait_for 10 two_locks || fail "worker B never took its lock file"
sleep 0.3 # B is past its first tick: the attempt is running and A is alive

t_kill=$(now_ms)
kill -KILL "$wa"
wait_for 10 log_has start "$id" work 2 || fail "attempt 2 never started"
t_start2=$(log_field start "$id" work 2 8)
wait_for 10 status_is "$id" completed || fail "worker B did not complete the run (status $(run_status "$id"))"

sp events "$id" --db "$db" --json
expect_json '([.events[].id] == ["start", ("att:" + $inv + ".1"), ("att:" + $inv + ".2")])
    and .events[1].payload.status == "expired" and .events[2].payload.attempt == 2
    and ([.events[].consumedRevision] == ["1", "2", "3"])' "events" --arg inv "$inv"
t_expired=$(jq -r '.events[1].acceptedAtMs' <<<"$out")

takeover=$((t_start2 - t_kill))
expiry=$((t_expired - t_kill))
echo "kill -9 at $t_kill: attempt 1 expired after $expiry ms, attempt 2 started after $takeover ms (lease ran to $((lease_until - t_kill)) ms after the kill)"
[ "$expiry" -ge 0 ] || fail "attempt 1 expired before the kill"
[ "$takeover" -lt 1000 ] || fail "attempt 2 started $takeover ms after the kill, want under 1000 ms"
[ "$expiry" -lt 1000 ] || fail "attempt 1 expired $expiry ms after the kill, want under 1000 ms"
[ "$t_expired" -lt "$lease_until" ] || fail "the takeover waited for the lease ($t_expired >= $lease_until)"
[ "$(sql "select expire_reason from attempts where attempt_id = '$inv.1'")" = owner-dead ] ||
  fail "attempt 1 expiry reason: $(sql "select expire_reason from attempts where attempt_id = '$inv.1'"), want owner-dead"
[ "$(sql "select reason from audit where attempt_id = '$inv.1' and kind = 'expired'")" = owner-dead ] ||
  fail "no owner-dead audit row for attempt 1"
wait_for 5 group_gone "$pgid" || fail "attempt 1's step outlived worker A (process group $pgid)"
[ "$(log_count end "$id" work 1)" -eq 0 ] || fail "attempt 1's step ran to its end"
[ "$(log_field start "$id" work 2 5)" = "$key" ] || fail "attempt 2 ran under another effect key"
sp status "$id" --db "$db" --json
expect_json '.status == "completed" and .result.output == {"node": "work", "attempt": 2, "effectKey": $key}' \
  "status" --arg key "$key"

kill -INT "$wb"
wait_bg "$wb" 10
[ "$bg_rc" -eq 130 ] || fail "worker B after SIGINT: exit $bg_rc, want 130"
[ -z "$(ls -A "$db.workers")" ] || fail "lock files left behind: $(ls -A "$db.workers")"

finish
