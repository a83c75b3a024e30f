#!/bin/sh
# long-job.sh - the job of examples/async-job.json: runs detached (started by
# `spore step detach`, in its own session), so it outlives the worker that
# started it. When done it reports through the store with the step token the
# start command received in SPORE_TOKEN:
#   spore step complete "$SPORE_TOKEN" --outcome ok --output '{...}'
# $1: seconds to work. spore exports SPORE_BIN (itself) and SPORE_DB (the
# store) next to SPORE_TOKEN, so the job reports to the right store.
set -eu
seconds=${1:-3}
sleep "$seconds"
exec "${SPORE_BIN:-spore}" step complete "$SPORE_TOKEN" --outcome ok \
  --output "{\"worked\":$seconds,\"effectKey\":\"$SPORE_EFFECT_KEY\"}"
