#!/bin/sh
# check.sh - the `check` step of examples/review-loop.json (read-only).
#
# Red until the rework step has left its marker for this run, then ok: so the
# first review of a run is red (exit 1, mapped to outcome `red` by the
# action's exitOutcomes) and the second, after rework, is ok (exit 0).
# Deterministic, and safe to repeat: it only reads the marker.
#
# stdin:  {"subject": <run input>}  (read, not needed)
# stdout: {"verdict":"red","findings":[...]} or {"verdict":"ok","findings":[],"fixedBy":"<effect key>"}
# state:  $SPORE_EXAMPLES_STATE (default ${TMPDIR:-/tmp})/spore-review-$SPORE_RUN_ID.fixed
set -eu
dir=${SPORE_EXAMPLES_STATE:-${TMPDIR:-/tmp}}
marker="$dir/spore-review-${SPORE_RUN_ID:-manual}.fixed"
if [ -f "$marker" ]; then
  exec jq -c --arg by "$(cat "$marker")" '{verdict: "ok", findings: [], fixedBy: $by}'
fi
jq -c '{verdict: "red", findings: ["no tests for the new branch", "changelog entry missing"]}'
exit 1
