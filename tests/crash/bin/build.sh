#!/bin/sh
# build.sh - crash suite step `build` (idempotent, maxAttempts 3, backoff 10 ms).
#
# Its input maps fetch's output; its output derives from it alone, so it is
# the same on every attempt and in every run.
#
# stdin:  {"fetched": <fetch output>, "run": <run input>}
# stdout: {"artifact":"app-r42.tar","size":3}
. "$(dirname "$0")/common.sh"
sleep "$pause"
printf '%s' "$input" | jq -c '{artifact: ("app-" + .fetched.revision + ".tar"), size: (.fetched.items | length)}'
