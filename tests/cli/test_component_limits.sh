#!/usr/bin/env bash
# test_component_limits.sh - runners.md R6 and the §4 table through the
# real binary: an endless loop in start ends with component.timeout within
# callTimeoutMs plus a little (the jail's child is killed); unbounded
# recursion and memory grown past its maximum are traps (component.trap);
# a response outside the runner's memory is component.bad-response; the
# worker survives all of it. file_read through ".." and through a symlink
# leaving the folder are refused; a socket reply of 1 MiB + 1 byte with the
# newline after the boundary is refused (reply-too-large) while exactly
# 1 MiB passes.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
source "$root/tests/cli/component.sh"

# ended <module> <callTimeoutMs>: runs it; sets code (the first result's
# error code) and result
ended() {
  cwf "$wfdir/e.json" "$1" "{\"callTimeoutMs\": \"$2\"}"
  sp run "$wfdir/e.json" --db "$db" --json
  result=$(result_of "$(jq -r .runId <<<"$out")")
  code=$(jq -r '.error.code' <<<"$result")
}

t0=$(now_ms)
ended loop.wasm 1000
elapsed=$(($(now_ms) - t0))
[ "$code" = component.timeout ] || fail "an endless loop: $code, want component.timeout"
[ "$elapsed" -lt 4000 ] || fail "the loop ended after ${elapsed} ms, want callTimeoutMs (1000) plus a little"
ended recurse.wasm 10000
[ "$code" = component.trap ] || fail "unbounded recursion is not a trap: $result"
jq -e '.error.details.trap | test("call stack exhausted")' <<<"$result" >/dev/null ||
  fail "the trap message: $result"
ended grow.wasm 10000
[ "$code" = component.trap ] || fail "memory past its maximum is not a trap: $result"
jq -e '.error.details.trap | test("out of bounds")' <<<"$result" >/dev/null || fail "the trap message: $result"
ended bad-response.wasm 10000
[ "$code" = component.bad-response ] || fail "a response outside memory: $result"
# a jailed child never outlives its call (an orphan would have been reparented)
ps -eo ppid=,args= | awk '$1 == 1 && /__wasm-jail/ {found = 1} END {exit !found}' &&
  fail "a jailed child outlived its call"

# file_read confined below the granted folder
mkdir -p "$tmp/g/data"
echo inside >"$tmp/g/data/in.txt"
echo secret >"$tmp/g/secret.txt"
ln -s ../secret.txt "$tmp/g/data/out-rel"
ln -s "$tmp/g/secret.txt" "$tmp/g/data/out-abs"
read_cfg() {
  jq -nc --arg p "$1" --arg f "$tmp/g/data" '{grants: {folders: [$f]}, retry: {maxAttempts: 1},
    config: {calls: [{import: "file_read", request: {path: $p}}]}}'
}
cwf "$wfdir/f.json" generic.wasm "$(read_cfg "$tmp/g/data/in.txt")"
sp run "$wfdir/f.json" --db "$db" --json
expect_json '.result.output.replies[0].reply.data == "inside\n"' "a file below the folder is read"
for link in out-rel out-abs; do
  cwf "$wfdir/f.json" generic.wasm "$(read_cfg "$tmp/g/data/$link")"
  sp run "$wfdir/f.json" --db "$db" --json
  expect_json '.result.output.replies[0].status == -3 and .result.output.replies[0].reply.error.code == "escapes"' \
    "file_read through a symlink leaving the folder ($link) is refused"
  grep -q secret <<<"$out" && fail "$link: the secret was read"
done
cwf "$wfdir/f.json" generic.wasm "$(read_cfg "$tmp/g/data/../secret.txt")"
sp run "$wfdir/f.json" --db "$db" --json
expect_json '.result.error.code == "component.not-granted" and .result.error.details.grant == "folders"' \
  "file_read through .. is refused (it names a file outside the granted folder)"
grep -q '"data":"secret' <<<"$out" && fail "the secret was read through .."

# the socket reply cap
mib=1048576
helper "$runners/sockserve" "$tmp/big.sock" $((mib + 1)) 1 "$tmp/big.log"
helper "$runners/sockserve" "$tmp/fit.sock" $mib 1 "$tmp/fit.log"
wait_for 5 test -S "$tmp/big.sock" && wait_for 5 test -S "$tmp/fit.sock" || fail "socket servers"
sock_cfg() {
  jq -nc --arg s "$1" '{grants: {sockets: [$s]}, config: {quiet: true,
    calls: [{import: "socket_request", request: {path: $s, data: "go\n"}}]}}'
}
cwf "$wfdir/s.json" generic.wasm "$(sock_cfg "$tmp/big.sock")"
sp run "$wfdir/s.json" --db "$db" --json
expect_json '.result.output.replies[0].status == -3' "1 MiB + 1 byte before the newline is refused"
cwf "$wfdir/s.json" generic.wasm "$(jq -c '.config.quiet = false' <<<"$(sock_cfg "$tmp/big.sock")")"
sp run "$wfdir/s.json" --db "$db" --json
expect_json '.result.output.replies[0].reply.error.code == "reply-too-large"' "the refusal says reply-too-large"
cwf "$wfdir/s.json" generic.wasm "$(sock_cfg "$tmp/fit.sock")"
sp run "$wfdir/s.json" --db "$db" --json
expect_json '.result.output.replies[0].status > 1048576' "exactly 1 MiB before the newline passes"
finish
