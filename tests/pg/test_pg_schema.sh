#!/usr/bin/env bash
# test_pg_schema.sh - what a PostgreSQL store this spore creates is made of
# (docs/postgres.md §3c), through the real binary and a real server:
#
# - no foreign keys in the store's schema (PostgreSQL checks each with a
#   query of its own per inserted row), and its tables and keys are there;
# - a run whose snapshot is wide enough to be compressed (a step's ~8 KB
#   output) is stored with lz4 when the server has lz4 and nobody chose
#   otherwise, and with pglz when the store URL chooses pglz
#   (options=-cdefault_toast_compression=pglz): a setting made elsewhere is
#   kept. A server without lz4 keeps pglz, and that case is printed as
#   skipped;
# - its unique keys other than the primary keys lead with the column that
#   tells rows apart, not with tenant (docs/postgres.md §3d); a store whose
#   keys lead with (tenant, ...), as an older spore made them, keeps them
#   when a reader opens it and gets them reordered, with its rows and its
#   uniqueness kept, when a writer does;
# - runs_ready's predicate names the stored generated column runs.ready (so
#   that a step's update of its run is HOT, src/store/postgres/schema.c); a
#   store without it, as an older spore made it, keeps its index when a
#   reader opens it and gets the column and the rebuilt index when a writer
#   does, a run started before found ready and run by a worker;
# - no CHECK constraints on the tables a step writes (runs, invocations,
#   attempts: PostgreSQL plans each again in every statement that writes the
#   table, src/store/postgres/schema.c); a store that has them, as an older
#   spore made it, keeps them when a reader opens it and loses them when a
#   writer does (a check someone else added stays).
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"
source "$(dirname "$0")/pglib.sh"

jq -n '{format: "runspore.workflow/0.1", name: "wide", start: "big",
  actions: {big: {kind: "command", effect: "idempotent", output: "json",
    argv: ["tests/fixtures/bin/step.sh"]}},
  nodes: {big: {kind: "activity", action: "big", input: {bytes: 8000}, outcomes: {ok: "done"}},
    done: {kind: "complete"}}}' >"$tmp/wide.json"

