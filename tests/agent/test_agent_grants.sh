#!/usr/bin/env bash
# test_agent_grants.sh - sandbox grants resolve symlinks (docs/agents.md §4),
# through the real binary and the real bubblewrap sandbox, with a probe step
# CLI (agent_probe) that reads and writes through the granted paths.
#
# Refused before anything runs (the run fails, exit 1, agent.grant-refused
# with the reason), and the host unchanged: a writable symlink to / (the
# probe would write on the host's root and read /etc/shadow through it), a
# readable symlink to /etc (relative and absolute), / given directly
# (action.invalid, exit 2), $HOME given directly, a symlink to $HOME, a
# parent of $HOME, a dangling symlink, a relative symlink that leaves the
# base directory, the agent directory, a symlink inside another grant.
# Works: a symlink to a directory inside the base directory binds the
# resolved target (the probe's write lands there; the readable one is
# read-only), a plain directory still works, a readable grant inside a
# writable one stays read-only, and nothing is left in the agent directory.
#
# usage: test_agent_grants.sh <spore> <repo-root> <agent_probe>
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"
probe=${3:?usage: test_agent_grants.sh <spore> <repo-root> <agent_probe>}
probe=$(cd "$(dirname "$probe")" && pwd)/$(basename "$probe")

export SPORE_AGENT_DIR="$tmp/agent"
mkdir -m 700 "$SPORE_AGENT_DIR"
proj="$tmp/proj"      # the base directory: spore runs in it
export HOME="$tmp/home"
mkdir -p "$proj/data/sub" "$proj/scen" "$tmp/outside" "$HOME/.ssh"
echo "scenario" >"$proj/scen/file.txt"
echo "nested" >"$proj/data/sub/file.txt"
ln -s sub "$proj/data/sublink"
echo "not a key" >"$HOME/.ssh/id_rsa"
echo "untouched" >"$tmp/outside/sentinel"
ln -s / "$proj/rootlink"
ln -s /etc "$proj/etclink"
ln -s "$HOME" "$proj/homelink"
ln -s data "$proj/datalink"
ln -s scen "$proj/scenlink"
ln -s nowhere "$proj/dangling"
ln -s "$tmp/outside" "$proj/outlink"
marker="spore-grant-probe-$$" # what the probe would write on the host's root
cd "$proj"

# workflow <name> <readable JSON array> <writable JSON array> <read> <write-outside> <write>:
# one agent step running the probe, which reads <read>, and writes
# <write-outside> (must fail) and <write> (must work when granted).
workflow() {
  jq -n --arg probe "$probe" --argjson r "$2" --argjson w "$3" --arg read "$4" \
    --arg outside "$5" --arg write "$6" '{
    format: "runspore.workflow/0.1", name: "grants", start: "step",
    actions: {step: {kind: "agent",
      stepCli: [$probe, $read, $outside, $write, "1", "9"],
      timeoutMs: "30000", sandbox: {readable: $r, writable: $w},
      effect: "idempotent", outcomes: ["ok"], retry: {maxAttempts: 1}}},
    nodes: {step: {kind: "activity", action: "step", input: {query: "probe"}, outcomes: {ok: "done"}},
            done: {kind: "complete", output: {"$get": ["nodes", "step", "output"]}}}}' >"$tmp/wf-$1.json"
}

snapshot() { # what the probe could have touched on the host
  { find "$proj" "$tmp/outside" "$HOME" \( -type d -printf '%p d\n' \) -o -printf '%p %y %s %T@\n' \
      2>/dev/null; ls -A /; } | sort
}
before=$(snapshot)

# refused <name> <reason> <readable> <writable> <read> <write-outside> <write>
refused() {
  local name=$1 reason=$2
  shift 2
  workflow "$name" "$@"
  sp run "$tmp/wf-$name.json" --db "$db" --key "$name" --json
  expect_rc 1 "$name: the run fails"
  local rid
  rid=$(jq -r '.runId // empty' <<<"$out")
  [ -n "$rid" ] || { fail "$name: no run ($out $err)"; return 0; }
  sp status "$rid" --db "$db" --json
  expect_json '.result.error.code == "agent.grant-refused" and
    .result.error.details.reason == $r and (.result.error.message | test("is refused"))' \
    "$name: agent.grant-refused ($reason)" --arg r "$reason"
  [ "$(snapshot)" = "$before" ] || fail "$name: the host file system changed"
  [ ! -e "/$marker" ] || { rm -f "/$marker"; fail "$name: the probe wrote on the host's root"; }
  grep -q '"readHome"' "$tmp"/sp*.out && fail "$name: the probe ran"
  return 0
}

refused rootlink root '[]' '["rootlink"]' "$proj/rootlink/etc/shadow" \
  "$proj/rootlink$tmp/outside/sentinel" "$proj/rootlink/$marker"
refused rootlink-absolute root '[]' "[\"$proj/rootlink\"]" "$proj/rootlink/etc/shadow" \
  "$proj/rootlink$tmp/outside/sentinel" "$proj/rootlink/$marker"
