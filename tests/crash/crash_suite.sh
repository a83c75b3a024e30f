#!/usr/bin/env bash
# crash_suite.sh - the crash suite (engine.md H6, cli.md §6), through the real
# binary. See docs/crash-suite.md for what is crashed and what is asserted.
#
# usage: bash crash_suite.sh <path-to-spore> <repo-root> [--full]
#
# Runs tests/crash/workflow.json (fetch, build: idempotent, 3 attempts, 10 ms
# backoff; approval: a signal wait; deploy: unsafe) - or CRASH_WORKFLOW, e.g.
# tests/crash/workflow-0.2.json (format 0.2: fetch in parallel with a sleep,
# build as a map over fetch's items, then the same approval and deploy) -
# once uninterrupted as the reference, then:
#   part 1: for each of the 23 core failpoints (21 on PostgreSQL, which has
#           no flusher thread), stages 1..3 (which spore
#           invocation of the scenario is armed, counting run, signal and
#           resolve) and hit counts 1..H, arms SPORE_FAILPOINTS=<name>:<n> on
#           that one invocation and drives the run to completion: `run` again
#           after a crash (exit 134), `signal` on exit 3, `resolve` on exit 4
#           (--complete ok if the deploy effect key is in the deploy log, else
#           --retry). A (failpoint, stage) stops at the first n that never fires.
#           store.expire-attempt.* is only reached while recovering from an
#           earlier crash, so those scenarios first crash at
#           host.attempt.after-claim (stage 1: fetch, 2: build, 3: deploy) and
#           arm the run that takes the orphaned attempt over. The resolve is
#           only reached after a crashed deploy, so store.append-event.* also
#           has stages 4 and 5: deploy crashed after its claim (resolve
#           --retry) or after its effect (resolve --complete), resolve armed.
#   part 2: SIGKILLs the `spore run` process at K evenly spread points over
#           twice the reference duration, then drives to completion.
# and checks every scenario with tests/crash/checks.jq.
#
# Default (CTest): H=3, K=10. --full: H=40, K=40. Environment overrides:
#   CRASH_HITS, CRASH_KILLS, CRASH_JOBS (parallel part-1 combinations, default
#   min(nproc, 4)), CRASH_PAUSE (seconds each step sleeps, default 0.05),
#   CRASH_KEEP=1 (keep the work directory even when everything passed),
#   CRASH_ONLY=<regex> (part 1 only for the failpoints it matches),
#   CRASH_DB_URL=<postgres://…> (PostgreSQL instead of SQLite: every scenario
#   gets a fresh schema of that database, dropped when it passes; without
#   fast takeover there, a crashed worker's attempt waits out its 1 s lease).
# Exit 0 only when every scenario passed.
set -uo pipefail

