#!/usr/bin/env bash
# test_two_workers.sh - H1 (engine.md §7, §12): two `spore worker` processes
# on one database tick concurrently through whole runs, 20 times.
#
# 20 runs of a three-step workflow: 10 created before the workers start (both
# then coordinate and dispatch the same runs at once), 10 while they run.
# Asserted for every run: it completed, once, with the right output; its
# events are gapless and each was consumed by the revision equal to its
# sequence (4 events, 4 transitions, 4 commit receipts - commit_turn, or settle_attempt
# with a turn - : no commit twice);
# every invocation has exactly one accepted result (one consumed
# activity.result event, of attempt 1, status success) and one attempt; every
# step executed exactly once (the execution log), with its own effect key.
# Across the runs: both workers claimed work, and neither reported a
# diverged commit.
# Then the same through `spore run`: five pairs of `run` processes started at
# once with one start key each: one pair member creates the run, the other
# resumes it (created false), both exit 0 with the completed status, and
# every step executed once.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

runs=20
start_runs() { # <from> <to>
  local i
  for i in $(seq "$1" "$2"); do
    "$spore" start "$wf/three-steps.json" --key "h1-$i" --input "{\"n\": $i}" --db "$db" --json >>"$tmp/starts.jsonl" ||
      fail "start h1-$i failed"
  done
}

start_runs 1 10
# Two steps at a time each: neither worker can hold every run. With the
# default 16 slots the worker that came up first could take all ten ready
# runs and, busy, win each new one too: "both claimed" would be luck.
start_bg worker-a worker --db "$db" --poll-ms 20 --concurrency 2 --json
wa=$bg_pid
start_bg worker-b worker --db "$db" --poll-ms 20 --concurrency 2 --json
wb=$bg_pid
start_runs 11 "$runs"

completed() {
  [ "$("$spore" list --db "$db" --json | jq '[.runs[] | select(.status == "completed")] | length')" -eq "$runs" ]
}
wait_for 60 completed || fail "not all $runs runs completed: $("$spore" list --db "$db")"

for pid in "$wa" "$wb"; do
  kill -INT "$pid"
  wait_bg "$pid" 10
  [ "$bg_rc" -eq 130 ] || fail "worker $pid after SIGINT: exit $bg_rc, want 130"
done

[ "$(jq -s 'map(select(.created == true)) | length' "$tmp/starts.jsonl")" -eq "$runs" ] ||
  fail "not every start created a run"
ids=$(jq -r .runId "$tmp/starts.jsonl")

sp list --db "$db" --json
expect_json '(.runs | length) == $n and all(.runs[]; .status == "completed" and .revision == "4" and .quarantined == false)' \
  "list" --argjson n "$runs"

for id in $ids; do
  sp status "$id" --db "$db" --json
  expect_json '.status == "completed" and .revision == "4" and .result.output == {"steps": ["a", "b", "c"]}
      and ([.nodes[] | .visit] == [1, 1, 1])' "run $id"
  sp events "$id" --db "$db" --json
  expect_json '(.events | length) == 4
      and ([.events[].sequence] == ["1", "2", "3", "4"])
      and ([.events[].consumedRevision] == ["1", "2", "3", "4"])
      and ([.events[1:][] | select(.kind == "activity.result")] | length) == 3
      and ([.events[1:][].payload.invocationId] | unique | length) == 3
      and all(.events[1:][]; .payload.status == "success" and .payload.attempt == 1
                             and .id == ("att:" + .payload.invocationId + ".1"))
      and all(.events[]; .diagnostics == [])' "events of run $id"
  for node in a b c; do
    [ "$(log_count start "$id" "$node")" -eq 1 ] && [ "$(log_count end "$id" "$node")" -eq 1 ] ||
      fail "run $id: step $node executed $(log_count start "$id" "$node") times, want exactly once"
  done
  keys=$(awk -v r="$id" '$1 == "start" && $2 == r {print $5}' "$SPORE_TEST_LOG" | sort -u | wc -l)
  [ "$keys" -eq 3 ] || fail "run $id: $keys distinct effect keys over its three steps, want 3"
  counts=$(sql "select (select count(*) from transitions where run_id = '$id') || ' ' ||
                       (select count(*) from receipts where run_id = '$id' and (request_id like 'commit/%'
                          or (request_id like 'settle/%' and json_extract(value, '$.revision') is not null))) || ' ' ||
                       (select count(*) from invocations where run_id = '$id') || ' ' ||
                       (select count(*) from attempts where run_id = '$id') || ' ' ||
                       (select count(*) from attempts where run_id = '$id' and status = 'finished')")
  [ "$counts" = "4 4 3 3 3" ] ||
    fail "run $id: transitions/commit receipts/invocations/attempts/finished = $counts, want 4 4 3 3 3"
done

[ "$(wc -l <"$SPORE_TEST_LOG")" -eq $((runs * 6)) ] || fail "the execution log has $(wc -l <"$SPORE_TEST_LOG") lines, want $((runs * 6))"
owners=$(sql "select count(distinct owner) from attempts")
[ "$owners" -eq 2 ] || fail "attempts were claimed by $owners worker(s), want both"
echo "claims per worker: $(sql "select group_concat(n, ' / ') from (select count(*) as n from attempts group by owner)")"
! grep -q diverged "$tmp/worker-a.err" "$tmp/worker-b.err" || fail "a worker reported a diverged commit"

# ---- two `spore run` processes per start key ----
concurrent_starts 5 60

finish
