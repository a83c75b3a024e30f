#!/usr/bin/env bash
# test_store_faults.sh - a store that fails under a running `spore run` or
# `spore worker` (cli.md: --store-retry-ms; docs/durability.md, "A failing
# store"): the fault is reported on stderr within seconds (text:
# `spore: store.io: <what failed> — retrying in N ms (…)`; --json: one
# {"progress": {"storeFault": …}} object a line, stdout keeps the one final
# answer), the store is retried, and
#
# - read-only (chattr +i on the database, its WAL and its directory: the
#   tests run as root, whom file modes do not stop, and a read-only
#   remount is refused while spore has the file open for writing) and full
#   (a small tmpfs filled up with a large file): `spore run` gives up after
#   --store-retry-ms with exit 10 and `store.io` (JSON and text); the next
#   `run` of the key parks the run in needs-intervention without running the
#   unsafe step again;
# - the same faults ending before the bound: the run completes, every step
#   ran exactly once (both steps are unsafe), and the recovery is reported;
# - a store that is read-only before `spore run` starts: reported with exit
#   10 and store.io, never a hang;
# - `spore worker` reports the fault, says it keeps retrying, reports again
#   while the fault lasts, keeps running, reports the recovery and then
#   completes the run.
#
# The workflow: step `a` (unsafe) logs its start, waits for a gate file the
# test opens only after it has broken the store (so the step's result meets
# the broken store), then logs its end; step `b` (unsafe) only logs. When
# this machine cannot make a store read-only (no chattr +i) or mount a tmpfs,
# those cases are skipped with a printed `skipped: <reason>` line.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

bound=3000      # --store-retry-ms of the giving-up cases
slack=10000     # a slow (sanitizer) build may take this much longer
export GATES="$tmp/gates" GATE_LOG="$tmp/gate.log"
mkdir -p "$GATES"
: >"$GATE_LOG"

cat >"$tmp/gate.sh" <<'EOF'
#!/bin/sh
# Logs "start|end <run> <node> <attempt>"; with input {"wait": true} it
# waits for the file $GATES/<run>.<node> in between.
set -eu
input=$(cat)
printf 'start %s %s %s\n' "$SPORE_RUN_ID" "$SPORE_NODE_ID" "$SPORE_ATTEMPT" >>"$GATE_LOG"
if [ "$(printf '%s' "$input" | jq -r '.wait // false')" = true ]; then
  while [ ! -e "$GATES/$SPORE_RUN_ID.$SPORE_NODE_ID" ]; do sleep 0.05; done
fi
printf 'end %s %s %s\n' "$SPORE_RUN_ID" "$SPORE_NODE_ID" "$SPORE_ATTEMPT" >>"$GATE_LOG"
jq -nc --arg node "$SPORE_NODE_ID" '{node: $node}'
EOF
chmod +x "$tmp/gate.sh"
gated="$tmp/gated.json"
jq -n --arg argv "$tmp/gate.sh" '{
  format: "runspore.workflow/0.1", name: "gated", start: "a",
  actions: {gate: {kind: "command", argv: [$argv], effect: "unsafe", output: "json", timeoutMs: "60000"}},
  nodes: {
    a: {kind: "activity", action: "gate", input: {wait: true}, outcomes: {ok: "b"}},
    b: {kind: "activity", action: "gate", input: {}, outcomes: {ok: "done"}},
    done: {kind: "complete", output: {a: {"$get": ["nodes", "a", "output", "node"]},
                                      b: {"$get": ["nodes", "b", "output", "node"]}}}
  }}' >"$gated"

gate_count() { # <start|end> <run> <node>
  awk -v k="$1" -v r="$2" -v n="$3" '$1 == k && $2 == r && $3 == n {c++} END {print c + 0}' "$GATE_LOG"
}
gate_has() { [ "$(gate_count "$@")" -gt 0 ]; }
# The run of the newest case: the first run in the gate log not seen before.
seen_runs=" "
started_run() {
  awk -v seen="$seen_runs" '$1 == "start" && $3 == "a" && !index(seen, " " $2 " ") {print $2; exit}' "$GATE_LOG"
}
new_run_started() { [ -n "$(started_run)" ]; }

# ---- breaking a store, and mending it ----

