#!/usr/bin/env bash
# run.sh - a real agent step, end to end: a model with tools (read_file,
# edit_file, run) in the local sandbox, reached through the model gateway,
# returning structured output.
#
#   examples/real-agent/run.sh                 # no endpoint: the local model server
#                                              # replays replay-openai.json
#   SPORE_EXAMPLE_PROVIDER=openai SPORE_EXAMPLE_MODEL=gpt-4o-mini \
#   SPORE_EXAMPLE_BASE_URL=https://api.openai.com/v1 \
#   SPORE_EXAMPLE_KEY_FILE=~/.config/openai.key examples/real-agent/run.sh
#   SPORE_EXAMPLE_PROVIDER=anthropic SPORE_EXAMPLE_MODEL=claude-3-5-sonnet-20241022 \
#   SPORE_EXAMPLE_BASE_URL=https://api.anthropic.com \
#   SPORE_EXAMPLE_KEY_FILE=~/.config/anthropic.key examples/real-agent/run.sh
#   SPORE_EXAMPLE_MODEL=qwen2.5:7b SPORE_EXAMPLE_BASE_URL=http://127.0.0.1:11434/v1 \
#   examples/real-agent/run.sh                 # a local Ollama (no key)
#
# The project folder is copied to /tmp/spore-real-agent/project (the step's
# only writable folder), so the repository is never changed. Run from the
# repository root after building (`cmake --build build`); SPORE_BUILD names
# another build directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${SPORE_BUILD:-build}
spore="$build/spore"
[ -x "$spore" ] || { echo "run.sh: $spore is not built (cmake --build $build)" >&2; exit 1; }
work=/tmp/spore-real-agent
rm -rf "$work"
mkdir -p "$work"
cp -r "$here/project" "$work/project"
: >"$work/key"
server_pid=
trap '[ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true' EXIT

provider=${SPORE_EXAMPLE_PROVIDER:-openai}
model=${SPORE_EXAMPLE_MODEL:-gpt-4o-mini}
if [ -n "${SPORE_EXAMPLE_BASE_URL:-}" ]; then
  base=$SPORE_EXAMPLE_BASE_URL
  [ -z "${SPORE_EXAMPLE_KEY_FILE:-}" ] || cp "$SPORE_EXAMPLE_KEY_FILE" "$work/key"
else
  server="$build/tests/agent/model_server"
  [ -x "$server" ] || { echo "run.sh: no endpoint set and $server is not built" >&2; exit 1; }
  sed "s|@WORK@|$work/project|g" "$here/replay-openai.json" >"$work/replay.json"
  echo "sk-local-demo-key" >"$work/key"
  "$server" --script "$work/replay.json" --record "$work/received.jsonl" \
    --port-file "$work/port" --key sk-local-demo-key &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
  base="http://127.0.0.1:$(cat "$work/port")/v1"
  provider=openai
  echo "run.sh: no endpoint configured: the local model server at $base replays replay-openai.json" >&2
fi
[ -s "$work/key" ] || printf 'none\n' >"$work/key" # a server without keys (Ollama) ignores it
jq --arg p "$provider" --arg m "$model" --arg b "$base" \
  '.actions.fix.provider = $p | .actions.fix.model = $m | .actions.fix.baseUrl = $b' \
  "$here/workflow.json" >"$work/workflow.json"
"$spore" run "$work/workflow.json" --db "$work/spore.db" \
  --input '{"task": "Apply what NOTES.md asks for to settings.ini."}'
echo "--- settings.ini after the step:"
cat "$work/project/settings.ini"
