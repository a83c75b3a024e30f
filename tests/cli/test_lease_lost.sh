#!/usr/bin/env bash
# test_lease_lost.sh - H3 (engine.md §4, §7, §12): a lease lost mid-activity.
#
# Worker A (lease 1.5 s, heartbeat 250 ms) claims the step, which sleeps;
# A is frozen with SIGSTOP (outside a write transaction) past its lease (the
# step keeps running: it is in its own process group). Worker B expires the
# attempt (reason `lease`: A's process is alive, so no owner-dead shortcut),
# the kernel retries, B runs attempt 2 and the run completes. A is thawed with SIGCONT: its heartbeat is
# answered lease.lost, so it stops the runner (the step's process group is
# killed) and stores what the runner reported as late evidence.
#
# Asserted: A never called finish_attempt for attempt 1 (no finish receipt;
# the attempt's only result event is the expired one; the late evidence is of
# kind result-after-lease-lost, which A records instead of finishing, not
# result-after-lease-expired, which a refused finish would leave); the late
# evidence is in the audit table with what the runner reported: unknown /
# command.stopped, i.e. the runner was told to stop; attempt 1's process
# group is gone and attempt 1 never finished; attempt 2 ran once with the
# same effect key; both workers exit 130 on SIGINT.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

sp start "$wf/retry.json" --key h3 --input '{"sleep": 30, "sleepAttempt": 1}' --db "$db" --json
expect_rc 0 "start"
id=$(jq -r .runId <<<"$out")

# freeze <pid>: SIGSTOP a worker, but never while it holds the database's
# write lock (a heartbeat in progress): a frozen writer would block every
# other process, which is SQLite's nature, not what H3 is about. The lock
# is free when another connection can take it while the worker is stopped.
write_lock_free() { sqlite3 -batch -cmd '.timeout 100' "$db" 'BEGIN IMMEDIATE; ROLLBACK;' >/dev/null 2>&1; }
freeze() {
  local try
  for try in $(seq 50); do
    kill -STOP "$1"
    write_lock_free && return 0
    kill -CONT "$1"
    sleep 0.02
  done
  fail "could not freeze worker $1 outside a write transaction"
}

start_bg worker-a worker --db "$db" --lease-ms 1500 --heartbeat-ms 250 --poll-ms 50 --json
wa=$bg_pid
wait_for 10 log_has start "$id" work 1 || fail "worker A never started attempt 1"
freeze "$wa"
pgid=$(log_field start "$id" work 1 7)
key=$(log_field start "$id" work 1 5)
inv=$(sql "select invocation_id from invocations where run_id = '$id'")
att1="$inv.1"
owner_a=$(sql "select owner from attempts where attempt_id = '$att1'")
[ -n "$owner_a" ] || fail "attempt $att1 is not in the database"

start_bg worker-b worker --db "$db" --poll-ms 50 --json
wb=$bg_pid
wait_for 15 status_is "$id" completed || fail "worker B did not complete the run (status $(run_status "$id"))"

# While A is frozen the step of attempt 1 still runs: only A can stop it.
group_alive "$pgid" || fail "attempt 1's step died before worker A was thawed"
[ "$(sql "select expire_reason from attempts where attempt_id = '$att1'")" = lease ] ||
  fail "attempt 1 was not expired by its lease: $(sql "select status, expire_reason from attempts where attempt_id = '$att1'")"
owner_2=$(sql "select owner from attempts where attempt_id = '$inv.2'")
[ -n "$owner_2" ] && [ "$owner_2" != "$owner_a" ] || fail "attempt 2 was not run by worker B (owner '$owner_2')"

kill -CONT "$wa"
late() { [ "$(sql "select count(*) from audit where attempt_id = '$att1' and kind like 'result-after-%'")" -ge 1 ]; }
wait_for 10 late || fail "worker A stored no late evidence for attempt 1"
wait_for 5 group_gone "$pgid" || fail "worker A did not stop attempt 1's step (process group $pgid alive)"
[ "$(log_count end "$id" work 1)" -eq 0 ] || fail "attempt 1's step ran to its end"

# ---- the evidence in the database ----
audit=$(sql "select json_object('kind', kind, 'reason', reason, 'evidence', json(evidence)) from audit
             where attempt_id = '$att1' order by audit_id" | jq -s .)
jq -e '
    length == 2
    and .[0].kind == "expired" and .[0].reason == "lease" and .[0].evidence.status == "expired"
    and .[1].kind == "result-after-lease-lost" and .[1].evidence.status == "unknown"
    and .[1].evidence.error.code == "command.stopped" and .[1].evidence.attempt == 1' <<<"$audit" >/dev/null ||
  fail "audit rows for $att1: $audit"
# an attempt is finished by finish_attempt or settle_attempt (its result,
# the decision on it and the next claim in one request): one receipt either way
[ "$(sql "select count(*) from receipts where request_id in ('finish/$att1', 'settle/$att1')")" -eq 0 ] ||
  fail "worker A finished attempt 1 after losing its lease"
[ "$(sql "select count(*) from receipts where request_id in ('finish/$inv.2', 'settle/$inv.2')")" -eq 1 ] ||
  fail "attempt 2 was not finished once"
[ "$(sql "select status from attempts where attempt_id = '$att1'")" = expired ] || fail "attempt 1 is not expired"

sp events "$id" --db "$db" --json
expect_json '([.events[].id] == ["start", ("att:" + $inv + ".1"), ("att:" + $inv + ".2")])
    and .events[1].payload.status == "expired"
    and (.events[1].diagnostics | map(.code) == ["activity.retry-scheduled"])
    and .events[2].payload.status == "success" and .events[2].payload.attempt == 2
    and ([.events[].consumedRevision] == ["1", "2", "3"])' "events" --arg inv "$inv"
sp status "$id" --db "$db" --json
expect_json '.status == "completed" and .result.output == {"node": "work", "attempt": 2, "effectKey": $key}' \
  "status" --arg key "$key"
[ "$(log_field start "$id" work 2 5)" = "$key" ] || fail "attempt 2 ran under another effect key"
[ "$(log_count start "$id" work)" -eq 2 ] || fail "the step started $(log_count start "$id" work) times, want 2"

for pid in "$wa" "$wb"; do
  kill -INT "$pid"
  wait_bg "$pid" 10
  [ "$bg_rc" -eq 130 ] || fail "worker $pid after SIGINT: exit $bg_rc, want 130"
done
# The thawed worker changed nothing after the fact.
sp events "$id" --db "$db" --json
expect_json '(.events | length) == 3' "events after the workers stopped"

finish
