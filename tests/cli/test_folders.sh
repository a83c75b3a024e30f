#!/usr/bin/env bash
# test_folders.sh - every build error of a workflow folder through the real
# binary (authoring.md §1, docs/authoring.md "Build errors"): validate,
# build and run refuse with exit 2, the code, and the file, line and column
# (text: `spore: <code>: <file>:<line>:<column>: ...`; JSON: error.details
# {file, line, column}), and create no store; a folder's package that the
# kernel refuses is refused as the kernel says (its rules are not repeated).
#
# usage: bash test_folders.sh <path-to-spore> <repo-root>
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

n=0
GOOD_DOT='digraph g {
  format = "runspore.workflow/0.1"; start = a
  a -> done
  done [kind = complete]
}'
GOOD_SETTINGS='{"actions": {"x": {"kind": "command", "argv": ["true"], "effect": "pure"}},
 "nodes": {"a": {"action": "x"}}}'

# folder <workflow.dot> [<settings.json>]: a new folder in $tmp, with a
# prompt p.md and a symlink "out" that leaves the folder; sets $dir.
folder() {
  n=$((n + 1))
  dir="$tmp/f$n"
  mkdir -p "$dir"
  printf '%s\n' "$1" >"$dir/workflow.dot"
  [ $# -lt 2 ] || printf '%s\n' "$2" >"$dir/settings.json"
  echo "a prompt" >"$dir/p.md"
  ln -s .. "$dir/out"
}

# refused <code> <file> <line> <column> <what>: validate, build and run of
# $dir all refuse with the code at the place.
refused() {
  local code=$1 file=$2 line=$3 col=$4 what=$5 cmd
  for cmd in validate build run; do
    local args=("$cmd" "$dir")
    [ "$cmd" = build ] && args+=(-o "$tmp/out.spore")
    [ "$cmd" = run ] && args+=(--db "$tmp/none.db")
    sp "${args[@]}"
    expect_rc 2 "$cmd: $what"
    [[ "$err" == "spore: $code: $dir/$file:$line:$col: "* ]] ||
      fail "$cmd: $what: stderr \"${err:0:300}\", want \"spore: $code: $dir/$file:$line:$col: …\""
    sp "${args[@]}" --json
    expect_rc 2 "$cmd --json: $what"
    jq -e --arg c "$code" --arg f "$dir/$file" --argjson l "$line" --argjson k "$col" \
      '.error.code == $c and .error.details == {file: $f, line: $l, column: $k}' <<<"$out" >/dev/null ||
      fail "$cmd --json: $what: ${out:0:400}"
  done
  [ ! -e "$tmp/out.spore" ] || fail "$what: build wrote an artifact"
  [ ! -e "$tmp/none.db" ] || fail "$what: run created a store"
}

# ---- the DOT file ----
folder 'digraph g {
  a -- b
}' "$GOOD_SETTINGS"
refused dot.invalid workflow.dot 2 5 "an undirected edge"
folder 'digraph g { subgraph s { a } }' "$GOOD_SETTINGS"
refused dot.invalid workflow.dot 1 13 "a subgraph"
folder 'digraph g { a -> b [onn = ok] }' "$GOOD_SETTINGS"
refused dot.invalid workflow.dot 1 21 "a misspelled attribute"
folder 'digraph g { start = a; a -> done; done [kind = complete] }' "$GOOD_SETTINGS"
refused build.graph-format workflow.dot 1 9 "no format"
folder 'digraph g { format = "runspore.workflow/0.1"
  start = b; a -> done; done [kind = complete] }' "$GOOD_SETTINGS"
refused build.graph-start workflow.dot 2 11 "a start that is no node"
folder 'digraph g { format = "runspore.workflow/0.1"; start = a
  a -> done; done [kind = map] }' "$GOOD_SETTINGS"
refused build.kind-unknown workflow.dot 2 27 "a kind of format 0.2 in 0.1"
folder 'digraph g { format = "runspore.workflow/0.1"; start = a
  a -> done
  done -> a
  done [kind = complete] }' "$GOOD_SETTINGS"
refused build.terminal-edge workflow.dot 3 3 "an edge out of a complete node"
folder 'digraph g { format = "spore.workflow/0.2"; start = p; p [kind = parallel]
  p -> a }' "$GOOD_SETTINGS"
