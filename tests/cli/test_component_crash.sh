#!/usr/bin/env bash
# test_component_crash.sh - runners.md R4 through the real binary: the
# worker aborts at host.component.after-spawn (process_start started the
# job and is about to answer the runner) and at host.component.after-start
# (start returned a handle not yet recorded with hold_attempt); `spore run`
# again completes the run, and the command step after the component step
# ran exactly once.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
source "$root/tests/cli/component.sh"
ex="$tmp/example"
cp -r "$root/examples/runners" "$ex"
cp "$runners/detached-job.wasm" "$ex/"
jq --arg log "$SPORE_TEST_LOG" '.actions.job.config.args = ["1"]
  | .actions.job.retry = {maxAttempts: 3, backoffMs: "10"}
  | .actions.after = {kind: "command", effect: "idempotent",
      argv: ["/bin/sh", "-c", ("echo after $SPORE_RUN_ID >> " + $log)]}
  | .nodes.job.outcomes = {ok: "after"}
  | .nodes.after = {kind: "activity", action: "after", outcomes: {ok: "done"}}' \
  "$ex/detached-job.json" >"$ex/crash.json"

for point in host.component.after-spawn host.component.after-start; do
  set +e
  SPORE_FAILPOINTS=$point "$spore" run "$ex/crash.json" --db "$db" --key "c-$point" --poll-ms 50 \
    >"$tmp/crash.out" 2>"$tmp/crash.err"
  crc=$?
  set -e
  [ "$crc" = 134 ] || fail "$point: exit $crc, want 134 (abort at the failpoint)"
  sp run "$ex/crash.json" --db "$db" --key "c-$point" --poll-ms 50 --json
  expect_rc 0 "$point: the run completes after a restart"
  expect_json '.status == "completed" and .result.output == {finished: true}' "$point: result"
  run=$(jq -r .runId <<<"$out")
  [ "$(grep -c "^after $run\$" "$SPORE_TEST_LOG")" = 1 ] ||
    fail "$point: the step after the component step ran $(grep -c "^after $run\$" "$SPORE_TEST_LOG") times, want once"
  [ "$(sql "SELECT count(*) FROM attempts WHERE run_id = '$run' AND status = 'expired'")" = 1 ] ||
    fail "$point: the crashed attempt was not expired (once) before the retry"
done
finish
