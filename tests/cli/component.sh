# component.sh - what the component runner tests share (sourced by
# tests/cli/test_component_*.sh after lib.sh; not a test itself).
#
# Gives: $runners (the built test runners, <build>/runners: *.wasm and the
# sockserve helper); $wfdir, a workflow folder inside $tmp holding copies of
# the runners; cwf <file> <module> <action JSON merged into the component
# action> [<node outcomes JSON>] writing a one-step workflow (component step
# "job", then a command step "after" that logs "after <run>" to
# $SPORE_TEST_LOG, then complete); result_of <runId> printing the first
# activity.result payload of the run; audit_rows <runId> <kind>.
runners="$(dirname "$spore")/runners"
[ -f "$runners/generic.wasm" ] || { echo "$test_name: the test runners are not built ($runners)" >&2; exit 1; }
wfdir="$tmp/wf"
mkdir -p "$wfdir"
cp "$runners"/*.wasm "$wfdir/"

cwf() {
  local file=$1 module=$2 extra=${3:-'{}'} outcomes=${4:-'{"ok": "after"}'}
  jq -n --arg m "$module" --argjson extra "$extra" --argjson outcomes "$outcomes" \
    --arg log "$SPORE_TEST_LOG" '
  {format: "runspore.workflow/0.1", name: "component-test", start: "job",
   actions: {
     job: ({kind: "component", module: $m, effect: "idempotent", retry: {maxAttempts: 1},
            callTimeoutMs: "10000", async: {probeEveryMs: "200"}} * $extra),
     after: {kind: "command", effect: "idempotent",
             argv: ["/bin/sh", "-c", ("echo after $SPORE_RUN_ID >> " + $log)]}},
   nodes: {
     job: {kind: "activity", action: "job", outcomes: $outcomes},
     after: {kind: "activity", action: "after", outcomes: {ok: "done"}},
     done: {kind: "complete", output: {"$get": ["nodes", "job", "output"]}}}}' >"$file"
}

result_of() {
  "$spore" events "$1" --db "$db" --json |
    jq -c '[.events[] | select(.kind == "activity.result")][0].payload'
}

# helper <command...>: a background helper that is not spore (sockserve,
# sleep), output to $tmp, killed when the test ends.
helper_pids=()
helper() {
  "$@" >>"$tmp/helpers.out" 2>&1 &
  helper_pid=$!
  helper_pids+=("$helper_pid")
  disown "$helper_pid" 2>/dev/null || true # no "Killed" notice when the test ends it
}
kill_helpers() {
  local p
  for p in "${helper_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
}
trap 'kill_helpers; cleanup' EXIT

audit_rows() { sql "SELECT count(*) FROM audit WHERE run_id = '$1' AND kind = '$2'"; }
