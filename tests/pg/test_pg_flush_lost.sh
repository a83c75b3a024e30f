#!/usr/bin/env bash
# test_pg_flush_lost.sh - a PostgreSQL server that loses commits it had
# answered is a final failure, never a flush (docs/postgres.md §3h).
#
# A batch commits with synchronous_commit off; the store's flusher then
# flushes the server's WAL on its own connection and proves the flush by the
# committing session's commit mark: the row must show at least the mark of
# the last deferred commit that returned. A server that crashed before its
# WAL reached the disk shows an older mark. That is made here by a trigger
# on commit_marks that keeps each row's mark where it was: the batches
# commit, but the mark the flusher reads stays behind, as after such a crash.
#
# - without the trigger, the workflow's three command steps run (control);
# - with it, `spore run` stops with exit 10 and store.io naming the lost
#   commits and what to do, and the first step, whose claim was never
#   proved durable, never starts;
# - without the trigger again, the next `spore run` of the key completes
#   the run, every step started exactly once.
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"
source "$(dirname "$0")/pglib.sh"

starts() { # <run> <node>: how often step.sh started the node, every attempt
  log_count start "$1" "$2"
}

sp run "$wf/three-steps.json" --key control --db "$db" --json
expect_rc 0 "the control run"
expect_json '.status == "completed"' "the control run completes"

sql "CREATE FUNCTION keep_mark() RETURNS trigger LANGUAGE plpgsql AS
       'BEGIN NEW.mark := OLD.mark; RETURN NEW; END';
     CREATE TRIGGER keep_mark BEFORE UPDATE ON commit_marks
       FOR EACH ROW EXECUTE FUNCTION keep_mark()" >/dev/null

sp_n=$((sp_n + 1))
checks=$((checks + 1))
set +e
timeout 60 "$spore" run "$wf/three-steps.json" --lease-ms 1000 --key lost --db "$db" --json \
  >"$tmp/sp$sp_n.out" 2>"$tmp/sp$sp_n.err"
rc=$?
set -e
out=$(cat "$tmp/sp$sp_n.out")
expect_rc 10 "a server that lost commits"
expect_json '.error.code == "store.io"
    and (.error.message | test("lost commits it had answered"))
    and (.error.message | test("start it again"))' "the error"
run=$(sql "SELECT run_id FROM runs WHERE start_key = 'lost'")
if [ -z "$run" ]; then
  fail "the run was not created"
else
  checks=$((checks + 1))
  [ "$(starts "$run" a)" -eq 0 ] || fail "step a started although its claim was not proved durable"
fi

sql "DROP TRIGGER keep_mark ON commit_marks" >/dev/null
sp run "$wf/three-steps.json" --key lost --db "$db" --json
expect_rc 0 "the next run of the key"
expect_json '.created == false and .status == "completed"' "the next run completes the run"
for node in a b c; do
  checks=$((checks + 1))
  [ -z "$run" ] || [ "$(starts "$run" "$node")" -eq 1 ] ||
    fail "step $node started $(starts "$run" "$node") times over both runs, want 1"
done
no_secret "$tmp"/sp*.out "$tmp"/sp*.err
finish
