#!/usr/bin/env bash
# test_worker_signal.sh - a background `spore worker` and separate `spore
# start` / `spore signal` processes share one database (cli.md §2, §4, §6):
#
# - the worker serves runs created by other processes: it runs the first
#   step and parks each run at its signal wait;
# - a signal delivered by another process moves the run on: approved →
#   completed with the signal's data in the output; rejected → failed with
#   review.rejected; a signal sent before the run reaches its wait is
#   buffered and taken when it gets there; a repeated message ID changes
#   nothing;
# - the worker exits 130 on SIGTERM with {"interrupted": true} (JSON) and on
#   SIGINT with "worker stopped" on stderr (text); each step ran once.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

start_bg worker1 worker --db "$db" --poll-ms 50 --json
worker=$bg_pid

start_run() { # <key> -> run ID on stdout
  "$spore" start "$wf/approval.json" --key "$1" --db "$db" --json | jq -r .runId
}
ok=$(start_run approve-me)
no=$(start_run reject-me)
early=$(start_run signalled-early)

# A signal before the run waits for it is buffered (the run may still be
# created or running when it arrives).
sp signal "$early" approval --outcome approved --data '{"early": true}' --id early-1 --db "$db" --json
expect_rc 0 "signal before the wait"
expect_json '.disposition == "applied"' "signal before the wait"

for run in "$ok" "$no"; do
  wait_for 15 status_is "$run" waiting || fail "the worker did not park $run at its signal wait (status $(run_status "$run"))"
done
wait_for 15 status_is "$early" completed ||
  fail "the early signal was not taken at the wait (status $(run_status "$early"))"
sp status "$early" --db "$db" --json
expect_json '.result.output == {"prepared": "prepare", "approval": {"early": true}}' "early signal run"

sp status "$ok" --db "$db" --json
expect_json '.status == "waiting" and .position.nodeId == "approval" and .revision == "2"' "waiting run"

# ---- signals from other processes, the worker moves the runs on ----
sp signal "$ok" approval --outcome approved --data '{"by": "ada"}' --id ok-1 --db "$db" --json
expect_rc 0 "signal approved"
expect_json '.runId == $id and .messageId == "ok-1" and .disposition == "applied"' "signal approved" --arg id "$ok"
sp signal "$no" approval --outcome rejected --id no-1 --db "$db"
expect_rc 0 "signal rejected (text)"
[ "$(head -n 1 <<<"$out")" = "signal approval to $no: delivered (the run waits for it at approval)" ] ||
  fail "signal rejected (text): \"$out\""
grep -qx "next: spore resume $no --db $db   (or a running spore worker takes it)" <<<"$out" ||
  fail "signal rejected (text) does not say how to go on: \"$out\""

wait_for 15 status_is "$ok" completed || fail "the worker did not complete $ok after the signal (status $(run_status "$ok"))"
wait_for 15 status_is "$no" failed || fail "the worker did not fail $no after the rejection (status $(run_status "$no"))"
sp status "$ok" --db "$db" --json
expect_json '.result.output == {"prepared": "prepare", "approval": {"by": "ada"}} and .revision == "3"' "approved run"
sp status "$no" --db "$db" --json
expect_json '.result.error.code == "review.rejected" and .revision == "3"' "rejected run"

# A repeated message ID is a duplicate and changes nothing, worker or not.
sp signal "$ok" approval --outcome approved --data '{"by": "ada"}' --id ok-1 --db "$db" --json
expect_json '.disposition == "duplicate"' "repeated signal"
sleep 0.3 # two worker polls: nothing may move
sp events "$ok" --db "$db" --json
expect_json '(.events | length) == 3 and ([.events[].consumedRevision] == ["1", "2", "3"])' \
  "events after a repeated signal"

for run in "$ok" "$no" "$early"; do
  [ "$(log_count start "$run" prepare)" -eq 1 ] || fail "run $run: prepare ran $(log_count start "$run" prepare) times"
done

# ---- SIGTERM: exit 130, {"interrupted": true} ----
kill -TERM "$worker"
wait_bg "$worker" 10
[ "$bg_rc" -eq 130 ] || fail "worker after SIGTERM: exit $bg_rc, want 130"
jq -e '.format == "spore.cli/0.1" and .interrupted == true and (.workerId | startswith("worker-"))' \
  "$tmp/worker1.out" >/dev/null || fail "worker --json after SIGTERM: $(cat "$tmp/worker1.out")"
[ -z "$(cat "$tmp/worker1.err")" ] || fail "worker --json wrote to stderr: $(cat "$tmp/worker1.err")"

# ---- a text-mode worker, SIGINT: exit 130, a line on stderr ----
start_bg worker2 worker --db "$db" --poll-ms 50
worker=$bg_pid
has_lock_file() { [ -n "$(ls -A "$db.workers" 2>/dev/null)" ]; }
wait_for 5 has_lock_file || fail "the second worker never took its lock file"
kill -INT "$worker"
wait_bg "$worker" 10
[ "$bg_rc" -eq 130 ] || fail "worker after SIGINT: exit $bg_rc, want 130"
[ "$(cat "$tmp/worker2.err")" = "spore: worker stopped" ] || fail "worker (text) stderr: $(cat "$tmp/worker2.err")"
[ -z "$(ls -A "$db.workers")" ] || fail "a stopped worker left its lock file: $(ls -A "$db.workers")"

finish
