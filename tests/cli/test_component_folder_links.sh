#!/usr/bin/env bash
# test_component_folder_links.sh - an absolute folder grant of a component
# runner is resolved before it confines anything (runners.md §3, file_read
# and dir_list; docs/runners.md), through the real binary: a granted folder
# that is a symlink to / would make RESOLVE_BENEATH confine nothing, so
# file_read and dir_list through it answer -3 "escapes" and nothing of / is
# read; the same for the home directory given directly or through a link;
# "/" itself is refused when the workflow is read
# (component.grant-unsupported, exit 2); a symlink to an ordinary folder
# still works (it reads the target).
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
source "$root/tests/cli/component.sh"

export HOME="$tmp/home"
mkdir -p "$tmp/g/data" "$HOME"
echo inside >"$tmp/g/data/in.txt"
echo "home secret" >"$HOME/secret.txt"
ln -s / "$tmp/g/rootlink"
ln -s "$HOME" "$tmp/g/homelink"
ln -s data "$tmp/g/datalink"

# calls <folder> <import> <path>: one call through a grant of <folder>
calls() {
  jq -nc --arg f "$1" --arg i "$2" --arg p "$3" '{grants: {folders: [$f]}, retry: {maxAttempts: 1},
    config: {calls: [{import: $i, request: {path: $p}}]}}'
}

# escapes <what> <folder> <import> <path> <text that must not come back>
escapes() {
  cwf "$wfdir/l.json" generic.wasm "$(calls "$2" "$3" "$4")"
  sp run "$wfdir/l.json" --db "$db" --json
  expect_json '.result.output.replies[0].status == -3 and
    .result.output.replies[0].reply.error.code == "escapes"' "$1: refused as escapes"
  grep -q -- "$5" <<<"$out" && fail "$1: \"$5\" was read through the grant"
  return 0
}

escapes "file_read through a folder linked to /" "$tmp/g/rootlink" file_read \
  "$tmp/g/rootlink/etc/passwd" "root:"
escapes "dir_list through a folder linked to /" "$tmp/g/rootlink" dir_list \
  "$tmp/g/rootlink/etc" "passwd"
escapes "file_read in the home directory" "$HOME" file_read "$HOME/secret.txt" "home secret"
escapes "file_read through a folder linked to the home directory" "$tmp/g/homelink" file_read \
  "$tmp/g/homelink/secret.txt" "home secret"
escapes "dir_list of a parent of the home directory" "$tmp" dir_list "$tmp" '"home"'

# a symlink to an ordinary folder: read through it
cwf "$wfdir/l.json" generic.wasm "$(calls "$tmp/g/datalink" file_read "$tmp/g/datalink/in.txt")"
sp run "$wfdir/l.json" --db "$db" --json
expect_json '.result.output.replies[0].reply.data == "inside\n"' "a folder linked to a folder is read"

# "/" itself cannot be granted
cwf "$wfdir/l.json" generic.wasm '{"grants": {"folders": ["/"]}}'
expect_error 2 component.grant-unsupported "folders: [\"/\"]" -- validate "$wfdir/l.json"
finish
