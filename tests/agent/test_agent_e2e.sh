#!/usr/bin/env bash
# test_agent_e2e.sh - A2 (agent-step.md §10) through the real binary: the
# example agent workflow (examples/agent.json) runs with `spore run`, with
# spore-step --provider fake inside the local bubblewrap sandbox, completes
# with the structured output, and `spore status` / `spore events` show the
# kept events (JSON and text). Then the two agent failpoints: the process
# aborts right after the exec (host.agent.after-exec) and right after the
# result was classified (host.agent.after-result); the next `spore run`
# resumes after the lease and completes, and no sandbox is left behind.
#
# usage: test_agent_e2e.sh <spore> <repo-root>
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"

export SPORE_AGENT_DIR="$tmp/agent"
mkdir -m 700 "$SPORE_AGENT_DIR"
[ -x "$(dirname "$spore")/spore-step" ] || fail "spore-step is not built beside spore"

sp validate examples/agent.json
expect_rc 0 "validate examples/agent.json"

sp run examples/agent.json --db "$db" --json --input '{"title":"CSV import loses the last row"}'
expect_rc 0 "A2: spore run examples/agent.json"
expect_json '.status == "completed" and .result.output.severity == "medium" and
  .result.output.component == "import/csv" and (.result.output.summary | test("off-by-one")) and
  .result.output.checks.reproduced == true and (.result.output | has("success") | not)' \
  "A2: the structured output"
id=$(jq -r .runId <<<"$out")

sp status "$id" --db "$db" --json
expect_json '(.agentEvents | length) == 6 and
  ([.agentEvents[0:5][] | .seq] == [1, 2, 3, 4, 5]) and
  .agentEvents[0].kind == "thinking" and .agentEvents[0].nodeId == "triage" and
  .agentEvents[0].attempt == 1 and (.agentEvents[0].stepId | test("^triage-[0-9a-f]{12}$")) and
  .agentEvents[1].kind == "tool_call" and .agentEvents[1].data.name == "Read" and
  (.agentEvents[1].data.input | fromjson | .path) == "src/import/csv.c" and
  .agentEvents[4].data.input_tokens == 1840 and
  .agentEvents[5].events == 5 and .agentEvents[5].kept == 5' "A2: status --json shows the events"
sp status "$id" --db "$db"
expect_rc 0 "status (text)"
grep -q '^agent .*triage attempt 1 #2 tool_call .*Read' <<<"$out" || fail "status text lacks the tool_call event: $out"
grep -q '^agent .*triage attempt 1 (triage-[0-9a-f]*): 5 events, 5 kept' <<<"$out" || fail "status text lacks the summary: $out"
sp events "$id" --db "$db" --json
expect_json '(.events | length) == 2 and (.agentEvents | length) == 6' "A2: events --json shows them too"
sp events "$id" --db "$db"
grep -q '#5 result .*1840 in, 212 out tokens' <<<"$out" || fail "events text lacks the result event: $out"
[ -z "$(ls -A "$SPORE_AGENT_DIR")" ] || fail "a sandbox was left behind: $(ls -A "$SPORE_AGENT_DIR")"

# The agent failpoints: abort, then resume. The aborted process's attempt is
# taken over at once (same host, its worker lock is free), so the lease need
# not be short; a 400 ms lease made the resumed attempt itself expire when a
# loaded machine (the sanitizer build) delayed a heartbeat.
for fp in host.agent.after-exec host.agent.after-result; do
  key="fp-$fp"
  SPORE_FAILPOINTS=$fp sp run examples/agent.json --db "$db" --key "$key" --lease-ms 5000 \
    --heartbeat-ms 500
  [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ] || fail "$fp: the process did not abort (exit $rc)"
  grep -q "failpoint reached" <<<"$err" || fail "$fp: no failpoint message: $err"
  sp run examples/agent.json --db "$db" --key "$key" --lease-ms 5000 --heartbeat-ms 500 --json
  expect_rc 0 "$fp: the resumed run completes"
  expect_json '.status == "completed" and .result.output.severity == "medium"' "$fp: output"
  rid=$(jq -r .runId <<<"$out")
  sp status "$rid" --db "$db" --json
  expect_json '[.agentEvents[] | select(.events) | .attempt] | index(2) != null' \
    "$fp: the second attempt's events are kept"
  if [ "$fp" = host.agent.after-result ]; then
    expect_json '[.agentEvents[] | select(.attempt == 1 and .events == 5)] | length == 1' \
      "$fp: the first attempt's events were recorded before the crash"
  fi
done
[ -z "$(ls -A "$SPORE_AGENT_DIR")" ] || fail "a crashed attempt's sandbox was not swept: $(ls -A "$SPORE_AGENT_DIR")"

finish