frozen=()  # paths made immutable
mounts=()  # tmpfs mount points
faults_cleanup() {
  local p
  for p in "${frozen[@]}"; do chattr -i "$p" 2>/dev/null || true; done
  for p in "${mounts[@]}"; do umount -l "$p" 2>/dev/null || true; done
  cleanup
}
trap faults_cleanup EXIT

# read-only: the database, its WAL and its directory immutable. The WAL
# index (-shm) stays writable: it is memory-mapped, and a write fault on an
# immutable mapping would be a SIGBUS, not the read-only store under test.
ro_paths() { local p; for p in "$1"/*.db "$1"/*.db-wal "$1"; do [ -e "$p" ] && echo "$p"; done; }
break_ro() { # <store dir>
  local p
  for p in $(ro_paths "$1"); do
    chattr +i "$p"
    frozen+=("$p")
  done
}
mend_ro() { local p; for p in $(ro_paths "$1"); do chattr -i "$p"; done; }
# full: a file as large as the tmpfs lets it be.
break_full() { dd if=/dev/zero of="$1/filler" bs=64k status=none 2>/dev/null || true; }
mend_full() { rm -f "$1/filler"; }

ro_reason=""
mkdir -p "$tmp/probe"
if ! command -v chattr >/dev/null; then
  ro_reason="chattr is not installed"
elif ! { touch "$tmp/probe/f" && chattr +i "$tmp/probe/f" 2>/dev/null; }; then
  ro_reason="chattr +i is not permitted here (needs root and a filesystem with the immutable flag)"
else
  chattr -i "$tmp/probe/f"
fi
full_reason=""
mkdir -p "$tmp/full-probe"
if mount -t tmpfs -o size=1m tmpfs "$tmp/full-probe" 2>/dev/null; then
  umount "$tmp/full-probe"
else
  full_reason="mounting a tmpfs is not permitted here"
fi

# A fresh store directory for one case: <name> <ro|full>; sets dir and db.
store_dir() {
  dir="$tmp/$1"
  db="$dir/spore.db"
  mkdir -p "$dir"
  if [ "$2" = full ]; then
    mount -t tmpfs -o size=8m tmpfs "$dir"
    mounts+=("$dir")
  fi
}

# ---- what the reports look like ----

fault_lines() { grep -c '"storeFault"' "$1" 2>/dev/null || true; }
has_fault_line() { [ "$(fault_lines "$1")" -gt 0 ]; }
has_text_fault() { grep -q '^spore: store\.io: .* — retrying in [0-9]* ms' "$1"; }
has_recovered_line() { grep -q '"storeRecovered"' "$1"; }

# Every stderr line of a --json process is a spore.cli/0.1 progress object.
expect_json_stderr() { # <file> <what>
  checks=$((checks + 1))
  jq -e -s 'length > 0 and all(.[]; .format == "spore.cli/0.1" and (.progress | type == "object"))' \
    "$1" >/dev/null 2>&1 || fail "$2: stderr is not only JSON progress lines: $(head -c 600 "$1")"
}

# The first storeFault report: store.io, what failed, decimal counters.
expect_fault_report() { # <file> <what> <giveUpAfterMs as jq value>
  checks=$((checks + 1))
  grep '"storeFault"' "$1" | head -n 1 | jq -e --arg d "$decimal" --argjson bound "$3" '
      .progress.storeFault | .code == "store.io" and (.message | type == "string" and length > 0)
      and (.retryInMs | test($d)) and (.failingForMs | test($d)) and .giveUpAfterMs == $bound' \
    >/dev/null 2>&1 || fail "$2: first fault report: $(grep '"storeFault"' "$1" | head -n 1)"
}

# ---- spore run: the store breaks under step a's result ----

# run_case <name> <ro|full> <json|text> <giveup|recover>
run_case() {
  local name=$1 kind=$2 mode=$3 end=$4 run t0 elapsed json=() retry=()
  local what="run, $kind store, $mode, $end"
  store_dir "$name" "$kind"
  [ "$mode" = json ] && json=(--json)
  # Giving up: a short lease, so that the next run of the key need not wait
  # long for the abandoned attempt's lease to run out.
  [ "$end" = giveup ] && retry=(--store-retry-ms "$bound" --lease-ms 2000 --heartbeat-ms 300)
  start_bg "$name" run "$gated" --key "$name" --db "$db" --poll-ms 50 "${json[@]}" "${retry[@]}"
  local pid=$bg_pid
  wait_for 15 new_run_started || { fail "$what: step a never started"; return 0; }
  run=$(started_run)
  seen_runs+="$run "
  "break_$kind" "$dir"
  t0=$(now_ms)
  touch "$GATES/$run.a"
  local reported=has_text_fault
  [ "$mode" = json ] && reported=has_fault_line
  if wait_for 5 "$reported" "$tmp/$name.err"; then
    echo "$what: reported after $(($(now_ms) - t0)) ms: $(head -n 1 "$tmp/$name.err")"
  else
    fail "$what: no fault report on stderr within 5 s of the fault"
  fi
  kill -0 "$pid" 2>/dev/null || fail "$what: spore run exited at the first report"
  if [ "$end" = recover ]; then
    "mend_$kind" "$dir"
    wait_bg "$pid" 30
    [ "$bg_rc" -eq 0 ] || fail "$what: exit $bg_rc after the store was mended, want 0: $(cat "$tmp/$name.err")"
    expect_completed_once "$run" "$name" "$mode" "$what"
  else
    wait_bg "$pid" $(((bound + slack) / 1000 + 5))
    elapsed=$(($(now_ms) - t0))
    [ "$bg_rc" -eq 10 ] || fail "$what: exit $bg_rc, want 10"
    [ "$elapsed" -ge "$bound" ] || fail "$what: gave up after $elapsed ms, before --store-retry-ms $bound"
    [ "$elapsed" -le $((bound + slack)) ] || fail "$what: gave up only after $elapsed ms (bound $bound ms)"
    echo "$what: exit $bg_rc after $elapsed ms"
    expect_gave_up "$name" "$mode" "$what"
    "mend_$kind" "$dir"
    expect_not_doubled "$run" "$name" "$what"
  fi
  if [ "$mode" = json ]; then
    expect_json_stderr "$tmp/$name.err" "$what"
    expect_fault_report "$tmp/$name.err" "$what" "$([ "$end" = giveup ] && echo "\"$bound\"" || echo '"60000"')"
  fi
  echo "$what: done after $(($(now_ms) - t0)) ms"
}

# The run completed with each step executed exactly once.
expect_completed_once() { # <run> <name> <json|text> <what>
  local run=$1 name=$2 mode=$3 what=$4 node
  out=$(cat "$tmp/$name.out")
  if [ "$mode" = json ]; then
    expect_json '.status == "completed" and .result.output == {"a": "a", "b": "b"}' "$what: final status"
    has_recovered_line "$tmp/$name.err" || fail "$what: the recovery was not reported: $(cat "$tmp/$name.err")"
  else
    grep -q '^status  *completed$' <<<"$out" || fail "$what: stdout: $out"
    grep -q '^spore: the store works again (it failed for ' "$tmp/$name.err" ||
      fail "$what: the recovery was not reported: $(cat "$tmp/$name.err")"
  fi
  for node in a b; do
    [ "$(gate_count start "$run" "$node")" -eq 1 ] && [ "$(gate_count end "$run" "$node")" -eq 1 ] ||
      fail "$what: step $node started $(gate_count start "$run" "$node") and ended $(gate_count end "$run" "$node") times, want 1"
  done
  sp events "$run" --db "$db" --json
  expect_json '[.events[1:][].payload | .status + "/" + (.attempt | tostring)] == ["success/1", "success/1"]' \
    "$what: one successful attempt per step"
}

# stdout/stderr of a `run` that gave up.
expect_gave_up() { # <name> <mode> <what>
  local name=$1 mode=$2 what=$3
  out=$(cat "$tmp/$name.out")
  if [ "$mode" = json ]; then
    expect_json '.error.code == "store.io" and (.error.message | test("kept failing"))
        and (.error.details.allowedMs == $b)' "$what: the error" --arg b "$bound"
    [ "$(wc -l <"$tmp/$name.out")" -eq 1 ] || fail "$what: stdout is not one JSON object: $out"
  else
    [ -z "$out" ] || fail "$what: text mode printed on stdout: $out"
    grep -q "giving up after 3 s)$" "$tmp/$name.err" || fail "$what: the report does not name the bound"
    tail -n 1 "$tmp/$name.err" | grep -q '^spore: store\.io: the store kept failing for ' ||
      fail "$what: last stderr line: $(tail -n 1 "$tmp/$name.err")"
  fi
}

# After giving up: step a's result never reached the store; the next run of
# the key parks in needs-intervention (step a is unsafe) and runs nothing.
expect_not_doubled() { # <run> <name> <what>
  local run=$1 name=$2 what=$3
  sp run "$gated" --key "$name" --db "$db" --json
  expect_rc 4 "$what: the next run of the key"
  expect_json '.created == false and .status == "needs-intervention"' "$what: the next run of the key"
  [ "$(gate_count start "$run" a)" -eq 1 ] || fail "$what: step a started $(gate_count start "$run" a) times"
  [ "$(gate_count start "$run" b)" -eq 0 ] || fail "$what: step b ran"
}

if [ -n "$ro_reason" ]; then
  echo "skipped: read-only store cases: $ro_reason"
else
  run_case ro-json-giveup ro json giveup
  run_case ro-text-giveup ro text giveup
  run_case ro-json-recover ro json recover
fi
if [ -n "$full_reason" ]; then
  echo "skipped: full store cases: $full_reason"
else
  run_case full-json-giveup full json giveup
  run_case full-text-recover full text recover
fi

# ---- a store that is read-only before `spore run` starts ----
if [ -z "$ro_reason" ]; then
  store_dir ro-at-start ro
  sp start "$gated" --key first --db "$db" --json
  expect_rc 0 "read-only at start: creating the store"
  break_ro "$dir"
  t0=$(now_ms)
  expect_error 10 store.io "read-only at start" -- run "$gated" --key second --db "$db" --store-retry-ms "$bound"
  elapsed=$(($(now_ms) - t0))
  [ "$elapsed" -le $((2 * (bound + slack))) ] || fail "read-only at start: took $elapsed ms"
  mend_ro "$dir"
fi

# ---- spore worker: reports, keeps going, serves the run once mended ----
if [ -z "$ro_reason" ]; then
  store_dir worker ro
  sp start "$gated" --key served --db "$db" --json
  expect_rc 0 "worker: start"
  run=$(jq -r .runId <<<"$out")
  # A lease longer than the fault: the step's result is still accepted.
  start_bg worker worker --db "$db" --poll-ms 50 --lease-ms 60000 --json
  wpid=$bg_pid
  wait_for 15 gate_has start "$run" a || fail "worker: step a never started"
  break_ro "$dir"
  t0=$(now_ms)
  touch "$GATES/$run.a"
  if wait_for 5 has_fault_line "$tmp/worker.err"; then
    echo "worker: reported after $(($(now_ms) - t0)) ms: $(head -n 1 "$tmp/worker.err")"
  else
    fail "worker: no storeFault report within 5 s"
  fi
  expect_fault_report "$tmp/worker.err" "worker" null
  # The fault lasts: another report about 10 s later, and the worker runs on.
  two_reports() { [ "$(fault_lines "$tmp/worker.err")" -ge 2 ]; }
  wait_for 20 two_reports || fail "worker: no second report while the store stayed read-only"
  checks=$((checks + 1))
  grep '"storeFault"' "$tmp/worker.err" | sed -n 2p |
    jq -e '.progress.storeFault.giveUpAfterMs == null and (.progress.storeFault.failingForMs | tonumber) >= 9000' \
      >/dev/null || fail "worker: second report: $(grep '"storeFault"' "$tmp/worker.err" | sed -n 2p)"
  kill -0 "$wpid" 2>/dev/null || fail "worker: exited while the store was read-only"
  [ "$(gate_count start "$run" b)" -eq 0 ] || fail "worker: step b ran while the store was read-only"
  mend_ro "$dir"
  wait_for 15 status_is "$run" completed || fail "worker: run not completed after the store was mended (status $(run_status "$run"))"
  wait_for 5 has_recovered_line "$tmp/worker.err" || fail "worker: the recovery was not reported"
  for node in a b; do
    [ "$(gate_count start "$run" "$node")" -eq 1 ] || fail "worker: step $node started $(gate_count start "$run" "$node") times"
  done
  kill -INT "$wpid"
  wait_bg "$wpid" 15
  [ "$bg_rc" -eq 130 ] || fail "worker: exit $bg_rc after SIGINT, want 130"
  out=$(cat "$tmp/worker.out")
  expect_json '.interrupted == true' "worker: stdout"
  expect_json_stderr "$tmp/worker.err" "worker"
fi

finish
