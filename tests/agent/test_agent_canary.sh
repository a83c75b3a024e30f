#!/usr/bin/env bash
# test_agent_canary.sh - A3 (agent-step.md §10, §6): a canary secret fed
# through every path of an agent step, through the real binary and the real
# sandbox. The step (spore-step --provider fake) reads its secret files in the
# sandbox and prints them everywhere it can: event text, tool inputs and
# outputs, stderr (raw, base64, in an Authorization header), the summary,
# body.error, the 502 error, the structured output (values and a key),
# result.json, before `start` (exit 3), in a step that breaks the protocol,
# that exits 1, that ends with exit 4, that hangs past its deadline. A plain
# MCP header value is refused at validation. Afterwards no form of either
# secret may appear in the database (WAL included), in any CLI output (text
# and JSON: run, status, events, agent classify), in the worker's stderr or
# in the agent directory - while the store does hold ***REDACTED*** and every
# expected failure code (the paths really ran).
#
# usage: test_agent_canary.sh <spore> <repo-root>
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"

export SPORE_AGENT_DIR="$tmp/agent"
mkdir -m 700 "$SPORE_AGENT_DIR"
mkdir -p "$tmp/secrets" "$tmp/scenarios" "$tmp/out"
SECRET1='canary-9f8e7d6c5b4a39281706f5e4d3c2b1a0-provider'
SECRET2='mcp-canary-token-00112233445566778899aabb'
printf '%s\n' "$SECRET1" >"$tmp/secrets/provider-key"
printf '%s' "$SECRET2" >"$tmp/secrets/docs-token"
B64_1=$(printf '%s\n' "$SECRET1" | base64 -w0)
B64_1T=$(printf '%s' "$SECRET1" | base64 -w0)
B64_2=$(printf '%s' "$SECRET2" | base64 -w0)

S='{{secret:PROVIDER_API_KEY}}'
M='{{secret:docs-token}}'
ALL="key $S mcp $M b64 {{secret64:PROVIDER_API_KEY}}"
events=$(jq -n --arg all "$ALL" --arg s "$S" '[
  {kind: "thinking", data: {text: $all}},
  {kind: "tool_call", data: {name: "Fetch", input: {headers: {Authorization: ("Bearer " + $s)}, q: $all}, call_id: "c1"}},
  {kind: "tool_result", data: {output: {echo: $all}, call_id: "c1"}},
  {kind: "error", data: {message: $all}},
  {kind: "result", data: {text: $all, input_tokens: 1, output_tokens: 1, response_model: $s}}]')
stderr_lines=$(jq -n --arg all "$ALL" --arg s "$S" '[$all, ("Authorization: Bearer " + $s), ("curl -H \"X-Key: " + $s + "\"")]')

scenario() { # <name> <jq object merged into the scenario>
  jq -n --argjson ev "$events" --argjson err "$stderr_lines" "{events: \$ev, stderr: \$err} + $2" \
    >"$tmp/scenarios/$1.json"
}
scenario success "{result: {success: true, summary: \"done $ALL\", note: \"$S\", nested: {k: [\"$ALL\"]}}}"
scenario key "{result: {success: true, summary: \"s\", \"$S\": 1}}"
scenario failed "{result: {success: false, summary: \"$ALL\", error: \"failed: $ALL\"}}"
scenario transient "{failure: \"timeout\", failureMessage: \"upstream: $ALL\"}"
scenario internal "{failure: \"internal-error\", failureMessage: \"crash: $ALL\"}"
scenario precondition "{failure: \"precondition\", failureMessage: \"no creds: $ALL\"}"
scenario violation "{failure: \"malformed-line\"}"
scenario unverified "{failure: \"stdout-closed\", result: {success: true, summary: \"$ALL\", output: \"$ALL\"}}"
scenario deadline "{failure: \"hang\"}"

workflow() { # <scenario> [timeoutMs]
  jq -n --arg sc "$tmp/scenarios/$1.json" --arg p1 "$tmp/secrets/provider-key" \
    --arg p2 "$tmp/secrets/docs-token" --arg dir "$tmp/scenarios" --arg t "${2:-30000}" '{
    format: "runspore.workflow/0.1", name: "canary", start: "step",
    actions: {step: {kind: "agent", stepCli: ["spore-step", "--provider", "fake", "--scenario", $sc],
      timeoutMs: $t, provider: ("canary-" + ($sc | split("/") | last)),
      sandbox: {readable: [$dir]},
      secrets: {PROVIDER_API_KEY: {file: $p1}, "docs-token": {file: $p2}},
      mcpServers: [{name: "docs", url: "https://mcp.example/", headers: [
        {name: "Authorization", source: "Secret", secretName: "docs-token"}]}],
      allowedTools: ["Read"], effect: "idempotent", outcomes: ["ok"], retry: {maxAttempts: 1}}},
    nodes: {step: {kind: "activity", action: "step", input: {query: "canary"}, outcomes: {ok: "done"}},
            done: {kind: "complete", output: {"$get": ["nodes", "step", "output"]}}}}' \
    >"$tmp/wf-$1.json"
}

