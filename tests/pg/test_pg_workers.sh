#!/usr/bin/env bash
# test_pg_workers.sh - the CLI on PostgreSQL (store.md §6, cli.md §1) and H1
# (engine.md §12) with workers in separate processes on one PostgreSQL store.
#
# 1. `--db postgres://…` and SPORE_DB select the PostgreSQL store for run,
#    start, worker, status, list and events; the database password appears
#    in no output (stdout, stderr, --json, error messages); a wrong password
#    is store.unauthorized, an unreachable server store.io, both without it.
# 2. H1: 20 runs of a three-step workflow (10 created before two `spore
#    worker` processes start, 10 while they run), as tests/cli/
#    test_two_workers.sh does on SQLite: every run completed once with the
#    right output; events gapless, each consumed by the revision equal to its
#    sequence; 4 transitions and 4 commit receipts (commit_turn, or settle_attempt
#    with a turn); one attempt and one
#    accepted result per invocation; every step executed exactly once with its
#    own effect key; both workers claimed work.
# 3. Five pairs of `spore run` processes with one start key each: one
#    creates the run, the other resumes it; every step executed once.
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"
source "$(dirname "$0")/pglib.sh"

# ---- 1. selecting the store; credentials ----
sp run "$wf/three-steps.json" --key cli-1 --db "$db" --json
expect_rc 0 "spore run --db postgres://"
expect_json '.status == "completed" and .created == true and .revision == "4"' "run --db"
id1=$(jq -r .runId <<<"$out")
no_secret "$tmp/sp$sp_n.out" "$tmp/sp$sp_n.err"

export SPORE_DB="$db"
sp start "$wf/three-steps.json" --key cli-2 --json
expect_rc 0 "spore start with SPORE_DB"
id2=$(jq -r .runId <<<"$out")
sp worker --run "$id2" --until-parked --json
expect_rc 0 "spore worker --run with SPORE_DB"
sp status "$id2" --json
expect_json '.status == "completed" and .result.output == {"steps": ["a", "b", "c"]}' "status with SPORE_DB"
sp status "$id1"
expect_rc 0 "status (text)"
sp list --json
expect_json '(.runs | length) == 2' "list with SPORE_DB"
sp events "$id1" --json
expect_json '(.events | length) == 4' "events with SPORE_DB"
unset SPORE_DB
[ "$(sql "select count(*) from runs where status = 'completed'")" = 2 ] ||
  fail "the runs are not in schema $pg_schema"

bad_url=${pg_url/:$pg_password@/:wrong-$pg_password@}
expect_error 10 store.unauthorized "wrong password" -- list --db "$bad_url"
no_secret "$tmp"/sp*.out "$tmp"/sp*.err
port=$(sed -nE 's#.*@[^:/]*:([0-9]+)/.*#\1#p' <<<"$pg_url")
expect_error 10 store.io "no server" -- list --db "postgresql://spore:$pg_password@127.0.0.1:1/spore"
sp status run_nope --db "$db" --json
expect_rc 2 "status of a missing run"
jq -e '.error.code == "run.not-found"' <<<"$out" >/dev/null || fail "missing run: $out"
grep -q "$pg_schema" <<<"$out" || fail "the not-found message does not name the store: $out"
no_secret "$tmp"/sp*.out "$tmp"/sp*.err
: "${port:?}"

# ---- 2. H1: two worker processes ----
: >"$SPORE_TEST_LOG"
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

completed() { [ "$(sql "select count(*) from runs where start_key like 'h1-%' and status = 'completed'")" -eq "$runs" ]; }
wait_for 90 completed || fail "not all $runs runs completed: $(sql "select start_key, status from runs")"
for pid in "$wa" "$wb"; do
  kill -INT "$pid"
  wait_bg "$pid" 15
  [ "$bg_rc" -eq 130 ] || fail "worker $pid after SIGINT: exit $bg_rc, want 130"
done
no_secret "$tmp"/worker-*.out "$tmp"/worker-*.err
[ "$(jq -s 'map(select(.created == true)) | length' "$tmp/starts.jsonl")" -eq "$runs" ] ||
  fail "not every start created a run"

for id in $(jq -r .runId "$tmp/starts.jsonl"); do
  sp status "$id" --db "$db" --json
  expect_json '.status == "completed" and .revision == "4" and .result.output == {"steps": ["a", "b", "c"]}
      and ([.nodes[] | .visit] == [1, 1, 1])' "run $id"
  sp events "$id" --db "$db" --json
  expect_json '(.events | length) == 4
      and ([.events[].sequence] == ["1", "2", "3", "4"])
      and ([.events[].consumedRevision] == ["1", "2", "3", "4"])
      and all(.events[1:][]; .kind == "activity.result" and .payload.status == "success"
                             and .payload.attempt == 1 and .id == ("att:" + .payload.invocationId + ".1"))' \
    "events of run $id"
  for node in a b c; do
    [ "$(log_count start "$id" "$node")" -eq 1 ] && [ "$(log_count end "$id" "$node")" -eq 1 ] ||
      fail "run $id: step $node executed $(log_count start "$id" "$node") times, want exactly once"
  done
  keys=$(awk -v r="$id" '$1 == "start" && $2 == r {print $5}' "$SPORE_TEST_LOG" | sort -u | wc -l)
  [ "$keys" -eq 3 ] || fail "run $id: $keys distinct effect keys, want 3"
  counts=$(sql "select (select count(*) from transitions where run_id = '$id') || ' ' ||
                       (select count(*) from receipts where run_id = '$id' and (request_id like 'commit/%'
                          or (request_id like 'settle/%' and value::jsonb->>'revision' is not null))) || ' ' ||
                       (select count(*) from invocations where run_id = '$id') || ' ' ||
                       (select count(*) from attempts where run_id = '$id') || ' ' ||
                       (select count(*) from attempts where run_id = '$id' and status = 'finished')")
  [ "$counts" = "4 4 3 3 3" ] ||
    fail "run $id: transitions/commit receipts/invocations/attempts/finished = $counts, want 4 4 3 3 3"
done
[ "$(wc -l <"$SPORE_TEST_LOG")" -eq $((runs * 6)) ] || fail "the execution log has $(wc -l <"$SPORE_TEST_LOG") lines, want $((runs * 6))"
owners=$(sql "select count(distinct owner) from attempts a join runs r using (tenant, run_id) where r.start_key like 'h1-%'")
[ "$owners" -eq 2 ] || fail "attempts were claimed by $owners worker(s), want both"
echo "claims per worker: $(sql "select string_agg(n::text, ' / ') from (select count(*) as n from attempts group by owner) c")"
! grep -q diverged "$tmp/worker-a.err" "$tmp/worker-b.err" || fail "a worker reported a diverged commit"

# ---- 3. two `spore run` processes per start key ----
concurrent_starts 5 90
no_secret "$tmp"/pair-*

finish
