#!/usr/bin/env bash
# test_pg_takeover_all.sh - fast takeover takes over every attempt of a dead
# worker (engine.md §11, issue 10 item 8) on PostgreSQL: the scenario of
# tests/cli/test_takeover_all.sh (tests/cli/takeover_all.sh) with the workers
# on one PostgreSQL store and their lock files in the host-local directory of
# sp_engine_lock_dir ($XDG_RUNTIME_DIR or /tmp, spore-<uid>-workers-<hash>).
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"
source "$(dirname "$0")/pglib.sh"
source "$(dirname "$0")/../cli/takeover_all.sh"

takeover_all_scenario
[[ "$(basename "$locks")" == spore-"$(id -u)"-workers-* ]] ||
  fail "the lock directory is $locks, want spore-$(id -u)-workers-<hash>"

finish
