#!/usr/bin/env bash
# test_component_world.sh - runners.md R3 and §6 through the real binary:
# runners outside the world spore:runner@0.1 (wrong import module, unknown
# import, an import or export of the wrong type, a missing export, an
# unbounded or oversized memory, not a module at all) and grants spore
# cannot offer or that leave the workflow folder are refused by `validate`,
# `start` and `run` alike: exit 2, the code, and the name of what is wrong.
# A runner that traps while instantiating passes validate but is refused by
# start and run before a run exists. Validation stops at the first problem,
# in the order of §6. `spore build` does not exist yet (cli.md §5): nothing
# to check there. Capabilities list the kind, the world and the grant kinds.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
source "$root/tests/cli/component.sh"
printf 'not a module\n' >"$wfdir/text.wasm"
mkdir -p "$wfdir/bin" "$tmp/elsewhere"
printf '#!/bin/sh\n' >"$wfdir/bin/job"
ln -s "$tmp/elsewhere" "$wfdir/away"
mkdir -p "$wfdir/data"
ln -s "$tmp/elsewhere" "$wfdir/data/link"

# refused <what> <code> <name in the message> <module> [<action JSON>]
refused() {
  local what=$1 code=$2 name=$3 module=$4 extra=${5:-'{}'}
  cwf "$wfdir/r.json" "$module" "$extra"
  for cmd in validate start run; do
    if [ "$cmd" = validate ]; then
      expect_error 2 "$code" "$what ($cmd)" -- validate "$wfdir/r.json"
    else
      expect_error 2 "$code" "$what ($cmd)" -- "$cmd" "$wfdir/r.json" --db "$db"
    fi
    sp "$cmd" "$wfdir/r.json" --db "$db" --json
    jq -e --arg n "$name" '.error.message | contains($n)' <<<"$out" >/dev/null ||
      fail "$what ($cmd): the message does not name \"$name\": $(jq -r .error.message <<<"$out")"
  done
}

refused "wrong import module" component.world-mismatch env.process_start bad-import-module.wasm
refused "unknown import" component.world-mismatch "spore:runner/host@0.1.launch" unknown-import.wasm
refused "import of the wrong type" component.world-mismatch "process_start: expected type" wrong-import-type.wasm
refused "missing export" component.world-mismatch "export spore_stop: missing" missing-export.wasm
refused "export of the wrong type" component.world-mismatch "spore_start: expected type (i32 ptr, i32 len) -> i64, found (i32) -> i32" wrong-export-type.wasm
refused "unbounded memory" component.memory-unbounded "export memory" unbounded-memory.wasm
refused "oversized memory" component.memory-unbounded "at most 1024 pages" oversized-memory.wasm
refused "not a module" component.invalid-module text.wasm text.wasm
refused "a missing module" component.invalid-module missing.wasm missing.wasm
refused "a glob" component.grant-unsupported "bin/*" ok.wasm '{"grants": {"programs": ["bin/*"]}}'
refused "an empty grant" component.grant-unsupported "grants.programs" ok.wasm '{"grants": {"programs": [""]}}'
refused "an unknown grant kind" component.grant-unsupported "networks" ok.wasm '{"grants": {"networks": ["x"]}}'
refused "a relative socket" component.grant-unsupported "run/x.sock" ok.wasm '{"grants": {"sockets": ["run/x.sock"]}}'
refused "a grant leaving the folder" component.grant-escapes "../x" ok.wasm '{"grants": {"folders": ["../x"]}}'
refused "a grant leaving through a symlink" component.grant-escapes "away" ok.wasm '{"grants": {"folders": ["away"]}}'
refused "a folder with a symlink out" component.grant-escapes "data" ok.wasm '{"grants": {"folders": ["data"]}}'
refused "a missing program" component.grant-missing "bin/nothing" ok.wasm '{"grants": {"programs": ["bin/nothing"]}}'
# §6 order: grants are checked before the module is even read
refused "grants before the module" component.grant-unsupported "bin/*" text.wasm '{"grants": {"programs": ["bin/*"]}}'
[ "$(sql "SELECT count(*) FROM runs" 2>/dev/null || echo 0)" = 0 ] || fail "a refused workflow created a run"

# a component hook of a command action is checked the same way
jq -n --arg m "$wfdir/wrong-export-type.wasm" '{format: "runspore.workflow/0.1", name: "hook", start: "j",
  actions: {j: {kind: "command", argv: ["true"], effect: "idempotent",
    async: {probe: {component: {module: $m}}}}},
  nodes: {j: {kind: "activity", action: "j", outcomes: {ok: "d"}}, d: {kind: "complete"}}}' >"$wfdir/hook.json"
expect_error 2 component.world-mismatch "a hook's runner outside the world" -- validate "$wfdir/hook.json"

# §6 step 1 first: a host that declines the kind says so before looking at the module
cwf "$wfdir/off.json" text.wasm
SPORE_DISABLED_KINDS=component expect_error 2 action.kind-unregistered "the kind is declined first" -- validate "$wfdir/off.json"

# trial instantiation: validate accepts, start and run refuse before a run exists
cwf "$wfdir/trap.json" start-trap.wasm
sp validate "$wfdir/trap.json"
expect_rc 0 "validate does not instantiate"
expect_error 2 component.instantiate "start instantiates once" -- start "$wfdir/trap.json" --db "$db"
expect_error 2 component.instantiate "run instantiates once" -- run "$wfdir/trap.json" --db "$db"
[ "$(sql "SELECT count(*) FROM runs" 2>/dev/null || echo 0)" = 0 ] || fail "an uninstantiable runner got a run"

# a valid runner: the package seals the module; the same folder gives the same digest
cwf "$wfdir/ok.json" ok.wasm '{"grants": {"programs": ["./bin/../bin/job"]}}'
sp validate "$wfdir/ok.json" --json
expect_rc 0 "a runner inside the world"
d1=$(jq -r .packageDigest <<<"$out")
sp validate "$wfdir/ok.json" --json
[ "$(jq -r .packageDigest <<<"$out")" = "$d1" ] || fail "sealing is not reproducible"
printf '#!/bin/sh\necho changed\n' >"$wfdir/bin/job"
sp validate "$wfdir/ok.json" --json
[ "$(jq -r .packageDigest <<<"$out")" != "$d1" ] || fail "the package digest does not pin the sealed bytes"
sp run "$wfdir/ok.json" --db "$db" --json
expect_rc 0 "a valid runner runs"
run=$(jq -r .runId <<<"$out")
sql "SELECT body FROM packages" | grep -q '"sealed":{"bin/job":"sha256:' ||
  fail "the canonical package has no sealed map for bin/job"
[ "$(sql "SELECT count(*) FROM blobs")" -ge 2 ] || fail "the sealed bytes are not in the blob table"

sp capabilities --json
expect_json '(.actionKinds | index("component")) and (.asyncKinds | index("component"))
  and .componentWorlds == ["spore:runner@0.1"] and .grantKinds == ["programs","sockets","folders"]' \
  "capabilities list the component kind, its world and grant kinds"
finish
