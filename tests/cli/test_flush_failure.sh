#!/usr/bin/env bash
# test_flush_failure.sh - a disk whose flush fails under `spore run`
# (docs/step-path.md, "Commit, then flush beside the next step").
#
# On SQLite a pass's commit returns before its flush; the store's flusher
# thread syncs the -wal file, and a claim for the pool starts only once its
# flush returned. Here fdatasync(2) fails with EIO for the flusher
# (tests/fixtures/failsync, an LD_PRELOAD shim that fails the flusher's
# read-only descriptor only, after SPORE_TEST_FAILSYNC_AFTER good syncs):
#
# - `spore run` stops at once with exit 10 and `store.io` ("could not be
#   flushed to disk", and what to do), in JSON and in text, and does not
#   start the step whose claim could not be flushed (three idempotent
#   command steps: the last one never starts);
# - a later `spore run` of the same key, on a disk that flushes, completes
#   the run, and every step started exactly once over both runs: the failed
#   flush lost nothing and doubled nothing.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

shim=${SPORE_TEST_FAILSYNC:-}
if [ -z "$shim" ] || [ ! -f "$shim" ]; then
  echo "$test_name: SPORE_TEST_FAILSYNC must name the fdatasync shim (run it through ctest)" >&2
  exit 1
fi

starts() { # <run> <node>: how often step.sh started the node, every attempt
  log_count start "$1" "$2"
}

flush_fails() { # <key> <mode: json|text>
  local key=$1 mode=$2
  local json=()
  [ "$mode" = json ] && json=(--json)
  sp_n=$((sp_n + 1))
  checks=$((checks + 1))
  set +e
  SPORE_TEST_FAILSYNC_AFTER=1 LD_PRELOAD=$shim timeout 60 "$spore" run "$wf/three-steps.json" \
    --lease-ms 1000 --key "$key" --db "$db" "${json[@]}" >"$tmp/sp$sp_n.out" 2>"$tmp/sp$sp_n.err"
  rc=$?
  set -e
  out=$(cat "$tmp/sp$sp_n.out")
  err=$(cat "$tmp/sp$sp_n.err")
  expect_rc 10 "$key: a flush that fails"
  if [ "$mode" = json ]; then
    expect_json '.error.code == "store.io"
        and (.error.message | test("could not be flushed to disk"))
        and (.error.message | test("start it again"))' "$key: the error"
  else
    [ -z "$out" ] || fail "$key: text mode printed on stdout: ${out:0:300}"
    tail -n 1 "$tmp/sp$sp_n.err" | grep -q '^spore: store\.io: .*could not be flushed to disk' ||
      fail "$key: last stderr line: $(tail -n 1 "$tmp/sp$sp_n.err")"
  fi
}

then_completes() { # <key>
  local key=$1
  sp run "$wf/three-steps.json" --key "$key" --db "$db" --json
  expect_rc 0 "$key: the next run of the key, on a disk that flushes"
  expect_json '.created == false and .status == "completed"' "$key: the next run"
  local run
  run=$(jq -r '.runId // empty' <<<"$out")
  [ -n "$run" ] || { fail "$key: no runId in ${out:0:300}"; return 0; }
  for node in a b c; do
    [ "$(starts "$run" "$node")" -eq 1 ] ||
      fail "$key: step $node started $(starts "$run" "$node") times over both runs, want 1"
  done
  printf '%s\n' "$run"
}

for mode in json text; do
  key="flush-$mode"
  flush_fails "$key" "$mode"
  # the run exists (its first commits flushed), its last step never started
  run=$(sql "SELECT run_id FROM runs WHERE start_key = '$key'")
  [ -n "$run" ] || { fail "$key: the run was not created"; continue; }
  [ "$(starts "$run" c)" -eq 0 ] ||
    fail "$key: step c started although its claim could not be flushed"
  then_completes "$key" >/dev/null
done

finish
