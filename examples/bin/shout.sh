#!/bin/sh
# shout.sh - the `shout` step of examples/hello.json (read-only).
#
# stdin:  {"text": "<greeting from the greet step>"}
# stdout: {"shout":"<TEXT>!","attempt":<n>}   (SPORE_ATTEMPT: which try this is)
set -eu
exec jq -c --arg attempt "${SPORE_ATTEMPT:-1}" \
  '{shout: (((.text // "") | tostring | ascii_upcase) + "!"), attempt: ($attempt | tonumber)}'
