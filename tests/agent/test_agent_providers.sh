#!/usr/bin/env bash
# test_agent_providers.sh - real agents (agent-providers.md §4) through the
# real binary and the real sandbox: `spore run` of agent steps whose step
# CLI is spore-step with provider openai or anthropic, against the local
# model server (tests/agent/model_server.c) answering recorded exchanges in
# the APIs' wire shapes, reached only through the model gateway (the
# sandbox keeps network "none").
#
# Cases: a stdio MCP server started inside the sandbox, its tools offered
# and called (and one that does not start: exit 3); a tool loop over several turns that reads, edits and runs, then
# returns structured output (openai), the same with a repair turn and a
# fenced answer (anthropic); every escape a tool may try (../, an absolute
# path, a symlink, writing a readable folder, an ungranted program, an
# ambiguous edit, bad arguments) refused; 429 then success; 500 until the
# bound (a retryable 502, then the breaker); 401 (exit 3); 400 (exit 1 with
# the provider's code and never its message); an oversize reply; a malformed
# reply; a slow reply past the timeout; six bad tool calls (exit 1);
# maxTurns without a final answer; the new action members validated;
# spore-step's configuration checked. What the server received is asserted
# (path, headers, tools, schema, the conversation). The key canary: the key
# is found nowhere inside the sandbox (files, environment, process
# arguments: key_probe run by the `run` tool, with a positive control), and
# nowhere in the store, the CLI output, spore's stderr (the gateway's log)
# or the agent directory, after every path above.
#
# usage: test_agent_providers.sh <spore> <repo-root> <model_server> <key_probe>
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$1" "$2"
server_bin=${3:?model_server}
probe_bin=${4:?key_probe}
probe_dir=$(cd "$(dirname "$probe_bin")" && pwd)

export SPORE_AGENT_DIR="$tmp/agent"
mkdir -m 700 "$SPORE_AGENT_DIR"
KEY='sk-canary-7d1f0e9c8b7a69584736251403f2e1d0-provider'
CONTROL='control-4a5b6c7d8e9f-planted'
mkdir -p "$tmp/secrets" "$tmp/data" "$tmp/work" "$tmp/srv"
printf '%s\n' "$KEY" >"$tmp/secrets/provider-key"
printf '%s\n' 'sk-wrong-key-for-the-401-case' >"$tmp/secrets/wrong-key"
mask() { # <text>: its bytes XOR 0x5a, in hex (key_probe unmasks it)
  local b hex=""
  for b in $(printf '%s' "$1" | od -An -tu1 -v); do hex+=$(printf '%02x' $((b ^ 90))); done
  printf '%s' "$hex"
}
KEYHEX=$(mask "$KEY")
CTLHEX=$(mask "$CONTROL")

fixtures() {
  echo "hello from the notes" >"$tmp/data/notes.txt"
  printf 'name=demo\nlevel=1\n' >"$tmp/work/config.ini"
  printf 'same\nsame\n' >"$tmp/work/twice.txt"
  printf '%s\n' "$CONTROL" >"$tmp/work/control.txt"
  ln -sfn /etc/passwd "$tmp/work/link"
  ln -sfn /etc "$tmp/work/dirlink"
  rm -f "$tmp/work/made.txt"
}

# start_server <fixture> [key]: the model server on a free port; sets port, rec.
srv_n=0
start_server() {
  srv_n=$((srv_n + 1))
  local script="$tmp/srv/$srv_n.json"
  rec="$tmp/srv/$srv_n.record.jsonl"
  sed -e "s|@TMP@|$tmp|g" -e "s|@PROBE@|$probe_dir/key_probe|g" -e "s|@KEYHEX@|$KEYHEX|g" \
    -e "s|@CTLHEX@|$CTLHEX|g" "$root/tests/fixtures/providers/$1.json" >"$script"
  : >"$rec"
  "$server_bin" --script "$script" --record "$rec" --port-file "$tmp/srv/$srv_n.port" --key "${2:-$KEY}" \
    2>"$tmp/srv/$srv_n.err" &
  server_pid=$!
  wait_for 5 test -s "$tmp/srv/$srv_n.port" || fail "the model server did not start"
  port=$(cat "$tmp/srv/$srv_n.port")
}
stop_server() { kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; }

