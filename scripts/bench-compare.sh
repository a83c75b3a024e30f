#!/usr/bin/env bash
# bench-compare.sh - what `make bench-compare` runs: bench/bench_compare (the
# interleaved comparison of step-path.md §Evidence) with its peers set up
# around it, and everything it started stopped afterwards.
#
# What it is for: it gives bench_compare
#   - a scratch directory on the disk for the SQLite files ($SPORE_BENCH_DIR,
#     else $TMPDIR, else /tmp; removed at the end);
#   - PostgreSQL: $SPORE_TEST_PG when set, else a private server started with
#     scripts/pg.sh when PostgreSQL's binaries are installed (stopped and
#     removed at the end), else PostgreSQL is skipped and the table says why;
#   - Restate: when node and npm are present and the peer exists
#     ($SPORE_BENCH_RESTATE_SRC, default ../shared/peers/restate next to the
#     repository), a writable copy of it ($SPORE_BENCH_RESTATE_WORK, default
#     ${TMPDIR:-/tmp}/spore-bench-restate; kept between runs so `npm install`
#     runs once) with its npm packages; bench_compare runs its ./run.sh once
#     per repetition, which starts and stops its own restate-server and SDK
#     endpoint. $SPORE_BENCH_RESTATE names a ready copy to use as it is.
#     When npm install fails (no network), Restate is skipped and the table
#     says so;
#   - DBOS: when node and npm are present, the peer exists
#     ($SPORE_BENCH_DBOS_SRC, default ../shared/peers/dbos) and this script
#     started the private PostgreSQL server, a writable copy
#     ($SPORE_BENCH_DBOS_WORK, default ${TMPDIR:-/tmp}/spore-bench-dbos, kept
#     for its npm packages); bench_compare runs its bench.mjs once per
#     repetition on that same server, as the server's superuser over its
#     socket (DBOS creates its own databases).
# What it must never do: fail because of a speed (benchmarks print), stop a
# server or process it did not start, or print a PostgreSQL password.
#
# usage: scripts/bench-compare.sh [build-dir] [--no-pg] [--no-restate] [--no-dbos]
#                                 [bench_compare options: --reps R --steps N
#                                  --runs R --run-steps K --quick --json ...]
#   build-dir defaults to build-bench (a Release build: `make bench-compare`
#   configures and builds it).
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build="build-bench"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  build=$1
  shift
fi
[ -d "$build" ] || build="$repo/$build"
bin="$build/bench/bench_compare"
if [ ! -x "$bin" ]; then
  echo "bench-compare.sh: no $bin (run: make bench-compare)" >&2
  exit 1
fi
bin=$(cd "$(dirname "$bin")" && pwd)/bench_compare

use_pg=${SPORE_BENCH_PG:-1}
use_restate=1
use_dbos=1
pass=()
for a in "$@"; do
  case "$a" in
    --no-pg) use_pg=0 ;;
    --no-restate) use_restate=0 ;;
    --no-dbos) use_dbos=0 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
      exec "$bin" --help
      ;;
    *) pass+=("$a") ;;
  esac
done

note() { echo "bench-compare.sh: $*" >&2; }
redact() { sed -E 's#(://[^:/@]*):[^@]*@#\1@#' <<<"$1"; }

base=${SPORE_BENCH_DIR:-${TMPDIR:-/tmp}}
work=$(mktemp -d "$base/spore-bench-compare.XXXXXX")
pg_state="$work/pg"
pg_started=0
bc_pid=""

# shellcheck disable=SC2317 # reached through the traps
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  if [ -n "$bc_pid" ] && kill -0 "$bc_pid" 2>/dev/null; then
    kill -TERM "$bc_pid" 2>/dev/null || true # it stops its workers and Restate's run.sh
    wait "$bc_pid" 2>/dev/null || true
  fi
  if [ "$pg_started" = 1 ]; then
    "$repo/scripts/pg.sh" stop "$pg_state" >/dev/null 2>&1 || true
    note "stopped the private PostgreSQL server"
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# ---- PostgreSQL ----
skipped=()
if [ "$use_pg" = 0 ]; then
  pass+=(--no-pg)
elif [ -n "${SPORE_TEST_PG:-}" ]; then
  if "$repo/scripts/pg.sh" check "$SPORE_TEST_PG"; then
    note "PostgreSQL: SPORE_TEST_PG $(redact "$SPORE_TEST_PG")"
  else
    note "PostgreSQL: SPORE_TEST_PG does not answer: $(redact "$SPORE_TEST_PG"); skipped"
    unset SPORE_TEST_PG
    skipped+=(--skipped "postgres=SPORE_TEST_PG did not answer")
  fi
elif ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ -n "${PG_BINDIR:-}" ]; then
  mkdir -p "$pg_state"
  if url=$("$repo/scripts/pg.sh" start "$pg_state" 2>"$work/pg-start.log" | tail -n 1) && [ -n "$url" ]; then
    pg_started=1
    # every client of this server (spore, the raw INSERTs, DBOS) over its
    # Unix socket: one transport for all of them (local logins are trusted)
    pg_root=$(sed -n 's/^PG_ROOT=//p' "$pg_state/env" | tail -n 1)
    pg_port=$(sed -n 's/^PG_PORT=//p' "$pg_state/env" | tail -n 1)
    export SPORE_TEST_PG="postgresql://spore@/spore?host=$pg_root/sock&port=$pg_port"
    note "PostgreSQL: started a private server $(redact "$url"), used over its socket"
  else
    pg_started=1 # whatever pg.sh left behind is stopped by cleanup
    note "PostgreSQL: could not start a private server ($(tail -n 1 "$work/pg-start.log")); skipped"
    skipped+=(--skipped "postgres=a private server did not start (scripts/pg.sh)")
  fi
