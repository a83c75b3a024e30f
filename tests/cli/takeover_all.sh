# takeover_all.sh - the scenario of issue 10 item 8 (engine.md §11, H7 with
# several attempts), shared by tests/cli/test_takeover_all.sh (SQLite) and
# tests/pg/test_pg_takeover_all.sh (PostgreSQL). Sourced after lib.sh (and
# pglib.sh); not a test itself: CTest runs test_*.sh only.
#
# Round 1: a live worker D (`spore worker --run L --until-parked`) runs the
# step of run L; worker A (--lease-ms 10000) claims four sleeping steps of
# four runs; worker B starts; A is SIGKILLed. B (or D) finds A's lock free and
# expires all four attempts at once (owner-dead), and B runs attempt 2 of
# each: every expiry is accepted, and every attempt 2 claimed by the
# survivor, less than one second after the kill (not after the lease), both
# by the store's clock; attempt 2's process then starts (its start is
# printed, not bounded: that is the runner's process start, which under the
# sanitizers on a loaded machine alone takes most of a second). D's attempt
# is left alone.
# Round 2: B claims three sleeping idempotent steps and one sleeping unsafe
# step (after its effect); worker E starts; B is SIGKILLed; E takes the three
# idempotent steps over the same way, and the unsafe one is expired at once
# into needs-intervention without running again. After either kill: the
# killed attempts' process groups died with their worker and never finished;
# attempt 2 ran under the same effect key in the survivor's process; no
# attempt 3. At the end no lock file is left in $locks (the lock directory,
# set here).

