#!/bin/sh
# long-work.sh - the step of examples/long-step.json: works for ten minutes
# (a child `sleep`, so cancelling must stop the whole process group).
set -eu
cat >/dev/null
sleep 600
echo '{"done": true}'
