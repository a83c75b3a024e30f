#!/usr/bin/env bash
# test_component_paths.sh - runners.md R7 and §2 through the real binary:
# "./tools/../bin/job" granted and requested as "bin/job", "./bin/job" and
# "tools/../bin/job" is granted every time and runs the same sealed file:
# the copy materialized from the store in the content-addressed cache
# (programs executable, read-only, digest = the package's sealed digest),
# never the workflow folder's file, which may change after the start.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
source "$root/tests/cli/component.sh"
export XDG_CACHE_HOME="$tmp/cache"
mkdir -p "$wfdir/bin" "$wfdir/tools"
cat >"$wfdir/bin/job" <<SH
#!/bin/sh
echo "\$0 \$1" >> "$tmp/ran"
SH
chmod +x "$wfdir/bin/job"
calls='[{"import": "process_start", "request": {"program": "bin/job", "args": ["1"]}},
        {"import": "process_start", "request": {"program": "./bin/job", "args": ["2"]}},
        {"import": "process_start", "request": {"program": "tools/../bin/job", "args": ["3"]}}]'
cwf "$wfdir/p.json" generic.wasm "{\"grants\": {\"programs\": [\"./tools/../bin/job\"]}, \"config\": {\"calls\": $calls}}"
sp start "$wfdir/p.json" --db "$db" --json
expect_rc 0 "start seals bin/job"
run=$(jq -r .runId <<<"$out")
# nothing is reread from the workflow folder after the start
printf '#!/bin/sh\necho tampered >> %s\n' "$tmp/ran" >"$wfdir/bin/job"
sp worker --run "$run" --until-parked --db "$db" --json
expect_rc 0 "the run completes"
expect_json '[.result.output.replies[] | .status > 0 and .reply.program == "bin/job"] | all and length == 3' \
  "the three names are granted as the one entry bin/job"
wait_for 5 bash -c "[ \$(wc -l < '$tmp/ran') -ge 3 ]" || fail "the three jobs did not all run: $(cat "$tmp/ran" 2>/dev/null)"
grep -q tampered "$tmp/ran" && fail "the workflow folder's file was run instead of the sealed one"
paths=$(awk '{print $1}' "$tmp/ran" | sort -u)
[ "$(wc -l <<<"$paths")" = 1 ] || fail "the names resolved to different files: $paths"
sealed=$(sql "SELECT body FROM packages" | jq -r '.actions.job.sealed["bin/job"]')
[[ "$sealed" == sha256:* ]] || fail "no sealed digest for bin/job: $sealed"
[ "$paths" = "$XDG_CACHE_HOME/spore/blobs/${sealed#sha256:}.x" ] ||
  fail "the job ran from $paths, want the cache's blobs/<hex>.x"
[ "sha256:$(sha256sum "$paths" | cut -d' ' -f1)" = "$sealed" ] || fail "the cached program's digest"
[ "$(stat -c %a "$paths")" = 555 ] || fail "the cached program is not read-only and executable: $(stat -c %a "$paths")"

# a folder grant materializes read-only under trees/, found by dir_list
mkdir -p "$wfdir/data/sub"
echo a >"$wfdir/data/sub/a.txt"
cwf "$wfdir/d.json" generic.wasm '{"grants": {"folders": ["./data"]}, "config": {"calls":
  [{"import": "dir_list", "request": {"path": "data/sub/.."}},
   {"import": "file_read", "request": {"path": "data/./sub/a.txt"}}]}}'
sp run "$wfdir/d.json" --db "$db" --json
expect_json '.result.output.replies[0].reply.entries == [{name: "sub", type: "dir"}]
  and .result.output.replies[1].reply.data == "a\n"' "the sealed folder, by normalized names"
tree=$(ls -d "$XDG_CACHE_HOME"/spore/trees/* | grep -v '[.]tmp-' | head -n 1)
[ "$(stat -c %a "$tree/sub")" = 555 ] && [ "$(stat -c %a "$tree/sub/a.txt")" = 444 ] ||
  fail "the materialized folder is not read-only"
chmod -R u+w "$XDG_CACHE_HOME" # so that the cleanup may remove it without root
finish
