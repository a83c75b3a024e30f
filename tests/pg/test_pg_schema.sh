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
#   skipped.
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
