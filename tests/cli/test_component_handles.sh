#!/usr/bin/env bash
# test_component_handles.sh - runners.md R5 through the real binary: a
# runner that feeds process_alive / process_signal a forged handle, an
# altered one, or the genuine handle of another run gets -3 handle-forged
# for each, an audit entry is kept, and no signal is sent (the target
# process lives on). The genuine handle works for its own step (the
# detached-job example exercises that in test_component_detached.sh).
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
source "$root/tests/cli/component.sh"

# run A holds a job of its own: its handle is genuine, for run A only
cwf "$wfdir/a.json" generic.wasm '{"grants": {"programs": ["/bin/sleep"]}, "async": {"probeEveryMs": "60000"},
  "config": {"hold": true, "probe": "alive", "calls": [{"import": "process_start", "request": {"program": "/bin/sleep", "args": ["300"]}}]}}'
sp start "$wfdir/a.json" --db "$db" --key a --json
runa=$(jq -r .runId <<<"$out")
start_bg worker-a worker --db "$db" --poll-ms 50
wait_for 20 bash -c "'$spore' status $runa --db '$db' --json | jq -e '.step.state == \"held\"'" ||
  fail "run A did not hold its job"
kill -INT "$bg_pid"
wait_bg "$bg_pid" 30
sp status "$runa" --db "$db" --json
genuine=$(jq -c '.step.holder.replies[0].reply' <<<"$out")
pid=$(jq -r .pid <<<"$genuine")
[[ "$pid" =~ $decimal ]] || fail "run A's job has no sealed handle: $genuine"
kill -0 "$pid" || fail "run A's job is not running"

helper sleep 300
victim=$helper_pid
altered=$(jq -c '.pid = ($v | tonumber)' --arg v "$victim" <<<"$genuine")
forged=$(jq -nc --argjson p "$victim" --arg s "$(awk '{print $22}' /proc/$victim/stat)" \
  '{pid: $p, started: $s, boot: "b", program: "/bin/sleep", run: "run_x", invocation: "inv_x",
    mac: "0000000000000000000000000000000000000000000000000000000000000000"}')
calls=$(jq -nc --argjson g "$genuine" --argjson a "$altered" --argjson f "$forged" '[
  {import: "process_alive", request: {handle: $g}},
  {import: "process_signal", request: {handle: $g, signal: "KILL"}},
  {import: "process_alive", request: {handle: $a}},
  {import: "process_signal", request: {handle: $a, signal: "KILL"}},
  {import: "process_alive", request: {handle: $f}},
  {import: "process_signal", request: {handle: $f, signal: "KILL"}}]')
cwf "$wfdir/b.json" generic.wasm "{\"config\": {\"calls\": $calls}}"
sp run "$wfdir/b.json" --db "$db" --json
expect_rc 0 "run B completes (the refusals are answers, not failures)"
expect_json '[.result.output.replies[] | .status == -3 and .reply.error.code == "handle-forged"] | all and length == 6' \
  "every foreign, altered or forged handle is refused with handle-forged"
runb=$(jq -r .runId <<<"$out")
[ "$(audit_rows "$runb" handle-forged)" = 6 ] || fail "audit rows for run B: $(audit_rows "$runb" handle-forged), want 6"
sleep 0.3
kill -0 "$pid" 2>/dev/null || fail "run A's job was signalled through run B"
kill -0 "$victim" 2>/dev/null || fail "the victim process was signalled"

# run A's own step may still look at its job (the genuine handle, its own run)
sp status "$runa" --db "$db" --json
expect_json '.step.probe == "alive"' "run A's own probe"
sp step abandon "$runa" --db "$db"
kill -KILL "$pid" 2>/dev/null || true
finish
