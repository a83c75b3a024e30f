#!/usr/bin/env bash
# test_build.sh - workflow folders and artifacts through the real binary
# (authoring.md §1-2, cli.md §5): `spore build` twice gives identical
# bytes, beside the folder and never inside it; `spore inspect` shows the
# manifest, the package and the assets; artifacts with a "../" member, a
# duplicate, a symlink or an oversize member (and other damage) are refused
# with their code by inspect, validate and run; `spore run` of a folder and
# of its artifact make runs with one package digest, the artifact's run
# recording the artifact digest; a component runner travels sealed in the
# artifact and runs without its folder; every example folder builds to its
# JSON twin's package digest.
#
# usage: bash test_build.sh <path-to-spore> <repo-root>
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

command -v python3 >/dev/null || { echo "$test_name: python3 is required" >&2; exit 1; }
runners="$(dirname "$spore")/runners"

# ---- help ----
for cmd in build inspect; do
  sp "$cmd" --help
  expect_rc 0 "$cmd --help"
  [[ "$out" == "usage: spore $cmd "* ]] || fail "$cmd --help: ${out:0:200}"
done

# ---- every example folder: the package of its JSON twin, and an artifact ----
for twin in examples/*.json; do
  folder=${twin%.json}
  [ -f "$folder/workflow.dot" ] || { fail "$twin has no folder twin $folder/"; continue; }
  sp validate --json "$twin"
  want=$(jq -r .packageDigest <<<"$out")
  sp validate --json "$folder"
  expect_rc 0 "validate $folder"
  expect_json '.packageDigest == $d' "validate $folder: the digest of $twin" --arg d "$want"
  sp validate --json "$folder/workflow.dot"
  expect_json '.packageDigest == $d' "validate $folder/workflow.dot" --arg d "$want"
  name=$(basename "$folder")
  sp build "$folder" -o "$tmp/$name.spore" --json
  expect_rc 0 "build $folder"
  expect_json '.packageDigest == $d and .artifact == $a and (.artifactDigest | test("^sha256:[0-9a-f]{64}$"))' \
    "build $folder" --arg d "$want" --arg a "$tmp/$name.spore"
  sp validate --json "$tmp/$name.spore"
  expect_json '.packageDigest == $d' "validate $name.spore" --arg d "$want"
done
# examples/runners is itself the folder twin of its detached-job.json, once
# the runner module is built beside them (examples/README.md)
detached="$(dirname "$spore")/runners/detached-job.wasm"
if [ -f "$detached" ]; then
  cp -r examples/runners "$tmp/runners-example"
  cp "$detached" "$tmp/runners-example/"
  sp validate --json "$tmp/runners-example/detached-job.json"
  want=$(jq -r .packageDigest <<<"$out")
  sp validate --json "$tmp/runners-example"
  expect_rc 0 "validate the runners example folder"
  expect_json '.packageDigest == $d' "the runners example folder: the digest of detached-job.json" \
    --arg d "$want"
else
  fail "the example runner is not built ($detached)"
fi
[ ! -e spore.db ] || fail "validate or build created ./spore.db"

# ---- reproducible: the same folder twice, byte for byte; beside, never inside ----
cp -r examples/agent "$tmp/agent"
sp build "$tmp/agent"
expect_rc 0 "build beside the folder"
[ -f "$tmp/agent.spore" ] || fail "build did not write $tmp/agent.spore"
[[ "$out" == "built $tmp/agent.spore ("* ]] || fail "build text: ${out:0:300}"
cp "$tmp/agent.spore" "$tmp/first.spore"
touch "$tmp/agent/settings.json" "$tmp/agent/prompts/triage.md" # new times change nothing
sp build "$tmp/agent/workflow.dot" -o "$tmp/second.spore"
expect_rc 0 "build again"
cmp -s "$tmp/first.spore" "$tmp/second.spore" || fail "two builds of one folder differ"
(cd "$tmp/agent" && "$spore" build . >/dev/null) || fail "build . in the folder"
cmp -s "$tmp/first.spore" "$tmp/agent.spore" || fail "build . did not write ../agent.spore alike"
[ -z "$(find "$tmp/agent" -name '*.spore')" ] || fail "an artifact was written inside the folder"
expect_error 2 build.output-inside "-o inside the folder" -- build "$tmp/agent" -o "$tmp/agent/out.spore"
expect_error 2 usage "build of a file that is no folder" -- build examples/hello.json
expect_error 2 file.unwritable "-o over a folder" -- build "$tmp/agent" -o "$tmp"

# ---- inspect ----
sp inspect "$tmp/first.spore"
expect_rc 0 "inspect"
grep -q "^workflow     agent-triage (runspore.workflow/0.1)$" <<<"$out" || fail "inspect text: ${out:0:400}"
grep -q '"systemPrompt"' <<<"$out" || fail "inspect prints the package"
sp inspect "$tmp/first.spore" --json
agent_digest=$(jq -r .packageDigest <<<"$("$spore" validate --json examples/agent.json)")
expect_json '.manifest.name == "agent-triage" and .manifest.format == "runspore.workflow/0.1"
  and .manifest.packageDigest == $d and .manifest.packageBytes == (.package | tojson | length | tostring)
  and (.manifest.sporeVersion | test("^[0-9]")) and .package.name == "agent-triage"
  and .manifest.assets == [] and .manifest.sealed == []
  and .bytes == ($n | tostring)' "inspect --json" --argjson n "$(stat -c %s "$tmp/first.spore")" \
  --arg d "$agent_digest"
mkdir -p "$tmp/agent/docs"
echo "notes" >"$tmp/agent/docs/NOTES.md"
jq '.actions.triage.assets = ["docs", "prompts/triage.md"]' "$tmp/agent/settings.json" >"$tmp/s.json"
mv "$tmp/s.json" "$tmp/agent/settings.json"
sp build "$tmp/agent" -o "$tmp/assets.spore" --json
expect_json '.assets == "2"' "build with assets"
sp inspect "$tmp/assets.spore" --assets
grep -qE '^asset +6  sha256:[0-9a-f]{64}  docs/NOTES.md$' <<<"$out" || fail "inspect --assets: ${out:0:600}"
sp inspect "$tmp/assets.spore" --assets --json
expect_json '[.assets[].path] == ["docs/NOTES.md", "prompts/triage.md"] and .manifest.assets == .assets' \
  "inspect --assets --json"
sp validate --json "$tmp/assets.spore"
expect_json '.packageDigest == $d' "assets leave the package as it is" --arg d "$agent_digest"

# ---- refused artifacts: path tricks, duplicates, symlinks, oversize, damage ----
python3 - "$tmp/first.spore" "$tmp" <<'PY'
import hashlib, struct, sys
src, out = sys.argv[1], sys.argv[2]
b = open(src, 'rb').read()
magic = b'\x89SPORE\r\n'
assert b[:8] == magic
n = struct.unpack('>I', b[12:16])[0]
at, entries = 16, []
for _ in range(n):
    t, _z, nl, _z2, size = struct.unpack('>BBHIQ', b[at:at + 16])
    entries.append((t, b[at + 48:at + 48 + nl], size))
    at += 48 + nl
members = []
for t, name, size in entries:
    members.append(dict(type=t, name=name, data=b[at:at + size]))
    at += size

def write(path, ms):
    o = bytearray(magic + struct.pack('>II', 1, len(ms)))
    for m in ms:
        o += struct.pack('>BBHIQ', m.get('type', 1), 0, len(m['name']), 0, m.get('size', len(m['data'])))
        o += hashlib.sha256(m['data']).digest() + m['name']
    for m in ms:
        o += m['data']
    open(path, 'wb').write(o)

write(out + '/same.spore', members)
write(out + '/dotdot.spore', [dict(name=b'../x', data=b'x')] + members)
write(out + '/absolute.spore', [dict(name=b'/etc/x', data=b'x')] + members)
write(out + '/duplicate.spore', members + [members[-1]])
write(out + '/symlink.spore', members[:1] + [dict(type=2, name=b'link', data=b'/etc/passwd')] + members[1:])
write(out + '/oversize.spore', members[:-1] + [dict(members[-1], size=(64 << 20) + 1)])
write(out + '/unknown.spore', members + [dict(name=b'zz.txt', data=b'z')])
write(out + '/missing.spore', members[:-1])
damaged = bytearray(open(src, 'rb').read())
damaged[-2] ^= 1
open(out + '/damaged.spore', 'wb').write(damaged)
open(out + '/truncated.spore', 'wb').write(b[:-1])
open(out + '/trailing.spore', 'wb').write(b + b'\0')
PY
cmp -s "$tmp/same.spore" "$tmp/first.spore" || fail "the test's container writer differs from spore's"
refused() { # <file> <code> <what>
  expect_error 2 "$2" "inspect $3" -- inspect "$tmp/$1"
  expect_error 2 "$2" "validate $3" -- validate "$tmp/$1"
  expect_error 2 "$2" "run $3" -- run "$tmp/$1" --db "$tmp/refused.db"
}
refused dotdot.spore artifact.member-path "a ../ member"
refused absolute.spore artifact.member-path "an absolute member"
refused duplicate.spore artifact.member-duplicate "a duplicate member"
refused symlink.spore artifact.member-type "a symlink member"
refused oversize.spore artifact.member-size "an oversize member"
refused unknown.spore artifact.member-unknown "an unknown member"
refused missing.spore artifact.member-missing "no package"
refused damaged.spore artifact.member-digest "a damaged member"
refused truncated.spore artifact.truncated "a cut artifact"
refused trailing.spore artifact.trailing-bytes "trailing bytes"
[ ! -e "$tmp/refused.db" ] || fail "a refused artifact created a store"
expect_error 2 artifact.magic "inspect of a JSON package" -- inspect examples/hello.json
# the magic decides, never the name
cp examples/hello.json "$tmp/named.spore"
sp validate "$tmp/named.spore"
expect_rc 0 "a JSON package named .spore"
cp "$tmp/first.spore" "$tmp/named.json"
sp validate --json "$tmp/named.json"
expect_json '.valid' "an artifact named .json"

# ---- run: a folder and its artifact, one package digest; the artifact recorded ----
sp build examples/hello -o "$tmp/hello.spore"
sp run examples/hello --db "$db" --input '{"name": "Ada"}' --json
expect_rc 0 "run of the folder"
expect_json '.status == "completed" and .artifactDigest == null' "run of the folder"
folder_run=$(jq -r .runId <<<"$out")
folder_digest=$(jq -r .packageDigest <<<"$out")
sp run "$tmp/hello.spore" --db "$db" --input '{"name": "Ada"}' --json
expect_rc 0 "run of the artifact"
artifact_run=$(jq -r .runId <<<"$out")
want="sha256:$(sha256sum "$tmp/hello.spore" | cut -d' ' -f1)"
sp status "$artifact_run" --db "$db" --json
expect_json '.status == "completed" and .packageDigest == $p and .artifactDigest == $a
  and .result.output.shout == "HELLO, ADA!"' "status of the artifact's run" \
  --arg p "$folder_digest" --arg a "$want"
sp status "$folder_run" --db "$db" --json
expect_json '.packageDigest == $p and .artifactDigest == null' "status of the folder's run" --arg p "$folder_digest"
sp status "$artifact_run" --db "$db"
grep -qx "artifact     $want" <<<"$out" || fail "status text names the artifact: ${out:0:400}"
sp run examples/hello.json --db "$db" --input '{"name": "Ada"}' --json
expect_json '.packageDigest == $p' "run of the JSON twin" --arg p "$folder_digest"
[ -z "$(find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'spore-artifact-*' -newer "$tmp/hello.spore" 2>/dev/null)" ] ||
  fail "a private folder of an artifact was left behind"

# ---- a component runner sealed in the artifact, run without its folder ----
comp="$tmp/comp"
mkdir -p "$comp/runners" "$comp/data" "$comp/empty"
cp "$runners/ok.wasm" "$comp/runners/"
echo "k=v" >"$comp/data/settings.txt"
cat >"$comp/workflow.dot" <<'DOT'
digraph comp { format = "runspore.workflow/0.1"; start = job; job -> done; done [kind = complete] }
DOT
cat >"$comp/settings.json" <<'JSON'
{"actions": {"job": {"kind": "component", "module": "runners/ok.wasm",
                     "grants": {"folders": ["data", "empty"]}, "effect": "idempotent",
                     "callTimeoutMs": "10000", "async": {"probeEveryMs": "200"}}},
 "nodes": {"job": {"action": "job"}, "done": {"output": {"$get": ["nodes", "job", "outcome"]}}}}
JSON
sp build "$comp" -o "$tmp/comp.spore" --json
expect_rc 0 "build of a component folder"
expect_json '.sealedBlobs == "2"' "the module and the granted file are sealed"
sp build "$comp" -o "$tmp/comp2.spore"
cmp -s "$tmp/comp.spore" "$tmp/comp2.spore" || fail "two builds of the component folder differ"
sp inspect "$tmp/comp.spore" --json
expect_json '[.manifest.sealed[].path] == ["data/settings.txt", "runners/ok.wasm"]
  and .package.actions.job.sealed["runners/ok.wasm"] == .manifest.sealed[1].digest' "inspect of the sealed files"
sp validate --json "$comp"
comp_digest=$(jq -r .packageDigest <<<"$out")
rm -rf "$comp"
sp validate --json "$tmp/comp.spore"
expect_rc 0 "validate of the artifact without its folder"
expect_json '.packageDigest == $d' "the sealed package" --arg d "$comp_digest"
sp run "$tmp/comp.spore" --db "$db" --json
expect_rc 0 "run of the component artifact without its folder"
expect_json '.status == "completed" and .packageDigest == $d and .result.output == "ok"' \
  "the component ran from the artifact's sealed module" --arg d "$comp_digest"
# a runner outside the world is refused by build too (runners.md §6, R3)
mkdir -p "$comp/runners"
cp "$runners/wrong-export-type.wasm" "$comp/runners/ok.wasm"
cat >"$comp/workflow.dot" <<'DOT'
digraph comp { format = "runspore.workflow/0.1"; start = job; job -> done; done [kind = complete] }
DOT
echo '{"actions": {"job": {"kind": "component", "module": "runners/ok.wasm"}}, "nodes": {"job": {"action": "job"}}}' \
  >"$comp/settings.json"
expect_error 2 component.world-mismatch "build of a runner outside the world" -- build "$comp" -o "$tmp/bad.spore"
[ ! -e "$tmp/bad.spore" ] || fail "a refused build wrote an artifact"

finish
