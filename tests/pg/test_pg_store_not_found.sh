#!/usr/bin/env bash
# test_pg_store_not_found.sh - on PostgreSQL too, commands that only read or
# answer a run never create a store: in an empty schema `status`, `list`,
# `events`, `signal` and `resume` exit 10 with store.not-found and leave the
# schema empty (no table created); `start` creates the store, after which
# they work. The password is never printed.
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"
source "$(dirname "$0")/pglib.sh"

tables() { sql "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = '$pg_schema'"; }

for cmd in "status run_x" "list" "events run_x" "signal run_x approval" "resume run_x"; do
  # shellcheck disable=SC2086
  expect_error 10 store.not-found "$cmd in an empty schema" -- $cmd --db "$db"
  printf '%s\n' "$out" >>"$tmp/answers"
  printf '%s\n' "$err" >>"$tmp/answers"
done
[ "$(tables)" -eq 0 ] || fail "a read command created $(tables) tables in the empty schema"
no_secret "$tmp/answers"

sp start "$wf/approval.json" --key k1 --db "$db" --json
expect_rc 0 "start creates the store"
[ "$(tables)" -gt 0 ] || fail "start created no tables"
id=$(jq -r .runId <<<"$out")
sp list --db "$db" --json
expect_rc 0 "list once the store exists"
expect_json '(.runs | length) == 1 and .runs[0].runId == $id and .runs[0].workflow == "approval"' \
  "list on PostgreSQL" --arg id "$id"
expect_error 2 run.not-found "status of an unknown run once the store exists" -- status run_x --db "$db"

finish
