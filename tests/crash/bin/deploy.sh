#!/bin/sh
# deploy.sh - crash suite step `deploy` (unsafe, one attempt, output none).
#
# The effect: appends its effect key (identical on every attempt of the
# invocation) to $dir/deploy.log, between two pauses, so a crash can land
# before or after it. Two lines in the deploy log would be a double deploy.
#
# stdin:  {"artifact": "<name>", "run": <run input>}
. "$(dirname "$0")/common.sh"
sleep "$pause"
printf '%s\n' "$SPORE_EFFECT_KEY" >> "$dir/deploy.log"
sleep "$pause"
