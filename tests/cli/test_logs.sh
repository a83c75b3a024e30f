#!/usr/bin/env bash
# test_logs.sh - step logs (authoring.md §5, docs/authoring.md "Step logs")
# through the real binary:
# - a command step's stdout shows after it succeeded, a failing step's
#   stderr after it failed, each under a header (node, attempt, outcome);
# - a secret given to the step (secrets {NAME: {file}}, read as $NAME_FILE)
#   and printed raw and in base64 shows as ***REDACTED*** and is nowhere in
#   `spore logs` (text, JSON), `spore events`, `spore status` nor the SQLite
#   store file; a missing secret file fails the step (command.secret-unavailable);
# - more than 64 KiB keeps the last 64 KiB and says how much came before;
#   invalid UTF-8 is replaced with U+FFFD; --stream shows one stream;
# - --attempt picks a retry's attempt; <node> one node; an unknown node
#   (node.unknown), a malformed one, a bad --attempt / --stream, an unknown
#   run (run.not-found) are refused with their codes;
# - --follow prints the logs of a run as its steps end and exits 0 when the
#   run completes; a run without logs says so and why;
# - --json is one object {runId, entries: [...]} with decimal-string times;
# - an agent step keeps its step CLI's stderr, a component step its log
#   file (the runner's log lines and its detached job's output).
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

secret='s3cr3t-T0KEN-4f9a1c77e2'
printf '%s' "$secret" >"$tmp/token"
b64=$(printf '%s' "$secret" | base64 -w0)

# wf <file> <node> <shell script> [<action members JSON>]: a one-step workflow
# (command step <node>, then complete); the script runs under /bin/sh -c.
wf() {
  jq -n --arg node "$2" --arg script "$3" --argjson extra "${4:-{\}}" '
  {format: "runspore.workflow/0.1", name: "logs-test", start: $node,
   actions: {step: ({kind: "command", argv: ["/bin/sh", "-c", $script], effect: "idempotent",
                     output: "none", retry: {maxAttempts: 1}} * $extra)},
   nodes: {($node): {kind: "activity", action: "step", outcomes: {ok: "done"}},
           done: {kind: "complete"}}}' >"$1"
}

no_secret() { # <what> <text>
  checks=$((checks + 1))
  if grep -qF -- "$secret" <<<"$2" || grep -qF -- "$b64" <<<"$2"; then fail "$1: the secret shows raw"; fi
}

# ---- help, usage ----
sp logs --help
expect_rc 0 "logs --help"
[[ "$out" == "usage: spore logs"* ]] || fail "logs --help: ${out:0:200}"
sp --help
grep -q '^  logs ' <<<"$out" || fail "spore --help does not list logs"

# ---- stdout after success, with a secret ----
wf "$tmp/ok.json" say 'echo "hello from stdout"; echo "note on stderr" >&2;
  echo "token=$(cat "$TOKEN_FILE")"; printf "b64=%s\n" "$(base64 -w0 "$TOKEN_FILE")";
  cat "$TOKEN_FILE" >&2' "$(jq -n --arg f "$tmp/token" '{secrets: {TOKEN: {file: $f}}, output: "text"}')"
sp run "$tmp/ok.json" --db "$db" --json
expect_rc 0 "the step with a secret completes"
ok=$(jq -r .runId <<<"$out")
no_secret "run --json" "$out"
sp logs "$ok" --db "$db"
expect_rc 0 "logs after success"
grep -q '^== say · attempt 1 · succeeded (ok) · started ' <<<"$out" || fail "no header: $out"
grep -qx 'hello from stdout' <<<"$out" || fail "stdout not shown: $out"
grep -qx 'note on stderr' <<<"$out" || fail "stderr not shown: $out"
grep -qx 'token=\*\*\*REDACTED\*\*\*' <<<"$out" || fail "the raw secret is not redacted: $out"
grep -qx 'b64=\*\*\*REDACTED\*\*\*' <<<"$out" || fail "the base64 secret is not redacted: $out"
no_secret "logs (text)" "$out"
sp logs "$ok" --db "$db" --json
expect_json '.runId == $id and (.entries | length) == 1 and
  (.entries[0] | .nodeId == "say" and .attempt == 1 and (.attemptId | startswith("inv_"))
    and .result.status == "success" and .result.outcome == "ok" and .result.state == "finished"
    and (.startedAtMs | test("^[0-9]+$")) and (.endedAtMs | test("^[0-9]+$"))
    and (.stdout.text | contains("hello from stdout")) and .stdout.droppedBytes == "0"
    and (.stderr.text == "note on stderr\n***REDACTED***"))' "logs --json" --arg id "$ok"
