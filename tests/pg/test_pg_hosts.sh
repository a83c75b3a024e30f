#!/usr/bin/env bash
# test_pg_hosts.sh - workers on several hosts against one PostgreSQL
# (store.md §6, engine.md §6-§7): each "host" is a network namespace with its
# own address, connected to the server over its own veth link; the server is
# a private one (scripts/pg.sh) listening on the host side of the links.
#
#   1. worker A (host A) claims the first step of a run (a step that sleeps
#      on attempt 1); worker A is killed with SIGKILL mid-step (its step
#      process group dies with it); worker B (host B) is running;
#   2. B takes the attempt over only after A's lease ran out (no fast
#      takeover across hosts: engine.md §11), with a new fenced attempt;
#   3. the run completes once: attempt 1 expired (its result event says so),
#      attempt 2 succeeded, owned by B; steps b and c ran once each, on B;
#      events gapless, each consumed once; the server saw both workers
#      connect from their own addresses.
#   4. a partition: worker B's link goes down mid-step; worker C (host A
#      again) takes over after the lease; when B's link comes back, B's late
#      finish is refused (lease lost) and kept as late evidence; the run
#      completes once with C's result.
#   5. wake-ups across hosts: worker D on host A polls only every 30 s; a
#      run a client starts from host B completes within seconds (the
#      store's NOTIFY reaches D's listening connection over its link).
#
# Needs root and network namespaces (`unshare -n true`); without them it
# skips (exit 77) saying why. Everything else failing is a failure.
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"

if [ "$(id -u)" -ne 0 ] || ! unshare -n true 2>/dev/null || ! command -v ip >/dev/null; then
  echo "$test_name: SKIP: network namespaces cannot be created here (needs root, ip, unshare -n)"
  exit 77
fi

lease=2000
beat=200
tag=$(($$ % 100000))
ns_a="spore-a-$tag" ns_b="spore-b-$tag"
veth_a="spa$tag" veth_b="spb$tag"
net=$(($$ % 250)) # addresses from 198.18.0.0/15, the range reserved for such tests (RFC 2544)
host_a="198.18.$net.1" peer_a="198.18.$net.2"
host_b="198.19.$net.1" peer_b="198.19.$net.2"
pgstate="$tmp/pg"

hosts_cleanup() {
  for p in "${bg_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  bash "$root/scripts/pg.sh" stop "$pgstate" >/dev/null 2>&1 || true
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  ip link del "$veth_a" 2>/dev/null || true
  ip link del "$veth_b" 2>/dev/null || true
  cleanup
}
trap hosts_cleanup EXIT

# ---- the hosts and their links ----
link_host() { # <ns> <veth> <host addr> <peer addr>
  ip netns add "$1"
  ip link add "$2" type veth peer name eth0 netns "$1"
  ip addr add "$3/30" dev "$2"
  ip link set "$2" up
  ip netns exec "$1" ip link set lo up
  ip netns exec "$1" ip addr add "$4/30" dev eth0
  ip netns exec "$1" ip link set eth0 up
}
link_host "$ns_a" "$veth_a" "$host_a" "$peer_a"
link_host "$ns_b" "$veth_b" "$host_b" "$peer_b"
ip netns exec "$ns_b" ip route get "$host_a" >/dev/null 2>&1 &&
  fail "host B can route to host A's link: the hosts are not separated"

# ---- the server, on the host side of both links ----
url=$(bash "$root/scripts/pg.sh" start "$pgstate" --listen "$host_a,$host_b" \
  --hba "198.18.$net.0/30,198.19.$net.0/30" | tail -n 1)
[ -n "$url" ] || { fail "the private server did not start"; finish; }
psql=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/psql
sql() { "$psql" "$url" -XAtq -v ON_ERROR_STOP=1 -c "$1"; }
port=$(sed -nE 's#.*@[^:/]*:([0-9]+)/.*#\1#p' <<<"$url")
ip netns exec "$ns_a" bash -c "exec 3<>/dev/tcp/$host_a/$port" 2>/dev/null ||
  fail "host A cannot reach the server over its link"
ip netns exec "$ns_a" bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null &&
  fail "host A reaches the server on 127.0.0.1: it is not a separate network"
url_a=${url/@127.0.0.1:/@$host_a:}
url_b=${url/@127.0.0.1:/@$host_b:}
flags=(--lease-ms "$lease" --heartbeat-ms "$beat" --poll-ms 50 --json)

