#!/usr/bin/env bash
# test_ui_browser.sh <spore> <repo-root> signal|refused - `spore ui` in
# headless Chromium (Debian `chromium`), driven over the DevTools protocol
# by tests/ui/browser.py (Python standard library only), against a real
# server, a real store and a real `spore worker`:
#
#   signal   the runs page lists a run waiting for `approval`; its page
#            opens; the signal form sent from a second tab is applied (exit
#            code 0 on the answer); the open page shows the run completed
#            without a reload; `spore status` agrees (the form's data is in
#            the result).
#   refused  a form on another origin POSTs the signal (403
#            ui.origin-refused) and a script of the server's own origin
#            POSTs without the CSRF token (403 ui.csrf-missing); the run's
#            status and events are unchanged.
#
# Screenshots of the pages go to $SPORE_UI_ARTIFACTS (CTest sets
# <build>/test-artifacts/ui); docs/images/ui-run.png is one of them.
# Exits 77 (CTest: skipped) with the reason when Chromium or python3 is
# missing.
set -euo pipefail
case_name=${3:?usage: test_ui_browser.sh <spore> <repo-root> signal|refused}
for tool in chromium python3 curl; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIP: $tool is not installed (scripts/deps.sh test installs it)" >&2
    exit 77
  fi
done
source "$(dirname "$0")/../cli/lib.sh" "$1" "$2"
test_name="test_ui_browser_$case_name"
shots=${SPORE_UI_ARTIFACTS:-$tmp/artifacts}
mkdir -p "$shots"

gvenv_exec() { # the server draws with Graphviz: tests/cli/graph.lsan under ASan
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0" \
    LSAN_OPTIONS="suppressions=$root/tests/cli/graph.lsan${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    exec "$@"
}
fingerprint() { printf '%s %s' "$(status_json "$1" | jq -c 'del(.format)')" "$(events_json "$1" | jq '.events | length')"; }

sp run "$wf/approval.json" --db "$db" --key "browser-$case_name" --input '{"order":"B-1"}' --json
expect_rc 3 "the run waits for approval"
run=$(jq -r .runId <<<"$out")

(gvenv_exec "$spore" ui --db "$db" --listen 127.0.0.1:0 --json >"$tmp/ui.out" 2>"$tmp/ui.err") &
ui_pid=$!
bg_pids+=("$ui_pid")
wait_for 20 grep -q '"url":' "$tmp/ui.out" || { fail "spore ui printed no URL: $(cat "$tmp/ui.err")"; finish; }
url=$(jq -r .url "$tmp/ui.out")
start_bg worker worker --db "$db" --poll-ms 50

before=$(fingerprint "$run")
checks=$((checks + 1))
python3 "$root/tests/ui/browser.py" "$case_name" "$url" "$run" "$shots" || fail "the browser's checks ($case_name)"

if [ "$case_name" = signal ]; then
  wait_for 30 status_is "$run" completed || fail "spore status: the run did not complete: $(status_json "$run")"
  status_json "$run" | jq -e '.result.output.approval == {"by": "browser"}' >/dev/null ||
    fail "spore status: the form's data is not in the result: $(status_json "$run")"
  for png in ui-runs.png ui-run.png; do
    head -c 8 "$shots/$png" 2>/dev/null | od -An -tx1 | grep -q '89 50 4e 47 0d 0a 1a 0a' || fail "screenshot $png missing"
  done
else
  [ "$(fingerprint "$run")" = "$before" ] || fail "refused POSTs changed the run: $before -> $(fingerprint "$run")"
  head -c 8 "$shots/ui-refused.png" 2>/dev/null | od -An -tx1 | grep -q '89 50 4e 47' || fail "screenshot ui-refused.png missing"
fi

kill -INT "$ui_pid"
wait_bg "$ui_pid" 20
[ "$bg_rc" -eq 130 ] || fail "spore ui: exit $bg_rc after SIGINT, want 130 ($(tail -c 600 "$tmp/ui.err"))"
kill -INT "$bg_pid"
wait_bg "$bg_pid" 30
finish
