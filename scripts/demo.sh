#!/usr/bin/env bash
# demo.sh - what `make demo` runs: validate every example workflow and replay
# the golden kernel traces with the freshly built binary.
set -euo pipefail
spore=${1:-build/spore}
cd "$(dirname "$0")/.."

echo "== spore validate examples/*.json"
for wf in examples/*.json; do
  "$spore" validate "$wf"
done

echo
echo "== spore trace ../shared/conformance/traces/*.json"
"$spore" trace ../shared/conformance/traces/*.json | tail -n 1

cat <<MSG

Next:
  $spore validate --help        what validation checks
  $spore trace --json <trace>   per-step detail of a golden trace
  docs/                         how workflows, the kernel and canonical JSON work
MSG
