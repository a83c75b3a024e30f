#!/usr/bin/env bash
# test_component_calls.sh - runners.md R2 and the host imports through the
# real binary: for each import kind that has a grant (process_start:
# programs, socket_request: sockets, file_read and dir_list: folders) an
# ungranted value fails the step with component.not-granted naming the grant
# and the value, not retryable, and nothing was performed (no process, no
# connection); a runner that would carry on after the refusal fails all the
# same. Granted calls do what §3 says: the detached job gets exactly the
# given environment plus the SPORE_* identity, its stdin, its own session,
# output in the attempt's log; sleep_ms never passes the call's deadline;
# log lines are capped and redacted; malformed requests answer -2.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
source "$root/tests/cli/component.sh"
marker="$tmp/marker"
cat >"$wfdir/touch.sh" <<SH
#!/bin/sh
echo "ran \$*" >> "$marker"
SH
chmod +x "$wfdir/touch.sh"
mkdir -p "$wfdir/data" "$tmp/outside"
echo hello >"$wfdir/data/a.txt"
echo secret >"$tmp/outside/s.txt"
helper "$runners/sockserve" "$tmp/ok.sock" 5 1 "$tmp/sock.log"
helper "$runners/sockserve" "$tmp/other.sock" 5 1 "$tmp/other.log"
wait_for 5 test -S "$tmp/ok.sock" || fail "the socket server did not start"
wait_for 5 test -S "$tmp/other.sock" || fail "the second socket server did not start"

grants='{"programs": ["touch.sh"], "sockets": ["'"$tmp/ok.sock"'"], "folders": ["data"]}'
# ungranted <what> <grant> <value> <calls JSON>
ungranted() {
  local what=$1 grant=$2 value=$3 calls=$4
  cwf "$wfdir/ng.json" generic.wasm \
    "{\"retry\": {\"maxAttempts\": 3}, \"grants\": $grants, \"config\": {\"calls\": $calls}}"
  sp run "$wfdir/ng.json" --db "$db" --json
  expect_rc 1 "$what: the step fails"
  expect_json '.status == "failed" and .result.error.code == "component.not-granted"
    and .result.error.details == {grant: $g, value: $v}' "$what: not-granted {grant, value}" \
    --arg g "$grant" --arg v "$value"
  local run
  run=$(jq -r .runId <<<"$out")
  [ "$(sql "SELECT count(*) FROM attempts WHERE run_id = '$run'")" = 1 ] ||
    fail "$what: the not-granted failure was retried"
  result_of "$run" | jq -e '.status == "failure" and .retryable == false' >/dev/null ||
    fail "$what: the result is not a non-retryable failure: $(result_of "$run")"
}

ungranted "process_start" programs /bin/echo \
  '[{"import": "process_start", "request": {"program": "/bin/echo", "args": ["x"]}}]'
ungranted "process_start of a name outside the folder" programs ../touch.sh \
  '[{"import": "process_start", "request": {"program": "../touch.sh"}}]'
ungranted "socket_request" sockets "$tmp/other.sock" \
  '[{"import": "socket_request", "request": {"path": "'"$tmp/other.sock"'", "data": "hi\n"}}]'
ungranted "file_read" folders "$tmp/outside/s.txt" \
  '[{"import": "file_read", "request": {"path": "'"$tmp/outside/s.txt"'"}}]'
ungranted "dir_list" folders "$tmp/outside" \
  '[{"import": "dir_list", "request": {"path": "'"$tmp/outside"'"}}]'
# the runner would go on and start a granted program after the refusal: it never gets there
ungranted "a refusal is never a branch" folders "$tmp/outside" \
  '[{"import": "dir_list", "request": {"path": "'"$tmp/outside"'"}},
    {"import": "process_start", "request": {"program": "touch.sh", "args": ["after-refusal"]}}]'
[ ! -e "$marker" ] || fail "an ungranted call performed something: $(cat "$marker")"
[ ! -s "$tmp/other.log" ] || fail "the ungranted socket was connected to"

# ---- granted calls ----
calls='[{"import": "process_start", "request": {"program": "./touch.sh", "args": ["a", "b"],
          "env": {"ONLY": "this"}, "stdin": "the stdin"}},
        {"import": "socket_request", "request": {"path": "'"$tmp/ok.sock"'", "data": "ping\n"}},
        {"import": "file_read", "request": {"path": "data/a.txt"}},
        {"import": "dir_list", "request": {"path": "./data"}},
        {"import": "sleep_ms", "request": {"ms": 10}},
        {"import": "log", "request": {"line": "token sk-abcdefghijklmnopqrstuvwxyz0123 here"}},
        {"import": "file_read", "request": {"path": 7}},
        {"import": "process_alive", "request": {"handle": {"pid": 1}, "extra": 1}}]'
cwf "$wfdir/ok.json" generic.wasm "{\"grants\": $grants, \"config\": {\"calls\": $calls}}"
sp run "$wfdir/ok.json" --db "$db" --json
expect_rc 0 "granted calls"
expect_json '.status == "completed" and (.result.output.replies | length == 8)
  and (.result.output.replies[0].reply | keys == ["boot","invocation","mac","pid","program","run","started"])
  and .result.output.replies[0].reply.program == "touch.sh"
  and .result.output.replies[1].reply == {reply: "xxxxx"}
  and .result.output.replies[2].reply == {data: "hello\n", eof: true}
  and .result.output.replies[3].reply == {entries: [{name: "a.txt", type: "file"}]}
  and .result.output.replies[4].reply == {}
  and .result.output.replies[6].status == -2 and .result.output.replies[7].status == -2' \
  "granted imports answer as runners.md §3 says"
