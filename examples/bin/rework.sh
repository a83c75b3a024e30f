#!/bin/sh
# rework.sh - the `rework` step of examples/review-loop.json (idempotent).
#
# "Fixes" the findings by writing this run's marker, which check.sh looks
# for. Writing it again (a retry, or a worker that died after the write) has
# the same effect, which is what `idempotent` promises. The marker holds the
# effect key, identical on every attempt of one invocation.
#
# stdin:  {"findings": [...]}   (the last check's findings)
# stdout: {"fixed":[...],"effectKey":"<SPORE_EFFECT_KEY>"}
set -eu
dir=${SPORE_EXAMPLES_STATE:-${TMPDIR:-/tmp}}
marker="$dir/spore-review-${SPORE_RUN_ID:-manual}.fixed"
key=${SPORE_EFFECT_KEY:-manual}
mkdir -p "$dir"
printf '%s\n' "$key" > "$marker.$$"
mv -f "$marker.$$" "$marker"
exec jq -c --arg key "$key" '{fixed: (.findings // []), effectKey: $key}'