no_secret "logs --json" "$out"
sp events "$ok" --db "$db" --json
no_secret "events --json (the text output is redacted too)" "$out"
sp status "$ok" --db "$db" --json
no_secret "status --json" "$out"
sp logs "$ok" --db "$db" --stream stderr
grep -qx 'note on stderr' <<<"$out" && ! grep -q 'hello from stdout' <<<"$out" && ! grep -q '^-- stdout' <<<"$out" ||
  fail "--stream stderr: $out"
checks=$((checks + 1))
for f in "$db" "$db-wal"; do
  [ ! -f "$f" ] || ! grep -aqF -- "$secret" "$f" || fail "the secret is in $f"
  [ ! -f "$f" ] || ! grep -aqF -- "$b64" "$f" || fail "the base64 secret is in $f"
done

# ---- a missing secret file fails the step before it runs ----
wf "$tmp/nosecret.json" say 'echo ran' '{"secrets": {"TOKEN": {"file": "/nonexistent/token"}}}'
sp run "$tmp/nosecret.json" --db "$db" --json
expect_rc 1 "a missing secret file"
sp events "$(jq -r .runId <<<"$out")" --db "$db" --json
expect_json '[.events[] | select(.kind == "activity.result")][0].payload.error.code ==
  "command.secret-unavailable"' "command.secret-unavailable"

# ---- stderr after failure ----
wf "$tmp/fail.json" check 'echo "checking"; echo "boom: the check failed" >&2; exit 3'
sp run "$tmp/fail.json" --db "$db" --json
expect_rc 1 "the failing step fails the run"
failed=$(jq -r .runId <<<"$out")
sp logs "$failed" --db "$db"
grep -q '^== check · attempt 1 · failed (command.exit) · ' <<<"$out" || fail "failure header: $out"
grep -qx 'boom: the check failed' <<<"$out" || fail "stderr after failure: $out"
sp logs "$failed" check --db "$db" --json
expect_json '(.entries | length) == 1 and .entries[0].result.status == "failure"
  and .entries[0].result.code == "command.exit"
  and .entries[0].stderr.text == "boom: the check failed\n"' "failure --json"

# ---- 64 KiB, and what came before; invalid UTF-8 ----
wf "$tmp/big.json" big 'head -c 100000 /dev/zero | tr "\0" x >&2; echo "LAST-LINE" >&2;
  printf "bad \377\376 bytes\n"'
sp run "$tmp/big.json" --db "$db" --json
expect_rc 0 "the big step completes"
big=$(jq -r .runId <<<"$out")
sp logs "$big" --db "$db" --json
expect_json '.entries[0].stderr as $e | ($e.text | length) == 65536 and
  ($e.text | endswith("xxxxLAST-LINE\n")) and $e.droppedBytes == "34474"' "the last 64 KiB of stderr"
expect_json '.entries[0].stdout.text == "bad \ufffd\ufffd bytes\n"' "invalid UTF-8 is repaired"
sp logs "$big" --db "$db"
grep -qx '… 34474 bytes earlier not kept' <<<"$out" || fail "the cut is not marked: ${out:0:300}"

# ---- a retry: --attempt, <node>, and the refusals ----
wf "$tmp/retry.json" flaky 'echo "attempt $SPORE_ATTEMPT says hi"; [ "$SPORE_ATTEMPT" -ge 2 ]' \
  '{"retry": {"maxAttempts": 3, "backoffMs": "0"}}'
sp run "$tmp/retry.json" --db "$db" --json
expect_rc 0 "the flaky step completes on its second attempt"
retry=$(jq -r .runId <<<"$out")
sp logs "$retry" --db "$db" --json
expect_json '[.entries[] | [.attempt, .result.status]] == [[1, "failure"], [2, "success"]]' \
  "both attempts in the order they ended"
sp logs "$retry" --attempt 2 --db "$db"
expect_rc 0 "--attempt 2"
grep -qx 'attempt 2 says hi' <<<"$out" && ! grep -q 'attempt 1 says' <<<"$out" || fail "--attempt 2: $out"
sp logs "$retry" flaky --attempt 1 --db "$db" --json
expect_json '(.entries | length) == 1 and .entries[0].stdout.text == "attempt 1 says hi\n"' \
  "<node> --attempt 1"
sp logs "$retry" flaky --attempt 3 --db "$db"
expect_rc 0 "an attempt that never ran"
grep -q "no logs kept by attempt 3 of node flaky" <<<"$out" || fail "attempt 3: $out"
expect_error 2 node.unknown "an unknown node" -- logs "$retry" nosuchnode --db "$db"
expect_error 2 usage.invalid-value "a malformed node" -- logs "$retry" 'bad node!' --db "$db"
expect_error 2 usage.invalid-value "--attempt 0" -- logs "$retry" --attempt 0 --db "$db"
expect_error 2 usage.invalid-value "--stream both" -- logs "$retry" --stream both --db "$db"
expect_error 2 usage "three arguments" -- logs "$retry" flaky extra --db "$db"
expect_error 2 run.not-found "an unknown run" -- logs run_00000000000000000000000000000000 --db "$db"

