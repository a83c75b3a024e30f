#!/usr/bin/env bash
# test_budget.sh - a kernel failure (budget exceeded): cli.md §6 and H4
# (engine.md §12), through the real binary:
#
# - five steps each output ~60 KB of JSON; the fifth result would make the
#   snapshot pass 256 KiB: `run` exits 5, quarantine code budget.state-bytes,
#   nothing of the failing transition committed (revision 5), the fifth
#   result event still pending; `status`/`list`/`events` show it;
# - no hot loop: a `spore worker` left running beside the quarantined run
#   re-reduces nothing (transitions, receipts, events, quarantine time all
#   stay put; no step runs again) and stays almost idle on the CPU;
# - `release` resumes: the worker coordinates the run again and it fails the
#   same way (new quarantine time, same code, event still pending), and then
#   stays put again; `release` + `run` gives exit 5 again.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

# The database state that a hot loop would change.
footprint() {
  sql "select (select count(*) from transitions) || ' ' || (select count(*) from receipts) || ' ' ||
              (select count(*) from events) || ' ' || (select count(*) from attempts) || ' ' ||
              (select revision from runs where run_id = '$id') || ' ' ||
              (select quarantine_at_ms from runs where run_id = '$id')"
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# watch_idle <seconds> <worker pid> <what>: the footprint does not move and
# the worker uses under a quarter of one CPU over the period.
watch_idle() {
  local seconds=$1 pid=$2 what=$3 fp0 fp1 c0 c1 t0 t1
  fp0=$(footprint)
  c0=$(cpu_ticks "$pid")
  t0=$(now_ms)
  sleep "$seconds"
  fp1=$(footprint)
  c1=$(cpu_ticks "$pid")
  t1=$(now_ms)
  checks=$((checks + 1))
  [ "$fp0" = "$fp1" ] || fail "$what: the quarantined run moved under a running worker: [$fp0] -> [$fp1]"
  local hz ticks_max
  hz=$(getconf CLK_TCK)
  ticks_max=$(((t1 - t0) * hz / 1000 / 4))
  [ $((c1 - c0)) -le "$ticks_max" ] ||
    fail "$what: the worker used $((c1 - c0)) CPU ticks in $((t1 - t0)) ms (limit $ticks_max at $hz/s): a hot loop"
  echo "$what: footprint [$fp1] unchanged for $((t1 - t0)) ms, worker CPU $((c1 - c0)) ticks"
}

# ---- run: exit 5, budget.state-bytes ----
sp run "$wf/big-state.json" --key big --db "$db" --json
expect_rc 5 "run past 256 KiB of state"
expect_json '.status == "running" and .revision == "5" and .position.nodeId == "s5"
    and .quarantine.code == "budget.state-bytes" and (.quarantine.details | type == "string")
    and (.quarantine.atMs | test($d)) and .result == null
    and ([.nodes | keys[]] == ["s1", "s2", "s3", "s4"])
    and ([.nodes[].output.blob | length] | all(. == 60000))' \
  "run past 256 KiB of state" --arg d "$decimal"
id=$(jq -r .runId <<<"$out")
q1=$(jq -r .quarantine.atMs <<<"$out")
for n in s1 s2 s3 s4 s5; do
  [ "$(log_count start "$id" "$n")" -eq 1 ] || fail "step $n ran $(log_count start "$id" "$n") times, want 1"
done

check_pending() { # <what>: six events, the fifth step's result pending
  sp events "$id" --db "$db" --json
  expect_rc 0 "$1: events"
  expect_json '(.events | length) == 6
      and ([.events[].consumedRevision] == ["1", "2", "3", "4", "5", null])
      and .events[5].kind == "activity.result" and .events[5].payload.status == "success"
      and .events[5].payload.output.node == "s5"' "$1: events"
  sp events "$id" --db "$db"
  grep -q "^6  activity.result  pending  att:inv_" <<<"$out" || fail "$1: events (text): $out"
}
check_pending "after the budget failure"

sp status "$id" --db "$db"
expect_rc 0 "status (text)"
grep -q "^quarantine  *budget.state-bytes: " <<<"$out" || fail "status (text): no quarantine line: $out"
sp list --db "$db" --json
expect_json '[.runs[] | {runId, startKey, status, revision, quarantined}]
    == [{"runId": $id, "startKey": "big", "status": "running", "revision": "5", "quarantined": true}]' \
  "list" --arg id "$id"
sp list --db "$db"
grep -q "^$id .*(quarantined)$" <<<"$out" || fail "list (text): $out"

# Quarantine is checked before status: every way of driving the run says 5.
sp run "$wf/big-state.json" --key big --db "$db"
expect_rc 5 "run of a quarantined run (text)"
sp worker --run "$id" --until-parked --db "$db" --json
expect_rc 5 "worker --until-parked of a quarantined run"
expect_json '.quarantine.atMs == $q' "worker --until-parked does not touch the quarantine" --arg q "$q1"

# ---- H4: no hot loop beside a running worker ----
start_bg worker1 worker --db "$db" --poll-ms 50 --json
worker=$bg_pid
sleep 0.3 # let the worker start ticking before the measurement window
watch_idle 3 "$worker" "worker beside the quarantined run"

# ---- release resumes; the cause remains, so it fails again ----
sp release "$id" --db "$db" --json
expect_rc 0 "release"
expect_json '.runId == $id and .disposition == "applied"' "release" --arg id "$id"
requarantined() { [ "$(sql "select quarantine_at_ms from runs where run_id = '$id'")" -gt "$q1" ] 2>/dev/null; }
wait_for 10 requarantined || fail "the worker did not coordinate the released run again"
sp status "$id" --db "$db" --json
expect_json '.quarantine.code == "budget.state-bytes" and .revision == "5" and .status == "running"' \
  "status after release under the worker"
q2=$(jq -r .quarantine.atMs <<<"$out")
check_pending "after release under the worker"
watch_idle 1.5 "$worker" "worker after the release"
[ "$(log_count start "$id" s5)" -eq 1 ] || fail "step s5 ran again after release"

kill -INT "$worker"
wait_bg "$worker" 10
[ "$bg_rc" -eq 130 ] || fail "worker after SIGINT: exit $bg_rc, want 130"

# ---- release + run: the same failure again ----
sp release "$id" --db "$db"
expect_rc 0 "release (text)"
[ "$out" = "release $id: applied" ] || fail "release (text): \"$out\""
sp status "$id" --db "$db" --json
expect_json '.quarantine == null and .revision == "5"' "status after release"
released=$out
sp release "$id" --db "$db" --json
expect_rc 0 "release again, the run no longer quarantined"
expect_json '.runId == $id' "release again" --arg id "$id"
sp status "$id" --db "$db" --json
[ "$out" = "$released" ] || fail "a release of a run without a quarantine changed it: $released -> $out"
sp run "$wf/big-state.json" --key big --db "$db" --json
expect_rc 5 "run after release"
expect_json '.created == false and .quarantine.code == "budget.state-bytes" and .revision == "5"
    and (.quarantine.atMs | tonumber) > ($q | tonumber)' "run after release" --arg q "$q2"
check_pending "after release and run"
[ "$(sql "select count(*) from transitions where run_id = '$id'")" -eq 5 ] ||
  fail "a transition of the failing turn was committed"
for n in s1 s2 s3 s4 s5; do
  [ "$(log_count start "$id" "$n")" -eq 1 ] || fail "step $n ran $(log_count start "$id" "$n") times in the end, want 1"
done

finish