# worker <name> <ns> <url>: a worker process inside a namespace.
worker() {
  ip netns exec "$2" "$spore" worker --db "$3" "${flags[@]}" >"$tmp/$1.out" 2>"$tmp/$1.err" &
  bg_pid=$!
  bg_pids+=("$bg_pid")
}
# The spore process of an `ip netns exec` (it execs: the same PID).
log_first() { awk -v k="$1" -v r="$2" -v n="$3" -v a="$4" '$1 == k && $2 == r && $3 == n && $4 == a {print; exit}' "$SPORE_TEST_LOG"; }

# ---- 1. A claims the first step; A dies mid-step ----
"$spore" start "$wf/three-steps.json" --key hosts-1 --input '{"sleep": 30, "sleepAttempt": 1}' \
  --db "$url" --json >"$tmp/start1.json" || fail "start failed"
run1=$(jq -r .runId "$tmp/start1.json")
worker worker-a "$ns_a" "$url_a"
wa=$bg_pid
wait_for 20 log_has start "$run1" a 1 || fail "worker A did not start step a"
worker worker-b "$ns_b" "$url_b"
wb=$bg_pid
clients=$(sql "select string_agg(distinct host(client_addr), ' ' order by host(client_addr)) from pg_stat_activity where client_addr is not null and client_addr <> '127.0.0.1'")
wait_for 10 bash -c "[ \"\$('$psql' '$url' -XAtqc \"select count(distinct client_addr) from pg_stat_activity where client_addr in ('$peer_a', '$peer_b')\")\" = 2 ]" ||
  fail "the server does not see both hosts' addresses (it sees: $clients)"
owner_a=$(sql "select owner from attempts where run_id = '$run1' and attempt_id like '%.1'")
sleep 0.5 # a few heartbeats
kill -KILL "$wa"
killed_at=$(now_ms)
lease_at=$(sql "select lease_until_ms from attempts where run_id = '$run1' and attempt_id like '%.1'")

# ---- 2. B takes over after the lease ----
wait_for 30 log_has start "$run1" a 2 || fail "worker B did not take step a over"
took_at=$(log_first start "$run1" a 2 | awk '{print $8}')
[ -n "$took_at" ] && [ "$((took_at - killed_at))" -ge $((lease - beat - 100)) ] ||
  fail "attempt 2 started $((took_at - killed_at)) ms after the kill, before the lease (${lease} ms) could run out"
echo "host A killed; host B took over $((took_at - killed_at)) ms later (lease ${lease} ms, heartbeat ${beat} ms)"

# ---- 3. the run completes once ----
done1() { [ "$(sql "select status from runs where run_id = '$run1'")" = completed ]; }
wait_for 30 done1 || fail "run 1 did not complete: $(sql "select status from runs where run_id = '$run1'")"
# events as "sequence:status/attempt:consuming revision" (- for run.started)
events_of() {
  "$spore" events "$1" --db "$url" --json |
    jq -r '[.events[] | "\(.sequence):\(.payload.status // "-")/\(.payload.attempt // "-"):\(.consumedRevision)"] | join(" ")'
}
ev1=$(events_of "$run1")
echo "run 1 events: $ev1"
[ "$ev1" = "1:-/-:1 2:expired/1:2 3:success/2:3 4:success/1:4 5:success/1:5" ] ||
  fail "run 1 events: $ev1"
owners=$(sql "select string_agg(owner, ' ' order by attempt_id) from attempts where run_id = '$run1'")
owner_b=$(sql "select owner from attempts where run_id = '$run1' and status = 'finished' limit 1")
[ "$owner_a" != "$owner_b" ] || fail "the same worker owns both attempts"
[ "$(sql "select count(*) from attempts where run_id = '$run1' and owner = '$owner_b' and status = 'finished'")" = 3 ] ||
  fail "host B did not finish the three attempts after the takeover (owners: $owners)"
[ "$(sql "select status || ' ' || coalesce(expire_reason, '-') from attempts where run_id = '$run1' and attempt_id like '%.1' and owner = '$owner_a'")" = "expired lease" ] ||
  fail "attempt 1 was not expired by its lease: $(sql "select status, expire_reason from attempts where run_id = '$run1'")"
[ "$(sql "select fence from attempts where run_id = '$run1' order by fence")" = "$(printf '1\n2\n3\n4')" ] ||
  fail "fences are not 1..4"
for node in b c; do
  [ "$(log_count start "$run1" "$node")" -eq 1 ] || fail "run 1: step $node ran $(log_count start "$run1" "$node") times"