# workflow <name> <provider> [jq object merged into the action]
workflow() {
  local base="http://127.0.0.1:$port" extra=${3:-'{}'}
  [ "$2" = openai ] && base="$base/v1"
  jq -n --arg p "$2" --arg base "$base" --arg key "$tmp/secrets/${KEYFILE:-provider-key}" \
    --arg data "$tmp/data" --arg work "$tmp/work" --arg probe "$probe_dir" --argjson extra "$extra" '{
    format: "runspore.workflow/0.1", name: "providers", start: "step",
    actions: {step: ({kind: "agent", stepCli: ["spore-step"], provider: $p,
      model: (if $p == "openai" then "gpt-4o-mini" else "claude-3-5-sonnet-20241022" end),
      baseUrl: $base, systemPrompt: "You maintain config files.",
      timeoutMs: "20000", maxTurns: 12,
      sandbox: {readable: [$data, $probe], writable: [$work]},
      secrets: {PROVIDER_API_KEY: {file: $key}},
      effect: "idempotent", outcomes: ["ok"], retry: {maxAttempts: 1}} + $extra)},
    nodes: {step: {kind: "activity", action: "step", input: {query: "Raise the level in config.ini to 2.", context: {ticket: "T-1"}}, outcomes: {ok: "done"}},
            done: {kind: "complete", output: {"$get": ["nodes", "step", "output"]}}}}' >"$tmp/wf-$1.json"
}

SCHEMA='{"type": "object", "properties": {"summary": {"type": "string"}, "level": {"type": "integer"}}, "required": ["summary", "level"], "additionalProperties": false}'
TOOLS='["read_file", "list_files", "search_files", "write_file", "edit_file", "run"]'
tools_extra() { jq -n --argjson s "$SCHEMA" --argjson t "$TOOLS" --arg probe "$probe_dir/key_probe" \
  '{outputSchema: $s, tools: $t, runPrograms: ["cat", $probe]}'; }

# rec_jq <filter>: the filter over the record (an array of requests) must be true.
rec_jq() {
  checks=$((checks + 1))
  jq -e -s "$1" "$rec" >/dev/null 2>&1 || fail "$2: the server's record does not satisfy $1"
}

# ---- the action's new members are validated ----
start_server openai-429
workflow valid openai "$(tools_extra)"
sp validate "$tmp/wf-valid.json"
expect_rc 0 "a real-provider action validates"
for bad in '{"provider": "fake"}' '{"baseUrl": "http://user:pw@127.0.0.1/v1"}' '{"baseUrl": "ftp://h/"}' \
  '{"baseUrl": "http://h/v1?key=1"}' '{"temperature": "3"}' '{"temperature": 1}' '{"maxTurns": 201}' \
  '{"tools": ["read_file", "shell"]}' '{"runPrograms": ["bin/../sh"]}' '{"maxOutputTokens": 0}'; do
  workflow invalid openai "$bad"
  sp validate "$tmp/wf-invalid.json" --json
  expect_rc 2 "refused at validation: $bad"
  expect_json '.error.code == "action.invalid"' "action.invalid: $bad"
done
grep -q 'user:pw' <<<"$out$err" && fail "a refused baseUrl's credentials were echoed"
# spore-step itself: a real provider without a model or endpoint is exit 3
printf '%s' '{"query":"q","systemPrompt":"","outputSchema":{},"timeout_ms":1000,"stepId":"cfg-000000000001","runDir":"'"$tmp"'/cfg"}' >"$tmp/cfg.req"
set +e
SPORE_AGENT_CONFIG='{"provider":"openai"}' "$(dirname "$spore")/spore-step" <"$tmp/cfg.req" >"$tmp/cfg.out" 2>"$tmp/cfg.err"
code=$?
SPORE_AGENT_CONFIG='{"provider":"openai","surprise":1}' "$(dirname "$spore")/spore-step" <"$tmp/cfg.req" >/dev/null 2>"$tmp/cfg2.err"
code2=$?
set -e
checks=$((checks + 2))
[ "$code" -eq 3 ] && grep -q 'step.config-invalid: provider openai needs a model' "$tmp/cfg.err" ||
  fail "spore-step without a model: exit $code, $(cat "$tmp/cfg.err")"
