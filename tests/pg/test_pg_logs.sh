#!/usr/bin/env bash
# test_pg_logs.sh - step logs on PostgreSQL (authoring.md §5): a command
# step's stdout and stderr, its secret redacted, read back with `spore logs`
# (text and --json) from the database; the secret is in no table. A store an
# older spore made (no attempt_logs table) answers "no logs" to a reader
# without creating anything, and its next writer adds the table.
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"
source "$(dirname "$0")/pglib.sh"

secret='pg-s3cr3t-9c1e44b0d2'
printf '%s' "$secret" >"$tmp/token"
jq -n --arg f "$tmp/token" '{format: "runspore.workflow/0.1", name: "pg-logs", start: "say",
  actions: {say: {kind: "command", effect: "idempotent", output: "text",
    secrets: {TOKEN: {file: $f}},
    argv: ["/bin/sh", "-c", "echo hello on postgres; echo \"warn $(cat $TOKEN_FILE)\" >&2"]}},
  nodes: {say: {kind: "activity", action: "say", outcomes: {ok: "done"}}, done: {kind: "complete"}}}' \
  >"$tmp/wf.json"

sp run "$tmp/wf.json" --db "$db" --json
expect_rc 0 "the step runs on PostgreSQL"
id=$(jq -r .runId <<<"$out")
sp logs "$id" --db "$db" --json
expect_json '(.entries | length) == 1 and .entries[0].nodeId == "say"
  and .entries[0].stdout.text == "hello on postgres\n"
  and .entries[0].stderr.text == "warn ***REDACTED***\n"' "logs --json on PostgreSQL"
sp logs "$id" say --db "$db"
grep -qx 'hello on postgres' <<<"$out" || fail "logs (text) on PostgreSQL: $out"
for table in attempt_logs events attempts audit; do
  checks=$((checks + 1))
  [ "$(sql "SELECT count(*) FROM $table WHERE $table::text LIKE '%$secret%'")" -eq 0 ] ||
    fail "the secret is in table $table"
done

# ---- a store without the table: readers find no logs, the next writer adds it ----
sql "DROP TABLE attempt_logs" >/dev/null
sp logs "$id" --db "$db" --json
expect_rc 0 "logs of a store without attempt_logs"
expect_json '.entries == [] and (.note | test("no logs"))' "no logs in an older store"
[ "$(sql "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = '$pg_schema' AND tablename = 'attempt_logs'")" -eq 0 ] ||
  fail "a reader created the attempt_logs table"
sp run "$tmp/wf.json" --db "$db" --key again --json
expect_rc 0 "a writer on the older store"
sp logs "$(jq -r .runId <<<"$out")" --db "$db" --json
expect_json '(.entries | length) == 1' "the writer added the table and kept its logs"
finish
