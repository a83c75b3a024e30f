#!/bin/sh
# fetch.sh - crash suite step `fetch` (idempotent, maxAttempts 3, backoff 10 ms).
#
# Attempt 1 fails (exit 1: a retryable command.exit, "upstream busy") so every
# run goes through a retry with backoff; later attempts print a fixed JSON
# document, the same on every attempt and in every run.
#
# stdin:  the run input {"dir": "<scenario dir>", "pause": "<seconds>"}
# stdout: {"items":["alpha","beta","gamma"],"revision":"r42"}
. "$(dirname "$0")/common.sh"
sleep "$pause"
if [ "$SPORE_ATTEMPT" = 1 ]; then
  echo "fetch: upstream busy (the first attempt fails on purpose)" >&2
  exit 1
fi
printf '%s\n' '{"items": ["alpha", "beta", "gamma"], "revision": "r42"}'
