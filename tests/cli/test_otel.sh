#!/usr/bin/env bash
# test_otel.sh - one OpenTelemetry trace per run (authoring.md §6,
# docs/tracing.md) through the real binary, against local OTLP/HTTP
# receivers (tests/otel/otlp_receiver.py) that check every request's JSON
# against the protocol's shape.
#
# (a) tests/otel/traced.json - a step that fails once and is retried, a
#     wait for a signal, a step under which the worker is killed with
#     `kill -9` - run by worker A, then a restarted worker B: every span is
#     in the trace derived from the run ID, one root (the run span), every
#     parent exported, the attempts' spore.* attributes, the signal as a
#     span event, each step's TRACEPARENT naming its attempt's span
#     (tests/otel/check_trace.py recomputes the IDs).
# (b) a collector that is down (nothing listening): the run completes and
#     the dropped spans are reported (stderr and --json).
# (c) a collector that accepts the connection and never answers: the run
#     completes and the dropped spans are reported. No time is asserted:
#     the test's own timeout is the only bound.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
command -v python3 >/dev/null || { echo "$test_name: python3 is required (scripts/deps.sh)" >&2; exit 1; }

receiver="$root/tests/otel/otlp_receiver.py"
unset OTEL_EXPORTER_OTLP_ENDPOINT OTEL_EXPORTER_OTLP_TRACES_ENDPOINT OTEL_SDK_DISABLED \
  OTEL_TRACES_EXPORTER OTEL_EXPORTER_OTLP_HEADERS OTEL_EXPORTER_OTLP_TRACES_HEADERS \
  OTEL_EXPORTER_OTLP_PROTOCOL OTEL_EXPORTER_OTLP_TRACES_PROTOCOL OTEL_SERVICE_NAME

# start_receiver <dir> <mode> [X-Test-Header value]: sets port.
start_receiver() {
  mkdir -p "$1"
  python3 "$receiver" "$@" &
  receiver_pids+=("$!")
  wait_for 10 test -s "$1/port" || { fail "the receiver in $1 did not start"; exit 1; }
  port=$(cat "$1/port")
}
receiver_pids=()
stop_receivers() { local p; for p in "${receiver_pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap 'stop_receivers; cleanup' EXIT

# ---- (a) retry, signal, kill -9 and restart: one trace ----
col="$tmp/collector"
start_receiver "$col" ok "secret value"
# the receiver refuses what is not OTLP/JSON (a time as a number here)
checks=$((checks + 1))
python3 - "$port" <<'PY' || fail "the receiver accepted a span whose time is a JSON number"
import json, sys, urllib.error, urllib.request
span = {"traceId": "1" * 32, "spanId": "2" * 16, "name": "x", "kind": 1,
        "startTimeUnixNano": 1, "endTimeUnixNano": "2"}
body = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "t"}}]},
                           "scopeSpans": [{"scope": {}, "spans": [span]}]}]}
req = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/v1/traces", json.dumps(body).encode(),
                             {"Content-Type": "application/json", "X-Test-Header": "secret value"})
try:
    urllib.request.urlopen(req, timeout=10)
except urllib.error.HTTPError as e:
    sys.exit(0 if e.code == 400 else 1)
sys.exit(1)
PY
grep -q startTimeUnixNano "$col/errors.txt" || fail "the receiver did not record why it refused"
rm -f "$col/errors.txt"

export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$port"
export OTEL_EXPORTER_OTLP_HEADERS="X-Test-Header=secret%20value"
export OTEL_SERVICE_NAME=spore-otel-test
export OTEL_BSP_SCHEDULE_DELAY=50
export SPORE_TEST_TRACEPARENTS="$tmp/traceparents"
: >"$SPORE_TEST_TRACEPARENTS"

sp start tests/otel/traced.json --db "$db" --json
expect_rc 0 "start"
id=$(jq -r .runId <<<"$out")
tenant=$(jq -r '.tenant // "default"' <<<"$out")

start_bg worker-a worker --db "$db" --lease-ms 3000 --poll-ms 20 --json
wa=$bg_pid
wait_for 30 status_is "$id" waiting || fail "worker A never brought the run to its signal (status $(run_status "$id"))"
sp signal "$id" approval --outcome approved --db "$db" --json
expect_rc 0 "signal"
slow_started() { grep -q '^slow 1 ' "$SPORE_TEST_TRACEPARENTS"; }
wait_for 30 slow_started || fail "slow's attempt 1 never started"
# the turn that consumed the signal reached the collector: kill -9 loses
# only what worker A still had queued after it
signal_exported() { grep -q '"signal.received"' "$col/spans.jsonl"; }
wait_for 30 signal_exported || fail "the signal's span never reached the collector"
kill -KILL "$wa"

