#!/usr/bin/env bash
# test_format02.sh - workflow format 0.2 through the real binary, real
# command steps, a real SQLite store and real signals (issue 13 "Done
# when", docs/format-0.2.md):
#
# - three parallel command branches run at once (every branch has started
#   before any has ended) and join once with every branch's output;
# - kill -9 of the worker during the fan-out, then resume: each branch's
#   step ran at most twice (idempotent), the join holds every branch;
# - a map of 20 items with maxConcurrency 4 never has more than 4 steps
#   running (from the steps' own log), reaches 4, and returns the results
#   in item order;
# - a sleep fires no earlier than its due time, exactly once; with
#   --max-wait below it `run` parks with exit 7 and `resume` later completes
#   it (the timer survived the process);
# - an await-signal with timeoutMs routes `timeout` when nobody signals, and
#   the signal's route when one comes first (the timer is then cancelled and
#   never fires);
# - `cancel` of a run whose command step sleeps 60 s leaves no process of
#   the step within 2 s, the run `cancelled` and the serving `resume` exits
#   8; cancel again: already-terminal (exit 0); a 0.1 run: refused, exit 2;
# - cancel of an unsafe step mid-effect lists it `cancelled-in-flight` with
#   its effect key (an idempotent one is not listed);
# - cancel of a claimed external step: the run is cancelled at once (the
#   command takes the cancel, no worker serves the run) and the step's token
#   no longer completes it;
# - a cancel reason over 1 KiB and a --max-wait that is no duration are
#   refused with usage.invalid-value, nothing recorded;
# - a failed step without a `failed` route parks the run (exit 4, the step
#   stuck in `interventions`); `retry` re-runs that step alone and the run
#   completes.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

starts() { awk -v r="$1" '$1 == "start" && $2 == r' "$SPORE_TEST_LOG" | wc -l; }
started_at_least() { [ "$(starts "$1")" -ge "$2" ]; }

count_kind() { # <run> <event kind>
  events_json "$1" | jq --arg k "$2" '[.events[] | select(.kind == $k)] | length'
}

# ---- parallel branches ----
sp run "$wf/parallel3.json" --input '{"sleep": 1}' --db "$db" --json
expect_rc 0 "parallel: run"
expect_json '.status == "completed" and (.result.output | keys) == ["a", "b", "c"] and
  ([.result.output[] | .outcome] == ["ok", "ok", "ok"]) and
  ([.result.output[] | .node] == ["sa", "sb", "sc"])' "parallel: joined with every branch"
run=$(jq -r '.runId' <<<"$out")
first_end=$(awk -v r="$run" '$1 == "end" && $2 == r {print $8}' "$SPORE_TEST_LOG" | sort -n | head -1)
last_start=$(awk -v r="$run" '$1 == "start" && $2 == r {print $8}' "$SPORE_TEST_LOG" | sort -n | tail -1)
[ "$(awk -v r="$run" '$1 == "start" && $2 == r' "$SPORE_TEST_LOG" | wc -l)" = 3 ] ||
  fail "parallel: want 3 step starts"
[ -n "$first_end" ] && [ "$last_start" -lt "$first_end" ] ||
  fail "parallel: the branches did not run at once (last start $last_start, first end $first_end)"

# ---- kill -9 during the fan-out, then resume ----
: >"$SPORE_TEST_LOG"
sp start "$wf/parallel3.json" --input '{"sleep": 2}' --db "$db" --json
run=$(jq -r '.runId' <<<"$out")
start_bg fanout resume "$run" --db "$db"
pid=$bg_pid
wait_for 20 started_at_least "$run" 3 ||
  fail "fan-out: the three steps did not start"
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
sp resume "$run" --db "$db" --json
expect_rc 0 "fan-out: resume after kill -9"
expect_json '.status == "completed" and (.result.output | keys) == ["a", "b", "c"]' \
  "fan-out: joined once with every branch"
for n in sa sb sc; do
  c=$(log_count start "$run" "$n")
  [ "$c" -ge 1 ] && [ "$c" -le 2 ] || fail "fan-out: step $n started $c times (idempotent: 1 or 2)"
done

# ---- map with maxConcurrency ----
: >"$SPORE_TEST_LOG"
items=$(jq -nc '{items: [range(20) | {sleep: 1}]}')
sp run "$wf/map20.json" --input "$items" --db "$db" --json
expect_rc 0 "map: run"
expect_json '.status == "completed" and (.result.output.results | length) == 20 and
  ([.result.output.results[] | .output.n] == [range(20)]) and
  ([.result.output.results[] | .outcome] | unique) == ["ok"]' "map: results in item order"
