#!/usr/bin/env bash
# test_agent_step.sh - spore-step's own promises (agent-step.md §9) that the
# captured fixtures do not show: SIGTERM, SIGINT and SIGHUP end it with
# 128+N and no result; a runDir that is a symlink is refused (exit 3);
# result.json is written before the result line and is complete; stray
# writes to fd 1 cannot reach the protocol (fd 1 is stderr).
#
# usage: test_agent_step.sh <spore> <repo-root>
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"
step="$(dirname "$spore")/spore-step"
[ -x "$step" ] || { fail "no spore-step beside spore"; finish; }

request() { # <stepId> [timeout_ms]
  jq -cn --arg id "$1" --arg dir "$tmp/$1" --argjson t "${2:-10000}" \
    '{query: "q", systemPrompt: "", outputSchema: {}, timeout_ms: $t, stepId: $id, runDir: $dir}'
}
echo '{"failure": "hang", "events": [{"kind": "thinking", "data": {"text": "waiting"}}]}' >"$tmp/hang.json"
echo '{"result": {"success": true, "summary": "done"}}' >"$tmp/ok.json"

for sig in TERM INT HUP; do
  id="sig-$(tr 'A-Z' 'a-z' <<<"$sig")-000000000001"
  request "$id" >"$tmp/$id.req"
  "$step" --provider fake --scenario "$tmp/hang.json" <"$tmp/$id.req" >"$tmp/$id.out" 2>"$tmp/$id.err" &
  pid=$!
  wait_for 10 grep -q '"seq":1' "$tmp/$id.out" || fail "$sig: the step did not start"
  kill -"$sig" "$pid"
  set +e
  wait "$pid"
  code=$?
  set -e
  want=$((128 + $(kill -l "$sig")))
  checks=$((checks + 1))
  [ "$code" -eq "$want" ] || fail "SIG$sig: exit $code, want $want"
  ! grep -q '"type":"result"' "$tmp/$id.out" || fail "SIG$sig: a result was written"
  [ ! -e "$tmp/$id/result.json" ] || fail "SIG$sig: result.json was written"
done

# a runDir that is a symlink: exit 3, nothing written through it
id=link-000000000001
mkdir "$tmp/elsewhere"
ln -s "$tmp/elsewhere" "$tmp/$id"
set +e
request "$id" | "$step" --provider fake --scenario "$tmp/ok.json" >"$tmp/link.out" 2>"$tmp/link.err"
code=$?
set -e
checks=$((checks + 1))
[ "$code" -eq 3 ] || fail "a symlinked runDir: exit $code, want 3"
[ -z "$(ls -A "$tmp/elsewhere")" ] || fail "something was written through the symlink"
[ ! -s "$tmp/link.out" ] || fail "a refused step wrote protocol records"

# result.json first, then the line; both agree; the directory is 0700
id=ok-000000000001
request "$id" | "$step" --provider fake --scenario "$tmp/ok.json" >"$tmp/ok.out" 2>"$tmp/ok.err"
checks=$((checks + 1))
jq -e --arg id "$id" '.stepId == $id and .status == 200 and .success == true and .summary == "done"' \
  "$tmp/$id/result.json" >/dev/null || fail "result.json: $(cat "$tmp/$id/result.json")"
[ "$(stat -c %a "$tmp/$id")" = 700 ] || fail "runDir mode $(stat -c %a "$tmp/$id"), want 700"
[ "$(ls -A "$tmp/$id")" = result.json ] || fail "a temporary file was left: $(ls -A "$tmp/$id")"
[ "$(tail -n 1 "$tmp/ok.out" | jq -r .type)" = result ] || fail "the last line is not the result"
"$spore" agent classify --exit 0 --stdout "$tmp/ok.out" --stderr "$tmp/ok.err" --step-id "$id" --json \
  >"$tmp/ok.classify"
jq -e '.outcome.status == "success" and .outcome.output == {"summary": "done"}' "$tmp/ok.classify" \
  >/dev/null || fail "its own output does not classify as a success: $(cat "$tmp/ok.classify")"

finish
