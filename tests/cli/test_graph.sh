#!/usr/bin/env bash
# test_graph.sh - `spore graph` (authoring.md §3, docs/graph.md) through the
# real binary, real command steps, a real SQLite store and real signals:
#
# - runs driven into every state a node can be in: done and not reached
#   (review-loop parked at its approval, 0.1), waiting (that approval; a 0.2
#   sleep), running (three parallel branches whose steps sleep, served by a
#   `spore resume` in the background; a map of 8 items, 4 at once),
#   cancelled (`spore cancel` of those), needs intervention (a 0.2 step
#   stuck; a 0.1 unsafe step killed mid-effect), failed (review-loop
#   rejected at its approval). For each, the SVG is parsed: every
#   workflow node's <g class="node"> (its <title> is the node ID) has the
#   fill colour of the state that the run's `spore status --json` implies
#   (the palette of docs/graph.md), and `--json` says the same states;
# - edge labels carry the times the run took them ("red ×1", "ok ×2"),
#   branches their names and counts, a running map its progress ("0/8");
# - without a workflow argument the run's package comes from the store; a
#   workflow that is not the run's is refused (graph.workflow-mismatch);
# - -o picks the format: an SVG, a PNG (its magic bytes), a DOT file that
#   names every node, DOT on stdout with --format dot; an unknown extension
#   or --format is usage.invalid-value, an unwritable -o file.unwritable; a
#   missing store is store.not-found and creates nothing.
#
# Under AddressSanitizer, what Debian's Graphviz and the font libraries
# allocate and never free is suppressed (tests/cli/graph.lsan, matched on
# whole stacks: fast_unwind_on_malloc=0 for the `graph` commands only);
# spore's own allocations are not.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
export SPORE_EXAMPLES_STATE="$tmp"

