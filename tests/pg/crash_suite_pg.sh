#!/usr/bin/env bash
# crash_suite_pg.sh - the crash suite (tests/crash/crash_suite.sh, engine.md
# H6) on PostgreSQL at a reduced matrix: every core failpoint at stages 1..3
# with hit count 1, and 6 SIGKILL points; each scenario in its own schema.
#
# usage: bash crash_suite_pg.sh <spore> <repo-root>
# The server: $SPORE_TEST_PG, else the URL file $SPORE_TEST_PG_FILE (CTest's
# pg.server fixture). No server is a failure. CRASH_HITS / CRASH_KILLS
# override the matrix.
set -euo pipefail
url=${SPORE_TEST_PG:-}
if [ -z "$url" ] && [ -n "${SPORE_TEST_PG_FILE:-}" ] && [ -f "$SPORE_TEST_PG_FILE" ]; then
  url=$(cat "$SPORE_TEST_PG_FILE")
fi
[ -n "$url" ] || { echo "crash_suite_pg.sh: no PostgreSQL server (SPORE_TEST_PG)" >&2; exit 1; }
export CRASH_DB_URL="$url" CRASH_HITS=${CRASH_HITS:-1} CRASH_KILLS=${CRASH_KILLS:-6}
exec bash "$2/tests/crash/crash_suite.sh" "$1" "$2"