# run_wide <store url> <key>: runs the workflow; $got = how the run's
# snapshot is stored (lz4, pglz, or none when it was not compressed)
run_wide() {
  got=
  sp run "$tmp/wide.json" --db "$1" --key "$2" --json
  expect_rc 0 "$2: the run completes"
  local id
  id=$(jq -r '.runId // empty' <<<"$out")
  [ -n "$id" ] || { fail "$2: no runId in ${out:0:300}"; return 0; }
  got=$(sql "SELECT coalesce(pg_column_compression(snapshot), 'none') FROM runs
    WHERE run_id = '$id'")
}

run_wide "$db" default
# constraints <contype list>: how many constraints of those types the store's schema has
constraints() {
  sql "SELECT count(*) FROM pg_catalog.pg_constraint c JOIN pg_catalog.pg_namespace n
    ON n.oid = c.connamespace WHERE n.nspname = '$pg_schema' AND c.contype IN ($1)"
}
checks=$((checks + 1))
tables=$(sql "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = '$pg_schema'
  AND tablename IN ('runs', 'events', 'transitions', 'commands', 'invocations', 'attempts')")
[ "$tables" -eq 6 ] || fail "the store's tables are not all in $pg_schema ($tables of 6)"
checks=$((checks + 1))
fks=$(constraints "'f'")
[ "$fks" -eq 0 ] || fail "the new store has $fks foreign keys, want none"
checks=$((checks + 1))
[ "$(constraints "'p', 'u'")" -ge 10 ] ||
  fail "the store's primary keys and unique constraints are missing"

# keys_by_tenant: the store's unique keys (not primary keys) whose first column is tenant
keys_by_tenant() {
  sql "SELECT count(*) FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_namespace n
    ON n.oid = k.connamespace JOIN pg_catalog.pg_attribute a
    ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1]
    WHERE n.nspname = '$pg_schema' AND k.contype = 'u' AND a.attname = 'tenant'"
}
checks=$((checks + 1))
[ "$(constraints "'u'")" -eq 5 ] || fail "the store has $(constraints "'u'") unique keys, want 5"
checks=$((checks + 1))
[ "$(keys_by_tenant)" -eq 0 ] || fail "$(keys_by_tenant) unique keys of a new store lead with tenant"
# a run started and left for a worker: ready, through the migration below
sp start "$wf/approval.json" --key waiting --db "$db" --json
expect_rc 0 "a run starts, for a worker to take later"
waiting=$(jq -r '.runId // empty' <<<"$out")
sql "ALTER TABLE runs DROP CONSTRAINT runs_start_key, ADD CONSTRAINT runs_start_key UNIQUE (tenant, start_key);
  ALTER TABLE events DROP CONSTRAINT events_event_id, ADD CONSTRAINT events_event_id UNIQUE (tenant, run_id, event_id);
  ALTER TABLE transitions DROP CONSTRAINT transitions_consumed,
    ADD CONSTRAINT transitions_consumed UNIQUE (tenant, run_id, consumed_sequence);
  ALTER TABLE attempts DROP CONSTRAINT attempts_number,
    ADD CONSTRAINT attempts_number UNIQUE (tenant, run_id, invocation_id, attempt_number),
    DROP CONSTRAINT attempts_fence, ADD CONSTRAINT attempts_fence UNIQUE (tenant, run_id, fence)" >/dev/null
# hot_columns: whether runs.ready is there (1) or not (0); hot_indexes:
# whether runs_ready names it. The index's definition is read only for this
# schema's index (OFFSET 0 keeps the planner from reading it for every index
# of the database first, which fails when another test drops its schema
# meanwhile: "could not open relation with OID").
hot_columns() {
  sql "SELECT count(*) FROM pg_catalog.pg_attribute WHERE NOT attisdropped
    AND attrelid = '$pg_schema.runs'::regclass AND attname = 'ready'"
}
hot_indexes() {
  sql "SELECT count(*) FROM (SELECT c.oid FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = '$pg_schema' AND c.relname = 'runs_ready' AND c.relkind = 'i'
      OFFSET 0) i
    WHERE pg_catalog.pg_get_indexdef(i.oid) LIKE '%AND ready)'"
}
checks=$((checks + 1))
[ "$(hot_columns)/$(hot_indexes)" = 1/1 ] ||
  fail "a new store's HOT column and index: $(hot_columns)/$(hot_indexes), want 1/1"
# step_checks: the CHECK constraints of the tables a step writes
step_checks() {
  sql "SELECT count(*) FROM pg_catalog.pg_constraint WHERE contype = 'c'
    AND conrelid IN ('$pg_schema.runs'::regclass, '$pg_schema.invocations'::regclass,
                     '$pg_schema.attempts'::regclass)"
}
checks=$((checks + 1))
[ "$(step_checks)" -eq 0 ] || fail "a new store has $(step_checks) checks on the tables a step writes"
sql "ALTER TABLE runs ADD CHECK (applied_sequence < next_sequence);
  ALTER TABLE invocations ADD CHECK (status IN ('pending', 'running', 'settled'));
  ALTER TABLE attempts ADD CHECK (status IN ('running', 'finished', 'expired')),
    ADD CHECK (holder IS NULL OR octet_length(holder) <= 4096);
  ALTER TABLE runs ADD CONSTRAINT runs_theirs CHECK (revision >= 0)" >/dev/null
checks=$((checks + 1))
[ "$(step_checks)" -eq 5 ] || fail "the older store's checks (and one of someone else's) were not made"
sql "ALTER TABLE runs DROP COLUMN ready, RESET (fillfactor);
  CREATE INDEX runs_ready ON runs (tenant, run_id)
    WHERE quarantine_code IS NULL AND next_sequence > applied_sequence + 1" >/dev/null