usage() {
  echo "usage: crash_suite.sh <spore> <repo-root> [--full]" >&2
  exit 2
}
[ $# -ge 2 ] || usage
spore=$1
root=$2
full=0
if [ $# -ge 3 ]; then
  [ "$3" = "--full" ] || usage
  full=1
fi
spore=$(cd "$(dirname "$spore")" && pwd)/$(basename "$spore")
root=$(cd "$root" && pwd)
[ -x "$spore" ] || { echo "crash_suite.sh: $spore is not executable" >&2; exit 2; }
for tool in jq timeout; do
  command -v "$tool" >/dev/null || { echo "crash_suite.sh: $tool is required (scripts/deps.sh)" >&2; exit 2; }
done

if [ $full -eq 1 ]; then
  HITS=${CRASH_HITS:-40}
  KILLS=${CRASH_KILLS:-40}
else
  HITS=${CRASH_HITS:-3}
  KILLS=${CRASH_KILLS:-10}
fi
ncpu=$(nproc 2>/dev/null || echo 2)
JOBS=${CRASH_JOBS:-$((ncpu < 4 ? ncpu : 4))}
PAUSE=${CRASH_PAUSE:-0.05}
INVOCATION_LIMIT=20   # a scenario that needs more spore invocations fails
HANG_MS=120000        # one spore invocation taking longer is a hang

FAILPOINTS=(
  host.turn.after-reduce host.turn.after-commit
  host.attempt.after-claim host.attempt.after-effect host.attempt.after-finish
  host.batch.before-commit host.batch.after-commit
  store.flush.before-sync store.flush.after-sync
  store.create-run.before-commit store.create-run.after-commit
  store.append-event.before-commit store.append-event.after-commit
  store.commit-turn.before-commit store.commit-turn.after-commit
  store.claim-attempt.before-commit store.claim-attempt.after-commit
  store.heartbeat.before-commit store.heartbeat.after-commit
  store.settle-attempt.before-commit store.settle-attempt.after-commit
  store.expire-attempt.before-commit store.expire-attempt.after-commit
)

# Every failpoint above must be registered by the binary's source. Points
# added later (runner points, and store operations this workflow never
# reaches, such as the holder operations of async steps, or finish_attempt,
# which an engine sends only when the store refuses a settle_attempt's
# decision) are named, not run; Q03 (store.*.crash) crashes every store
# failpoint at the store's level.
registered=$(sed -n '/^static const char \*const NAMES/,/NULL/p' "$root/src/base/failpoint.c" |
  grep -oE '"[a-z]+\.[a-z.-]+"' | tr -d '"' | sort)
missing=$(comm -13 <(echo "$registered") <(printf '%s\n' "${FAILPOINTS[@]}" | sort))
if [ -n "$missing" ]; then
  echo "crash_suite.sh: failpoints no longer registered in src/base/failpoint.c:" $missing >&2
  exit 2
fi
extra=$(comm -23 <(echo "$registered") <(printf '%s\n' "${FAILPOINTS[@]}" | sort))
# store.flush.* fire on both stores: the flusher (src/store/flusher.c) syncs
# SQLite's -wal file, or flushes PostgreSQL's WAL after commits made with
# synchronous_commit off (docs/postgres.md §3h).

ulimit -c 0 2>/dev/null || true   # thousands of aborts: no core files
unset SPORE_FAILPOINTS SPORE_DB
cd "$root" || exit 2              # the workflow's argv are relative to the repository
workflow=${CRASH_WORKFLOW:-tests/crash/workflow.json}
[ -f "$workflow" ] || { echo "crash_suite.sh: no workflow $workflow" >&2; exit 2; }
# A map node runs one invocation per item (format 0.2): checks.jq counts
# effect keys per invocation there.
maps=$(jq -c '[.nodes | to_entries[] | select(.value.kind == "map") | .key]' "$workflow")
checks=$root/tests/crash/checks.jq
work=$(mktemp -d "${TMPDIR:-/tmp}/spore-crash.XXXXXX")
case $work in
*[\"\\]* | *[[:space:]]*)
  echo "crash_suite.sh: the work directory $work must not hold quotes, backslashes or spaces" >&2
  exit 2
  ;;
esac
WORKER_FLAGS=(--lease-ms 1000 --heartbeat-ms 25 --poll-ms 20)
# ---- PostgreSQL: CRASH_DB_URL (see the header) ----
if [ -n "${CRASH_DB_URL:-}" ]; then
  crash_psql=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)/psql
  [ -x "$crash_psql" ] || { echo "crash_suite.sh: CRASH_DB_URL needs psql (scripts/deps.sh)" >&2; exit 2; }
  "$crash_psql" "$CRASH_DB_URL" -XAtqc 'select 1' >/dev/null 2>&1 ||
    { echo "crash_suite.sh: the CRASH_DB_URL server does not answer" >&2; exit 1; }
  crash_sep='?'
  [[ "$CRASH_DB_URL" == *\?* ]] && crash_sep='&'
fi
# ---- end PostgreSQL ----

now_ms() { # sets NOW (milliseconds) without forking
  local t=${EPOCHREALTIME//[.,]/}
  NOW=$((t / 1000))
}

# ---- one scenario ------------------------------------------------------------
#
# scenario <name> <arms> <kill_at_ms>
#   arms: "<inv>=<failpoint spec>;..." (which invocation gets which
#   SPORE_FAILPOINTS), kill_at_ms: SIGKILL the `spore run` process running
#   at that time after the scenario's start ("" = none).
# Leaves its directory in $work/<name>; writes <name>.result:
#   "<PASS|FAIL> <fired 0|1> <kill landed 0|1> <invocations> <ms>"

scenario() {
  local name=$1 arms=$2 kill_at=$3
  local sdir=$work/$name
  mkdir -p "$sdir"
  local db=$sdir/spore.db
  # ---- PostgreSQL: CRASH_DB_URL (see the header) ----
  local pg_schema=""
  if [ -n "${CRASH_DB_URL:-}" ]; then
    pg_schema="crash_$$_${name//[^a-zA-Z0-9]/_}"
    "$crash_psql" "$CRASH_DB_URL" -XAtq -v ON_ERROR_STOP=1 \
      -c "DROP SCHEMA IF EXISTS $pg_schema CASCADE" -c "CREATE SCHEMA $pg_schema" >/dev/null 2>&1 ||
      echo "crash_suite.sh: cannot create schema $pg_schema" >&2
    db="$CRASH_DB_URL$crash_sep""options=-csearch_path%3D$pg_schema"
  fi
  # ---- end PostgreSQL ----
  local input="{\"dir\": \"$sdir\", \"pause\": \"$PAUSE\"}"   # $work is checked below
  : >"$sdir/exec.log"
  : >"$sdir/deploy.log"
  : >"$sdir/trace.jsonl"
  declare -A arm=()
  local item
  IFS=';' read -ra items <<<"$arms"
  for item in "${items[@]}"; do
    [ -n "$item" ] && arm[${item%%=*}]=${item#*=}
  done
  local armed_fp=""
  if [ -n "$arms" ]; then
    armed_fp=${arms##*=}
    armed_fp=${armed_fp%%:*}
  fi

  local inv=0 state=run rid="" killed=0 fired=0 problems=""
  local rc t_start
  now_ms
  local t0=$NOW
  while :; do
    if [ $inv -ge $INVOCATION_LIMIT ]; then
      problems+="the run did not complete within $INVOCATION_LIMIT spore invocations"$'\n'
      break
    fi
    local kind=$state
    local args=()
    case $state in
    run) args=(run "$workflow" --input "$input" --key crash --db "$db" --json "${WORKER_FLAGS[@]}") ;;
    signal) args=(signal "$rid" approval --outcome approved --data '{"by":"crash-suite"}'
      --id approval-1 --db "$db" --json) ;;
    resolve)
      local status inv_id="" attempt=""
      status=$("$spore" status "$rid" --db "$db" --json)
      read -r inv_id attempt < <(jq -r '(.invocation // .interventions[0]? // {}) | "\(.invocationId // "") \(.attempt // "")"' <<<"$status")
      if [ -z "$inv_id" ]; then
        problems+="exit 4 but status shows no outstanding invocation: $status"$'\n'
        break
      fi
      if grep -qxF "$inv_id" "$sdir/deploy.log"; then
        args=(resolve "$rid" "$inv_id" --complete ok --id "res-$attempt" --db "$db" --json)
      else
        args=(resolve "$rid" "$inv_id" --retry --id "res-$attempt" --db "$db" --json)
      fi
      ;;
    esac
    inv=$((inv + 1))
    local fp=${arm[$inv]:-}
    local out=$sdir/$inv.$kind.out err=$sdir/$inv.$kind.err
    local envs=()
    [ -n "$fp" ] && envs=(SPORE_FAILPOINTS="$fp")
    now_ms
    t_start=$NOW
    if [ -n "$kill_at" ] && [ "$kind" = run ] && [ $killed -eq 0 ]; then
      env "${envs[@]}" "$spore" "${args[@]}" >"$out" 2>"$err" &
      local pid=$!
      while [ -d "/proc/$pid" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null; do
        now_ms
        if [ $NOW -ge $((t0 + kill_at)) ]; then
          kill -9 "$pid" 2>/dev/null
          break
        fi
        if [ $((NOW - t_start)) -ge $HANG_MS ]; then
          kill -9 "$pid" 2>/dev/null
          problems+="invocation $inv ($kind) hung for $HANG_MS ms"$'\n'
          break
        fi
        sleep 0.005
      done
      { wait "$pid"; } 2>/dev/null   # no "Killed" job notice from bash
      rc=$?
      [ $rc -eq 137 ] && killed=1
    else
      { timeout -s KILL $((HANG_MS / 1000)) env "${envs[@]}" "$spore" "${args[@]}" >"$out" 2>"$err"; } 2>/dev/null
      rc=$?
      [ $rc -eq 137 ] && problems+="invocation $inv ($kind) hung for $HANG_MS ms"$'\n'
    fi
    local crashed=false this_fired=false
    if grep -qE 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error:' "$err"; then
      problems+="invocation $inv ($kind): sanitizer report on stderr"$'\n'
    fi
    if [ $rc -eq 134 ]; then
      if grep -q 'failpoint reached' "$err"; then
        crashed=true
        this_fired=true
        if [ -z "$fp" ]; then
          problems+="invocation $inv ($kind) hit a failpoint it was not armed with"$'\n'
        fi
        [ "${fp%%:*}" = "$armed_fp" ] && fired=1
      else
        problems+="invocation $inv ($kind) aborted (exit 134) without reaching a failpoint"$'\n'
      fi
    elif [ $rc -eq 137 ] && [ $killed -eq 1 ] && [ "$kind" = run ]; then
      crashed=true
    fi
    if [ -z "$rid" ]; then
      rid=$("$spore" list --db "$db" --json 2>/dev/null | grep -oE '"runId":"run_[0-9a-f]+"' | head -n 1 | cut -d'"' -f4)
    fi
    local snap=null
    if $crashed && [ -n "$rid" ]; then
      snap=$("$spore" status "$rid" --db "$db" --json 2>/dev/null) || snap=null
      [ -n "$snap" ] || snap=null
    fi
    printf '{"inv": %d, "kind": "%s", "rc": %d, "crashed": %s, "fp": "%s", "fired": %s, "status": %s}\n' \
      $inv "$kind" $rc $crashed "${fp%%:*}" $this_fired "$snap" >>"$sdir/trace.jsonl"
    [ -n "$problems" ] && break
    if $crashed; then
      state=run
      continue
    fi
    case $kind:$rc in
    run:0) break ;;
    run:3) state=signal ;;
    run:4) state=resolve ;;
    signal:0 | resolve:0) state=run ;;
    *)
      problems+="invocation $inv ($kind) exited $rc"$'\n'
      break
      ;;
    esac
  done
  now_ms
  local elapsed=$((NOW - t0))

  # Every armed invocation other than the scenario's own failpoint is a
  # priming crash that must fire, or the scenario does not test what it says.
  local i
  for i in "${!arm[@]}"; do
    if [ "${arm[$i]%%:*}" != "$armed_fp" ] &&
      ! grep -q "^{\"inv\": $i, .*\"fired\": true," "$sdir/trace.jsonl"; then
      problems+="the priming failpoint ${arm[$i]} on invocation $i did not fire"$'\n'
    fi
  done

  if [ -z "$rid" ]; then
    problems+="no run was created"$'\n'
  elif ! "$spore" status "$rid" --db "$db" --json >"$sdir/final-status.json" 2>>"$sdir/views.err" ||
    ! "$spore" events "$rid" --db "$db" --json >"$sdir/events.json" 2>>"$sdir/views.err"; then
    problems+="status/events of $rid failed: $(cat "$sdir/views.err")"$'\n'
    rm -f "$sdir/final-status.json" "$sdir/events.json"
  fi
  [ -f "$sdir/final-status.json" ] && cp "$sdir/final-status.json" "$work/$name.status.json"
  if [ -z "$problems" ] && [ -f "$work/reference.json" ]; then
    local found
    found=$(jq -rn --slurpfile ref "$work/reference.json" --slurpfile st "$sdir/final-status.json" \
      --slurpfile ev "$sdir/events.json" \
      --rawfile exec "$sdir/exec.log" --rawfile deploy "$sdir/deploy.log" \
      --slurpfile trace "$sdir/trace.jsonl" --arg armed "$armed_fp" --argjson maps "$maps" \
      -f "$checks" 2>&1) || found="checks.jq failed: $found"
    [ -n "$found" ] && problems+="$found"$'\n'
  fi

  if [ -n "$problems" ]; then
    echo "FAIL $fired $killed $inv $elapsed" >"$work/$name.result"
    {
      echo "==== FAIL: $name (arms: ${arms:-none}${kill_at:+, SIGKILL at ${kill_at} ms})"
      printf '%s' "$problems" | sed 's/^/  assertion: /'
      echo "  invocations (trace.jsonl):"
      jq -c 'del(.status) + {position: (.status.position.nodeId? // null), invocation: (.status.invocation // null | if . then {attempt, state} else null end)}' \
        "$sdir/trace.jsonl" | sed 's/^/    /'
      echo "  exec.log:"
      sed 's/^/    /' "$sdir/exec.log"
      echo "  deploy.log:"
      sed 's/^/    /' "$sdir/deploy.log"
      if [ -f "$sdir/final-status.json" ]; then
        echo "  status: $(jq -c '{status, revision, position: .position.nodeId, invocation: (.invocation // null | if . then {attempt, state} else null end), result}' "$sdir/final-status.json")"
      fi
      if [ -f "$sdir/events.json" ]; then
        echo "  events (sequence kind consumedRevision status/attempt diagnostics):"
        jq -r '.events[] | "    \(.sequence) \(.kind) rev=\(.consumedRevision) \(.payload.status // .payload.resolution.action // "") \(.payload.attempt // "") \([.diagnostics[].code] | join(","))"' \
          "$sdir/events.json"
      fi
      for f in "$sdir"/*.err; do
        [ -s "$f" ] || continue
        echo "  stderr of $(basename "$f" .err) (tail):"
        tail -n 15 "$f" | sed 's/^/    /'
      done
      echo "  kept in $sdir"
    } >"$work/$name.report"
  else
    echo "PASS $fired $killed $inv $elapsed" >"$work/$name.result"
    [ "${CRASH_KEEP:-0}" = 1 ] || rm -rf "$sdir"
    # ---- PostgreSQL: drop the scenario's schema ----
    if [ -n "$pg_schema" ] && [ "${CRASH_KEEP:-0}" != 1 ]; then
      "$crash_psql" "$CRASH_DB_URL" -XAtq -c "DROP SCHEMA IF EXISTS $pg_schema CASCADE" >/dev/null 2>&1 || true
    fi
    # ---- end PostgreSQL ----
  fi
}

# ---- reporting ---------------------------------------------------------------

done_count=0
report() { # report <name> <label>
  local name=$1 label=$2 verdict fired killed invs ms
  read -r verdict fired killed invs ms <"$work/$name.result"
  done_count=$((done_count + 1))
  local note=""
  [ "$fired" = 1 ] && note=" fired"
  [ "$killed" = 1 ] && note=" killed"
  printf '[%d] %-4s %s (%s invocations, %s ms)%s\n' "$done_count" "$verdict" "$label" "$invs" "$ms" "$note"
  [ "$verdict" = FAIL ] && cat "$work/$name.report"
}

# ---- the reference -------------------------------------------------------------

echo "crash suite: $spore"
echo "work directory: $work"
[ -z "$extra" ] || echo "registered failpoints outside this workflow's reach (not run):" $extra
scenario reference "" ""    # no reference.json yet: runs without checks
read -r verdict _ _ ref_invs ref_ms <"$work/reference.result"
if [ "$verdict" != PASS ] || [ ! -f "$work/reference.status.json" ]; then
  cat "$work/reference.report" 2>/dev/null
  echo "crash suite: the reference run did not complete; nothing else can be checked" >&2
  exit 1
fi
cp "$work/reference.status.json" "$work/reference.json"
# Check the reference against itself too (gapless events, one deploy, ...).
scenario reference-check "" ""
read -r verdict _ _ ref_invs ref_ms <"$work/reference-check.result"
if [ "$verdict" != PASS ] || [ "$(jq -r .status "$work/reference.json")" != completed ]; then
  cat "$work/reference-check.report" 2>/dev/null
  echo "crash suite: the reference run is not a clean completed run" >&2
  exit 1
fi
rm -rf "$work/reference" "$work/reference-check"
echo "reference: completed in $ref_invs invocations, $ref_ms ms: result $(jq -c .result "$work/reference.json")"

# ---- part 1: failpoints ----------------------------------------------------------

# combination <failpoint> <stage>: hit counts 1..HITS until one never fires.
combination() {
  local fp=$1 stage=$2 n prime="" target=$2
  local tag=${fp#store.}
  tag=${tag#host.}
  case $fp:$stage in
  store.append-event.*:[45])
    # The resolve: crash the deploy (invocation 3) right after its claim
    # (stage 4: the effect did not happen, so resolve --retry) or right after
    # its effect (stage 5: resolve --complete ok); invocation 4 exits 4 and
    # invocation 5, the resolve, is armed.
    if [ "$stage" = 4 ]; then
      prime="3=host.attempt.after-claim:1"
    else
      prime="3=host.attempt.after-effect:1"
    fi
    target=5
    ;;
  store.expire-attempt.*)
    # Orphan the attempt of fetch (stage 1), build (2) or deploy (3) with a
    # crash right after its claim; the next run takes it over (owner dead)
    # and expires it, and that run is armed. Claims in invocation 1: fetch
    # attempt 1, fetch attempt 2 (attempt 1 fails on purpose), build attempt
    # 1; deploy is claimed by invocation 3 (after the signal).
    case $stage in
    1) prime="1=host.attempt.after-claim:1" target=2 ;;
    2) prime="1=host.attempt.after-claim:3" target=2 ;;
    3) prime="3=host.attempt.after-claim:1" target=4 ;;
    esac
    ;;
  esac
  for ((n = 1; n <= HITS; n++)); do
    local name="fp-$tag-s$stage-n$n"
    scenario "$name" "${prime:+$prime;}$target=$fp:$n" ""
    local fired
    read -r _ fired _ <"$work/$name.result"
    echo "$name $fp $stage $n" >>"$work/combo-$tag-s$stage.list"
    [ "$fired" = 1 ] || break
  done
}

now_ms
part1_start=$NOW
combos=()
for fp in "${FAILPOINTS[@]}"; do
  [[ $fp =~ ${CRASH_ONLY:-.} ]] || continue
  for stage in 1 2 3; do
    combos+=("$fp $stage")
  done
  case $fp in
  store.append-event.*) combos+=("$fp 4" "$fp 5") ;;   # the resolve
  esac
done
echo "part 1: ${#FAILPOINTS[@]} failpoints x stages 1..3 (append-event also 4, 5: the resolve) x hit counts 1..$HITS:"
echo "        ${#combos[@]} combinations, at most $((${#combos[@]} * HITS)) scenarios, $JOBS combinations in parallel"
# Run combinations in parallel; report each one's scenarios when it ends.
declare -A running=()
reported_combo() {
  local fp=$1 stage=$2 tag name
  tag=${fp#store.}
  tag=${tag#host.}
  while read -r name _ _ n; do
    report "$name" "$fp stage $stage hit $n"
  done <"$work/combo-$tag-s$stage.list"
}
next=0
while [ $next -lt ${#combos[@]} ] || [ ${#running[@]} -gt 0 ]; do
  while [ $next -lt ${#combos[@]} ] && [ ${#running[@]} -lt "$JOBS" ]; do
    combination ${combos[$next]} &
    running[$!]=${combos[$next]}
    next=$((next + 1))
  done
  wait -n -p finished 2>/dev/null || true
  if [ -n "${finished:-}" ] && [ -n "${running[$finished]:-}" ]; then
    reported_combo ${running[$finished]}
    unset "running[$finished]"
  fi
done
now_ms
part1_ms=$((NOW - part1_start))

# ---- part 2: SIGKILL -------------------------------------------------------------

# The reference took ref_ms from its first invocation to completion; kill
# points are spread over twice that: t_i = (i - 1/2) * 2 * ref_ms / K.
echo "part 2: SIGKILL of \`spore run\` at $KILLS points over 2 x $ref_ms ms"
now_ms
part2_start=$NOW
for ((i = 1; i <= KILLS; i++)); do
  t=$(((2 * i - 1) * ref_ms / KILLS))
  name=$(printf 'kill-%02d-%dms' "$i" "$t")
  scenario "$name" "" "$t"
  report "$name" "SIGKILL at $t ms"
done
now_ms
part2_ms=$((NOW - part2_start))

# ---- summary ---------------------------------------------------------------------

total=0 passed=0 failed=0 fired=0 landed=0
declare -A fp_fired=()
for f in "$work"/fp-*.result "$work"/kill-*.result; do
  [ -e "$f" ] || continue
  read -r verdict f_fired f_killed _ <"$f"
  total=$((total + 1))
  if [ "$verdict" = PASS ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
  [ "$f_fired" = 1 ] && fired=$((fired + 1))
  [ "$f_killed" = 1 ] && landed=$((landed + 1))
done
for fp in "${FAILPOINTS[@]}"; do
  tag=${fp#store.}
  tag=${tag#host.}
  c=0
  for f in "$work"/fp-"$tag"-s*.result; do
    [ -e "$f" ] || continue
    read -r _ f_fired _ <"$f"
    [ "$f_fired" = 1 ] && c=$((c + 1))
  done
  fp_fired[$fp]=$c
done
echo
echo "failpoint                           crashes"
for fp in "${FAILPOINTS[@]}"; do
  printf '  %-34s %s\n' "$fp" "${fp_fired[$fp]}"
done
never=()
for fp in "${FAILPOINTS[@]}"; do
  [[ $fp =~ ${CRASH_ONLY:-.} ]] || continue
  [ "${fp_fired[$fp]}" -gt 0 ] || never+=("$fp")
done
echo "part 1: $((total - KILLS)) scenarios, $fired crashed at their failpoint, $((part1_ms / 1000)) s"
echo "part 2: $KILLS scenarios, $landed SIGKILLs landed in a running \`spore run\`, $((part2_ms / 1000)) s"
if [ ${#never[@]} -gt 0 ]; then
  echo "FAIL: failpoints that never fired: ${never[*]}"
  failed=$((failed + 1))
fi
echo "$total scenarios, $passed passed, $failed failed"
if [ $failed -gt 0 ]; then
  echo "work directory kept: $work"
  exit 1
fi
[ "${CRASH_KEEP:-0}" = 1 ] || rm -rf "$work"
exit 0
