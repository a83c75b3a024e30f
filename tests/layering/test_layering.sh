#!/usr/bin/env bash
# test_layering.sh - the component layering is enforced by the build
# (src/CMakeLists.txt): each component's include root holds only what it may
# include, so a forbidden header does not compile, an allowed one does; and
# scripts/check_includes.cmake refuses a quoted include that walks out of a
# root ("..", absolute paths).
#
# Must never change the source tree or the build tree (one temporary
# directory, removed at exit).
#
# usage: test_layering.sh <build-dir> <source-dir> <cc>
set -euo pipefail

build=$1 src=$2 cc=$3
faces=$build/faces
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spore-layering-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cflags=$(pkg-config --cflags jansson 2>/dev/null || true)
failures=0

compiles() { # <component> <header>: through the component's include root
  printf '#include "%s"\n' "$2" >"$tmp/probe.c"
  # shellcheck disable=SC2086
  "$cc" -std=gnu11 -fsyntax-only $cflags -I"$faces/spore_$1_objects" "$tmp/probe.c" 2>"$tmp/err"
}

allowed() {
  if ! compiles "$1" "$2"; then
    echo "FAIL: $1 cannot include $2:" >&2
    cat "$tmp/err" >&2
    failures=$((failures + 1))
  fi
}

forbidden() {
  # gcc: "No such file or directory"; clang: "'x.h' file not found"
  if compiles "$1" "$2" || ! grep -qE "No such file|file not found" "$tmp/err"; then
    echo "FAIL: $1 may include $2, which its layer forbids" >&2
    failures=$((failures + 1))
  fi
}

[ -d "$faces/spore_engine_objects" ] || { echo "FAIL: no include roots in $faces" >&2; exit 1; }

# what each layer may use
allowed kernel json/json.h
allowed kernel schema/schema.h
allowed engine schema/schema.h
allowed schema json/json.h
allowed store digest/digest.h
allowed runners agent/session.h
allowed runners wasm/jail.h
allowed engine runners/runner.h
allowed engine store/store.h
allowed engine kernel/workflow.h
allowed api engine/engine.h
allowed authoring json/json.h
allowed authoring digest/digest.h
allowed authoring kernel/workflow.h

# the floor sees nothing above it
forbidden base json/json.h
forbidden json kernel/kernel.h
forbidden json schema/schema.h
forbidden schema kernel/kernel.h
forbidden schema engine/engine.h
# the kernel and the store: only the floor
forbidden kernel engine/engine.h
forbidden kernel store/store.h
forbidden kernel runners/runner.h
forbidden store kernel/kernel.h
forbidden store engine/engine.h
forbidden store runners/runner.h
# the runners never reach the store, the kernel or the engine
forbidden runners store/store.h
forbidden runners kernel/workflow.h
forbidden runners engine/engine.h
# the engine: the runners, the store and the kernel through their faces only
forbidden engine runners/async_spec.h
forbidden engine runners/registry.h
forbidden engine runners/pid_handle.h
forbidden engine runners/component_seal.h
forbidden engine store/logic.h
forbidden engine kernel/internal.h
forbidden engine agent/session.h
forbidden engine cli/cli.h
# workflow folders and artifacts: the floor and the kernel's face; the
# engine validates and seals what they build, the CLI hands it over
forbidden authoring engine/engine.h
forbidden authoring engine/validate.h
forbidden authoring store/store.h
forbidden authoring runners/runner.h
forbidden authoring kernel/internal.h
forbidden authoring schema/schema.h
forbidden authoring cli/cli.h
forbidden kernel authoring/authoring.h
forbidden engine authoring/authoring.h
forbidden runners authoring/authoring.h
# the API: the engine's face, not its insides
forbidden api engine/internal.h
forbidden api store/db.h
# the process supervisor: libc alone (its program's root holds the same one
# folder); the runners see its face, not how its image is carried
allowed runners supervisor/supervisor.h
forbidden runners supervisor/image.h
forbidden supervisor base/tail.h
forbidden supervisor json/json.h
forbidden supervisor runners/runner.h
# spore graph: the kernel and the state view through their faces; never the
# store, the engine's insides, the runners or the command line
allowed graph kernel/workflow.h
allowed graph engine/stateview.h
forbidden graph store/store.h
forbidden graph engine/engine.h
forbidden graph engine/internal.h
forbidden graph runners/runner.h
forbidden graph cli/cli.h

# the include check refuses a way around the roots
mkdir -p "$tmp/src/runners"
printf '#include "../store/store.h"\n' >"$tmp/src/runners/escape.c"
if cmake -DSRC="$tmp/src" -DSTAMP="$tmp/stamp" -P "$src/scripts/check_includes.cmake" >"$tmp/check" 2>&1; then
  echo "FAIL: check_includes.cmake let \"../store/store.h\" through" >&2
  failures=$((failures + 1))
fi
grep -q 'src/runners/escape.c' "$tmp/check" || { echo "FAIL: the check does not name the file" >&2; failures=$((failures + 1)); }
printf '#include "runners/runner.h"\n' >"$tmp/src/runners/escape.c"
cmake -DSRC="$tmp/src" -DSTAMP="$tmp/stamp" -P "$src/scripts/check_includes.cmake" ||
  { echo "FAIL: check_includes.cmake refused a plain include" >&2; failures=$((failures + 1)); }

# the engine reaches the store through its ledger only (src/engine/ledger.h):
# no other engine file calls an sp_store_ function (types, result frees and
# the failure-kind helpers are not calls on a store)
calls=$(grep -nE 'sp_store_[a-z_]+\(' "$src"/src/engine/*.c |
  grep -v '^[^:]*/ledger\.c:' | grep -vE 'sp_store_rc_(transient|name)\(|_free\(' |
  grep -vE '^[^:]*:[0-9]+: *(/?\*|//)' || true)
if [ -n "$calls" ]; then
  echo "FAIL: engine files call the store around the ledger:" >&2
  echo "$calls" >&2
  failures=$((failures + 1))
fi

[ "$failures" = 0 ] || exit 1
echo "layering: every forbidden include refused, every allowed one compiles; the engine reaches the store through its ledger"
