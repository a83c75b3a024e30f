# lib.sh - what the engine-level CLI tests share (sourced by tests/cli/test_*.sh
# after `set -euo pipefail`; not a test itself: CTest runs test_*.sh only).
#
# usage in a test:  source "$(dirname "$0")/lib.sh" "$@"   (args: <spore> <repo-root>)
#
# Gives every test: absolute $spore and $root; the working directory = the
# repository root (the fixtures' argv paths are relative to it); its own
# temporary directory $tmp with the database $db inside; SPORE_TEST_LOG (the
# execution log tests/fixtures/bin/step.sh appends to); a cleanup trap that
# kills every background process the test started (and any step process
# group still alive) and removes $tmp; fail() that counts and goes on;
# helpers to run spore and check exit codes and JSON, to poll with a timeout
# (wait_for), to read the database with sqlite3, and finish().

spore=${1:?usage: $(basename "$0") <path-to-spore> <repo-root>}
root=${2:?usage: $(basename "$0") <path-to-spore> <repo-root>}
spore=$(cd "$(dirname "$spore")" && pwd)/$(basename "$spore")
root=$(cd "$root" && pwd)
test_name=$(basename "$0" .sh)
wf="$root/tests/fixtures/workflows"

for tool in jq sqlite3 pgrep date; do
  command -v "$tool" >/dev/null || { echo "$test_name: $tool is required (scripts/deps.sh installs it)" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/spore-$test_name.XXXXXX")
db="$tmp/spore.db"
export SPORE_TEST_LOG="$tmp/exec.log"
: >"$SPORE_TEST_LOG"
unset SPORE_DB SPORE_FAILPOINTS
cd "$root"

bg_pids=()
failures=0
checks=0

# True when <pid> is still a spore process this test started (a PID that was
# reaped may be reused by anything else: never kill that).
is_our_spore() {
  [ -r "/proc/$1/cmdline" ] && [ "$(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | head -n 1)" = "$spore" ]
}

cleanup() {
  local p g
  for p in "${bg_pids[@]}"; do
    if is_our_spore "$p"; then
      kill -CONT "$p" 2>/dev/null || true
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
  wait 2>/dev/null || true
  # Step process groups this test's steps ran in, should any still be alive.
  if [ -s "$SPORE_TEST_LOG" ]; then
    for g in $(awk '{print $7}' "$SPORE_TEST_LOG" | sort -u); do
      if group_alive "$g" && pgrep -g "$g" -f 'step\.sh|sleep' >/dev/null 2>&1; then
        kill -KILL -- "-$g" 2>/dev/null || true
      fi
    done
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM # run the EXIT trap on a CTest timeout or Ctrl-C too
trap 'exit 130' INT

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

now_ms() { date +%s%3N; }

# wait_for <seconds> <command...>: polls every 50 ms until the command
# succeeds; returns 1 after the timeout.
wait_for() {
  local limit=$1
  shift
  local deadline=$(($(now_ms) + limit * 1000))
  until "$@" >/dev/null 2>&1; do
    [ "$(now_ms)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}

# sp <args...>: runs spore in the foreground; sets rc, out, err.
sp_n=0
sp() {
  sp_n=$((sp_n + 1))
  checks=$((checks + 1))
  set +e
  "$spore" "$@" >"$tmp/sp$sp_n.out" 2>"$tmp/sp$sp_n.err"
  rc=$?
  set -e
  out=$(cat "$tmp/sp$sp_n.out")
  err=$(cat "$tmp/sp$sp_n.err")
}

expect_rc() { # <want> <what>
  [ "$rc" -eq "$1" ] || fail "$2: exit $rc, want $1 (stdout: ${out:0:400}) (stderr: ${err:0:400})"
}

# expect_json <jq filter> <what> [jq options, e.g. --arg id "$id"]: $out must
# be one JSON object with "format": "spore.cli/0.1" on which the filter is true.
expect_json() {
  local filter=$1 what=$2
  shift 2
  checks=$((checks + 1))
  jq -e '.format == "spore.cli/0.1"' <<<"$out" >/dev/null 2>&1 ||
    { fail "$what: stdout is not a spore.cli/0.1 object: ${out:0:400}"; return 0; }
  jq -e "$@" "$filter" <<<"$out" >/dev/null 2>&1 || fail "$what: stdout does not satisfy $filter: ${out:0:800}"
}

# expect_error <exit> <code> <what> -- spore args: the error in text mode
# (stderr `spore: <code>: …`, stdout empty) and in JSON mode.
expect_error() {
  local want_rc=$1 code=$2 what=$3
  shift 4
  sp "$@"
  expect_rc "$want_rc" "$what"
  [[ "$err" == "spore: $code: "* ]] || fail "$what: stderr \"${err:0:300}\", want \"spore: $code: …\""
  [ -z "$out" ] || fail "$what: text-mode error printed on stdout: ${out:0:300}"
  sp "$@" --json
  expect_rc "$want_rc" "$what (--json)"
  jq -e --arg c "$code" '.format == "spore.cli/0.1" and .error.code == $c and
      (.error.message | type == "string" and length > 0)' <<<"$out" >/dev/null 2>&1 ||
    fail "$what (--json): stdout \"${out:0:300}\", want {\"error\":{\"code\":\"$code\",…}}"
}

# start_bg <name> <spore args...>: starts spore in the background (stdout and
# stderr in $tmp/<name>.out/.err); sets bg_pid.
start_bg() {
  local name=$1
  shift
  "$spore" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  bg_pid=$!
  bg_pids+=("$bg_pid")
}

# wait_bg <pid> <seconds>: waits for a background spore to exit; sets
# bg_rc (124 and a failure when it is still running after the timeout).
wait_bg() {
  local pid=$1 limit=$2
  if ! wait_for "$limit" bash -c "! kill -0 $pid"; then
    fail "process $pid still running after ${limit}s"
    bg_rc=124
    return 0
  fi
  set +e
  wait "$pid" 2>/dev/null
  bg_rc=$?
  set -e
}

# The JSON status of a run (empty on error).
status_json() { "$spore" status "$1" --db "$db" --json 2>/dev/null || true; }
run_status() { status_json "$1" | jq -r '.status // empty'; }
status_is() { [ "$(run_status "$1")" = "$2" ]; }

events_json() { "$spore" events "$1" --db "$db" --json; }

# sql <query>: one read of the database through Debian's sqlite3 CLI.
sql() { sqlite3 -batch -noheader -cmd '.timeout 5000' "$db" "$1"; }

# Execution log (tests/fixtures/bin/step.sh): fields
# 1 kind, 2 run, 3 node, 4 attempt, 5 effect key, 6 pid, 7 pgid, 8 ms.
log_count() { # <kind> <run> <node> [attempt]
  awk -v k="$1" -v r="$2" -v n="$3" -v a="${4:-}" \
    '$1 == k && $2 == r && $3 == n && (a == "" || $4 == a) {c++} END {print c + 0}' "$SPORE_TEST_LOG"
}
log_field() { # <kind> <run> <node> <attempt> <field number>
  awk -v k="$1" -v r="$2" -v n="$3" -v a="$4" -v f="$5" \
    '$1 == k && $2 == r && $3 == n && $4 == a {print $f; exit}' "$SPORE_TEST_LOG"
}
log_has() { [ "$(log_count "$@")" -gt 0 ]; }

# A process group with no live process left in it (zombies count as dead:
# an orphan is reaped by PID 1 whenever that gets round to it).
group_alive() { ps -eo pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ {found = 1} END {exit !found}'; }
group_gone() { ! group_alive "$1"; }

decimal='^(0|[1-9][0-9]*)$'

# concurrent_starts <pairs> <timeout>: two `spore run` processes per start key
# on $db (tests/fixtures/workflows/three-steps.json): both exit 0 on one run,
# one `created` true and one false, every step executed once, events and
# revisions 1..4. Shared by the SQLite and PostgreSQL worker tests.
concurrent_starts() {
  local pairs=$1 limit=$2 i side pid pair id node
  local pids=()
  for i in $(seq "$pairs"); do
    for side in x y; do
      "$spore" run "$wf/three-steps.json" --key "pair-$i" --db "$db" --poll-ms 20 --json \
        >"$tmp/pair-$i-$side.out" 2>"$tmp/pair-$i-$side.err" &
      pids+=("$!")
      bg_pids+=("$!")
    done
  done
  for pid in "${pids[@]}"; do
    wait_bg "$pid" "$limit"
    [ "$bg_rc" -eq 0 ] || fail "a concurrent spore run exited $bg_rc, want 0"
  done
  for i in $(seq "$pairs"); do
    pair=$(jq -s . "$tmp/pair-$i-x.out" "$tmp/pair-$i-y.out")
    jq -e 'length == 2 and .[0].runId == .[1].runId and ([.[].created] | sort) == [false, true]
        and all(.[]; .status == "completed" and .revision == "4"
                     and .result.output == {"steps": ["a", "b", "c"]})' \
      <<<"$pair" >/dev/null || fail "pair $i: $pair"
    id=$(jq -r '.[0].runId' <<<"$pair")
    for node in a b c; do
      [ "$(log_count start "$id" "$node")" -eq 1 ] ||
        fail "pair $i: step $node executed $(log_count start "$id" "$node") times"
    done
    sp events "$id" --db "$db" --json
    expect_json '([.events[].consumedRevision] == ["1", "2", "3", "4"])
      and ([.events[1:][].payload.attempt] == [1, 1, 1])' "pair $i events"
  done
}

finish() {
  if [ "$failures" -ne 0 ]; then
    echo "$test_name: $failures failed assertion(s) over $checks checks" >&2
    exit 1
  fi
  echo "$test_name: all assertions passed ($checks checks, $(($(now_ms) - t_begin)) ms)"
}
t_begin=$(now_ms)
