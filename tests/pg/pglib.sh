# pglib.sh - what the PostgreSQL shell tests share (sourced after
# `set -euo pipefail`, after tests/cli/lib.sh; not a test itself).
#
# usage: source "$(dirname "$0")/../cli/lib.sh" "$@"; source "$(dirname "$0")/pglib.sh"
#
# Gives: $pg_url (the server: $SPORE_TEST_PG, else the URL file
# $SPORE_TEST_PG_FILE that CTest's pg.server fixture writes; neither is a
# failure, never a skip), $pg_password (what must never be printed), a fresh
# schema $pg_schema for this test, dropped at exit; $db = the store URL in
# that schema (replacing lib.sh's SQLite file); sql() = one query through
# psql in that schema (replacing lib.sh's sqlite3 one); $psql;
# three_steps_once() for a run of three-steps.json.

pg_url=${SPORE_TEST_PG:-}
if [ -z "$pg_url" ] && [ -n "${SPORE_TEST_PG_FILE:-}" ] && [ -f "$SPORE_TEST_PG_FILE" ]; then
  pg_url=$(cat "$SPORE_TEST_PG_FILE")
fi
if [ -z "$pg_url" ]; then
  echo "$test_name: no PostgreSQL server (set SPORE_TEST_PG, or run through CTest's pg.server fixture)" >&2
  exit 1
fi
psql=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)/psql
[ -x "$psql" ] || { echo "$test_name: psql is required (scripts/deps.sh installs postgresql)" >&2; exit 1; }
pg_password=$(sed -nE 's#^[a-z]+://[^:/@]*:([^@]*)@.*#\1#p' <<<"$pg_url")
pg_schema="spore_sh_$$_$RANDOM"
"$psql" "$pg_url" -XAtq -v ON_ERROR_STOP=1 -c "CREATE SCHEMA $pg_schema" >/dev/null ||
  { echo "$test_name: cannot reach the PostgreSQL server" >&2; exit 1; }
pg_sep='?'
[[ "$pg_url" == *\?* ]] && pg_sep='&'
db="$pg_url${pg_sep}options=-csearch_path%3D$pg_schema"

pg_cleanup() {
  cleanup
  "$psql" "$pg_url" -XAtq -c "DROP SCHEMA IF EXISTS $pg_schema CASCADE" >/dev/null 2>&1 || true
}
trap pg_cleanup EXIT

# sql <query>: one read in this test's schema.
sql() { PGOPTIONS="-csearch_path=$pg_schema" "$psql" "$pg_url" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }

# no_secret <file...>: the password appears in none of them.
no_secret() {
  local f
  for f in "$@"; do
    [ -f "$f" ] || continue
    ! grep -qF "$pg_password" "$f" || fail "the database password appears in $(basename "$f")"
  done
}

# three_steps_once <run>: a run of tests/fixtures/workflows/three-steps.json
# completed with the right output, each step started and ended once with
# one attempt, finished; its four events gapless, each consumed once, every
# result a success (no attempt expired and retried).
three_steps_once() {
  local id=$1 node counts
  sp status "$id" --db "$db" --json
  expect_json '.status == "completed" and .result.output == {"steps": ["a", "b", "c"]}
      and ([.nodes[] | .visit] == [1, 1, 1])' "run $id"
  sp events "$id" --db "$db" --json
  expect_json '(.events | length) == 4
      and ([.events[].sequence] == ["1", "2", "3", "4"])
      and ([.events[].consumedRevision] == ["1", "2", "3", "4"])
      and ([.events[] | select(.kind == "activity.result") | .payload.status] | all(. == "success"))' \
    "events of run $id"
  for node in a b c; do
    checks=$((checks + 1))
    [ "$(log_count start "$id" "$node")" -eq 1 ] && [ "$(log_count end "$id" "$node")" -eq 1 ] ||
      fail "run $id: step $node started $(log_count start "$id" "$node") times, want exactly once"
  done
  counts=$(sql "select (select count(*) from invocations where run_id = '$id') || ' ' ||
                       (select count(*) from attempts where run_id = '$id') || ' ' ||
                       (select count(*) from attempts where run_id = '$id' and status = 'finished')")
  checks=$((checks + 1))
  [ "$counts" = "3 3 3" ] || fail "run $id: invocations/attempts/finished = $counts, want 3 3 3"
}