# ---- a run without logs says so ----
jq -n '{format: "runspore.workflow/0.1", name: "wait-only", start: "wait",
  nodes: {wait: {kind: "await-signal", signal: "go", outcomes: {received: "done"}},
          done: {kind: "complete"}}}' >"$tmp/wait.json"
sp run "$tmp/wait.json" --db "$db" --json
expect_rc 3 "the signal-only run waits"
waiting=$(jq -r .runId <<<"$out")
sp logs "$waiting" --db "$db"
expect_rc 0 "logs of a run without logs"
grep -q "no logs kept by its attempts (native steps keep none" <<<"$out" || fail "no reason given: $out"
sp logs "$waiting" --db "$db" --json
expect_json '.entries == [] and (.note | test("no logs"))' "no logs --json"
sp logs "$waiting" --follow --db "$db"
expect_rc 0 "--follow of a parked run ends at once"

# ---- --follow ----
jq -n '{format: "runspore.workflow/0.1", name: "slow", start: "a",
  actions: {a: {kind: "command", effect: "idempotent", output: "none",
                argv: ["/bin/sh", "-c", "echo \"step $SPORE_NODE_ID\"; sleep 0.3"]},
            slow: {kind: "command", effect: "idempotent", output: "none",
                argv: ["/bin/sh", "-c", "echo \"step $SPORE_NODE_ID\"; sleep 3"]}},
  nodes: {a: {kind: "activity", action: "a", outcomes: {ok: "b"}},
          b: {kind: "activity", action: "a", outcomes: {ok: "c"}},
          c: {kind: "activity", action: "slow", outcomes: {ok: "done"}},
          done: {kind: "complete"}}}' >"$tmp/slow.json"
sp start "$tmp/slow.json" --db "$db" --key follow --json
follow=$(jq -r .runId <<<"$out")
start_bg follow logs "$follow" --follow --db "$db"
follower=$bg_pid
start_bg worker resume "$follow" --db "$db" --poll-ms 20
wait_for 20 grep -qx 'step b' "$tmp/follow.out" || fail "--follow did not print step b as it ended"
status_is "$follow" completed && fail "the run completed before step b's log was followed"
wait_bg "$bg_pid" 30
[ "$bg_rc" -eq 0 ] || fail "resume exited $bg_rc"
wait_bg "$follower" 10
[ "$bg_rc" -eq 0 ] || fail "--follow exited $bg_rc once the run completed"
[ "$(grep '^step ' "$tmp/follow.out" | tr '\n' ' ')" = "step a step b step c " ] ||
  fail "--follow printed: $(cat "$tmp/follow.out")"
[ "$(grep -c '^== ' "$tmp/follow.out")" -eq 3 ] || fail "--follow printed an attempt twice: $(cat "$tmp/follow.out")"
# Ctrl-C ends --follow with 130
sp start "$tmp/slow.json" --db "$db" --key follow-int --json
start_bg follow-int logs "$(jq -r .runId <<<"$out")" --follow --db "$db"
sleep 0.3
kill -INT "$bg_pid"
wait_bg "$bg_pid" 5
[ "$bg_rc" -eq 130 ] || fail "--follow after SIGINT exited $bg_rc, want 130"

# ---- an agent step: its step CLI's stderr ----
export SPORE_AGENT_DIR="$tmp/agent"
mkdir -m 700 "$SPORE_AGENT_DIR"
sp run examples/agent.json --db "$db" --json --input '{"title":"CSV import loses the last row"}'
expect_rc 0 "the agent example completes"
sp logs "$(jq -r .runId <<<"$out")" --db "$db" --json
expect_json '(.entries | length) == 1 and .entries[0].nodeId == "triage"
  and .entries[0].stdout.text == "" and (.entries[0].stderr.text | test("^step-pid=[0-9]+\n"))' \
  "an agent step keeps its step CLI's stderr"

# ---- a component step: its log file, also what its detached job wrote ----
runners="$(dirname "$spore")/runners"
if [ -f "$runners/detached-job.wasm" ]; then
  cp -r "$root/examples/runners" "$tmp/example"
  cp "$runners/detached-job.wasm" "$tmp/example/"
  sp run "$tmp/example/detached-job.json" --db "$db" --poll-ms 50 --json
  expect_rc 0 "the component example completes"
  sp logs "$(jq -r .runId <<<"$out")" job --db "$db" --json
  expect_json '(.entries | length) == 1 and
    (.entries[0].stderr.text | contains("detached-job: the job started")) and
    (.entries[0].stderr.text | contains("finished"))' \
    "a component step keeps its runner's log lines and its job's output"
else
  fail "the test runners are not built ($runners)"
fi

finish