# gvenv <command>: run it with the suppressions of tests/cli/graph.lsan.
gvenv() {
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0" \
    LSAN_OPTIONS="suppressions=$root/tests/cli/graph.lsan${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    "$@"
}
spg() { gvenv sp graph "$@"; } # a graph command that draws

# The palette of docs/graph.md, by state.
declare -A colour=(
  [done]="#9fd8a4" [running]="#8ec5f0" [waiting]="#ffe27a" [needs-intervention]="#ffa552"
  [failed]="#f2777a" [cancelled]="#c4c4c4" [not-reached]="#ffffff"
)

# svg_fills <file>: "<node title> <first fill colour>" for every node group.
svg_fills() {
  awk '
    /<g id="node[0-9]+" class="node">/ { if (t != "") print t, f; t = ""; f = ""; inside = 1; next }
    /<g id="edge[0-9]+" class="edge">/ { if (t != "") print t, f; t = ""; f = ""; inside = 0; next }
    inside && t == "" && /<title>/ {
      t = $0; sub(/.*<title>/, "", t); sub(/<\/title>.*/, "", t); gsub(/&#45;/, "-", t); next }
    inside && f == "" && /<(polygon|ellipse|path) fill="/ {
      v = $0; sub(/.*fill="/, "", v); sub(/".*/, "", v); if (v != "none" && v != "transparent") f = v }
    END { if (t != "") print t, f }' "$1"
}

# expected_states <status json> <workflow file> [overrides json]: "<node>
# <state>" for every node of the workflow, from what `spore status --json`
# shows: an intervention -> needs-intervention, an invocation scheduled ->
# running, a wait or a timer -> waiting, the node the run failed at ->
# failed, a node with a result -> done, else not reached. `overrides` give
# what the status cannot show (a complete node reached, work cancelled, a
# parallel whose branches run).
expected_states() {
  jq -r --slurpfile wf "$2" --argjson over "${3:-{\}}" '
    . as $s
    | ($s.interventions // (if $s.invocation.state == "unknown" then [$s.invocation] else [] end)
        | map(.nodeId)) as $iv
    | ($s.invocations // (if $s.invocation then [$s.invocation] else [] end)
        | map(select(.state == "scheduled") | .nodeId)) as $run
    | (($s.waits // [] | map(.nodeId)) + ($s.timers // [] | map(.activationId | split("/")[0]))
        + (if $s.status == "waiting" and $s.position then [$s.position.nodeId] else [] end)) as $wait
    | $wf[0].nodes | keys[] as $n
    | [$n,
       if $over[$n] then $over[$n]
       elif ($iv | index($n)) then "needs-intervention"
       elif ($run | index($n)) then "running"
       elif ($wait | index($n)) then "waiting"
       elif $s.status == "failed" and $s.result.error.nodeId == $n then "failed"
       elif $s.nodes[$n] != null then "done"
       else "not-reached" end]
    | "\(.[0]) \(.[1])"' <<<"$1"
}

# check_states <what> <run> <workflow file> [overrides]: the SVG's colours
# and --json's states against expected_states.
check_states() {
  local what=$1 run=$2 file=$3 over=${4:-"{}"} status node state got want
  status=$(status_json "$run")
  spg --run "$run" --db "$db" -o "$tmp/$what.svg"
  expect_rc 0 "$what: graph -o svg"
  spg --run "$run" --db "$db" --json
  expect_rc 0 "$what: graph --json"
  local json=$out
  while read -r node state; do
    want=${colour[$state]}
    got=$(svg_fills "$tmp/$what.svg" | awk -v n="$node" '$1 == n {print $2}')
    checks=$((checks + 1))
    [ "$got" = "$want" ] || fail "$what: node $node is filled $got in the SVG, want $want ($state)"
    got=$(jq -r --arg n "$node" '.nodes[] | select(.id == $n) | .state' <<<"$json")
    [ "$got" = "$state" ] || fail "$what: --json says $node is $got, want $state"
  done < <(expected_states "$status" "$file" "$over")
}

# has_text <svg> <text>: a label (node, edge, legend) with exactly this text.
has_text() { grep -qF ">$2</text>" "$1"; }

# started <run> <n>: at least n steps of the run have started (step.sh's log).
started() { [ "$(awk -v r="$1" '$1 == "start" && $2 == r' "$SPORE_TEST_LOG" | wc -l)" -ge "$2" ]; }

# ---- arguments, checked before any store is opened ----
expect_error 2 usage "no workflow and no run" -- graph --db "$db"
expect_error 2 usage.invalid-value "-o with an unknown extension" -- graph examples/hello.json -o "$tmp/x.jpg"
expect_error 2 usage.invalid-value "--format gif" -- graph examples/hello.json --format gif
expect_error 2 usage.invalid-value "--format disagreeing with -o" -- graph examples/hello.json --format png -o "$tmp/x.svg"
expect_error 10 store.not-found "--run without a store" -- graph --run run_00000000000000000000000000000000 --db "$db"
[ ! -e "$db" ] || fail "graph created a store"
spg --help
expect_rc 0 "graph --help"
[[ "$out" == *"usage: spore graph"* ]] || fail "graph --help: $out"

# ---- a workflow alone: SVG on stdout, PNG, DOT ----
spg examples/review-loop.json
expect_rc 0 "graph without a run"
[[ "$out" == "<?xml"*"<svg"* ]] || fail "graph without -o: not an SVG on stdout: ${out:0:200}"
for n in check rework approval done rejected; do
  grep -q "<title>$n</title>" "$tmp/sp$sp_n.out" || fail "graph: node $n is not in the SVG"
done
has_text "$tmp/sp$sp_n.out" red || fail "graph: the outcome red is not on an edge"
if grep -q '<title>(legend)</title>' "$tmp/sp$sp_n.out"; then fail "graph: a legend without a run"; fi
spg examples/review-loop.json --json
expect_json '(.nodes | map(.id)) == ["approval", "check", "done", "rejected", "rework"] and
  all(.nodes[]; .state == null) and .run == null and .output == null and
  ([.edges[] | select(.kind == "route") | "\(.from) \(.label) \(.to)"] | sort) ==
  ["approval approved done", "approval rejected rejected", "check ok approval", "check red rework",
   "rework ok check"] and (.nodes[] | select(.id == "approval") | .kind) == "await-signal"' \
  "graph --json without a run"
spg examples/review-loop.json -o "$tmp/plain.png" --json
expect_json '.output.format == "png" and .output.path == $p and (.output.bytes | test("^[1-9][0-9]*$"))' \
  "graph -o png --json" --arg p "$tmp/plain.png"
[ "$(head -c 8 "$tmp/plain.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
  fail "graph -o x.png: not a PNG"
spg examples/review-loop.json -o "$tmp/plain.dot"
expect_rc 0 "graph -o dot"
[[ "$out" == "graph: wrote $tmp/plain.dot (dot, "* ]] || fail "graph -o dot (text): $out"
head -n 1 "$tmp/plain.dot" | grep -q '^digraph "review-loop" {' || fail "graph -o dot: $(head -n 1 "$tmp/plain.dot")"
for n in check rework approval done rejected; do
  grep -qE "^[[:space:]]*$n[[:space:]]+\[" "$tmp/plain.dot" || fail "graph -o dot: no node $n"
done
grep -q 'shape=cds' "$tmp/plain.dot" || fail "graph -o dot: the await-signal node has not its shape"
spg examples/review-loop.json --format dot
expect_rc 0 "graph --format dot"
[[ "$out" == 'digraph "review-loop" {'* ]] || fail "graph --format dot: not DOT on stdout: ${out:0:100}"
gvenv expect_error 2 file.unwritable "-o into a missing folder" -- graph examples/review-loop.json -o "$tmp/no/such/x.svg"

# ---- review-loop, 0.1: waiting at the approval after check, rework, check ----
sp run examples/review-loop.json --key review-1 --db "$db" --json
expect_rc 3 "review-loop: parks at the approval"
review=$(jq -r .runId <<<"$out")
check_states review-waiting "$review" examples/review-loop.json
for label in "red ×1" "ok ×1"; do
  has_text "$tmp/review-waiting.svg" "$label" || fail "review-loop: no edge labelled \"$label\""
done
has_text "$tmp/review-waiting.svg" "approved" || fail "review-loop: the untaken route has no label"
spg --run "$review" --db "$db" --json
expect_json '.run.status == "waiting" and .run.edgeCounts.known == true and
  ([.edges[] | select(.kind == "route") | "\(.from) \(.label) \(.count)"] | sort) ==
  ["approval approved 0", "approval rejected 0", "check ok 1", "check red 1", "rework ok 1"] and
  (.nodes[] | select(.id == "check") | .visits) == "2"' "review-loop: counts in --json"
grep -q '<title>(legend)</title>' "$tmp/review-waiting.svg" || fail "review-loop: no legend"
for s in done running waiting "needs intervention" failed cancelled "not reached"; do
  has_text "$tmp/review-waiting.svg" "$s" || fail "review-loop: the legend does not say \"$s\""
done

# the workflow given with the run must be the run's
spg examples/review-loop.json --run "$review" --db "$db" --json
expect_json '.run.runId == $id' "graph <workflow> --run" --arg id "$review"
expect_error 2 graph.workflow-mismatch "a workflow that is not the run's" -- \
  graph examples/hello.json --run "$review" --db "$db"

# signalled and resumed: completed, the complete node reached
sp signal "$review" approval --outcome approved --data '{"by": "ana"}' --db "$db"
sp resume "$review" --db "$db"
expect_rc 0 "review-loop: completed"
check_states review-completed "$review" examples/review-loop.json '{"done": "done"}'
has_text "$tmp/review-completed.svg" "approved ×1" || fail "review-loop: approved ×1 missing"

# rejected at the approval: failed at the fail node
sp run examples/review-loop.json --key review-2 --db "$db" --json
rejected=$(jq -r .runId <<<"$out")
sp signal "$rejected" approval --outcome rejected --db "$db"
sp resume "$rejected" --db "$db"
expect_rc 1 "review-loop: rejected"
check_states review-failed "$rejected" examples/review-loop.json

# ---- 0.2: parallel branches running, then cancelled ----
: >"$SPORE_TEST_LOG"
sp start "$wf/parallel3.json" --input '{"sleep": 30}' --db "$db" --json
par=$(jq -r .runId <<<"$out")
start_bg par resume "$par" --db "$db"
par_pid=$bg_pid
wait_for 20 started "$par" 3 || fail "parallel: the three branches did not start"
check_states parallel-running "$par" "$wf/parallel3.json" '{"fan": "running"}'
for label in "a ×1" "b ×1" "c ×1"; do
  has_text "$tmp/parallel-running.svg" "$label" || fail "parallel: no branch edge \"$label\""
done
sp cancel "$par" --db "$db"
expect_rc 0 "parallel: cancel"
wait_bg "$par_pid" 10
check_states parallel-cancelled "$par" "$wf/parallel3.json" \
  '{"fan": "cancelled", "sa": "cancelled", "sb": "cancelled", "sc": "cancelled"}'

# ---- 0.2: a map of 8 items, 4 at once: running with its progress, then cancelled ----
items=$(jq -nc '{items: [range(8) | {sleep: 30}]}')
sp start "$wf/map20.json" --input "$items" --db "$db" --json
map=$(jq -r .runId <<<"$out")
start_bg map resume "$map" --db "$db"
map_pid=$bg_pid
wait_for 20 started "$map" 4 || fail "map: four items did not start"
check_states map-running "$map" "$wf/map20.json"
has_text "$tmp/map-running.svg" "0/8" || fail "map: the progress 0/8 is not shown"
spg --run "$map" --db "$db" --json
expect_json '(.nodes[] | select(.id == "each") | .progress) == {"done": "0", "running": "4", "total": "8"}' \
  "map: progress in --json"
sp cancel "$map" --db "$db"
wait_bg "$map_pid" 10
check_states map-cancelled "$map" "$wf/map20.json" '{"each": "cancelled"}'

# ---- 0.2: waiting for a timer ----
sp run "$wf/sleep.json" --max-wait 100ms --db "$db" --json
expect_rc 7 "sleep: parks"
check_states sleep-waiting "$(jq -r .runId <<<"$out")" "$wf/sleep.json"

# ---- 0.2: a stuck step needs intervention ----
sp run "$wf/stuck.json" --db "$db" --json
expect_rc 4 "stuck: parks"
check_states stuck "$(jq -r .runId <<<"$out")" "$wf/stuck.json"

# ---- 0.1: an unsafe step killed mid-effect needs intervention ----
: >"$SPORE_TEST_LOG"
start_bg unsafe run "$wf/unsafe.json" --key deploy-1 --input '{"effect": true, "sleep": 30}' --db "$db"
unsafe_pid=$bg_pid
wait_for 10 grep -q '^effect ' "$SPORE_TEST_LOG" || fail "unsafe: the step never performed its effect"
kill -KILL "$unsafe_pid"
wait_bg "$unsafe_pid" 5
sp run "$wf/unsafe.json" --key deploy-1 --input '{"effect": true, "sleep": 30}' --db "$db" --json
expect_rc 4 "unsafe: needs intervention"
check_states unsafe "$(jq -r .runId <<<"$out")" "$wf/unsafe.json"

finish
