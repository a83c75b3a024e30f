#!/usr/bin/env bash
# test_takeover_all.sh - fast takeover takes over every attempt of a dead
# worker (engine.md §11, issue 10 item 8) on SQLite: two workers on one
# database file, the one with four steps in flight is SIGKILLed, and every
# one of its attempts is resumed by the other in under a second from the
# kill, not after the lease; an unsafe step is parked, not run twice; a live
# worker's attempt is never taken over. The scenario is tests/cli/
# takeover_all.sh (shared with tests/pg/test_pg_takeover_all.sh).
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
source "$(dirname "$0")/takeover_all.sh"

takeover_all_scenario
[ "$locks" = "$db.workers" ] || fail "the lock directory is $locks, want $db.workers"

finish