refused etclink outside-base '["etclink"]' '[]' "$proj/etclink/shadow" "$tmp/outside/x" "$proj/x"
refused etclink-absolute reserved "[\"$proj/etclink\"]" '[]' "$proj/etclink/shadow" \
  "$tmp/outside/x" "$proj/x"
refused home home "[\"$HOME\"]" '[]' "$HOME/.ssh/id_rsa" "$tmp/outside/x" "$HOME/x"
refused homelink home '["homelink"]' '[]' "$proj/homelink/.ssh/id_rsa" "$tmp/outside/x" "$proj/x"
refused home-parent home '[]' "[\"$tmp\"]" "$HOME/.ssh/id_rsa" "$tmp/outside/x" "$tmp/x"
refused dangling dangling '[]' '["dangling"]' "$proj/dangling/x" "$tmp/outside/x" "$proj/dangling/x"
refused outlink outside-base '[]' '["outlink"]' "$proj/outlink/sentinel" "$tmp/outside/x" \
  "$proj/outlink/sentinel"
refused nested-link nested-link '["data/sublink"]' '["data"]' "$proj/data/sub/file.txt" \
  "$proj/data/sub/x" "$proj/data/x"
refused agent-dir agent-dir '[]' "[\"$SPORE_AGENT_DIR\"]" "$proj/x" "$tmp/outside/x" \
  "$SPORE_AGENT_DIR/x"
# the password database's home too, when it is a real directory of its own
pw_home=$(getent passwd "$(id -u)" | cut -d: -f6)
if [ -n "$pw_home" ] && [ -d "$pw_home" ] && [ "$pw_home" != / ]; then
  refused pw-home home "[\"$pw_home\"]" '[]' "$pw_home/x" "$tmp/outside/x" "$proj/x"
fi

# / itself is refused when the workflow is read (exit 2, nothing runs)
workflow slash '[]' '["/"]' /etc/shadow "$tmp/outside/x" "/$marker"
sp run "$tmp/wf-slash.json" --db "$db" --key slash
expect_rc 2 "/ given directly"
[[ "$err" == "spore: action.invalid: "*"grant the whole file system"* ]] ||
  fail "/ given directly: stderr \"${err:0:300}\""
[ "$(snapshot)" = "$before" ] || fail "/: the host file system changed"

# A symlink to a directory inside the base directory: the resolved target is
# bound (the probe's write through the link lands in data/), read-only for
# readable (the write into scen/ fails); the plain path works as before.
workflow links '["scenlink"]' '["datalink"]' "$proj/scenlink/file.txt" "$proj/scenlink/new" \
  "$proj/datalink/written"
sp run "$tmp/wf-links.json" --db "$db" --key links --json
expect_rc 0 "symlinks inside the base directory"
expect_json '.status == "completed" and .result.output.readHome == "ok" and
  .result.output.writeWritable == "ok" and .result.output.writeOutside == "EROFS" and
  .result.output.extraFds == 0' "the linked grants are bound, readable read-only"
checks=$((checks + 1))
[ "$(cat "$proj/data/written" 2>/dev/null)" = escaped ] || fail "the write through datalink did not land in data/"
[ ! -e "$proj/scen/new" ] || fail "a readable grant was written"
[ -L "$proj/datalink" ] && [ -L "$proj/scenlink" ] || fail "the links were replaced"
rm -f "$proj/data/written"

workflow plain '["scen"]' '["data"]' "$proj/scen/file.txt" "$proj/scen/new" "$proj/data/written"
sp run "$tmp/wf-plain.json" --db "$db" --key plain --json
expect_rc 0 "plain directories"
expect_json '.result.output.readHome == "ok" and .result.output.writeWritable == "ok" and
  .result.output.writeOutside == "EROFS"' "plain grants work"
rm -f "$proj/data/written"

# A readable grant inside a writable one stays read-only (it is mounted after it).
workflow nested '["data/sub"]' '["data"]' "$proj/data/sub/file.txt" "$proj/data/sub/new" \
  "$proj/data/written"
sp run "$tmp/wf-nested.json" --db "$db" --key nested --json
expect_rc 0 "a readable grant inside a writable one"
expect_json '.result.output.readHome == "ok" and .result.output.writeWritable == "ok" and
  .result.output.writeOutside == "EROFS"' "the inner readable grant is read-only"
checks=$((checks + 1))
[ ! -e "$proj/data/sub/new" ] || fail "the readable grant inside a writable one was written"
rm -f "$proj/data/written"

[ "$(snapshot)" = "$before" ] || fail "the host file system changed"
[ -z "$(ls -A "$SPORE_AGENT_DIR")" ] || fail "a sandbox was left behind: $(ls -A "$SPORE_AGENT_DIR")"
[ "$(cat "$tmp/outside/sentinel")" = untouched ] || fail "the sentinel was overwritten"
finish
