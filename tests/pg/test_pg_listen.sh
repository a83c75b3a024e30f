#!/usr/bin/env bash
# test_pg_listen.sh - idle workers wake on LISTEN/NOTIFY (issue 12,
# step-path.md item 6), through the real binary and a real PostgreSQL
# server, with two `spore worker` processes that would otherwise poll only
# every 30 s (--poll-ms 30000, and a 120 s lease so sweeps are 30 s apart):
#
# - runs started by another process complete within seconds, not a poll;
# - a signal sent by another process to a waiting run wakes a worker;
# - a format 0.2 sleep fires at its due time, not at the next poll;
# - the schema has the wake-up triggers, and the workers have their
#   listening connections (pg_stat_activity);
# - a store with the events trigger of before (per statement, notifying
#   consumed events too) gets the per-row one when a writer opens it.
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"
source "$(dirname "$0")/pglib.sh"

slow=(--poll-ms 30000 --lease-ms 120000 --heartbeat-ms 5000)
bound_ms=10000 # far below the 30 s the workers would wait without a wake-up

# wait_status <run> <status> <ms>: poll the run's status from here.
wait_status() {
  local deadline=$(($(now_ms) + $3))
  until [ "$(run_status "$1")" = "$2" ]; do
    [ "$(now_ms)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

# the store exists before the workers open it
sp start "$wf/three-steps.json" --key warm-up --db "$db" --json
expect_rc 0 "create the store"
warm=$(jq -r .runId <<<"$out")
start_bg w1 worker --db "$db" "${slow[@]}"
w1=$bg_pid
start_bg w2 worker --db "$db" "${slow[@]}"
w2=$bg_pid
wait_status "$warm" completed "$bound_ms" || fail "the first run did not complete"
sleep 1 # both workers idle now, each waiting up to 30 s

[ "$(sql "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
          JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema()
          AND t.tgname IN ('events_notify', 'invocations_notify', 'timers_notify')")" = 3 ] ||
  fail "the wake-up triggers of this schema are missing"
listeners=$(sql "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN spore_%'")
[ "$listeners" -ge 2 ] || fail "want 2 listening connections, saw $listeners"

# ---- runs started by another process ----
t0=$(now_ms)
ids=()
for i in 1 2 3 4; do
  sp start "$wf/three-steps.json" --key "r$i" --db "$db" --json
  expect_rc 0 "start r$i"
  ids+=("$(jq -r .runId <<<"$out")")
done
for id in "${ids[@]}"; do
  wait_status "$id" completed "$bound_ms" || fail "run $id did not complete within $bound_ms ms"
done
echo "four runs started elsewhere completed after $(($(now_ms) - t0)) ms"

# ---- a signal from another process ----
sp start "$wf/approval.json" --key sig --db "$db" --json
run=$(jq -r .runId <<<"$out")
wait_status "$run" waiting "$bound_ms" || fail "the approval run did not reach its wait"
sleep 0.5
t0=$(now_ms)
sp signal "$run" approval --outcome approved --data '{"by": "ana"}' --db "$db" --json
expect_rc 0 "signal"
wait_status "$run" completed "$bound_ms" || fail "the signalled run did not complete within $bound_ms ms"
echo "the signalled run completed after $(($(now_ms) - t0)) ms"

# ---- a timer, due in 1.5 s ----
t0=$(now_ms)
sp start "$wf/sleep.json" --key nap --db "$db" --json
run=$(jq -r .runId <<<"$out")
wait_status "$run" completed "$bound_ms" || fail "the sleep did not complete within $bound_ms ms"
t1=$(now_ms)
[ $((t1 - t0)) -ge 1500 ] || fail "the sleep completed after $((t1 - t0)) ms, before its due time"
echo "the 1.5 s sleep completed after $((t1 - t0)) ms"

owners=$(sql "SELECT count(DISTINCT owner) FROM attempts")
echo "attempts were claimed by $owners worker(s)"
kill -TERM "$w1" "$w2"
wait "$w1" 2>/dev/null || true
wait "$w2" 2>/dev/null || true

# ---- a store whose events trigger is the statement trigger of before ----
# (it notified for every event, consumed ones included) gets the row
# trigger that skips consumed events when a writer opens it
row_trigger() {
  sql "SELECT tgtype & 1 FROM pg_trigger WHERE tgname = 'events_notify'
       AND tgrelid = to_regclass('events')"
}
[ "$(row_trigger)" = 1 ] || fail "the events trigger is not per row"
sql "CREATE OR REPLACE TRIGGER events_notify AFTER INSERT ON events
     FOR EACH STATEMENT EXECUTE FUNCTION spore_notify_work()"
[ "$(row_trigger)" = 0 ] || fail "could not put the old events trigger back"
sp start "$wf/three-steps.json" --key upgraded --db "$db" --json
expect_rc 0 "start on a store with the old events trigger"
[ "$(row_trigger)" = 1 ] || fail "opening the store did not replace the old events trigger"
finish
