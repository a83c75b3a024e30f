#!/usr/bin/env bash
# test_pg_reconnect.sh - a worker that loses its PostgreSQL connections again
# and again, mid-step and mid-commit, reconnects and loses nothing
# (store.md §6: "a lost connection is re-established at the next request";
# docs/postgres.md §1).
#
# One `spore worker` (its connections named by application_name, so that
# only they are cut) serves 6 runs of three-steps.json, started 0.3 s apart,
# whose first step sleeps 1 s. While they run, a killer ends every backend of that worker
# with pg_terminate_backend every 150 ms: its heartbeats, its settles, its
# claims and its LISTEN connection all lose their server at random points.
# Checked: the worker is still serving (it did not exit); every run
# completed with the right output; every step executed exactly once, with
# one attempt and one accepted result each (a commit whose answer was lost is
# retried under its receipt, never applied twice); events gapless and each
# consumed once; the killer really ended connections, some of them while a
# step was running; the worker listens again afterwards; no password in any
# output.
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"
source "$(dirname "$0")/pglib.sh"

app="spore_reconnect_$$"
worker_db="$db&application_name=$app"
runs=6

start_bg worker worker --db "$worker_db" --lease-ms 20000 --heartbeat-ms 100 --poll-ms 200 --json
worker=$bg_pid
listening() { [ "$(sql "select count(*) from pg_stat_activity where application_name = '$app' and query like 'LISTEN %'")" -ge 1 ]; }
wait_for 20 listening || fail "the worker does not listen before the test"

# The killer: every 150 ms, end every backend of the worker; one line per
# backend ended, with the number of steps running at that moment.
killer() {
  while :; do
    local n running
    running=$(($(grep -c '^start ' "$SPORE_TEST_LOG" || true) - $(grep -c '^end ' "$SPORE_TEST_LOG" || true)))
    n=$(sql "select count(*) from (select pg_terminate_backend(pid) from pg_stat_activity
             where application_name = '$app' and pid <> pg_backend_pid()) k" 2>/dev/null || echo 0)
    [ "$n" -gt 0 ] && printf '%s %s\n' "$n" "$running" >>"$tmp/kills"
    sleep 0.15
  done
}
: >"$tmp/kills"
killer &
killer_pid=$!

for i in $(seq "$runs"); do
  "$spore" start "$wf/three-steps.json" --key "rc-$i" --input '{"sleep": 1}' --db "$db" --json \
    >>"$tmp/starts.jsonl" || fail "start rc-$i failed"
  sleep 0.3
done
completed() { [ "$(sql "select count(*) from runs where status = 'completed'")" -eq "$runs" ]; }
wait_for 120 completed || fail "not all $runs runs completed: $(sql "select start_key, status from runs")"
kill "$killer_pid" 2>/dev/null || true
wait "$killer_pid" 2>/dev/null || true

ended=$(awk '{s += $1} END {print s + 0}' "$tmp/kills")
mid_step=$(awk '$2 > 0 {c++} END {print c + 0}' "$tmp/kills")
echo "backends ended: $ended (in $(wc -l <"$tmp/kills") rounds, $mid_step of them while a step ran)"
[ "$ended" -ge 10 ] || fail "the killer ended only $ended backends of the worker, want at least 10"
[ "$mid_step" -ge 3 ] || fail "only $mid_step kill rounds came while a step ran, want at least 3"
kill -0 "$worker" 2>/dev/null || fail "the worker exited: $(tail -c 600 "$tmp/worker.err")"
wait_for 20 listening || fail "the worker does not listen again after its connections were cut"

for id in $(jq -r .runId "$tmp/starts.jsonl"); do
  three_steps_once "$id"
done

# The worker still serves: one more run, with nobody cutting its connections.
"$spore" start "$wf/three-steps.json" --key rc-after --db "$db" --json >"$tmp/after.json" ||
  fail "start rc-after failed"
after=$(jq -r .runId "$tmp/after.json")
wait_for 30 status_is "$after" completed || fail "the worker did not serve a run after the cuts"

kill -INT "$worker"
wait_bg "$worker" 15
[ "$bg_rc" -eq 130 ] || fail "worker after SIGINT: exit $bg_rc, want 130"
! grep -q diverged "$tmp/worker.err" || fail "the worker reported a diverged commit"
no_secret "$tmp"/worker.out "$tmp"/worker.err "$tmp"/sp*.out "$tmp"/sp*.err
finish