else
  skipped+=(--skipped "postgres=no server: set SPORE_TEST_PG or install postgresql")
fi

# ---- Restate ----
restate_dir=""
if [ "$use_restate" = 0 ]; then
  skipped+=(--skipped "restate=--no-restate")
elif [ -n "${SPORE_BENCH_RESTATE:-}" ]; then
  restate_dir=$SPORE_BENCH_RESTATE
elif ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  skipped+=(--skipped "restate=node/npm not installed")
else
  src=${SPORE_BENCH_RESTATE_SRC:-$repo/../shared/peers/restate}
  copy=${SPORE_BENCH_RESTATE_WORK:-${TMPDIR:-/tmp}/spore-bench-restate}
  if [ ! -f "$src/run.sh" ]; then
    skipped+=(--skipped "restate=no peer in $src")
  else
    mkdir -p "$copy"
    # the peer's files, refreshed; its node_modules and runs/ stay
    cp -r "$src/." "$copy/"
    chmod -R u+w "$copy"
    bin_restate="$copy/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server"
    if [ ! -x "$bin_restate" ] || [ ! -d "$copy/node_modules/@restatedev/restate-sdk" ] ||
      [ ! -d "$copy/node_modules/restate-sdk-1.12" ]; then
      note "Restate: npm install in $copy"
      if ! (cd "$copy" && npm install --no-audit --no-fund >"$work/npm.log" 2>&1); then
        note "Restate: npm install failed (no network?): $(tail -n 1 "$work/npm.log"); skipped"
        skipped+=(--skipped "restate=npm install failed (no network?)")
        copy=""
      fi
    fi
    restate_dir=$copy
  fi
fi
if [ -n "$restate_dir" ]; then
  if (exec 3<>/dev/tcp/127.0.0.1/9080) 2>/dev/null; then
    note "Restate: port 9080 (its SDK endpoint) is in use by another process; skipped"
    skipped+=(--skipped "restate=port 9080 in use")
    restate_dir=""
  else
    pass+=(--restate "$restate_dir")
    # its data and fdatasync baseline go to the same filesystem, removed at the end
    export BENCH_DIR="$work/restate"
    note "Restate: $restate_dir (its run.sh once per repetition)"
  fi
fi

# ---- DBOS (on the private PostgreSQL server: it creates its own databases) ----
if [ "$use_dbos" = 0 ]; then
  skipped+=(--skipped "dbos=--no-dbos")
elif [ "$pg_started" != 1 ] || [ -z "${SPORE_TEST_PG:-}" ]; then
  skipped+=(--skipped "dbos=needs the private PostgreSQL server this script starts (unset SPORE_TEST_PG)")
elif ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  skipped+=(--skipped "dbos=node/npm not installed")
else
  src=${SPORE_BENCH_DBOS_SRC:-$repo/../shared/peers/dbos}
  copy=${SPORE_BENCH_DBOS_WORK:-${TMPDIR:-/tmp}/spore-bench-dbos}
  if [ ! -f "$src/bench.mjs" ]; then
    skipped+=(--skipped "dbos=no peer in $src")
  else
    mkdir -p "$copy"
    cp -r "$src/." "$copy/" # the peer's files, refreshed; its node_modules stay
    chmod -R u+w "$copy"
    if [ ! -d "$copy/node_modules/@dbos-inc/dbos-sdk" ] || [ ! -d "$copy/node_modules/pg" ]; then
      note "DBOS: npm install in $copy"
      (cd "$copy" && npm install --no-audit --no-fund >"$work/npm-dbos.log" 2>&1) || copy=""
      [ -n "$copy" ] || { note "DBOS: npm install failed (no network?); skipped"
        skipped+=(--skipped "dbos=npm install failed (no network?)"); }
    fi
    if [ -n "$copy" ]; then
      # the private server's own superuser over its socket (local trust)
      export SPORE_BENCH_DBOS_PGHOST="$pg_root/sock" SPORE_BENCH_DBOS_PGUSER=postgres
      export SPORE_BENCH_DBOS_PGPORT="$pg_port"
      pgbench=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)/pgbench
      [ -x "$pgbench" ] && export PGBENCH="$pgbench"
      mkdir -p /tmp/pg-bench # bench.mjs writes its pgbench script there, whatever the server
      pass+=(--dbos "$copy")
      note "DBOS: $copy (its bench.mjs once per repetition, same server, over its socket)"
    fi
  fi
fi

# ---- the benchmark (in the background, so a signal here reaches it) ----
"$bin" --dir "$work" "${skipped[@]}" "${pass[@]}" &
bc_pid=$!
set +e
wait "$bc_pid"
rc=$?
set -e
bc_pid=""
exit "$rc"
