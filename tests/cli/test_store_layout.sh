#!/usr/bin/env bash
# test_store_layout.sh - the SQLite store's table layout (docs/step-path.md,
# "Layout"), through the real binary and real store files:
#
# - a new store has layout 3: schema version 1 (PRAGMA user_version, as
#   store.md says), meta 'layout' = '3', the tables a step inserts into by
#   hashed keys as rowid tables (events, commands, invocations, attempts,
#   receipts), transitions WITHOUT ROWID, and partial indexes over only the
#   rows a sweep or dispatch looks for (running attempts, pending
#   invocations); runs on it complete with every step run once and every row
#   where it belongs;
# - stores created by older spores (layout 1, tests/fixtures/store/
#   layout1.sql: rowid tables, indexes over status; layout 2, layout2.sql:
#   the per-run tables WITHOUT ROWID) keep working unchanged: a three-step
#   run and an approval (signal, resume) complete on each, and each file is
#   left at its layout (nothing rebuilt behind the user's back).
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

table_sql() { sql "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = '$1'"; }
index_exists() { [ "$(sql "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = '$1'")" = 1 ]; }

# run_three <what>: three-steps.json completes with each step run once.
run_three() {
  local what=$1
  : >"$SPORE_TEST_LOG"
  sp run "$wf/three-steps.json" --db "$db" --json
  expect_rc 0 "$what: run three-steps"
  expect_json '.status == "completed" and .result.output.steps == ["a", "b", "c"]' "$what: three-steps completed"
  local run
  run=$(jq -r '.runId' <<<"$out")
  for node in a b c; do
    [ "$(log_count start "$run" "$node")" = 1 ] || fail "$what: step $node ran $(log_count start "$run" "$node") times, want 1"
  done
  [ "$(sql "SELECT count(*) FROM attempts WHERE run_id = '$run' AND status = 'finished'")" = 3 ] ||
    fail "$what: want 3 finished attempts"
  [ "$(sql "SELECT count(*) FROM invocations WHERE run_id = '$run' AND status = 'settled'")" = 3 ] ||
    fail "$what: want 3 settled invocations"
  [ "$(sql "SELECT count(*) FROM attempts WHERE status = 'running'")" = 0 ] ||
    fail "$what: an attempt is still running"
}

# run_approval <what>: a run parks on its signal, is signalled and resumed.
run_approval() {
  local what=$1
  sp run "$wf/approval.json" --db "$db" --json
  expect_rc 3 "$what: run approval (waiting: exit 3)"
  expect_json '.status == "waiting"' "$what: approval waits for its signal"
  local run
  run=$(jq -r '.runId' <<<"$out")
  sp signal "$run" approval --outcome approved --data '{"by":"ana"}' --db "$db" --json
  expect_rc 0 "$what: signal"
  sp resume "$run" --db "$db" --json
  expect_rc 0 "$what: resume"
  expect_json '.status == "completed"' "$what: approval completed after the signal"
}

# ---- a new store: layout 3 ----
run_three "new store"
run_approval "new store"
[ "$(sql 'PRAGMA user_version')" = 1 ] || fail "new store: user_version $(sql 'PRAGMA user_version'), want 1"
[ "$(sql "SELECT value FROM meta WHERE key = 'layout'")" = 3 ] || fail "new store: meta layout is not 3"
for t in events commands invocations attempts receipts; do
  [[ "$(table_sql "$t")" != *"WITHOUT ROWID"* ]] || fail "new store: table $t is WITHOUT ROWID, want a rowid table"
done
[[ "$(table_sql transitions)" == *"WITHOUT ROWID"* ]] || fail "new store: transitions is not WITHOUT ROWID"
[[ "$(sql "SELECT sql FROM sqlite_master WHERE name = 'attempts_lease'")" == *"WHERE status = 'running'"* ]] ||
  fail "new store: attempts_lease is not limited to running attempts"
[[ "$(sql "SELECT sql FROM sqlite_master WHERE name = 'invocations_due'")" == *"WHERE status = 'pending'"* ]] ||
  fail "new store: invocations_due is not limited to pending invocations"
! index_exists attempts_host || fail "new store: attempts_host still exists"
# the lease sweep and dispatch read those partial indexes
plan=$(sql "EXPLAIN QUERY PLAN SELECT attempt_id FROM attempts WHERE status = 'running' AND lease_until_ms <= 0
            ORDER BY lease_until_ms, attempt_id, tenant, run_id")
[[ "$plan" == *"attempts_lease"* ]] || fail "new store: the lease sweep does not use attempts_lease: $plan"

# old_store <n>: a store of layout n as an older spore created it
# (tests/fixtures/store/layout<n>.sql), runs on it, its schema version kept.
old_store() {
  db="$tmp/layout$1.db"
  sqlite3 -batch "$db" <"$root/tests/fixtures/store/layout$1.sql"
  chmod 600 "$db"
  run_three "layout-$1 store"
  run_approval "layout-$1 store"
  [ "$(sql 'PRAGMA user_version')" = 1 ] || fail "layout-$1 store: user_version changed"
}

# ---- a store of layout 2 (an older spore's) ----
old_store 2
[ "$(sql "SELECT value FROM meta WHERE key = 'layout'")" = 2 ] || fail "layout-2 store: its layout row changed"
for t in events transitions commands invocations attempts receipts; do
  [[ "$(table_sql "$t")" == *"WITHOUT ROWID"* ]] || fail "layout-2 store: table $t was rebuilt"
done
[ "$(sql 'PRAGMA integrity_check')" = ok ] || fail "layout-2 store: integrity_check failed"

# ---- a store of layout 1 (an older spore's) ----
old_store 1
[ -z "$(sql "SELECT value FROM meta WHERE key = 'layout'")" ] || fail "layout-1 store: a layout row appeared"
[[ "$(table_sql attempts)" != *"WITHOUT ROWID"* ]] || fail "layout-1 store: attempts was rebuilt"
index_exists attempts_host || fail "layout-1 store: attempts_host was dropped"
[ "$(sql 'PRAGMA integrity_check')" = ok ] || fail "layout-1 store: integrity_check failed"

finish