declare -A want=(
  [success]=completed [key]=completed [failed]=agent.failed [transient]=agent.infra-transient
  [internal]=agent.internal-error [precondition]=agent.precondition-failed
  [violation]=agent.protocol-violation [unverified]=agent.result-unverified [deadline]=agent.deadline
)
for name in success key failed transient internal precondition violation unverified deadline; do
  timeout=30000
  [ "$name" = deadline ] && timeout=500
  workflow "$name" "$timeout"
  sp run "$tmp/wf-$name.json" --db "$db" --key "canary-$name" --json
  rid=$(jq -r '.runId // empty' <<<"$out")
  [ -n "$rid" ] || { fail "$name: no run ($out $err)"; continue; }
  if [ "${want[$name]}" = completed ]; then
    expect_rc 0 "$name completes"
  else
    expect_rc 1 "$name fails"
    sp status "$rid" --db "$db" --json
    expect_json '.result.error.code == $c' "$name: the failure code ${want[$name]}" \
      --arg c "${want[$name]}"
  fi
  sp status "$rid" --db "$db"
  sp status "$rid" --db "$db" --json
  sp events "$rid" --db "$db"
  sp events "$rid" --db "$db" --json
  sp run "$tmp/wf-$name.json" --db "$db" --key "canary-$name" # a finished run, in text
done

# The plain header is refused before anything runs, naming the server only.
jq --arg v "Bearer $SECRET2" '.actions.step.mcpServers[0].headers[0] = {name: "Authorization", value: $v}' \
  "$tmp/wf-success.json" >"$tmp/wf-plain.json"
sp run "$tmp/wf-plain.json" --db "$db"
expect_rc 2 "a plain MCP header value is refused"
grep -q 'MCP server "docs"' <<<"$err" || fail "the refusal does not name the server: $err"
sp validate "$tmp/wf-plain.json" --json
expect_rc 2 "validate refuses the plain header"

# A captured exchange classified with the secret files: redacted output.
printf '{"v":1,"type":"start","stepId":"canary-0123456789ab"}\n' >"$tmp/out/stdout"
printf 'step-pid=2\nAuthorization: Bearer %s\n%s\n' "$SECRET1" "$B64_1" >"$tmp/out/stderr"
sp agent classify --exit 1 --stdout "$tmp/out/stdout" --stderr "$tmp/out/stderr" \
  --step-id canary-0123456789ab --secret-file "$tmp/secrets/provider-key" --json
expect_rc 0 "agent classify"
expect_json '.outcome.code == "agent.internal-error" and (.outcome.details.stderrTail | test("REDACTED"))' \
  "classify redacts the tail"
sp agent classify --exit 1 --stdout "$tmp/out/stdout" --stderr "$tmp/out/stderr" \
  --step-id canary-0123456789ab --secret-file "$tmp/secrets/provider-key"
rm -f "$tmp/out/stderr" # it holds the secret on purpose

# Positive controls: the paths ran and redaction happened.
dump="$tmp/store.dump"
sqlite3 "$db" .dump >"$dump"
grep -q 'REDACTED' "$dump" || fail "the store holds no redacted text: the canary paths did not run"
for code in agent.failed agent.infra-transient agent.internal-error agent.precondition-failed \
  agent.protocol-violation agent.result-unverified agent.deadline; do
  grep -q "$code" "$dump" || fail "the store does not hold $code"
done
grep -q '"kind":"tool_call"' "$dump" || fail "no kept events in the store"
# every form really reached the step and came back redacted (not empty)
grep -q 'key \*\*\*REDACTED\*\*\* mcp \*\*\*REDACTED\*\*\* b64 \*\*\*REDACTED\*\*\*' "$dump" ||
  fail "the step did not print all three secret forms"

# The canary: no form of either secret anywhere.
leaks=0
for needle in "$SECRET1" "$SECRET2" "$B64_1" "$B64_1T" "$B64_2" "${SECRET1:8:24}" "${SECRET2:11:20}"; do
  for f in "$db" "$db-wal" "$dump" "$tmp"/sp*.out "$tmp"/sp*.err; do
    [ -e "$f" ] || continue
    if grep -a -q -F -- "$needle" "$f"; then
      fail "secret form found in $(basename "$f")"
      leaks=$((leaks + 1))
    fi
  done
  if grep -r -a -q -F -- "$needle" "$SPORE_AGENT_DIR" 2>/dev/null; then
    fail "secret form found in the agent directory"
  fi
done
checks=$((checks + 1))
[ -z "$(ls -A "$SPORE_AGENT_DIR")" ] || fail "sandboxes left behind: $(ls -A "$SPORE_AGENT_DIR")"

finish