start_bg worker-b worker --db "$db" --lease-ms 3000 --poll-ms 20 --json
wb=$bg_pid
wait_for 60 status_is "$id" completed || fail "worker B did not complete the run (status $(run_status "$id"))"
kill -TERM "$wb"
wait_bg "$wb" 60
[ "$bg_rc" -eq 130 ] || fail "worker B exited $bg_rc, want 130"
jq -e '.interrupted and (.trace.exported > 0) and .trace.dropped == 0' "$tmp/worker-b.out" >/dev/null ||
  fail "worker B's --json answer: $(cat "$tmp/worker-b.out")"
grep -q '^spore: tracing: [0-9]* spans exported, 0 dropped' "$tmp/worker-b.err" ||
  fail "worker B's stderr has no tracing line: $(cat "$tmp/worker-b.err")"

checks=$((checks + 1))
if [ -s "$col/errors.txt" ]; then
  fail "the receiver refused requests: $(head -c 2000 "$col/errors.txt")"
fi
python3 "$root/tests/otel/check_trace.py" "$col/spans.jsonl" "$tenant" "$id" \
  "$SPORE_TEST_TRACEPARENTS" spore-otel-test || fail "the run's trace (above)"
grep -q '^slow 2 ' "$SPORE_TEST_TRACEPARENTS" || fail "slow's attempt 2 never ran"
# the killed attempt is in the trace: worker B expired it (owner dead or lease)
tp1=$(awk '$1 == "slow" && $2 == 1 {print $3}' "$SPORE_TEST_TRACEPARENTS")
span1=$(cut -d- -f3 <<<"$tp1")
jq -se --arg s "$span1" 'map(select(.spanId == $s)) | length == 1 and
    (.[0].attributes | map(select(.key == "spore.attempt.end")) | .[0].value.stringValue == "expired")' \
  "$col/spans.jsonl" >/dev/null ||
  fail "slow's killed attempt (span $span1) is not one expired attempt span"

# ---- (b) a collector that is down ----
down_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$down_port"
unset OTEL_EXPORTER_OTLP_HEADERS
sp run "$wf/three-steps.json" --key down --db "$db" --json
expect_rc 0 "a run with the collector down"
expect_json '.status == "completed" and .trace.exported == 0 and .trace.dropped > 0 and
    .trace.droppedExportFailed > 0 and .trace.failedExports > 0' "the run with the collector down"
[[ "$err" == *"spore: tracing: 0 spans exported, "*" dropped"* ]] ||
  fail "no dropped count on stderr with the collector down: ${err:0:400}"

# ---- (c) a collector that never answers ----
start_receiver "$tmp/hang" hang
export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$port"
export OTEL_EXPORTER_OTLP_TIMEOUT=500 OTEL_BSP_EXPORT_TIMEOUT=1500
sp run "$wf/three-steps.json" --key hang --db "$db" --json
expect_rc 0 "a run with a collector that never answers"
expect_json '.status == "completed" and .trace.exported == 0 and .trace.dropped > 0' \
  "the run with a collector that never answers"
[[ "$err" == *"spore: tracing: 0 spans exported, "*" dropped"* ]] ||
  fail "no dropped count on stderr with a collector that never answers: ${err:0:400}"

# ---- tracing off: nothing said ----
unset OTEL_EXPORTER_OTLP_ENDPOINT
sp run "$wf/three-steps.json" --key off --db "$db" --json
expect_rc 0 "a run without tracing"
expect_json '.status == "completed" and (has("trace") | not)' "a run without tracing"
[[ "$err" != *"tracing"* ]] || fail "tracing off, yet stderr says: ${err:0:300}"
export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$down_port" OTEL_SDK_DISABLED=true
sp run "$wf/three-steps.json" --key disabled --db "$db" --json
expect_json '.status == "completed" and (has("trace") | not)' "a run with OTEL_SDK_DISABLED=true"
unset OTEL_SDK_DISABLED
export OTEL_EXPORTER_OTLP_HEADERS=$'bad\x01key=1'
sp run "$wf/three-steps.json" --key bad-header --db "$db" --json
expect_rc 0 "a run with a refused header"
[[ "$err" == *"spore: tracing off: otel.config-invalid: OTEL_EXPORTER_OTLP_HEADERS"* ]] ||
  fail "a refused header is not reported: ${err:0:300}"

finish