refused build.route-invalid workflow.dot 2 3 "a parallel edge without branch or join"
folder 'digraph g { format = "runspore.workflow/0.1"; start = a
  a -> done; a -> done [on = ok]; done [kind = complete] }' "$GOOD_SETTINGS"
refused build.duplicate-route workflow.dot 2 14 "two edges on ok"

# ---- settings.json ----
folder "$GOOD_DOT" '{"actions": {},
  "edges": {}}'
refused build.settings-invalid settings.json 2 3 "an unknown member"
folder "$GOOD_DOT" '{"actions": {"x": {"kind": "command", "argv": ["true"], "effect": "pure"}},
 "nodes": {"a": {"action": "x"},
   "b": {"action": "x"}}}'
refused build.settings-unknown-node settings.json 3 4 "settings of a node the graph lacks"
folder "$GOOD_DOT" '{"actions": {"x": {"kind": "command", "argv": ["true"], "effect": "pure"}},
 "nodes": {"a": {"action": "x", "outcomes": {"ok": "done"}}}}'
refused build.settings-topology settings.json 2 33 "routes in the settings"
folder "$GOOD_DOT" '{"actions": {}}'
refused build.activity-without-settings workflow.dot 3 3 "an activity without settings"
folder "$GOOD_DOT"
refused build.activity-without-settings workflow.dot 3 3 "an activity and no settings.json"
folder "$GOOD_DOT" '{"actions": {"x": {"kind": "command", "argv": ["true"], "outcomes": ["ok", "red"]}},
 "nodes": {"a": {"action": "x"}}}'
refused build.outcome-unrouted workflow.dot 3 3 "a declared outcome with no edge"
folder "$GOOD_DOT" '{"nodes": {
  "a": {"action": "x",}}}'
refused json.invalid settings.json 2 23 "settings that are no JSON"

# ---- references ----
ref() { # <node members>
  printf '{"actions": {"x": {"kind": "command", "argv": ["true"], "effect": "pure"}},\n "nodes": {"a": {"action": "x", %s}}}' "$1"
}
folder "$GOOD_DOT" "$(ref '"instructions": "/etc/hostname"')"
refused build.path-absolute settings.json 2 49 "an absolute reference"
folder "$GOOD_DOT" "$(ref '"instructions": "x/../../p.md"')"
refused build.path-parent settings.json 2 49 "a reference with .."
folder "$GOOD_DOT" "$(ref '"instructions": "nope.md"')"
refused build.path-missing settings.json 2 49 "a missing reference"
folder "$GOOD_DOT" "$(ref '"instructions": "out/f1/p.md"')"
refused build.path-escapes settings.json 2 49 "a reference through a symlink out of the folder"
folder "$GOOD_DOT" "$(ref '"instructions": ["p.md"]')"
refused build.reference-invalid settings.json 2 49 "a reference that is no string"
folder "$GOOD_DOT" "$(ref '"instructions": "p.md", "input": {"query": "q"}')"
refused build.instructions-conflict settings.json 2 49 "instructions and a query"

# ---- what the kernel judges stays the kernel's ----
folder 'digraph g { format = "runspore.workflow/0.1"; start = a; a -> "b c"; "b c" [kind = complete] }' \
  "$GOOD_SETTINGS"
expect_error 2 workflow.invalid "a node ID the kernel refuses" -- validate "$dir"
expect_error 2 workflow.invalid "build of it" -- build "$dir" -o "$tmp/out.spore"

# ---- a good folder runs ----
folder 'digraph "hello-folder" { format = "runspore.workflow/0.1"; start = a
  a -> done; done [kind = complete] }' '{"actions": {"x": {"kind": "command", "argv": ["/bin/echo", "{\"said\": \"hi\"}"], "output": "json", "effect": "pure"}},
 "nodes": {"a": {"action": "x"}, "done": {"output": {"$get": ["nodes", "a", "output"]}}}}'
sp run "$dir" --db "$db" --json
expect_rc 0 "run of a folder"
expect_json '.status == "completed" and .result.output == {"said": "hi"}' "run of a folder"

finish
