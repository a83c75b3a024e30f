#!/usr/bin/env bash
# test_ui.sh - `spore ui` (authoring.md §4, docs/ui.md) over HTTP through the
# real binary, a real SQLite store, real command steps and curl:
#
# - the runs list: every run, newest first, with workflow, status, node and
#   start key; filters by status and workflow, the search over run ID and
#   start key, pages of a bounded size; bad filter values are
#   usage.invalid-value (400);
# - a run's page: status, the graph as inline SVG, the input, events with
#   their kinds, forms carrying the session's CSRF token; an unknown run is
#   run.not-found (404); the live stream (server-sent events) says when the
#   run moved;
# - the actions answer with the CLI's dispositions and codes: signal applied
#   then duplicate (same ID), resolve of a run that needs none
#   resolve.not-applicable (409, exit 2), cancel of a 0.1 run
#   run.cancel-unsupported, release of a run without quarantine;
# - refusals change nothing (`spore status --json` and `spore events` before
#   and after): no CSRF token, a wrong one, a foreign Origin, a cross-site
#   Sec-Fetch-Site, neither header, a foreign Host;
# - every input bounded with a code: a long path (414 ui.url-too-long), a
#   long or too many query parameters (414 ui.query-too-large), a body over
#   64 KiB (413 ui.body-too-large), a field over 32 KiB (413
#   ui.field-too-large), a wrong method (405);
# - a non-loopback --listen without a token is ui.token-required (exit 2)
#   and listens nowhere; with --token every request needs it (401
#   ui.unauthorized / ui.token-invalid; Bearer, or ?token= once setting an
#   HttpOnly SameSite=Strict cookie and redirecting without it), and the
#   token is on no page;
# - at most 8 live streams at a time (503 ui.too-many-streams);
# - SIGINT stops the server (exit 130), live streams open or not;
# - a store that does not exist is store.not-found (nothing created); one
#   that other users may read is store.not-private, and is served with
#   --allow-shared-store.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
command -v curl >/dev/null || { echo "test_ui: curl is required (scripts/deps.sh test)" >&2; exit 1; }

