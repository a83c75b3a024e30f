#!/bin/sh
# summarize.sh - joins the reviews of examples/parallel-review.json.
# stdin:  the join's output {<branch>: {node, outcome, output: {summary, verdict}}}
# stdout: {"verdict": "changes"|"comment"|"pass", "reviews": {<branch>: <summary>}}
set -eu
jq -c '{
  verdict: ([.[] | .output.verdict] as $v
            | if ($v | index("changes")) then "changes" elif ($v | index("comment")) then "comment" else "pass" end),
  reviews: (with_entries(.value = .value.output.summary))
}'