[ "$code2" -eq 3 ] && grep -q 'unknown member' "$tmp/cfg2.err" || fail "an unknown config member: exit $code2"
stop_server

# ---- the tool loop: openai, then anthropic with a repair turn ----
for api in openai anthropic; do
  fixtures
  start_server "$api-tools"
  workflow "$api-tools" "$api" "$(tools_extra)"
  sp run "$tmp/wf-$api-tools.json" --db "$db" --key "$api-tools" --json
  expect_rc 0 "$api tool loop completes"
  expect_json '.status == "completed" and .result.output.level == 2 and
    .result.output.summary == "raised the level to 2" and (.result.output | has("success") | not)' \
    "$api: the structured output"
  id=$(jq -r .runId <<<"$out")
  grep -q '^level=2$' "$tmp/work/config.ini" || fail "$api: edit_file did not change config.ini"
  [ "$(cat "$tmp/work/twice.txt")" = "$(printf 'same\nsame')" ] || fail "$api: the ambiguous edit changed the file"
  [ ! -e "$tmp/data/new.txt" ] || fail "$api: write_file wrote into a readable folder"
  [ "$(cat "$tmp/work/made.txt" 2>/dev/null)" = "made by the model" ] || fail "$api: write_file did not write made.txt"
  sp events "$id" --db "$db" --json
  expect_json '[.agentEvents[] | select(.kind == "tool_call") | .data.name] as $n |
    ($n | index("read_file")) != null and ($n | index("edit_file")) != null and ($n | index("run")) != null' \
    "$api: spore events shows the tool calls"
  expect_json '[.agentEvents[] | select(.kind == "result")] | length == 1 and .[0].data.input_tokens > 0' \
    "$api: the result event carries the token counts"
  sp status "$id" --db "$db"
  grep -q 'tool_call .*edit_file' <<<"$out" || fail "$api: status text lacks the edit_file call"
  stop_server
  path=/v1/chat/completions
  [ "$api" = anthropic ] && path=/v1/messages
  turns=6
  [ "$api" = anthropic ] && turns=7
  rec_jq "length == $turns and all(.[]; .method == \"POST\" and .path == \"$path\")" "$api: one request per turn, on the API path"
  if [ "$api" = openai ]; then
    rec_jq 'all(.[]; .headers.authorization == "<key>" and (.headers | has("x-api-key") | not))' "openai: the gateway added the bearer key"
    rec_jq '.[0].body.model == "gpt-4o-mini" and .[0].body.messages[0].role == "system" and
      (.[0].body.messages[0].content | test("You maintain config files")) and
      (.[0].body.messages[1].content | test("Raise the level") and test("T-1")) and
      ([.[0].body.tools[].function.name] == ["read_file", "list_files", "search_files", "write_file", "edit_file", "run"]) and
      .[0].body.tools[4].function.parameters.required == ["path", "old_string", "new_string"] and
      .[0].body.response_format.type == "json_schema" and
      .[0].body.response_format.json_schema.schema.required == ["summary", "level"]' "openai: model, prompt, tools, schema sent"
    rec_jq '[.[1].body.messages[] | select(.role == "tool")][0] | .tool_call_id == "call_1_0" and (.content | test("hello from the notes"))' \
      "openai: the tool result went back to the model"
    tool_msgs='[.[] | .body.messages[] | select(.role == "tool") | .content]'
  else
    rec_jq 'all(.[]; .headers["x-api-key"] == "<key>" and .headers["anthropic-version"] == "2023-06-01" and (.headers | has("authorization") | not))' \
      "anthropic: the gateway added x-api-key, the version header passed"
    rec_jq '.[0].body.model == "claude-3-5-sonnet-20241022" and .[0].body.max_tokens == 4096 and
      (.[0].body.system | test("You maintain config files") and test("JSON Schema")) and
      ([.[0].body.tools[].name] | length == 6) and .[0].body.tools[0].input_schema.type == "object"' \
      "anthropic: model, system, tools sent"
    rec_jq '.[1].body.messages[2].content[0] | .type == "tool_result" and (.content | test("hello from the notes"))' \
      "anthropic: the tool result went back as a tool_result block"
    rec_jq '.[6].body.messages[-1].role == "user" and (.[6].body.messages[-1].content | type == "string" and test("output schema"))' \
      "anthropic: one repair turn asked for the schema"
    tool_msgs='[.[] | .body.messages[] | select(.role == "user" and (.content | type == "array")) | .content[] | .content]'
  fi
  # the refusals the model was told about
  for want in 'a path with ".." is refused' '/etc/passwd: outside the working directory' \
    'link: a symlink is refused' 'new.txt: outside the run directory and the writable folders' \
    'program "sh" is not granted' 'old_string occurs more than once' 'bad arguments for read_file' \
    '^exit 0\nname=demo\nlevel=2' 'config.ini:2: level=2' 'control.txt' \
    'dirlink/passwd: a symlink is refused' '^error: /: outside the working directory' \
    'program "/bin/cat" is not granted' 'wrote 18 bytes to .*/work/made.txt'; do
    checks=$((checks + 1))
    jq -e -s --arg w "$want" "$tool_msgs | any(test(\$w))" "$rec" >/dev/null ||
      fail "$api: no tool result matches /$want/"
  done
  # the key canary inside the sandbox: files, environment, arguments
  checks=$((checks + 1))
  jq -e -s "$tool_msgs | any(test(\"^exit 0\\nkey files=0 env=0 args=0 control files=1 scanned=[1-9]\"))" "$rec" >/dev/null ||
    fail "$api: key_probe found the key inside the sandbox, or saw nothing: $(jq -s -c "$tool_msgs | map(select(test(\"key files\")))" "$rec")"
done

# ---- 429, then success (no schema, default tools) ----
start_server openai-429
workflow rate openai
sp run "$tmp/wf-rate.json" --db "$db" --key rate --json
expect_rc 0 "429 then success completes"
expect_json '.result.output.summary == "The answer is 42."' "429: the answer"
rid=$(jq -r .runId <<<"$out")
sp events "$rid" --db "$db" --json
expect_json '[.agentEvents[] | select(.kind == "error") | .data.message] | any(test("HTTP 429: retrying"))' "429: the retry is an event"
stop_server
rec_jq 'length == 2 and ([.[0].body.tools[].function.name] == ["read_file", "list_files", "search_files"]) and
  (.[0].body | has("response_format") | not)' "429: the same request twice, read-only tools by default"

# ---- 500 until the bound: a retryable 502 each attempt, then the breaker ----
start_server openai-500
workflow five-hundred openai '{"retry": {"maxAttempts": 6, "backoffMs": "1"}}'
sp run "$tmp/wf-five-hundred.json" --db "$db" --key five-hundred --json
expect_rc 1 "500 until the bound fails"
rid=$(jq -r .runId <<<"$out")
sp status "$rid" --db "$db" --json
expect_json '.result.error.code == "agent.breaker-open"' "500: after five transient failures the breaker is open"
sp events "$rid" --db "$db" --json
expect_json '([.events[] | select(.payload.error.code? == "agent.infra-transient")] | length) == 5 and
  ([.events[] | select(.payload.error.code? == "agent.infra-transient") | .payload.retryable] | all)' \
  "500: five attempts ended agent.infra-transient, retryable"
stop_server
rec_jq 'length == 20' "500: four requests per attempt (the bound), none after the breaker opened"

# ---- 401: exit 3 ----
KEYFILE=wrong-key
start_server anthropic-401
workflow unauthorized anthropic '{"secrets": {"PROVIDER_API_KEY": {"file": "'"$tmp/secrets/wrong-key"'"}}}'
sp run "$tmp/wf-unauthorized.json" --db "$db" --key unauthorized --json
expect_rc 1 "401 fails"
rid=$(jq -r .runId <<<"$out")
sp status "$rid" --db "$db" --json
expect_json '.result.error.code == "agent.precondition-failed" and
  (.result.error.details.stderrTail | test("provider.credentials-refused.*HTTP 401.*authentication_error"))' "401: exit 3, the provider's code"
stop_server
rec_jq 'length == 1 and .[0].headers["x-api-key"] == "<other>"' "401: one request, with the (wrong) key the gateway added"
unset KEYFILE

# ---- 400: exit 1 with the provider's code, never its message ----
start_server anthropic-400
workflow refused anthropic
sp run "$tmp/wf-refused.json" --db "$db" --key refused --json
rid=$(jq -r .runId <<<"$out")
sp status "$rid" --db "$db" --json
expect_json '.result.error.code == "agent.internal-error" and
  (.result.error.details.stderrTail | test("provider.request-refused.*HTTP 400.*invalid_request_error")) and
  (tostring | test("SECRET-PROMPT-TEXT") | not)' "400: exit 1, the code and not the message"
stop_server

# ---- oversize, malformed, slow ----
for c in oversize:provider.reply-too-large:agent.internal-error:3 malformed:provider.reply-malformed:agent.internal-error:3 \
  slow:provider.timeout:agent.infra-transient:1; do
  IFS=: read -r name code want requests <<<"$c"
  start_server "openai-$name"
  extra='{}'
  [ "$name" = slow ] && extra='{"timeoutMs": "3000"}'
  workflow "$name" openai "$extra"
  began=$(now_ms)
  sp run "$tmp/wf-$name.json" --db "$db" --key "$name" --json
  took=$(($(now_ms) - began))
  expect_rc 1 "$name fails"
  rid=$(jq -r .runId <<<"$out")
  sp status "$rid" --db "$db" --json
  if [ "$want" = agent.infra-transient ]; then
    expect_json '.result.error.code == $w and (.result.error.message | test($c))' \
      "$name: $want ($code)" --arg w "$want" --arg c "$code"
    sp events "$rid" --db "$db" --json
    expect_json '[.events[] | select(.payload.error.code? == $w) | .payload.retryable] == [true]' \
      "$name: retryable" --arg w "$want"
    [ "$took" -lt 5000 ] || fail "$name: the step answered its timeout after $took ms (timeoutMs 3000)"
  else
    expect_json '.result.error.code == $w and (.result.error.details.stderrTail | test($c))' \
      "$name: $want ($code)" --arg w "$want" --arg c "$code"
  fi
  stop_server
  rec_jq "length == $requests" "$name: $requests request(s)"
done

# ---- bad tool arguments past the bound; maxTurns without a final answer ----
start_server openai-bad-args
workflow bad-args openai
sp run "$tmp/wf-bad-args.json" --db "$db" --key bad-args --json
rid=$(jq -r .runId <<<"$out")
sp status "$rid" --db "$db" --json
expect_json '.result.error.code == "agent.internal-error" and
  (.result.error.details.stderrTail | test("tool.bad-arguments: the model sent bad tool arguments 6 times"))' \
  "six bad tool calls end the step (exit 1)"
sp events "$rid" --db "$db" --json
expect_json '[.agentEvents[] | select(.kind == "tool_result") | .data.output] |
  length == 6 and all(test("error: ")) and any(test("not valid JSON")) and any(test("no_such_tool"))' \
  "bad arguments: each answered as a tool error first"
stop_server
start_server openai-max-turns
workflow max-turns openai '{"maxTurns": 2}'
sp run "$tmp/wf-max-turns.json" --db "$db" --key max-turns --json
rid=$(jq -r .runId <<<"$out")
sp status "$rid" --db "$db" --json
expect_json '.result.error.code == "agent.failed" and (.result.error.message | test("step.max-turns"))' \
  "maxTurns without a final answer: success false"
stop_server
rec_jq 'length == 2' "maxTurns: two model turns"

# ---- a stdio MCP server inside the sandbox ----
start_server openai-mcp
workflow mcp openai '{"mcpServers": [{"name": "kb", "command": ["'"$probe_dir"'/mcp_server"]}]}'
sp run "$tmp/wf-mcp.json" --db "$db" --key mcp --json
expect_rc 0 "a step with a stdio MCP server completes"
expect_json '.result.output.summary == "alpha is 42"' "mcp: the answer"
rid=$(jq -r .runId <<<"$out")
sp events "$rid" --db "$db" --json
expect_json '[.agentEvents[] | select(.kind == "tool_call") | .data.name] == ["kb.lookup", "kb.lookup", "kb.broken"]' \
  "mcp: the events name the tools <server>.<tool>"
stop_server
rec_jq '([.[0].body.tools[].function.name] | index("kb__lookup") != null and index("kb__broken") != null) and
  (.[0].body.tools[] | select(.function.name == "kb__lookup") | .function.parameters.required == ["key"] and
   .function.description == "Look a key up in the knowledge base.")' "mcp: the server's tools offered with their schemas"
rec_jq '[.[1].body.messages[] | select(.role == "tool") | .content] as $c |
  ($c[0] == "value of alpha is 42") and ($c[1] | test("bad arguments for kb.lookup: .*key")) and
  ($c[2] == "the broken tool failed")' "mcp: results, the schema check, the server's isError"
start_server openai-429
workflow mcp-broken openai '{"mcpServers": [{"name": "gone", "command": ["/usr/bin/false"]}]}'
sp run "$tmp/wf-mcp-broken.json" --db "$db" --key mcp-broken --json
rid=$(jq -r .runId <<<"$out")
sp status "$rid" --db "$db" --json
expect_json '.result.error.code == "agent.precondition-failed" and
  (.result.error.details.stderrTail | test("mcp.server-unavailable: MCP server \"gone\""))' "mcp: a server that does not start is exit 3"
stop_server
rec_jq 'length == 0' "mcp: the model is not called when a server does not start"
workflow mcp-invalid openai '{"mcpServers": [{"name": "k.b", "command": ["x"]}]}'
sp validate "$tmp/wf-mcp-invalid.json"
expect_rc 2 "a stdio server name outside [A-Za-z0-9_-] is refused"

# ---- the key canary outside the sandbox ----
dump="$tmp/store.dump"
sqlite3 "$db" .dump >"$dump"
grep -q 'tool_call' "$dump" || fail "no kept events in the store: the paths did not run"
grep -q 'spore: agent gateway .*: POST /chat/completions -> 200, [0-9]* bytes up' "$tmp"/sp*.err ||
  fail "the gateway logged nothing"
b64=$(printf '%s' "$KEY" | base64 -w0)
for needle in "$KEY" "${KEY:3:30}" "$b64"; do
  for f in "$db" "$db-wal" "$dump" "$tmp"/sp*.out "$tmp"/sp*.err "$tmp"/srv/*.record.jsonl "$tmp"/srv/*.err; do
    [ -e "$f" ] || continue
    checks=$((checks + 1))
    if grep -a -q -F -- "$needle" "$f"; then
      fail "a key form found in $(basename "$f")"
    fi
  done
  if grep -r -a -q -F -- "$needle" "$SPORE_AGENT_DIR" 2>/dev/null; then
    fail "a key form found in the agent directory"
  fi
done
[ -z "$(ls -A "$SPORE_AGENT_DIR")" ] || fail "sandboxes left behind: $(ls -A "$SPORE_AGENT_DIR")"

finish
