#!/bin/sh
# greet.sh - the `greet` step of examples/hello.json (read-only).
#
# stdin:  the step's input as canonical JSON: the run input, e.g. {"name":"Ada"}
#         (anything else, including null or {}, greets the world)
# stdout: {"greeting":"hello, <name>"}   (the action says output: json)
# exit:   0; anything else is a retryable command.exit failure
set -eu
exec jq -c '{greeting: ("hello, " + (((if type == "object" then .name else null end) // "world") | tostring))}'
