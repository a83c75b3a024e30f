#!/usr/bin/env bash
# test_ui_layering.sh <build-dir> <cc> - the web view's include root
# (src/CMakeLists.txt, spore_ui_objects) holds the public header, the
# graph's face and the floor, and nothing of the store, the engine, the
# API's internals or the command line: a forbidden header does not compile
# through it (as tests/layering/test_layering.sh checks the other layers).
set -euo pipefail
root=$1/faces/spore_ui_objects cc=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spore-ui-layering-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
failures=0
probe() { # <header>: 0 when it compiles through the ui's root
  printf '#include "%s"\n' "$1" >"$tmp/probe.c"
  # shellcheck disable=SC2046
  "$cc" -std=gnu11 -fsyntax-only $(pkg-config --cflags jansson libmicrohttpd) -I"$root" \
    -I"$(dirname "$0")/../../include" "$tmp/probe.c" 2>"$tmp/err"
}
[ -d "$root" ] || { echo "FAIL: no include root $root" >&2; exit 1; }
for h in spore/spore.h graph/graph.h json/json.h base/buf.h digest/hmac.h ui/internal.h; do
  probe "$h" || { echo "FAIL: ui cannot include $h: $(cat "$tmp/err")" >&2; failures=$((failures + 1)); }
done
for h in store/store.h engine/engine.h api/internal.h api/status.h api/browse.h cli/cli.h runners/runner.h; do
  if probe "$h" || ! grep -qE "No such file|file not found" "$tmp/err"; then
    echo "FAIL: ui may include $h" >&2
    failures=$((failures + 1))
  fi
done
[ "$failures" -eq 0 ] || exit 1
echo "test_ui_layering: the web view sees the public API, the graph and the floor only"
