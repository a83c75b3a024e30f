#!/usr/bin/env bash
# test_component_jail_program.sh - the jail program (runners.md §4): a
# component step's call runs in spore-wasm-jail, found beside the spore
# binary, not in `spore __wasm-jail`:
#   1. run by hand (no worker, wrong arguments) it refuses, says what to do
#      and exits 2;
#   2. a spore whose directory holds a spore-wasm-jail runs its calls through
#      it, with the arguments __wasm-jail, the frame revision and the worker's
#      PID, and the run completes with the runner's answer;
#   3. a spore-wasm-jail of another frame revision (here: the real program
#      called with a revision it does not speak) answers with a load error
#      that names both revisions and the remedy: `spore run` refuses the
#      workflow (component.invalid-module) and starts nothing;
#   4. without a spore-wasm-jail beside it, spore serves the calls itself;
#   5. the worker SIGKILLed mid-call (an endless loop under a 20 s
#      callTimeoutMs): its jail process - whose whole environment is the one
#      glibc tunable the worker gives it - is gone within 2 s, never left to
#      run on as an orphan;
#   6. a worker that is PID 1 (spore as a container's first process: here in
#      a PID namespace of its own, when one can be made) runs its component
#      steps like any other;
#   7. a spore-wasm-jail that cannot be started (an interpreter that does not
#      exist) is a coded refusal, component.jail, naming why.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
source "$root/tests/cli/component.sh"
jail="$(dirname "$spore")/spore-wasm-jail"
[ -x "$jail" ] || { fail "spore-wasm-jail is not built beside $spore"; finish; }

# ---- 1. by hand ----
checks=$((checks + 1))
set +e
"$jail" >"$tmp/hand.out" 2>"$tmp/hand.err" 3>&-
hand_rc=$?
set -e
[ "$hand_rc" -eq 2 ] || fail "spore-wasm-jail by hand: exit $hand_rc, want 2"
grep -q 'install spore and spore-wasm-jail from the same build' "$tmp/hand.err" ||
  fail "spore-wasm-jail by hand says: $(cat "$tmp/hand.err")"

# a spore in a folder of its own, with a spore-wasm-jail that logs its
# arguments and hands over to the real program (its environment is empty:
# absolute paths only)
mkdir -p "$tmp/bin"
cp "$spore" "$tmp/bin/spore"
spore_real=$spore
spore="$tmp/bin/spore"
# wrapper <revision argument ("" = the one given)>
wrapper() {
  cat >"$tmp/bin/spore-wasm-jail" <<SH
#!/bin/sh
echo "\$*" >> "$tmp/jail.args"
if [ -n "$1" ]; then exec "$jail" "\$1" "$1" "\$3"; fi
exec "$jail" "\$@"
SH
  chmod +x "$tmp/bin/spore-wasm-jail"
}
cwf "$wfdir/ok.json" generic.wasm '{"config": {"calls": []}}'

# ---- 2. the calls go through the program ----
wrapper ""
sp run "$wfdir/ok.json" --db "$db" --json
expect_rc 0 "a component step through spore-wasm-jail"
expect_json '.status == "completed"' "the run completes"
checks=$((checks + 1))
[ -s "$tmp/jail.args" ] || fail "the worker did not start spore-wasm-jail"
checks=$((checks + 1))
grep -Evq '^__wasm-jail 1 [0-9]+$' "$tmp/jail.args" &&
  fail "spore-wasm-jail's arguments: $(sort -u "$tmp/jail.args" | tr '\n' '|')"

# ---- 3. another revision is refused, saying why: the workflow's check at
#         start (the module described in the jail) fails, nothing runs ----
wrapper "0"
: >"$tmp/jail.args"
sp run "$wfdir/ok.json" --db "$db" --json
expect_rc 2 "a spore-wasm-jail of another revision"
expect_json '.error.code == "component.invalid-module" and
    (.error.details.problem | test("speaks jail protocol 1, the worker asked for 0: install spore and spore-wasm-jail from the same build"))' \
  "the refusal names the revisions and the remedy"
checks=$((checks + 1))
[ "$(wc -l <"$tmp/jail.args")" -eq 1 ] || fail "the refused call ran $(wc -l <"$tmp/jail.args") times"

# ---- 4. no program beside spore: spore serves its own calls ----
rm "$tmp/bin/spore-wasm-jail"
sp run "$wfdir/ok.json" --db "$db" --json
expect_rc 0 "a component step without spore-wasm-jail"
expect_json '.status == "completed"' "the run completes through spore __wasm-jail"
spore=$spore_real

# ---- 5. the worker dies mid-call: the jail dies with it ----
# jail_of <pid>: the PIDs of the jail processes whose parent is <pid>
jail_of() { ps -eo pid=,ppid=,args= | awk -v p="$1" '$2 == p && /__wasm-jail/ {print $1}'; }
cwf "$wfdir/loop.json" loop.wasm '{"callTimeoutMs": "20000"}'
start_bg loop run "$wfdir/loop.json" --db "$db"
# the call's jail: the one that has lived a second (a module is first
# described by a jail of its own, which ends at once)
has_jail() {
  local pid
  pid=$(jail_of "$1" | head -n 1)
  [ -n "$pid" ] && [ "$(ps -o etimes= -p "$pid" | tr -d ' ')" -ge 1 ] 2>/dev/null
}
wait_for 10 has_jail "$bg_pid" || true
jail_pid=$(jail_of "$bg_pid" | head -n 1)
checks=$((checks + 1))
if [ -z "$jail_pid" ]; then
  fail "no jail process under the worker ($bg_pid)"
else
  checks=$((checks + 1))
  [ "$(ps -o comm= -p "$jail_pid")" = spore-wasm-jail ] ||
    fail "the jail process is $(ps -o comm= -p "$jail_pid"), want spore-wasm-jail"
  checks=$((checks + 1))
  jail_env=$(tr '\0' '\n' <"/proc/$jail_pid/environ")
  [ "$jail_env" = "GLIBC_TUNABLES=glibc.malloc.hugetlb=1" ] ||
    fail "the jail's environment: $(tr '\n' ' ' <<<"$jail_env")"
  kill -KILL "$bg_pid"
  checks=$((checks + 1))
  wait_for 2 bash -c "! kill -0 $jail_pid 2>/dev/null" ||
    fail "the jail process $jail_pid outlived its worker by 2 s"
  kill -KILL "$jail_pid" 2>/dev/null || true
fi
# ---- 6. spore as PID 1 ----
if unshare -p -f --mount-proc true 2>/dev/null; then
  checks=$((checks + 1))
  set +e
  out=$(unshare -p -f --mount-proc "$spore" run "$wfdir/ok.json" --db "$tmp/pid1.db" --json 2>"$tmp/pid1.err")
  rc=$?
  set -e
  expect_rc 0 "spore as PID 1"
  expect_json '.status == "completed"' "a component step under a worker that is PID 1"
else
  echo "$test_name: case 6 skipped: no PID namespace here (unshare -p)"
fi
# ---- 7. a program that cannot start ----
mkdir -p "$tmp/broken"
cp "$spore" "$tmp/broken/spore"
printf '#!/nonexistent/interpreter\n' >"$tmp/broken/spore-wasm-jail"
chmod +x "$tmp/broken/spore-wasm-jail"
spore="$tmp/broken/spore"
sp run "$wfdir/ok.json" --db "$db" --json
expect_rc 2 "a spore-wasm-jail that cannot start"
expect_json '.error.code == "component.jail" and
    (.error.message | test("cannot start the jail: No such file or directory"))' \
  "a jail that cannot start is refused with its reason"
spore=$spore_real
finish
