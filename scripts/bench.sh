#!/usr/bin/env bash
# bench.sh - what `make bench` runs: every benchmark binary built in
# <build-dir>/bench/, each with the arguments it needs. Benchmarks print
# throughput and a ratio against a baseline measured in the same run; nothing
# here fails on speed (only on a benchmark that cannot run at all).
#
# usage: scripts/bench.sh [build-dir]      (default: build)
# env:   SPORE_BENCH_SECONDS  seconds per measurement (default 2)
#        SPORE_BENCH_STEPS    steps per kind for bench_steps (default 200; its
#                             SQLite files go to $TMPDIR, else /tmp) and per
#                             measurement for bench_pg
#        SPORE_TEST_PG        the PostgreSQL server bench_pg uses; unset, a
#                             private one is started and stopped (scripts/pg.sh)
set -euo pipefail

build=${1:-build}
if [ ! -d "$build" ]; then
  echo "bench.sh: no build directory $build (run: make build)" >&2
  exit 1
fi
build=$(cd "$build" && pwd)
cd "$(dirname "$0")/.."

seconds=${SPORE_BENCH_SECONDS:-2}
traces=../shared/conformance/traces

ran=0
for bin in "$build"/bench/bench_*; do
  [[ -f "$bin" && -x "$bin" ]] || continue
  name=$(basename "$bin")
  case "$name" in
    bench_kernel) args=(--seconds "$seconds" "$traces") ;;
    bench_steps) args=(--steps "${SPORE_BENCH_STEPS:-200}") ;;
    # ---- PostgreSQL: $SPORE_TEST_PG, else a private server (scripts/pg.sh) ----
    bench_pg)
      if [ -z "${SPORE_TEST_PG:-}" ]; then
        pg_state=$(mktemp -d "${TMPDIR:-/tmp}/spore-bench-pg.XXXXXX")
        trap 'scripts/pg.sh stop "$pg_state" >/dev/null 2>&1; rm -rf "$pg_state"' EXIT
        SPORE_TEST_PG=$(scripts/pg.sh start "$pg_state" | tail -n 1)
        export SPORE_TEST_PG
      fi
      args=(--steps "${SPORE_BENCH_STEPS:-200}")
      ;;
    # ---- end PostgreSQL ----
    # runners.md: one runner call, in the jail program spore runs its calls in
    bench_component) args=("$build/spore-wasm-jail" "$build/runners") ;;
    bench_compare) continue ;; # minutes, with peers: make bench-compare (scripts/bench-compare.sh)
    *) args=() ;;
  esac
  echo "== $name ${args[*]}"
  "$bin" "${args[@]}"
  echo
  ran=$((ran + 1))
done

if [ "$ran" -eq 0 ]; then
  echo "bench.sh: no benchmark binaries in $build/bench/ (run: make build)" >&2
  exit 1
fi