done
[ "$(log_count end "$run1" a 1)" -eq 0 ] || fail "the killed host's step finished"
sp status "$run1" --db "$url" --json
expect_json '.status == "completed" and .result.output == {"steps": ["a", "b", "c"]}' "run 1 status"
expired_at=$(sql "select ended_at_ms from attempts where run_id = '$run1' and owner = '$owner_a'")
[ "$expired_at" -ge "$lease_at" ] ||
  fail "attempt 1 was expired at $expired_at, before its lease ran out at $lease_at (database clock)"

# ---- 4. a partition: B loses its link mid-step ----
: "${wb:?}"
"$spore" start "$wf/three-steps.json" --key hosts-2 --input '{"sleep": 4, "sleepAttempt": 1}' \
  --db "$url" --json >"$tmp/start2.json" || fail "start 2 failed"
run2=$(jq -r .runId "$tmp/start2.json")
wait_for 20 log_has start "$run2" a 1 || fail "worker B did not start run 2's step a"
ip link set "$veth_b" down
cut_at=$(now_ms)
worker worker-c "$ns_a" "$url_a"
wait_for 30 log_has start "$run2" a 2 || fail "worker C did not take run 2 over from the partitioned host"
took2=$(log_first start "$run2" a 2 | awk '{print $8}')
[ "$((took2 - cut_at))" -ge $((lease - beat - 100)) ] ||
  fail "the partitioned host's attempt was taken over after $((took2 - cut_at)) ms, before its lease"
wait_for 20 log_has end "$run2" a 1 || fail "the partitioned step never ended"
ip link set "$veth_b" up
done2() { [ "$(sql "select status from runs where run_id = '$run2'")" = completed ]; }
wait_for 60 done2 || fail "run 2 did not complete"
late() { [ "$(sql "select count(*) from audit a join attempts t using (tenant, run_id, attempt_id) join invocations i using (tenant, run_id, invocation_id) where a.run_id = '$run2' and i.node_id = 'a' and t.attempt_number = 1 and a.kind <> 'expired'")" -ge 1 ]; }
wait_for 30 late || fail "the partitioned host's late result was not kept as late evidence"
ev2=$(events_of "$run2")
echo "run 2 events: $ev2"
[ "$ev2" = "1:-/-:1 2:expired/1:2 3:success/2:3 4:success/1:4 5:success/1:5" ] ||
  fail "run 2 events: $ev2"
[ "$(sql "select count(*) from attempts a join invocations i using (tenant, run_id, invocation_id) where a.run_id = '$run2' and i.node_id = 'a' and a.attempt_number = 1 and a.status = 'finished'")" = 0 ] ||
  fail "the partitioned attempt finished after losing its lease"
echo "partitioned host B: taken over $((took2 - cut_at)) ms after the cut; its late result kept as evidence"

# ---- 5. wake-ups across hosts: a worker on host A that polls every 30 s
#         serves at once a run a client on host B starts (LISTEN/NOTIFY) ----
for p in "${bg_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${bg_pids[@]}"; do wait "$p" 2>/dev/null || true; done
ip netns exec "$ns_a" "$spore" worker --db "$url_a" --poll-ms 30000 --lease-ms 120000 \
  --heartbeat-ms 5000 --json >"$tmp/worker-d.out" 2>"$tmp/worker-d.err" &
bg_pids+=("$!")
listening() { [ "$(sql "select count(*) from pg_stat_activity where query like 'LISTEN spore_%' and host(client_addr) = '$peer_a'")" -ge 1 ]; }
wait_for 20 listening || fail "worker D on host A does not listen"
sleep 1 # D is idle: without a wake-up its next look is 30 s away
t0=$(now_ms)
ip netns exec "$ns_b" "$spore" start "$wf/three-steps.json" --key hosts-3 --db "$url_b" --json \
  >"$tmp/start3.json" || fail "start on host B failed"
run3=$(jq -r .runId "$tmp/start3.json")
done3() { [ "$(sql "select status from runs where run_id = '$run3'")" = completed ]; }
wait_for 10 done3 || fail "worker D on host A was not woken by the start on host B within 10 s"
echo "wake-up across hosts: the run started on host B completed on host A after $(($(now_ms) - t0)) ms"

no_secret_in() { ! grep -qF "$(sed -nE 's#^[a-z]+://[^:/@]*:([^@]*)@.*#\1#p' <<<"$url")" "$@"; }
no_secret_in "$tmp"/worker-*.out "$tmp"/worker-*.err || fail "a worker printed the database password"
finish