# lock_dir_of <pid>: the directory of the worker lock file spore <pid> holds.
lock_dir_of() {
  local fd target
  for fd in /proc/"$1"/fd/*; do
    target=$(readlink "$fd" 2>/dev/null) || continue
    if [[ "$target" == *.lock ]]; then
      dirname "$target"
      return 0
    fi
  done
  return 1
}

# start_runs <key prefix> <workflow> <input> <count>: appends the run IDs to
# the array `runs`.
start_runs() {
  local prefix=$1 workflow=$2 input=$3 n=$4 i
  for i in $(seq "$n"); do
    sp start "$workflow" --key "$prefix-$i" --input "$input" --db "$db" --json
    expect_rc 0 "start $prefix-$i"
    runs+=("$(jq -r .runId <<<"$out")")
  done
}

# all_started <node> <run...>: attempt 1 of every run's step has started.
all_started() {
  local node=$1 id
  shift
  for id in "$@"; do log_has start "$id" "$node" 1 || return 1; done
}

inv_of() { sql "select invocation_id from invocations where run_id = '$1'"; }
attempt_col() { sql "select $2 from attempts where attempt_id = '$1'"; } # <attempt> <column>

# expired_fast <run> <node> <t_kill> <victim pid>: attempt 1, owned by the
# victim, was expired owner-dead (attempt row and audit row) less than one
# second after the kill and before its lease ran out; its step never
# finished and its process group is gone.
expired_fast() {
  local id=$1 node=$2 t_kill=$3 victim=$4 inv t_expired lease_until pgid
  inv=$(inv_of "$id")
  [ "$(attempt_col "$inv.1" owner_pid)" = "$victim" ] || fail "$id: attempt 1 was not the killed worker's"
  [ "$(attempt_col "$inv.1" expire_reason)" = owner-dead ] ||
    fail "$id: attempt 1 expiry reason '$(attempt_col "$inv.1" expire_reason)', want owner-dead"
  [ "$(sql "select reason from audit where attempt_id = '$inv.1' and kind = 'expired'")" = owner-dead ] ||
    fail "$id: no owner-dead audit row for attempt 1"
  sp events "$id" --db "$db" --json
  t_expired=$(jq -r --arg a "att:$inv.1" '.events[] | select(.id == $a) | .acceptedAtMs' <<<"$out")
  lease_until=$(attempt_col "$inv.1" lease_until_ms)
  echo "$id: attempt 1 expired $((t_expired - t_kill)) ms after the kill (lease to $((lease_until - t_kill)) ms)"
  [[ "$t_expired" =~ $decimal ]] || { fail "$id: no accepted expiry of attempt 1"; return 0; }
  [ "$t_expired" -ge "$t_kill" ] || fail "$id: attempt 1 expired before the kill"
  [ $((t_expired - t_kill)) -lt 1000 ] || fail "$id: attempt 1 expired $((t_expired - t_kill)) ms after the kill, want under 1000 ms"
  [ "$t_expired" -lt "$lease_until" ] || fail "$id: the takeover waited for the lease"
  pgid=$(log_field start "$id" "$node" 1 7)
  wait_for 5 group_gone "$pgid" || fail "$id: attempt 1's step outlived its worker (process group $pgid)"
  [ "$(log_count end "$id" "$node" 1)" -eq 0 ] || fail "$id: attempt 1's step ran to its end"
}

# resumed_fast <run> <t_kill> <victim pid> <survivor pid>: expired_fast, and
# attempt 2 claimed less than one second after the kill by the survivor,
# run with attempt 1's effect key, and completed the run; no attempt 3.
resumed_fast() {
  local id=$1 t_kill=$2 victim=$3 survivor=$4 inv key t_claim2 t_start2
  expired_fast "$id" work "$t_kill" "$victim"
  inv=$(inv_of "$id")
  key=$(log_field start "$id" work 1 5)
  t_claim2=$(attempt_col "$inv.2" started_at_ms)
  t_start2=$(log_field start "$id" work 2 8)
  echo "$id: attempt 2 claimed $((t_claim2 - t_kill)) ms, its process started $((t_start2 - t_kill)) ms after the kill"
  [[ "$t_claim2" =~ $decimal ]] || { fail "$id: attempt 2 has no claim time"; return 0; }
  [ $((t_claim2 - t_kill)) -lt 1000 ] || fail "$id: attempt 2 claimed $((t_claim2 - t_kill)) ms after the kill, want under 1000 ms"
  [ "$t_start2" -ge "$t_claim2" ] || fail "$id: attempt 2's process started before its claim"
  [ "$(attempt_col "$inv.2" owner_pid)" = "$survivor" ] || fail "$id: attempt 2 did not run in the surviving worker"
  [ "$(log_field start "$id" work 2 5)" = "$key" ] || fail "$id: attempt 2 ran under another effect key"
  wait_for 20 status_is "$id" completed || fail "$id: not completed (status $(run_status "$id"))"
  sp status "$id" --db "$db" --json
  expect_json '.result.output == {"node": "work", "attempt": 2, "effectKey": $key}' "$id status" --arg key "$key"
  [ "$(log_count start "$id" work)" -eq 2 ] || fail "$id: the step started $(log_count start "$id" work) times, want 2"
}

# parked_fast <run> <t_kill> <victim pid>: expired_fast for the unsafe step,
# the run needs intervention, and the step (and its effect) ran once.
parked_fast() {
  local id=$1
  wait_for 20 status_is "$id" needs-intervention || fail "$id: status $(run_status "$id"), want needs-intervention"
  expired_fast "$id" deploy "$2" "$3"
  [ "$(log_count start "$id" deploy)" -eq 1 ] || fail "$id: the unsafe step started $(log_count start "$id" deploy) times"
  [ "$(log_count effect "$id" deploy)" -eq 1 ] || fail "$id: the unsafe effect happened $(log_count effect "$id" deploy) times"
  [ "$(sql "select count(*) from attempts where run_id = '$id'")" -eq 1 ] || fail "$id: the unsafe step got another attempt"
}

# kill_and_wait <victim pid> <idempotent run...>: SIGKILLs the victim (sets
# t_kill, measured before the kill) and waits until attempt 2 of every run
# has started.
kill_and_wait() {
  local victim=$1 id
  shift
  t_kill=$(now_ms)
  kill -KILL "$victim"
  for id in "$@"; do
    wait_for 15 log_has start "$id" work 2 || fail "$id: attempt 2 never started"
  done
  wait_bg "$victim" 5
}

takeover_all_scenario() {
  local live wa wb wd we id idem unsafe
  # ---- round 1: A with four steps in flight, a live worker D, survivor B ----
  runs=()
  start_runs live "$wf/retry.json" '{"sleep": 12, "sleepAttempt": 1}' 1
  live=${runs[0]}
  start_bg worker-d worker --run "$live" --until-parked --db "$db" --json
  wd=$bg_pid
  wait_for 10 log_has start "$live" work 1 || fail "worker D never started its step"
  runs=()
  start_runs a "$wf/retry.json" '{"sleep": 30, "sleepAttempt": 1}' 4
  idem=("${runs[@]}")
  start_bg worker-a worker --db "$db" --lease-ms 10000 --json
  wa=$bg_pid
  wait_for 15 all_started work "${idem[@]}" || fail "worker A never had four steps in flight"
  start_bg worker-b worker --db "$db" --json
  wb=$bg_pid
  wait_for 10 lock_dir_of "$wb" || fail "worker B never took its lock"
  locks=$(lock_dir_of "$wb")
  sleep 0.3 # B is past its first tick: the attempts are running and A is alive
  [ "$(sql "select count(*) from attempts where status = 'running' and owner_pid = $wa")" -eq 4 ] ||
    fail "worker A does not hold four running attempts"

  kill_and_wait "$wa" "${idem[@]}"
  [ "$bg_rc" -eq 137 ] || fail "worker A after SIGKILL: exit $bg_rc, want 137"
  [ "$(attempt_col "$(inv_of "$live").1" status)" = running ] ||
    fail "the live worker's attempt is $(attempt_col "$(inv_of "$live").1" status), want still running"
  for id in "${idem[@]}"; do resumed_fast "$id" "$t_kill" "$wa" "$wb"; done

  # ---- round 2: B with three idempotent steps and an unsafe one, survivor E ----
  runs=()
  start_runs b "$wf/retry.json" '{"sleep": 30, "sleepAttempt": 1}' 3
  idem=("${runs[@]}")
  runs=()
  start_runs u "$wf/unsafe.json" '{"effect": true, "sleep": 30}' 1
  unsafe=${runs[0]}
  wait_for 15 all_started work "${idem[@]}" || fail "worker B never had three idempotent steps in flight"
  wait_for 15 log_has effect "$unsafe" deploy 1 || fail "worker B never performed the unsafe effect"
  start_bg worker-e worker --db "$db" --json
  we=$bg_pid
  wait_for 10 lock_dir_of "$we" || fail "worker E never took its lock"
  sleep 0.3

  kill_and_wait "$wb" "${idem[@]}"
  [ "$bg_rc" -eq 137 ] || fail "worker B after SIGKILL: exit $bg_rc, want 137"
  for id in "${idem[@]}"; do resumed_fast "$id" "$t_kill" "$wb" "$we"; done
  parked_fast "$unsafe" "$t_kill" "$wb"

  # ---- the live worker's step was never taken over ----
  wait_bg "$wd" 30
  [ "$bg_rc" -eq 0 ] || fail "worker D: exit $bg_rc, want 0 (its run completed)"
  [ "$(sql "select count(*) from attempts where run_id = '$live'")" -eq 1 ] ||
    fail "the live worker's run got a second attempt"
  [ "$(attempt_col "$(inv_of "$live").1" status)" = finished ] || fail "the live worker's attempt did not finish"
  [ "$(log_count end "$live" work 1)" -eq 1 ] || fail "the live worker's step did not run to its end"

  kill -INT "$we"
  wait_bg "$we" 10
  [ "$bg_rc" -eq 130 ] || fail "worker E after SIGINT: exit $bg_rc, want 130"
  rmdir "$locks" 2>/dev/null || fail "lock files left behind: $(ls -A "$locks")"
}
