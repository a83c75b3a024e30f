#!/usr/bin/env bash
# demo.sh - what `make demo` runs after building: real workflows end to end on
# the embedded SQLite default, including a signal delivered by this script.
#
#   1. validate every example;
#   2. run examples/hello.json (two command steps, JSON mapped between them),
#      then build its folder twin examples/hello/ into an artifact, inspect it
#      and run it (the same package digest, the artifact's digest recorded);
#   3. run examples/review-loop.json: check -> rework -> check, then it parks
#      at the approval wait (exit 3); `spore graph` draws the parked run (an
#      SVG, coloured by each node's state); this script signals `approved` and
#      runs it again to completion;
#   4. show the run's events;
#   5. run examples/agent.json: an agent step in a sandbox, with the scripted
#      fake provider;
#   6. run examples/runners/detached-job.json: a WebAssembly runner, sealed
#      into the workflow with its grants, starts a detached job;
#   7. replay the golden kernel traces (when ../shared/conformance is beside
#      the clone) and say where to look next.
set -euo pipefail
spore=$(realpath "${1:-build/spore}")
cd "$(dirname "$0")/.."

demo_dir=$(mktemp -d "${TMPDIR:-/tmp}/spore-demo.XXXXXX")
export SPORE_DB="$demo_dir/spore.db"
export SPORE_EXAMPLES_STATE="$demo_dir"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "spore validate examples/*.json"
for wf in examples/*.json; do
  "$spore" validate "$wf"
done

step "spore run examples/hello.json --input '{\"name\":\"spore\"}'"
"$spore" run examples/hello.json --input '{"name":"spore"}'

step "spore build examples/hello -o $demo_dir/hello.spore   (the folder twin, sealed into one file)"
"$spore" build examples/hello -o "$demo_dir/hello.spore"
"$spore" inspect "$demo_dir/hello.spore" >"$demo_dir/inspect.txt"
head -n 6 "$demo_dir/inspect.txt"

step "spore run $demo_dir/hello.spore --input '{\"name\":\"artifact\"}'"
"$spore" run "$demo_dir/hello.spore" --input '{"name":"artifact"}'

step "spore run examples/review-loop.json --key review-1   (parks at the approval wait)"
set +e
"$spore" run examples/review-loop.json --key review-1
code=$?
set -e
if [ "$code" -ne 3 ]; then
  echo "demo: expected exit 3 (waiting for a signal), got $code" >&2
  exit 1
fi
run_id=$("$spore" start examples/review-loop.json --key review-1 --json | jq -r .runId)

step "spore graph --run $run_id -o $demo_dir/review-loop.svg   (the parked run as a picture)"
"$spore" graph --run "$run_id" -o "$demo_dir/review-loop.svg"
echo "open $demo_dir/review-loop.svg: check and rework done (green), approval waiting (yellow), edges with their counts"

step "spore signal $run_id approval --outcome approved --data '{\"by\":\"demo\"}'"
"$spore" signal "$run_id" approval --outcome approved --data '{"by":"demo"}'

step "spore run examples/review-loop.json --key review-1   (resumes and completes)"
"$spore" run examples/review-loop.json --key review-1

step "spore events $run_id"
"$spore" events "$run_id"

step "spore run examples/agent.json   (an agent step: spore-step --provider fake in a bubblewrap sandbox)"
if ! "$spore" run examples/agent.json; then
  echo "demo: the agent step could not run here (see spore capabilities: it needs bubblewrap)" >&2
fi

step "spore run examples/runners/detached-job.json   (a WebAssembly runner starts a detached job)"
runner="$(dirname "$spore")/runners/detached-job.wasm"
if [ -f "$runner" ]; then
  cp "$runner" examples/runners/detached-job.wasm
  "$spore" run examples/runners/detached-job.json ||
    echo "demo: the component step could not run here (see spore capabilities)" >&2
else
  echo "demo: $runner was not built (clang --target=wasm32 and lld are needed)" >&2
fi

if compgen -G "../shared/conformance/traces/*.json" >/dev/null; then
  step "spore trace ../shared/conformance/traces/*.json"
  "$spore" trace ../shared/conformance/traces/*.json | tail -n 1
else
  step "spore trace: skipped (no conformance data in ../shared/conformance beside this clone)"
fi

cat <<MSG

The demo database is $SPORE_DB. Next:
  $spore list --db $SPORE_DB
  $spore status $run_id --db $SPORE_DB --json
  $spore graph --run $run_id --db $SPORE_DB -o review-loop.png     # the finished run as a picture
  $spore run examples/unsafe-deploy.json --key deploy-1 --input '{"pauseSeconds":5}' --db $SPORE_DB
      # kill -9 it mid-step, then run the same line again (same --key): exit 4,
      # the deploy may have happened and spore will not repeat it on its own
  $spore resume <runId> --db $SPORE_DB     # go on with a run after signal or resolve
  examples/README.md     what each example shows
  docs/                  workflows, the CLI, durability and the kernel
MSG