run=$(jq -r '.runId' <<<"$out")
peak=$(awk -v r="$run" '$2 == r && ($1 == "start" || $1 == "end") {print $8, ($1 == "start" ? 1 : -1)}' \
  "$SPORE_TEST_LOG" | sort -n -k1,1 -k2,2n | awk '{c += $2; if (c > m) m = c} END {print m + 0}')
[ "$peak" -le 4 ] || fail "map: $peak steps ran at once, maxConcurrency is 4"
[ "$peak" -ge 2 ] || fail "map: the items never ran concurrently (peak $peak)"
[ "$(awk -v r="$run" '$1 == "start" && $2 == r' "$SPORE_TEST_LOG" | wc -l)" = 20 ] ||
  fail "map: want 20 step starts"

# ---- sleep ----
t0=$(now_ms)
sp run "$wf/sleep.json" --db "$db" --json
t1=$(now_ms)
expect_rc 0 "sleep: run"
expect_json '.status == "completed" and .result.output.slept == true' "sleep: completed"
run=$(jq -r '.runId' <<<"$out")
[ $((t1 - t0)) -ge 1500 ] || fail "sleep: completed after $((t1 - t0)) ms, before its 1500 ms"
[ "$(count_kind "$run" timer.fired)" = 1 ] || fail "sleep: want exactly one timer.fired"
# fired within one poll interval (200 ms) and a transition of its due time,
# by the store's clock: the accepted time of timer.fired against dueAtMs
late=$(events_json "$run" | jq '
  ([.events[] | select(.kind == "timer.fired")][0].acceptedAtMs | tonumber) -
  ([.events[] | select(.kind == "run.started")][0].acceptedAtMs | tonumber) - 1500')
[ "$late" -ge 0 ] && [ "$late" -le 1000 ] || fail "sleep: timer.fired $late ms after its due time"

sp run "$wf/sleep.json" --max-wait 100ms --db "$db" --json
expect_rc 7 "sleep: --max-wait below the timer parks with exit 7"
expect_json '.status == "waiting" and (.timers | length) == 1' "sleep: the timer is shown"
run=$(jq -r '.runId' <<<"$out")
sleep 1.6
sp resume "$run" --db "$db" --json
expect_rc 0 "sleep: resume after the due time"
expect_json '.status == "completed"' "sleep: completed by another process"
[ "$(count_kind "$run" timer.fired)" = 1 ] || fail "sleep (restart): want exactly one timer.fired"

# ---- a signal with a deadline ----
sp run "$wf/deadline.json" --db "$db" --json
expect_rc 0 "deadline: run without a signal"
expect_json '.status == "completed" and .result.output.timedOut == true' "deadline: routed timeout"

sp run "$wf/deadline.json" --max-wait 100ms --db "$db" --json
expect_rc 7 "deadline: waiting for the signal or its timer"
run=$(jq -r '.runId' <<<"$out")
sp signal "$run" approval --outcome approved --data '{"by": "ana"}' --db "$db" --json
expect_rc 0 "deadline: signal before the timeout"
sp resume "$run" --db "$db" --json
expect_rc 0 "deadline: resume"
expect_json '.status == "completed" and .result.output.approved.by == "ana"' \
  "deadline: the signal's route won"
sleep 1.8 # past the cancelled deadline
start_bg deadline_worker worker --db "$db"
sleep 1
kill -TERM "$bg_pid"
wait "$bg_pid" 2>/dev/null || true
[ "$(count_kind "$run" timer.fired)" = 0 ] || fail "deadline: the cancelled timer fired"
[ "$(sql "SELECT count(*) FROM timers WHERE run_id = '$run'")" = 0 ] || fail "deadline: a timer is left"

# ---- cancel ----
: >"$SPORE_TEST_LOG"
sp start "$wf/long.json" --db "$db" --json
run=$(jq -r '.runId' <<<"$out")
start_bg long resume "$run" --db "$db"
pid=$bg_pid
wait_for 20 log_has start "$run" work || fail "cancel: the step did not start"
pgid=$(log_field start "$run" work 1 7)
t0=$(now_ms)
sp cancel "$run" --reason "not needed any more" --db "$db" --json
expect_rc 0 "cancel"
expect_json '.disposition == "applied"' "cancel: applied"
wait_for 2 group_gone "$pgid" || fail "cancel: the step's process group is alive 2 s later"
t1=$(now_ms)
echo "cancel: the step's processes were gone after $((t1 - t0)) ms"
set +e
wait "$pid"
resume_rc=$?
set -e
[ "$resume_rc" = 8 ] || fail "cancel: the serving resume exited $resume_rc, want 8"
sp status "$run" --db "$db" --json
expect_json '.status == "cancelled" and .result.error.code == "run.cancelled" and
  .result.error.message == "not needed any more"' "cancel: the run is cancelled"
expect_json '([.interventions[] | select(.state == "cancelled-in-flight")] | length) == 0' \
  "cancel: an idempotent step is not listed as cancelled in flight"
sp cancel "$run" --db "$db" --json
expect_rc 0 "cancel again"
expect_json '.disposition == "already-terminal"' "cancel again: already-terminal"
sp start "$wf/three-steps.json" --db "$db" --json
old=$(jq -r '.runId' <<<"$out")
expect_error 2 run.cancel-unsupported "cancel of a 0.1 run" -- cancel "$old" --db "$db"

# ---- cancel of an unsafe step mid-effect: listed cancelled-in-flight ----
: >"$SPORE_TEST_LOG"
sp start "$wf/long-unsafe.json" --db "$db" --json
run=$(jq -r '.runId' <<<"$out")
start_bg long_unsafe resume "$run" --db "$db"
pid=$bg_pid
wait_for 20 log_has start "$run" work || fail "unsafe cancel: the step did not start"
key=$(log_field start "$run" work 1 5)
sp cancel "$run" --db "$db" --json
expect_rc 0 "unsafe cancel"
wait "$pid" 2>/dev/null || true
sp status "$run" --db "$db" --json
expect_json '.status == "cancelled" and ([.interventions[] | select(.state == "cancelled-in-flight"
  and .nodeId == "work" and .effectKey == $k)] | length) == 1' \
  "unsafe cancel: the step is listed cancelled-in-flight with its effect key" --arg k "$key"
