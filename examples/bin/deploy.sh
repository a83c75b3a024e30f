#!/bin/sh
# deploy.sh - the `deploy` step of examples/unsafe-deploy.json (unsafe).
#
# Appends its effect key (SPORE_EFFECT_KEY, one per invocation, identical on
# every attempt) to a deploy log: two lines with one key would be a double
# deploy, which is why the action is `unsafe` and spore never repeats it on
# its own after an unknown outcome.
#
# stdin:  the run input: {"log": "<path>", "pauseSeconds": <n>}, both optional
#         (log default: $SPORE_DEPLOY_LOG, else ${TMPDIR:-/tmp}/spore-deploy.log;
#         pauseSeconds sleeps after the append, to leave time to kill the worker
#         mid-step)
# stdout: {"deployed":true,"effectKey":"<key>","log":"<path>"}
set -eu
input=$(cat)
field() {
  printf '%s' "$input" | jq -r --arg f "$1" 'if type == "object" then (.[$f] // empty) else empty end | tostring'
}
log=$(field log)
log=${log:-${SPORE_DEPLOY_LOG:-${TMPDIR:-/tmp}/spore-deploy.log}}
pause=$(field pauseSeconds)
key=${SPORE_EFFECT_KEY:?deploy.sh needs SPORE_EFFECT_KEY (set by spore)}
printf '%s\n' "$key" >> "$log"
if [ -n "$pause" ]; then
  sleep "$pause"
fi
jq -cn --arg key "$key" --arg log "$log" '{deployed: true, effectKey: $key, log: $log}'