# The server draws with Graphviz: its and the font libraries' own leaks are
# suppressed under AddressSanitizer (tests/cli/graph.lsan), spore's are not.
# (exec: the server is the background job itself, so signals reach it)
gvenv_exec() {
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0" \
    LSAN_OPTIONS="suppressions=$root/tests/cli/graph.lsan${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    exec "$@"
}

# start_ui <name> <spore ui args...>: a server on a free port; sets ui_pid, url, origin.
start_ui() {
  local name=$1
  shift
  (gvenv_exec "$spore" ui --db "${ui_db:-$db}" --json "$@" >"$tmp/$name.out" 2>"$tmp/$name.err") &
  ui_pid=$!
  bg_pids+=("$ui_pid")
  wait_for 20 grep -q '"url":' "$tmp/$name.out" || { fail "$name: no URL printed ($(cat "$tmp/$name.err"))"; finish; }
  url=$(jq -r .url "$tmp/$name.out")
  origin=${url%/}
}

# http <method> <path> [curl args...]: sets hstatus, hbody (file $tmp/h.body), hheaders.
jar="$tmp/cookies"
http() {
  local method=$1 path=$2
  shift 2
  checks=$((checks + 1))
  hstatus=$(curl -s -X "$method" -o "$tmp/h.body" -D "$tmp/h.headers" -w '%{http_code}' \
    --max-time 20 -b "$jar" -c "$jar" "$@" "$origin$path") || hstatus=000
  hbody=$(cat "$tmp/h.body")
  hheaders=$(cat "$tmp/h.headers")
}
expect_status() { [ "$hstatus" = "$1" ] || fail "$2: HTTP $hstatus, want $1: ${hbody:0:300}"; }
expect_body() { grep -qF -- "$1" "$tmp/h.body" || fail "$2: the body lacks \"$1\": ${hbody:0:300}"; }
expect_no_body() { ! grep -qF -- "$1" "$tmp/h.body" || fail "$2: the body has \"$1\""; }
# expect_code <http status> <code> <what>: a JSON error answer with that code.
expect_code() {
  expect_status "$1" "$3"
  jq -e --arg c "$2" '.format == "spore.cli/0.1" and .error.code == $c and (.error.message | length > 0)' \
    "$tmp/h.body" >/dev/null 2>&1 || fail "$3: want error $2, got ${hbody:0:300}"
}
# A run as the CLI sees it: its status object and its event count.
fingerprint() { printf '%s %s' "$(status_json "$1" | jq -c 'del(.format)')" "$(events_json "$1" | jq '.events | length')"; }

# ---- runs: two waiting for approval, one completed, one failed (ordered by creation) ----
sp run "$wf/approval.json" --db "$db" --key alpha-1 --input '{"order":"A-1"}' --json
expect_rc 3 "approval alpha-1 waits"
alpha=$(jq -r .runId <<<"$out")
sleep 0.01 # distinct creation milliseconds: "newest first" is then one order
sp run "$wf/three-steps.json" --db "$db" --key steps-1 --json
expect_rc 0 "three-steps completes"
steps=$(jq -r .runId <<<"$out")
sleep 0.01
sp run "$wf/approval.json" --db "$db" --key beta-2 --input '{"order":"<b>&\"B-2\"</b>"}' --json
expect_rc 3 "approval beta-2 waits"
beta=$(jq -r .runId <<<"$out")
sleep 0.01
sp run "$wf/approval.json" --db "$db" --key gamma-3 --json
expect_rc 3 "approval gamma-3 waits"
gamma=$(jq -r .runId <<<"$out")
sp signal "$gamma" approval --outcome rejected --db "$db"
sp resume "$gamma" --db "$db"
expect_rc 1 "gamma-3 rejected: failed"

start_ui main --listen 127.0.0.1:0

# ---- the runs list ----
http GET /
expect_status 200 "runs list"
for id in "$alpha" "$steps" "$beta" "$gamma"; do expect_body "$id" "runs list shows $id"; done
expect_body '>approval<' "runs list: workflow name"
expect_body '>three-steps<' "runs list: workflow name"
expect_body 's-waiting' "runs list: status"
expect_body 'beta-2' "runs list: start key"
order=$(grep -o 'class="run-link" href="/runs/[^"]*' "$tmp/h.body" | sed 's|.*/runs/||' | tr '\n' ' ')
[ "$order" = "$gamma $beta $steps $alpha " ] || fail "runs list: newest first: $order"
grep -q '^Set-Cookie: spore_session=[0-9a-f]\{32\}; Path=/; HttpOnly; SameSite=Strict' <<<"$hheaders" ||
  [ -s "$jar" ] || fail "runs list: no session cookie"
grep -qi '^Content-Security-Policy: default-src' <<<"$hheaders" || fail "runs list: no CSP header"

http GET '/runs?status=waiting'
expect_body "$alpha" "status filter keeps waiting alpha"
expect_body "$beta" "status filter keeps waiting beta"
expect_no_body "$steps" "status filter drops the completed run"
expect_no_body "$gamma" "status filter drops the failed run"
http GET '/runs?workflow=three-steps'
expect_body "$steps" "workflow filter"
expect_no_body "$alpha" "workflow filter drops approval"
http GET '/runs?q=beta'
expect_body "$beta" "search by start key"
expect_no_body "$alpha" "search drops others"
http GET "/runs?q=${alpha:4:12}"
expect_body "$alpha" "search by run ID"
expect_no_body "$beta" "search by run ID drops others"
http GET '/runs?q=nothing-like-this'
expect_body 'no runs match' "search without a match"
http GET '/runs?size=1&page=2'
expect_body "$beta" "page 2 of size 1 is the second newest"
expect_no_body "$gamma" "page 2 of size 1 drops the newest"
expect_body 'page 2 of 4' "pager"
http GET '/runs?status=bogus' -H 'Accept: application/json'
expect_code 400 usage.invalid-value "unknown status filter"
http GET '/runs?size=101' -H 'Accept: application/json'
expect_code 400 usage.invalid-value "page size over the bound"
http GET '/runs?page=0' -H 'Accept: application/json'
expect_code 400 usage.invalid-value "page 0"

# ---- a run's page ----
http GET "/runs/$beta"
expect_status 200 "run page"
expect_body 'id="run-status" class="status big s-waiting">waiting<' "run page: status"
expect_body '<svg' "run page: the graph inline"
expect_body '<title>approval</title>' "run page: the graph names its nodes"
expect_body 'run.started' "run page: events"
expect_body '&lt;b&gt;&amp;\&quot;B-2\&quot;&lt;/b&gt;' "run page: the input, escaped"
expect_no_body '<b>&"B-2"</b>' "run page: no unescaped input"
expect_body 'name="csrf" value="' "run page: forms carry the CSRF token"
expect_body 'value="approval"' "run page: the signal it waits for"
expect_body 'prepare' "run page: attempts"
csrf=$(grep -o 'name="csrf" value="[0-9a-f]*"' "$tmp/h.body" | head -n 1 | sed 's/.*value="//; s/"$//')
[ ${#csrf} -eq 64 ] || fail "run page: CSRF token of 64 hex digits, got \"$csrf\""
http GET "/runs/$steps"
expect_body 'succeeded (ok)' "completed run: attempts with outcomes"
expect_body '&quot;steps&quot;' "completed run: its result"
http GET /runs/run_nope -H 'Accept: application/json'
expect_code 404 run.not-found "unknown run"
http GET '/runs/bad%20id' -H 'Accept: application/json'
expect_code 400 usage.invalid-value "malformed run ID"
http GET /assets/ui.js
expect_status 200 "compiled-in JavaScript"
expect_body 'EventSource' "the live page's script"
http GET /assets/ui.css
expect_status 200 "compiled-in CSS"
http GET /assets/nope.js -H 'Accept: application/json'
expect_code 404 ui.not-found "unknown asset"

# ---- refusals change nothing ----
before=$(fingerprint "$beta")
post_signal() { http POST "/runs/$beta/signal" -H 'Accept: application/json' "$@"; }
post_signal -H "Origin: $origin" --data-urlencode 'name=approval' --data-urlencode 'outcome=approved'
expect_code 403 ui.csrf-missing "signal without a CSRF token"
post_signal -H "Origin: $origin" --data-urlencode "csrf=${csrf%?}0" --data-urlencode 'name=approval'
[ "${csrf: -1}" != 0 ] || post_signal -H "Origin: $origin" --data-urlencode "csrf=${csrf%?}1" --data-urlencode 'name=approval'
expect_code 403 ui.csrf-invalid "signal with a wrong CSRF token"
post_signal -H 'Origin: http://evil.example' --data-urlencode "csrf=$csrf" --data-urlencode 'name=approval'
expect_code 403 ui.origin-refused "signal from a foreign origin"
post_signal -H 'Sec-Fetch-Site: cross-site' --data-urlencode "csrf=$csrf" --data-urlencode 'name=approval'
expect_code 403 ui.origin-refused "signal from another site"
post_signal --data-urlencode "csrf=$csrf" --data-urlencode 'name=approval'
expect_code 403 ui.origin-refused "signal without Origin or Sec-Fetch-Site"
http POST "/runs/$beta/signal" -H 'Accept: application/json' -H 'Host: evil.example:80' \
  -H 'Origin: http://evil.example:80' --data-urlencode "csrf=$csrf" --data-urlencode 'name=approval'
expect_code 421 ui.host-refused "a foreign Host (DNS rebinding)"
jar_kept=$jar
jar="$tmp/other-session" # a session of its own, with this page's token
printf '127.0.0.1\tFALSE\t/\tFALSE\t0\tspore_session\t%s\n' 00000000000000000000000000000000 >"$jar"
http POST "/runs/$beta/signal" -H 'Accept: application/json' -H "Origin: $origin" \
  --data-urlencode "csrf=$csrf" --data-urlencode 'name=approval' --data-urlencode 'outcome=approved'
jar=$jar_kept
expect_code 403 ui.csrf-invalid "a CSRF token of another session"
[ "$(fingerprint "$beta")" = "$before" ] || fail "refused actions changed the run: $before -> $(fingerprint "$beta")"

# ---- bounds ----
long=$(head -c 1100 /dev/zero | tr '\0' a)
http GET "/runs/$long" -H 'Accept: application/json'
expect_code 414 ui.url-too-long "a path over 1024 bytes"
http GET "/runs?q=$(head -c 300 /dev/zero | tr '\0' b)" -H 'Accept: application/json'
expect_code 414 ui.query-too-large "a query parameter over 256 bytes"
http GET '/runs?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9' -H 'Accept: application/json'
expect_code 414 ui.query-too-large "nine query parameters"
head -c 70000 /dev/zero | tr '\0' x >"$tmp/big"
post_signal -H "Origin: $origin" --data-urlencode "csrf=$csrf" --data-urlencode "data@$tmp/big"
expect_code 413 ui.body-too-large "a body over 64 KiB"
head -c 40000 /dev/zero | tr '\0' x >"$tmp/field"
post_signal -H "Origin: $origin" --data-urlencode "csrf=$csrf" --data-urlencode 'name=approval' \
  --data-urlencode "data@$tmp/field"
expect_code 413 ui.field-too-large "a field over 32 KiB"
post_signal -H "Origin: $origin" -H 'Content-Type: text/plain' --data "csrf=$csrf"
expect_code 415 ui.unsupported-body "a body that is not a form"
http GET "/runs/$beta/signal" -H 'Accept: application/json'
expect_code 405 ui.method-not-allowed "GET of an action"
http POST "/runs/$beta" -H 'Accept: application/json' -H "Origin: $origin" --data 'x=1'
expect_code 405 ui.method-not-allowed "POST of a page"
[ "$(fingerprint "$beta")" = "$before" ] || fail "refused inputs changed the run"

# ---- actions answer with the CLI's codes ----
http POST "/runs/$beta/resolve" -H 'Accept: application/json' -H "Origin: $origin" \
  --data-urlencode "csrf=$csrf" --data-urlencode 'invocation=inv_00000000000000000000000000000000' \
  --data-urlencode 'answer=retry'
expect_code 409 resolve.not-applicable "resolve of a run that needs none"
jq -e '.exitCode == 2' "$tmp/h.body" >/dev/null || fail "resolve.not-applicable: exit code 2 as the CLI's"
http POST "/runs/$beta/cancel" -H 'Accept: application/json' -H "Origin: $origin" --data-urlencode "csrf=$csrf"
expect_code 409 run.cancel-unsupported "cancel of a 0.1 run"
http POST "/runs/$beta/release" -H 'Accept: application/json' -H "Origin: $origin" --data-urlencode "csrf=$csrf"
expect_status 200 "release of a run without quarantine"
jq -e '.disposition == "duplicate" or .disposition == "applied"' "$tmp/h.body" >/dev/null || fail "release: disposition ${hbody:0:200}"
http POST "/runs/$beta/signal" -H 'Accept: application/json' -H "Origin: $origin" \
  --data-urlencode "csrf=$csrf" --data-urlencode 'name=nosuch'
expect_code 409 signal.unknown-name "a signal no node waits for"
[ "$(fingerprint "$beta")" = "$before" ] || fail "refused actions changed the run"

# the live stream of the run, open while it moves
curl -s -N --max-time 30 -b "$jar" "$origin/runs/$beta/stream?revision=$(status_json "$beta" | jq -r .revision)" >"$tmp/stream" &
stream_pid=$!
wait_for 10 grep -q '^retry:' "$tmp/stream" || fail "stream: nothing sent"

http POST "/runs/$beta/signal" -H 'Accept: application/json' -H "Sec-Fetch-Site: same-origin" \
  --data-urlencode "csrf=$csrf" --data-urlencode 'name=approval' --data-urlencode 'outcome=approved' \
  --data-urlencode 'data={"by":"ui"}' --data-urlencode 'id=msg_ui_test_1'
expect_status 200 "signal through the web view"
jq -e --arg r "$beta" '.format == "spore.cli/0.1" and .runId == $r and .messageId == "msg_ui_test_1" and
    .disposition == "applied" and .exitCode == 0 and (.next | contains("spore resume"))' "$tmp/h.body" >/dev/null ||
  fail "signal answer: ${hbody:0:300}"
http POST "/runs/$beta/signal" -H 'Accept: application/json' -H "Origin: $origin" \
  --data-urlencode "csrf=$csrf" --data-urlencode 'name=approval' --data-urlencode 'outcome=approved' \
  --data-urlencode 'data={"by":"ui"}' --data-urlencode 'id=msg_ui_test_1'
jq -e '.disposition == "duplicate"' "$tmp/h.body" >/dev/null || fail "the same signal ID again: duplicate: ${hbody:0:300}"
http POST "/runs/$beta/signal" -H "Origin: $origin" --data-urlencode "csrf=$csrf" \
  --data-urlencode 'name=approval' --data-urlencode 'outcome=approved' --data-urlencode 'id=msg_ui_test_1'
expect_code_html() { expect_status "$1" "$3"; expect_body "$2" "$3"; }
expect_code_html 409 request.digest-mismatch "the ID of another signal, as HTML"
expect_body 'the command line would exit 2' "an HTML refusal says the CLI's exit code"
sp resume "$beta" --db "$db" --json
expect_rc 0 "beta completes after the web view's signal"
expect_json '.result.output.approval == {"by":"ui"}' "the signal's data reached the run"
wait_for 10 grep -q '"status":"completed"' "$tmp/stream" || fail "stream: no event for the completed run: $(cat "$tmp/stream")"
kill "$stream_pid" 2>/dev/null || true
http GET "/runs/$beta"
expect_body 's-completed">completed<' "the run page shows it completed"

# an HTML answer for people
http POST "/runs/$alpha/signal" -H "Origin: $origin" --data-urlencode "csrf=$csrf" \
  --data-urlencode 'name=approval' --data-urlencode 'outcome=approved'
expect_status 200 "a form's answer page"
expect_body "signal approval to $alpha: applied" "answer page: what happened"
expect_body 'exit code 0' "answer page: the CLI's code"
expect_body 'spore resume' "answer page: what to do next"

# ---- SIGINT ends it ----
kill -INT "$ui_pid"
wait_bg "$ui_pid" 20
[ "$bg_rc" -eq 130 ] || fail "SIGINT: exit $bg_rc, want 130 ($(cat "$tmp/main.err"))"
jq -e 'select(.interrupted == true)' "$tmp/main.out" >/dev/null || fail "SIGINT: no {interrupted: true}"

# ---- addresses and the token ----
expect_error 2 ui.token-required "a non-loopback address without a token" -- ui --db "$db" --listen 0.0.0.0:0
expect_error 2 usage.invalid-value "not an address" -- ui --db "$db" --listen localhost:8233
expect_error 2 ui.token-invalid "a token too short" -- ui --db "$db" --listen 127.0.0.1:0 --token short
expect_error 10 store.not-found "a store that does not exist" -- ui --db "$tmp/none.db" --listen 127.0.0.1:0
[ ! -e "$tmp/none.db" ] || fail "spore ui created a store"
sp ui --help
expect_rc 0 "ui --help"
[[ "$out" == *"--listen"* && "$out" == *"--token"* ]] || fail "ui --help names its options"

token=tok_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
SPORE_UI_TOKEN=$token start_ui tokened --listen 0.0.0.0:0
origin=http://127.0.0.1:${url##*:}
origin=${origin%/}
jq -e '.token == true' "$tmp/tokened.out" >/dev/null || fail "token: --json says so"
! grep -qF "$token" "$tmp/tokened.out" "$tmp/tokened.err" || fail "token: printed"
rm -f "$jar"
http GET / -H 'Accept: application/json'
expect_code 401 ui.unauthorized "no token"
http GET / -H 'Accept: application/json' -H 'Authorization: Bearer tok_wrong_wrong_wrong'
expect_code 401 ui.token-invalid "a wrong token"
http GET "/runs/$alpha" -H "Authorization: Bearer $token"
expect_status 200 "Bearer token"
expect_no_body "$token" "the token is on no page"
csrf2=$(grep -o 'name="csrf" value="[0-9a-f]*"' "$tmp/h.body" | head -n 1 | sed 's/.*value="//; s/"$//')
http GET "/runs?token=$token"
expect_status 303 "?token= redirects"
grep -qi '^Location: /runs\s*$' <<<"$hheaders" || fail "?token=: redirect without the token: $hheaders"
grep -qi "^Set-Cookie: spore_token=$token; Path=/; HttpOnly; SameSite=Strict" <<<"$hheaders" ||
  fail "?token=: HttpOnly SameSite=Strict cookie: $hheaders"
http GET /runs
expect_status 200 "the token cookie is enough afterwards"
expect_no_body "$token" "the token is on no page"
http POST "/runs/$alpha/release" -H 'Accept: application/json' -H "Origin: $origin" --data-urlencode "csrf=$csrf2"
expect_status 200 "an action with the token cookie, Origin and CSRF"

# live streams are bounded: 8 at a time on this fresh server, the 9th is refused
stream_pids=()
for i in 1 2 3 4 5 6 7 8; do
  curl -s -N --max-time 60 -H "Authorization: Bearer $token" "$origin/runs/$alpha/stream" >"$tmp/stream$i" &
  stream_pids+=("$!")
done
for i in 1 2 3 4 5 6 7 8; do
  wait_for 20 grep -q '^retry:' "$tmp/stream$i" || fail "stream $i of 8 was not opened"
done
http GET "/runs/$alpha/stream" -H 'Accept: application/json' -H "Authorization: Bearer $token"
expect_code 503 ui.too-many-streams "a ninth live stream"
kill "${stream_pids[@]}" 2>/dev/null || true
wait "${stream_pids[@]}" 2>/dev/null || true
kill -INT "$ui_pid"
wait_bg "$ui_pid" 20
[ "$bg_rc" -eq 130 ] || fail "tokened server: exit $bg_rc, want 130"

# ---- a store other users may read: refused unless --allow-shared-store ----
shared="$tmp/shared.db"
sp run "$wf/three-steps.json" --db "$shared" --key shared-1 --json
expect_rc 0 "a run in the store to share"
chmod 644 "$shared"
expect_error 10 store.not-private "a store others may read" -- ui --db "$shared" --listen 127.0.0.1:0
ui_db=$shared start_ui shared --listen 127.0.0.1:0 --allow-shared-store
http GET /runs -H 'Accept: application/json'
expect_status 200 "--allow-shared-store: the runs list"
expect_body shared-1 "--allow-shared-store: the shared store's run"
kill -INT "$ui_pid"
wait_bg "$ui_pid" 20
[ "$bg_rc" -eq 130 ] || fail "shared store's server: exit $bg_rc, want 130"

finish
