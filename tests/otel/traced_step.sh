#!/bin/sh
# traced_step.sh - the step of tests/otel/traced.json (cli.test_otel): appends
# "<node> <attempt> <TRACEPARENT>" to $SPORE_TEST_TRACEPARENTS, then fails
# flaky's attempt 1, sleeps through slow's attempt 1 (the test kills the
# worker under it), and answers {} otherwise.
set -eu
cat >/dev/null
printf '%s %s %s\n' "$SPORE_NODE_ID" "$SPORE_ATTEMPT" "${TRACEPARENT:-none}" >>"${SPORE_TEST_TRACEPARENTS:?}"
case "$SPORE_NODE_ID/$SPORE_ATTEMPT" in
flaky/1)
  echo "traced_step.sh: failing flaky's attempt 1 as asked" >&2
  exit 1
  ;;
slow/1) sleep 120 ;;
esac
echo '{}'
