#!/usr/bin/env bash
# test_pg_listen.sh - idle workers wake on LISTEN/NOTIFY (issue 12,
# step-path.md item 6), through the real binary and a real PostgreSQL
# server, with two `spore worker` processes that would otherwise poll only
# every 30 s (--poll-ms 30000, and a 120 s lease so sweeps are 30 s apart):
#
# - runs started by another process complete within seconds, not a poll;
# - a signal sent by another process to a waiting run wakes a worker;
# - a format 0.2 sleep fires at its due time, not at the next poll;
# - a step left pending by the worker that decided (one slot each): the
#   other worker runs it at once, told by the invocations wake-up alone;
# - the store's own writes notify, not triggers: a new store has no
#   wake-up triggers, and a store with the triggers of an older spore
#   (checked both ways: a per-row and a per-statement events trigger) loses
#   them when a writer opens it - every wake-up below is on such a store;
# - the workers have their listening connections (pg_stat_activity).
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
wake_triggers() {
  sql "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema()
       AND t.tgname IN ('events_notify', 'invocations_notify', 'timers_notify')"
}
[ "$(wake_triggers)" = 0 ] || fail "a new store has wake-up triggers"
# the triggers an older spore made (its events trigger per statement, as
# the oldest did): a writer that opens the store drops them
old_triggers() {
  sql "CREATE OR REPLACE FUNCTION spore_notify_work() RETURNS trigger LANGUAGE plpgsql AS
       \$\$BEGIN PERFORM pg_notify('spore_' || left(md5(current_schema()), 16), TG_TABLE_NAME);
       RETURN NULL; END\$\$;
       CREATE OR REPLACE TRIGGER events_notify AFTER INSERT ON events
       FOR EACH $1 EXECUTE FUNCTION spore_notify_work();
       CREATE OR REPLACE TRIGGER invocations_notify AFTER INSERT OR UPDATE OF status
       ON invocations FOR EACH ROW WHEN (NEW.status = 'pending')
       EXECUTE FUNCTION spore_notify_work();
       CREATE OR REPLACE TRIGGER timers_notify AFTER INSERT ON timers
       FOR EACH STATEMENT EXECUTE FUNCTION spore_notify_work()" >/dev/null
  [ "$(wake_triggers)" = 3 ] || fail "could not put the old wake-up triggers back"
}
old_triggers STATEMENT
sp list --db "$db" --json
expect_rc 0 "list runs (a reader: the triggers stay)"
[ "$(wake_triggers)" = 3 ] || fail "a reader changed the schema"
old_triggers "ROW WHEN (NEW.consumed_revision IS NULL)"
start_bg w1 worker --db "$db" "${slow[@]}"
w1=$bg_pid
start_bg w2 worker --db "$db" "${slow[@]}"
w2=$bg_pid
wait_status "$warm" completed "$bound_ms" || fail "the first run did not complete"
sleep 1 # both workers idle now, each waiting up to 30 s

[ "$(wake_triggers)" = 0 ] || fail "opening the store did not drop the old wake-up triggers"
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

# ---- steps the deciding worker leaves pending ----
# two workers with one slot each: the one that decides the fan-out claims
# one branch and leaves two pending, with no event left pending; only the
# invocations wake-up brings the other (without it: one worker runs all
# three, one after the other, long before its next poll)
start_bg w3 worker --db "$db" "${slow[@]}" --concurrency 1
w3=$bg_pid
start_bg w4 worker --db "$db" "${slow[@]}" --concurrency 1
w4=$bg_pid
sleep 1.5 # both idle
sp start "$wf/parallel3.json" --input '{"sleep": 2}' --key fan --db "$db" --json
run=$(jq -r .runId <<<"$out")
wait_status "$run" completed "$bound_ms" || fail "the fan-out did not complete within $bound_ms ms"
owners=$(sql "SELECT count(DISTINCT owner) FROM attempts WHERE run_id = '$run'")
[ "$owners" = 2 ] || fail "the fan-out's steps were claimed by $owners worker(s), want 2"
kill -TERM "$w3" "$w4"
wait "$w3" 2>/dev/null || true
wait "$w4" 2>/dev/null || true

# ---- an older spore's triggers once more, then a start: still one run ----
old_triggers STATEMENT
sp start "$wf/three-steps.json" --key upgraded --db "$db" --json
expect_rc 0 "start on a store with the old wake-up triggers"
[ "$(wake_triggers)" = 0 ] || fail "a start did not drop the old wake-up triggers"
finish
