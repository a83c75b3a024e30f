#!/usr/bin/env bash
# make_traces_02.sh BUILD_DIR - (re)writes tests/conformance/traces-0.2/ from
# the skeletons of traces-0.2-src/ with BUILD_DIR/tests/trace_record. Only
# for adding a trace: every frozen trace was read and checked by hand, and a
# change to one needs the reason in the commit message (README.md there).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:?usage: make_traces_02.sh BUILD_DIR}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 "$here/traces-0.2-src/skeletons.py" "$tmp"
for s in "$tmp"/*.json; do
  "$build/tests/trace_record" "$s" > "$here/traces-0.2/$(basename "$s")"
done
