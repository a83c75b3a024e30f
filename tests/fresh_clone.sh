#!/usr/bin/env bash
# fresh_clone.sh - the first hour of a new user, as .ci/run runs it: clone the
# repository (its committed HEAD) into an empty folder with nothing beside
# it, then the README's two commands there:
#   make demo   must pass, build only the demo's targets, and say that the
#               trace replay is skipped (no ../shared/conformance);
#   make test   must pass, with every conformance case reported as skipped
#               with its reason (never failed, never missing).
# usage: tests/fresh_clone.sh <repo> [make test arguments...]
set -euo pipefail
repo=$(cd "${1:?usage: fresh_clone.sh <repo>}" && pwd)
shift
work=$(mktemp -d "${TMPDIR:-/tmp}/spore-fresh.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "fresh_clone: FAIL: $*" >&2; exit 1; }

# a clone of HEAD; where the repository cannot be cloned (a shallow CI
# checkout on an old git), its committed tree exported the same way
if ! git clone -q "$repo" "$work/empty/spore" 2>"$work/clone.err"; then
  cat "$work/clone.err" >&2
  rm -rf "$work/empty"
  mkdir -p "$work/empty/spore"
  git -C "$repo" archive HEAD | tar -x -C "$work/empty/spore"
fi
[ "$(ls -A "$work/empty")" = "spore" ] || fail "the clone's folder holds more than the clone"
cd "$work/empty/spore"

echo "== fresh clone: make demo"
make demo >"$work/demo.log" 2>&1 || { cat "$work/demo.log"; fail "make demo failed"; }
grep -q 'spore trace: skipped (no conformance data' "$work/demo.log" ||
  { cat "$work/demo.log"; fail "make demo did not say the trace replay is skipped"; }
grep -q 'run_.*completed\|status *completed' "$work/demo.log" ||
  { cat "$work/demo.log"; fail "make demo ran no workflow to completion"; }
for target in build/spore build/spore-step; do
  [ -x "$target" ] || fail "make demo did not build $target"
done
for target in build/tests/unit/test_json build/tests/test_json build/bench/bench_steps; do
  [ ! -e "$target" ] || fail "make demo built $target (only the demo's targets belong to it)"
done
grep -q '^SPORE_TESTS:BOOL=OFF$' build/CMakeCache.txt || fail "make demo configured the test suite"
echo "fresh clone: make demo passed, trace replay skipped with its reason"

echo "== fresh clone: make test $*"
set +e
make test "$@" >"$work/test.log" 2>&1
test_rc=$?
set -e
if [ "$test_rc" -ne 0 ]; then
  cat "$work/test.log"
  fail "make test failed in a fresh clone (exit $test_rc)"
fi
tail -n 25 "$work/test.log"
for t in trace.all conformance.json-test-suite agent.json-test-suite; do
  grep -Eq "Test +#[0-9]+: $t \.+\*+Skipped" "$work/test.log" ||
    fail "$t is not reported as skipped in a fresh clone"
done
grep -q 'skipped: golden kernel traces not found' build/Testing/Temporary/LastTest.log ||
  fail "the skipped trace case does not say why"
echo "fresh clone: make test passed, conformance cases skipped with their reason"
