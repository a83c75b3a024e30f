#!/bin/sh
# count-lines.sh - one item of examples/map-files.json: counts a file's lines.
# stdin:  {"path": "<file relative to the repository root>", "index": <n>}
# stdout: {"path", "index", "lines"}
set -eu
input=$(cat)
path=$(printf '%s' "$input" | jq -r .path)
lines=$(wc -l <"$path" | tr -d ' ')
sleep 1 # long enough to see maxConcurrency at work in `spore status`
printf '%s' "$input" | jq -c --argjson lines "$lines" '{path, index, lines: $lines}'