run=$(jq -r .runId <<<"$out")
inv=$(jq -r '.result.output.replies[0].reply.invocation' <<<"$out")
wait_for 5 test -s "$marker" || fail "the granted program did not run"
grep -qx "ran a b" "$marker" || fail "the program's arguments: $(cat "$marker")"
grep -q "connection" "$tmp/sock.log" || fail "the granted socket was not reached"
logfile=$(ls "${XDG_CACHE_HOME:-$HOME/.cache}/spore/logs/$run/"*.log 2>/dev/null | head -n 1 || true)
[ -n "$logfile" ] || logfile=$(ls /tmp/spore-cache-$(id -u)/logs/$run/*.log 2>/dev/null | head -n 1 || true)
[ -n "$logfile" ] && grep -q "REDACTED" "$logfile" || fail "the runner's log line is not in the attempt log, redacted: ${logfile:-none}"
grep -q "sk-abcdefghijklmnopqrstuvwxyz0123" "$logfile" 2>/dev/null && fail "a token survived in the log"

# the job's environment, stdin and session
cat >"$wfdir/env.sh" <<SH
#!/bin/sh
{ env | sort; echo "stdin=\$(cat)"; echo "sid=\$(ps -o sid= -p \$\$ | tr -d ' ') pid=\$\$"; } > "$tmp/env.out"
SH
chmod +x "$wfdir/env.sh"
cwf "$wfdir/env.json" generic.wasm '{"grants": {"programs": ["env.sh"]}, "config": {"calls":
  [{"import": "process_start", "request": {"program": "env.sh", "env": {"ONLY": "this"}, "stdinBase64": "AAEC"}}]}}'
sp run "$wfdir/env.json" --db "$db" --json
expect_rc 0 "process_start with env and stdin"
run=$(jq -r .runId <<<"$out")
wait_for 5 grep -q '^sid=' "$tmp/env.out" || fail "the job did not write its environment"
grep -qx "ONLY=this" "$tmp/env.out" || fail "env: ONLY missing"
grep -qx "SPORE_RUN_ID=$run" "$tmp/env.out" || fail "env: SPORE_RUN_ID missing"
grep -q "^SPORE_INVOCATION_ID=inv_" "$tmp/env.out" || fail "env: SPORE_INVOCATION_ID missing"
grep -q "^SPORE_EFFECT_KEY=inv_" "$tmp/env.out" || fail "env: SPORE_EFFECT_KEY missing"
grep -q "^TRACEPARENT=00-" "$tmp/env.out" || fail "env: TRACEPARENT missing"
grep -q "^HOME=\|^SPORE_TEST_LOG=" "$tmp/env.out" && fail "the job inherited the worker's environment"
awk '/^sid=/ {split($1, a, "="); split($2, b, "="); exit !(a[2] == b[2])}' "$tmp/env.out" ||
  fail "the job is not the leader of its own session: $(grep sid= "$tmp/env.out")"

# sleep_ms never passes the call's deadline
cwf "$wfdir/sleep.json" generic.wasm '{"callTimeoutMs": "700", "config": {"calls":
  [{"import": "sleep_ms", "request": {"ms": 60000}}]}}'
t0=$(now_ms)
sp run "$wfdir/sleep.json" --db "$db" --json
elapsed=$(($(now_ms) - t0))
expect_rc 1 "a sleep past the deadline"
result_of "$(jq -r .runId <<<"$out")" | jq -e '.error.code == "component.timeout"' >/dev/null ||
  fail "sleep past the deadline: $(result_of "$(jq -r .runId <<<"$out")")"
[ "$elapsed" -lt 5000 ] || fail "sleep_ms went past the call's deadline (${elapsed} ms)"

# ---- a command action's probe hook in component form runs the runner's spore_probe ----
jq -n --arg spore "$spore" --arg log "$tmp/detach.log" '{format: "runspore.workflow/0.1",
  name: "hook", start: "j",
  actions: {j: {kind: "command", effect: "idempotent",
    argv: [$spore, "step", "detach", "--log", $log, "--", "/bin/sleep", "30"],
    async: {timeoutMs: "60000", probeEveryMs: "200",
            probe: {component: {module: "generic.wasm", config: {probe: "finished"}}},
            stop: {component: {module: "generic.wasm"}}}}},
  nodes: {j: {kind: "activity", action: "j", outcomes: {ok: "d"}},
          d: {kind: "complete", output: {"$get": ["nodes", "j", "output"]}}}}' >"$wfdir/hook.json"
sp run "$wfdir/hook.json" --db "$db" --poll-ms 50 --json
expect_rc 0 "a command step probed through a runner"
expect_json '.status == "completed" and .result.output == {probed: true}' \
  "the runner's probe returned the step's result"
hookrun=$(jq -r .runId <<<"$out")
hookpid=$(sql "SELECT holder FROM attempts WHERE run_id = '$hookrun'" | jq -r '.pid // empty' | head -n 1)
[[ "$hookpid" =~ $decimal ]] && kill -KILL "$hookpid" 2>/dev/null || true

finish
