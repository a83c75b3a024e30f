#!/usr/bin/env bash
# test_pg_commit_lost.sh - a COMMIT whose answer is lost is read back, so
# nothing of a committed batch is forgotten (docs/postgres.md §1, store.h:
# sp_store_commit_outcome; src/store/postgres/outcome.c).
#
# One `spore worker` reaches the server through tests/pg/commit_cut.py, a
# proxy that cuts chosen COMMITs of the transactions that wrote. Once
# armed, the worker's 1st and 3rd such COMMITs reach the server and commit,
# but their answers - with the answers of the writes sent with them - never
# come back, and the connection is closed; its 2nd never reaches the server
# (rolled back). The first is the batch that takes the new run's first turn
# and claims its first step: had the worker taken it for failed, the claim
# would stay unstarted until its lease (60 s) ran out, and an attempt that
# never ran would be expired and retried.
# Checked: the proxy made the three cuts; the run completes in far less than
# a lease; each step ran once, with one attempt each and no expired one; the
# events are gapless and consumed once; the worker still serves; a writer's
# open removes the commit marks of sessions silent for over a day, only those.
set -euo pipefail
source "$(dirname "$0")/../cli/lib.sh" "$@"
source "$(dirname "$0")/pglib.sh"

command -v python3 >/dev/null || { echo "$test_name: python3 is required (scripts/deps.sh installs it)" >&2; exit 1; }
target=$(sed -nE 's#^[a-z]+://[^@]*@([^/?]+).*#\1#p' <<<"$pg_url")
[[ "$target" == *:* ]] || target="$target:5432"
python3 "$root/tests/pg/commit_cut.py" --target "$target" --port-file "$tmp/port" \
  --arm-file "$tmp/armed" --log "$tmp/cuts" --lose-answer 1,3 --lose-commit 2 \
  2>"$tmp/proxy.err" &
proxy=$!
trap 'kill "$proxy" 2>/dev/null || true; pg_cleanup' EXIT
wait_for 10 test -s "$tmp/port" || { fail "the proxy did not start: $(cat "$tmp/proxy.err")"; finish; }
app="spore_cut_$$"
# the same database and schema, through the proxy, in the clear
worker_db=$(sed -E "s#@$target#@127.0.0.1:$(cat "$tmp/port")#" <<<"$db")
worker_db="$worker_db&sslmode=disable&gssencmode=disable&application_name=$app"

start_bg worker worker --db "$worker_db" --lease-ms 60000 --poll-ms 200 --json
worker=$bg_pid
listening() { [ "$(sql "select count(*) from pg_stat_activity where application_name = '$app' and query like 'LISTEN %'")" -ge 1 ]; }
wait_for 20 listening || fail "the worker does not listen: $(tail -c 600 "$tmp/worker.err")"

# marks of sessions silent for over a day go when a writer opens the store
now="floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
sql "insert into commit_marks values ('silent-2d', 7, $now - 172800000),
                                     ('silent-1h', 7, $now - 3600000)" >/dev/null
: >"$tmp/armed"
began=$(now_ms)
"$spore" start "$wf/three-steps.json" --key cut --input '{"sleep": 0}' --db "$db" --json \
  >"$tmp/start.json" || fail "start failed"
id=$(jq -r .runId "$tmp/start.json")
checks=$((checks + 1))
[ "$(sql "select string_agg(session, ' ' order by session) from commit_marks where session like 'silent-%'")" = silent-1h ] ||
  fail "a writer's open left the commit marks: $(sql "select session, at_ms from commit_marks"), want silent-2d removed, silent-1h kept"
wait_for 40 status_is "$id" completed ||
  fail "the run did not complete: $(run_status "$id"); cuts: $(cat "$tmp/cuts" 2>/dev/null)"
took=$(($(now_ms) - began))
echo "cuts: $(tr '\n' ';' <"$tmp/cuts" 2>/dev/null); the run took $took ms"

checks=$((checks + 1))
[ "$(cut -d' ' -f1,2 "$tmp/cuts" 2>/dev/null | tr '\n' ' ')" = "answer 1 commit 2 answer 3 " ] ||
  fail "the proxy's cuts: $(cat "$tmp/cuts" 2>/dev/null), want the answers of 1 and 3 and the COMMIT of 2"
checks=$((checks + 1))
# the first cut is the run's first turn (a transition) with its first claim (an attempt)
grep -E '^answer 1 ' "$tmp/cuts" 2>/dev/null | grep -q TRANSITIONS.*ATTEMPTS ||
  fail "the first cut is not the run's first turn and claim: $(head -n 1 "$tmp/cuts" 2>/dev/null)"
checks=$((checks + 1))
[ "$took" -lt 30000 ] || fail "the run took $took ms: a claim waited for its lease"

three_steps_once "$id"

# the worker still serves, through the proxy that no longer cuts
"$spore" start "$wf/three-steps.json" --key after --db "$db" --json >"$tmp/after.json" ||
  fail "start after failed"
wait_for 30 status_is "$(jq -r .runId "$tmp/after.json")" completed ||
  fail "the worker did not serve a run after the cuts"
kill -INT "$worker"
wait_bg "$worker" 15
[ "$bg_rc" -eq 130 ] || fail "worker after SIGINT: exit $bg_rc, want 130"
no_secret "$tmp"/worker.out "$tmp"/worker.err
finish