checks=$((checks + 1))
[ "$(keys_by_tenant)" -eq 5 ] || fail "the older store's keys were not made"
checks=$((checks + 1))
[ "$(hot_columns)/$(hot_indexes)" = 0/0 ] || fail "the older store still has the HOT column"
sp list --db "$db" --json
expect_rc 0 "a reader opens the older store"
checks=$((checks + 1))
[ "$(keys_by_tenant)" -eq 5 ] || fail "a reader changed the older store's keys"
checks=$((checks + 1))
[ "$(hot_columns)/$(hot_indexes)" = 0/0 ] || fail "a reader added the HOT column"
checks=$((checks + 1))
[ "$(step_checks)" -eq 5 ] || fail "a reader dropped the older store's checks"
sp run "$tmp/wide.json" --db "$db" --key after-reorder --json
expect_rc 0 "a writer opens the older store and runs"
checks=$((checks + 1))
[ "$(keys_by_tenant)" -eq 0 ] || fail "a writer left $(keys_by_tenant) keys leading with tenant"
checks=$((checks + 1))
[ "$(step_checks)" -eq 1 ] || fail "a writer left $(step_checks) checks on the tables a step writes, want 1 (someone else's)"
checks=$((checks + 1))
[ "$(constraints "'u'")" -eq 5 ] || fail "after the reorder the store has $(constraints "'u'") unique keys"
checks=$((checks + 1))
[ "$(sql "SELECT count(*) FROM runs WHERE status = 'completed'")" -eq 2 ] ||
  fail "the runs are not both completed after the reorder"
checks=$((checks + 1))
[ "$(hot_columns)/$(hot_indexes)" = 1/1 ] ||
  fail "a writer left the HOT column and index at $(hot_columns)/$(hot_indexes), want 1/1"
checks=$((checks + 1))
[ "$(sql "SELECT count(*) FROM runs WHERE ready AND run_id = '$waiting'")" -eq 1 ] ||
  fail "the run started before the migration is not ready after it"
# run_is <status>: the waiting run has that status
run_is() { [ "$(sql "SELECT status FROM runs WHERE run_id = '$waiting'")" = "$1" ]; }
# a worker finds that run through the rebuilt runs_ready; then the signal
# makes it ready again
start_bg hot-worker worker --db "$db" --poll-ms 100
hot_worker=$bg_pid
checks=$((checks + 1))
wait_for 30 run_is waiting || fail "the worker did not take the run started before the migration"
sp signal "$waiting" approval --outcome approved --db "$db" --json
expect_rc 0 "signal the run started before the migration"
checks=$((checks + 1))
wait_for 30 run_is completed || fail "the worker did not complete the signalled run"
kill -TERM "$hot_worker"
wait_bg "$hot_worker" 30
# copy_attempt <attempt number offset>: a copy of one attempt under another
# ID and fence, with its number moved by the offset
copy_attempt() {
  sql "INSERT INTO attempts SELECT tenant, run_id, attempt_id || 'x$1', invocation_id,
    attempt_number + $1, owner, fence + 1000 + $1, lease_until_ms, deadline_ms, status, result,
    holder, owner_host, owner_pid, owner_started, expire_reason, started_at_ms, ended_at_ms
    FROM attempts ORDER BY attempt_id LIMIT 1" >/dev/null 2>&1
}
checks=$((checks + 1))
! copy_attempt 0 || fail "a second attempt of the same invocation and number was accepted after the reorder"
checks=$((checks + 1))
copy_attempt 100 || fail "the same copy with another attempt number was refused"

lz4=$(sql "SELECT count(*) FROM pg_settings WHERE name = 'default_toast_compression'
  AND 'lz4' = ANY(enumvals)")
checks=$((checks + 1))
if [ "$lz4" -eq 1 ]; then
  [ "$got" = lz4 ] || fail "the snapshot is stored with '$got', want lz4"
else
  echo "skipped: this server has no lz4 (the snapshot is stored with '$got')"
  [ "$got" = pglz ] || fail "the snapshot is stored with '$got', want pglz"
fi
run_wide "$db%20-cdefault_toast_compression%3Dpglz" chosen
checks=$((checks + 1))
[ "$got" = pglz ] || fail "a URL that chooses pglz got '$got'"
finish