sp status "$run" --db "$db"
[[ "$out" == *"cancelled in flight, its effect may have happened"* ]] ||
  fail "unsafe cancel: the text status does not say the effect may have happened"

# ---- cancel of an external step: its token stops working ----
sp run "$wf/external02.json" --input '{"doc": "draft"}' --db "$db" --json
expect_rc 6 "external: run waits on the claimable step"
run=$(jq -r '.runId' <<<"$out")
sp step claim "$run" --db "$db" --actor reviewer --json
expect_json '.claimed == true' "external: claimed"
token=$(jq -r .token <<<"$out")
sp cancel "$run" --db "$db" --json
expect_rc 0 "external: cancel"
expect_json '.status == "cancelled"' "external: cancelled at once (no worker serves it)"
sp step complete "$token" --db "$db" --outcome approved --output '{"by": "ana"}' --json
[ "$rc" -ne 0 ] || fail "external: the token of a cancelled step still completes it"
sp status "$run" --db "$db" --json
expect_json '.status == "cancelled" and .nodes.review == null' "external: nothing recorded after the cancel"

# ---- bounds: a cancel reason over 1 KiB, a --max-wait that is no duration ----
sp start "$wf/sleep.json" --db "$db" --json
run=$(jq -r '.runId' <<<"$out")
long=$(head -c 1025 /dev/zero | tr '\0' r)
expect_error 2 usage.invalid-value "cancel with a reason over 1 KiB" -- cancel "$run" --reason "$long" --db "$db"
[ "$(count_kind "$run" run.cancel)" = 0 ] || fail "a refused cancel recorded an event"
expect_error 2 usage.invalid-value "--max-wait 5x" -- run "$wf/sleep.json" --max-wait 5x --db "$db"
expect_error 2 usage.invalid-value "--max-wait 0" -- run "$wf/sleep.json" --max-wait 0 --db "$db"

# ---- a stuck step, retried ----
: >"$SPORE_TEST_LOG"
sp run "$wf/stuck.json" --db "$db" --json
expect_rc 4 "stuck: run parks"
expect_json '.status == "needs-intervention" and (.interventions | length) == 1 and
  .interventions[0].state == "stuck" and .interventions[0].nodeId == "flaky"' \
  "stuck: the failed step is shown stuck"
run=$(jq -r '.runId' <<<"$out")
sp retry "$run" --db "$db" --json
expect_rc 0 "retry"
expect_json '.retried == 1' "retry: one stuck step"
sp resume "$run" --db "$db" --json
expect_rc 0 "retry: resume"
expect_json '.status == "completed" and .result.output.flaky == 2' "retry: completed on attempt 2"
[ "$(log_count start "$run" first)" = 1 ] || fail "retry: the step before ran again"
[ "$(log_count start "$run" flaky)" = 2 ] || fail "retry: want 2 attempts of the stuck step"
expect_error 2 run.nothing-to-retry "retry of a completed run" -- retry "$run" --db "$db"

finish
