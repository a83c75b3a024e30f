# common.sh - sourced by the crash suite's step scripts (POSIX sh + jq).
#
# Reads the step's input (stdin, canonical JSON) into $input, the run input's
# scenario directory into $dir (`.dir`, or `.run.dir` for steps whose input
# wraps the run input) and the pause into $pause (`.pause`, seconds, default
# 0.05), then appends `<node> <attempt> <effect key>` to $dir/exec.log - one
# line per execution, written first, so the suite can prove what ran.
set -eu
input=$(cat)
eval "$(printf '%s' "$input" |
  jq -r '(if has("run") then .run else . end) | @sh "dir=\(.dir) pause=\(.pause // "0.05")"')"
: "${SPORE_NODE_ID:?needs SPORE_NODE_ID (set by spore)}"
: "${SPORE_ATTEMPT:?needs SPORE_ATTEMPT (set by spore)}"
: "${SPORE_EFFECT_KEY:?needs SPORE_EFFECT_KEY (set by spore)}"
printf '%s %s %s\n' "$SPORE_NODE_ID" "$SPORE_ATTEMPT" "$SPORE_EFFECT_KEY" >> "$dir/exec.log"
