#!/usr/bin/env bash
# test_first_hour.sh - what a new user hits first, through the real binary
# (docs/cli.md):
# - global options before or after the command (and after `step <verb>`),
#   `--db=`, JSON errors wherever --json stands, `--db ''` refused;
# - signal and resolve checked against the run before anything is recorded
#   (signal.unknown-name, signal.outcome-unrouted, run.terminal,
#   resolve.not-applicable), a valid signal `delivered` or `buffered` with the
#   command that goes on; a repeated ID stays `duplicate`;
# - `spore resume <runId>` without the workflow file; `status` of a waiting
#   run names its signal and the next command, of a parked external step who
#   may claim it;
# - read commands never create a store; a file that is not a store is left
#   byte for byte as it was;
# - a private store: 0600 for the file, its -wal and -shm (whatever the
#   umask); a store others can read is refused unless --allow-shared-store;
# - start with an existing key and another explicit input is run.exists;
#   step claim checks its run ID; list --json's shape, order and filters.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

events_count() { "$spore" events "$1" --db "$db" --json | jq '.events | length'; }

# ---- a store to work in: one run parked at its signal wait ----
sp run "$wf/approval.json" --key wait-1 --db "$db" --json
expect_rc 3 "run to the signal wait"
id=$(jq -r .runId <<<"$out")

# ---- 2. global options anywhere ----
sp --db "$db" --json list
expect_rc 0 "--db and --json before the command"
expect_json '(.runs | length) == 1 and .runs[0].runId == $id' "--db --json list" --arg id "$id"
sp --db="$db" list --json
expect_rc 0 "--db= before, --json after"
expect_json '.runs[0].runId == $id' "--db= list --json" --arg id "$id"
sp --json status "$id" --db "$db"
expect_rc 0 "--json before, --db after"
expect_json '.runId == $id and .status == "waiting"' "--json status --db" --arg id "$id"
sp step claim --json --db "$db"
expect_rc 0 "--json after step <verb>"
expect_json '.claimed == false' "step claim --json"
sp --json --db "$db" step claim
expect_rc 0 "--json --db before step claim"
expect_json '.claimed == false' "--json --db step claim"
sp status "$id" --frobnicate --db "$db" --json
expect_rc 2 "an unknown option before --json"
expect_json '.error.code == "usage"' "an unknown option before --json is a JSON error"
sp --json frobnicate
expect_rc 2 "an unknown command after --json"
expect_json '.error.code == "usage"' "an unknown command is a JSON error with --json"
sp frobnicate --json
expect_rc 2 "an unknown command before --json"
expect_json '.error.code == "usage"' "an unknown command before --json is a JSON error"
expect_error 2 usage.invalid-value "--db ''" -- list --db ''
expect_error 2 usage.invalid-value "--db= (empty)" -- list --db=
sp --db '' --json list
expect_rc 2 "--db '' before the command"
expect_json '.error.code == "usage.invalid-value"' "--db '' before the command"
[ ! -e "$root/spore.db" ] || fail "--db '' used ./spore.db"
# A refused tuning value creates no store (checked before the store opens).
fresh_db=$tmp/tuning-refused.db
expect_error 2 usage.invalid-value "--concurrency 0" -- worker --concurrency 0 --db "$fresh_db"
expect_error 2 usage.invalid-value "--concurrency 1025" -- worker --concurrency=1025 --db "$fresh_db"
expect_error 2 usage.invalid-value "--poll-ms 0" -- worker --poll-ms 0 --db "$fresh_db"
[ ! -e "$fresh_db" ] || fail "a refused tuning value created the store $fresh_db"

# ---- 4. status of a waiting run: the signal it waits for, the next command ----
sp status "$id" --db "$db" --json
expect_json '.waitingFor == {"signal": "approval", "nodeId": "approval", "outcomes": ["approved", "rejected"]}
    and .next == ("spore signal " + $id + " approval --outcome approved --db " + $db)' \
  "status names the signal and the next command" --arg id "$id" --arg db "$db"
sp status "$id" --db "$db"
grep -q "^waiting for  *signal approval at approval (outcomes: approved rejected)$" <<<"$out" ||
  fail "status (text) does not name the signal: $out"
grep -qx "next  *spore signal $id approval --outcome approved --db $db" <<<"$out" ||
  fail "status (text) does not give the next command: $out"

# ---- 3. signals checked against the run; nothing recorded when refused ----
before=$(events_count "$id")
expect_error 2 signal.unknown-name "a misspelled signal name" -- signal "$id" aproval --db "$db"
sp signal "$id" aproval --db "$db" --json
expect_json '.error.details.awaited == ["approval"] and .error.details.name == "aproval"' \
  "signal.unknown-name names what the workflow waits for"
expect_error 2 signal.outcome-unrouted "an outcome the node does not route" -- \
  signal "$id" approval --outcome maybe --db "$db"
expect_error 2 signal.outcome-unrouted "no outcome (received) where the node routes none" -- \
  signal "$id" approval --db "$db"
[ "$(events_count "$id")" -eq "$before" ] || fail "a refused signal was recorded"

sp signal "$id" approval --outcome approved --data '{"by": "ana"}' --db "$db" --json
expect_rc 0 "a valid signal"
expect_json '.disposition == "applied" and .delivery == "delivered"
    and (.messageId | test("^msg_[0-9a-f]{16}$"))
    and .next == ("spore resume " + $id + " --db " + $db)' "a valid signal is delivered" \
  --arg id "$id" --arg db "$db"
msg=$(jq -r .messageId <<<"$out")

# ---- 4. resume without the workflow file ----
mkdir "$tmp/elsewhere"
(cd "$tmp/elsewhere" && "$spore" resume "$id" --db "$db" --json) >"$tmp/resume.out" 2>&1 && rc=0 || rc=$?
out=$(cat "$tmp/resume.out")
expect_rc 0 "resume from another directory, without the workflow file"
expect_json '.status == "completed" and .result.output.approval == {"by": "ana"}' "resume completes"
sp resume "$id" --db "$db"
expect_rc 0 "resume of a completed run"
grep -q "^status  *completed$" <<<"$out" || fail "resume (text): $out"
expect_error 2 run.not-found "resume of an unknown run" -- resume run_nope --db "$db"
expect_error 2 usage "resume without a run ID" -- resume --db "$db"
sp resume --help
expect_rc 0 "resume --help"
[[ "$out" == "usage: spore resume"* ]] || fail "resume --help: $out"

# the same message ID stays a duplicate after the run consumed it and ended
sp signal "$id" approval --outcome approved --data '{"by": "ana"}' --id "$msg" --db "$db" --json
expect_rc 0 "a repeated message ID after the run completed"
expect_json '.disposition == "duplicate"' "a repeated message ID is a duplicate whatever the state"
before=$(events_count "$id")
expect_error 2 run.terminal "a signal to a completed run" -- signal "$id" approval --outcome approved --db "$db"
[ "$(events_count "$id")" -eq "$before" ] || fail "a signal to a completed run was recorded"
sp status "$id" --db "$db" --json
expect_json '.next == null and .waitingFor == null' "a completed run has no next command"

# a signal before the run waits for it is buffered
sp start "$wf/approval.json" --key early-1 --db "$db" --json
early=$(jq -r .runId <<<"$out")
sp signal "$early" approval --outcome rejected --db "$db"
expect_rc 0 "an early signal"
[ "$(head -n 1 <<<"$out")" = "signal approval to $early: buffered (the run is created; it takes the signal when it reaches an await-signal node for approval)" ] ||
  fail "an early signal (text): $out"
grep -qx "next: spore resume $early --db $db   (or a running spore worker takes it)" <<<"$out" ||
  fail "an early signal does not say how to go on: $out"
sp resume "$early" --db "$db" --json
expect_rc 1 "the buffered rejection is taken at the wait"
expect_json '.status == "failed" and .result.error.code == "review.rejected"' "buffered signal taken"

# ---- 3. resolve checked against the run ----
input='{"effect": true, "sleep": 30}'
start_bg unsafe run "$wf/unsafe.json" --key deploy-1 --input "$input" --db "$db" --json
wait_for 10 grep -q '^effect ' "$SPORE_TEST_LOG" || fail "the unsafe step never performed its effect"
kill -KILL "$bg_pid"
wait_bg "$bg_pid" 5
sp run "$wf/unsafe.json" --key deploy-1 --db "$db" --json
expect_rc 4 "the unsafe run needs intervention"
urun=$(jq -r .runId <<<"$out")
inv=$(jq -r .invocation.invocationId <<<"$out")
sp status "$urun" --db "$db" --json
expect_json '.next == ("spore resolve " + $r + " " + $i + " --complete <outcome> | --retry | --fail <message> --db " + $db)' \
  "status of a run that needs intervention gives the resolve choices" --arg r "$urun" --arg i "$inv" --arg db "$db"
before=$(events_count "$urun")
expect_error 2 resolve.not-applicable "a resolve of another invocation" -- \
  resolve "$urun" inv_00000000000000000000000000000000 --retry --db "$db"
sp resolve "$urun" inv_00000000000000000000000000000000 --retry --db "$db" --json
expect_json '.error.details.reason == "invocation-mismatch"' "another invocation: reason"
sp resolve "$urun" "$inv" --complete shipped --db "$db" --json
expect_rc 2 "an undeclared outcome"
expect_json '.error.code == "resolve.not-applicable" and .error.details.reason == "outcome-undeclared"' \
  "an undeclared outcome is refused"
[ "$(events_count "$urun")" -eq "$before" ] || fail "a refused resolve was recorded"
sp resolve "$urun" "$inv" --complete ok --output '{"by": "hand"}' --id fix-1 --db "$db" --json
expect_rc 0 "a valid resolve"
expect_json '.disposition == "applied" and .next == ("spore resume " + $r + " --db " + $db)' \
  "a valid resolve says how to go on" --arg r "$urun" --arg db "$db"
sp resolve "$urun" "$inv" --retry --id fix-2 --db "$db" --json
expect_rc 2 "a second resolve before the first is applied"
expect_json '.error.code == "resolve.not-applicable" and .error.details.reason == "already-resolved"' \
  "a second answer waiting behind the first is refused"
sp resume "$urun" --db "$db" --json
expect_rc 0 "resume after resolve"
sp resolve "$urun" "$inv" --complete ok --output '{"by": "hand"}' --id fix-1 --db "$db" --json
expect_rc 0 "the same resolve again after the run completed"
expect_json '.disposition == "duplicate"' "a repeated request ID is a duplicate whatever the state"
expect_error 2 run.terminal "a resolve of a completed run" -- resolve "$urun" "$inv" --retry --db "$db"
[ "$(log_count start "$urun" deploy)" -eq 1 ] || fail "the unsafe step ran again"

# The waiting node's routes decide, not another waiter's for the same name.
sp run "$wf/two-waits.json" --key two-1 --db "$db" --json
expect_rc 3 "two waits: parked at the first"
two=$(jq -r .runId <<<"$out")
before=$(events_count "$two")
sp signal "$two" approval --outcome maybe --db "$db" --json
expect_rc 2 "an outcome only the later wait routes"
expect_json '.error.code == "signal.outcome-unrouted" and .error.details.nodeId == "first"' \
  "the waiting node's routes decide"
[ "$(events_count "$two")" -eq "$before" ] || fail "a signal the waiting node drops was recorded"
sp signal "$two" approval --outcome approved --db "$db" --json
expect_json '.delivery == "delivered"' "the first wait's outcome is delivered"
sp signal "$two" approval --outcome maybe --data '{"second": true}' --db "$db" --json
expect_json '.delivery == "buffered"' "a second signal queued behind the first is buffered"
sp resume "$two" --db "$db" --json
expect_rc 0 "both waits taken"
expect_json '.result.output == {"second": true}' "the buffered signal was taken at the second wait"

# ---- 4. a parked external step: who may claim it ----
sp run "$wf/external.json" --key ext-1 --db "$db" --json
expect_rc 6 "an external step parks the run"
ext=$(jq -r .runId <<<"$out")
sp status "$ext" --db "$db" --json
expect_json '.step.kind == "external" and .step.actor == "reviewer" and .step.state == "ready"
    and .claim == {"actor": "reviewer", "command": ("spore step claim " + $r + " --actor reviewer --db " + $db)}
    and .next == .claim.command' "status of a parked external step says who may claim it" \
  --arg r "$ext" --arg db "$db"
sp status "$ext" --db "$db"
grep -q "^claim  *reviewer: spore step claim $ext --actor reviewer --db $db " <<<"$out" ||
  fail "status (text) of a parked external step does not say who may claim it: $out"

# ---- arguments are checked before the store is opened ----
expect_error 2 usage "an unknown step verb, even without a store" -- step bogus --db "$tmp/none-yet.db"
expect_error 2 usage "resolve without an answer, even without a store" -- \
  resolve run_x inv_x --db "$tmp/none-yet.db"
expect_error 2 file.unreadable "run of a missing workflow file" -- run "$tmp/no-such.json" --db "$tmp/none-yet.db"
expect_error 2 file.unreadable "start of a missing workflow file" -- start "$tmp/no-such.json" --db "$tmp/none-yet.db"
[ ! -e "$tmp/none-yet.db" ] && [ ! -e "$tmp/none-yet.db.workers" ] ||
  fail "a refused command created a store"
sp --json step detach
expect_rc 2 "step detach without -- <argv>"
expect_json '.error.code == "usage"' "step detach errors are JSON with a leading --json"

# ---- 10. step claim checks its run ID ----
expect_error 2 run.not-found "step claim of an unknown run" -- step claim run_nope --db "$db"
expect_error 2 usage.invalid-value "step claim of a malformed run ID" -- step claim 'not a run!' --db "$db"
expect_error 2 usage.invalid-value "status of a malformed run ID" -- status 'not a run!' --db "$db"

# ---- 10. an existing key with another explicit input ----
sp start "$wf/approval.json" --key wait-1 --db "$db" --json
expect_rc 0 "start with an existing key and no input"
expect_json '.created == false and .runId == $id' "no input: the existing run" --arg id "$id"
sp start "$wf/approval.json" --key wait-1 --input '{}' --db "$db" --json
expect_rc 0 "start with an existing key and the same input"
expect_json '.created == false' "the same input: the existing run"
expect_error 2 run.exists "start with an existing key and another input" -- \
  start "$wf/approval.json" --key wait-1 --input '{"other": 1}' --db "$db"
expect_error 2 run.exists "run with an existing key and another input" -- \
  run "$wf/approval.json" --key wait-1 --input '{"other": 1}' --db "$db"

# ---- 10. list: shape, newest first, filters, limit ----
sp list --db "$db" --json
expect_rc 0 "list --json"
expect_json '(.runs | length) == 5
    and all(.runs[]; (.workflow | type == "string") and (.createdAtMs | test($d))
                     and (.updatedAtMs | test($d)) and has("position"))
    and ([.runs[].createdAtMs | tonumber] | . == (sort | reverse))
    and .runs[0].runId == $ext and .runs[0].workflow == "external-review"
    and .runs[0].position.nodeId == "review"
    and ([.runs[] | select(.runId == $id)][0].position == null)' "list --json" \
  --arg d "$decimal" --arg ext "$ext" --arg id "$id"
sp list --status completed --db "$db" --json
expect_json '([.runs[].status] | unique) == ["completed"] and (.runs | length) == 3' "list --status"
sp list --workflow approval --db "$db" --json
expect_json '(.runs | length) == 2 and all(.runs[]; .workflow == "approval")' "list --workflow"
sp list --limit 1 --db "$db" --json
expect_json '(.runs | length) == 1 and .runs[0].runId == $ext' "list --limit" --arg ext "$ext"
expect_error 2 usage.invalid-value "list --limit 0" -- list --limit 0 --db "$db"
sp list --limit 1000000 --db "$db" --json
expect_rc 0 "list --limit at its bound"
expect_error 2 usage.invalid-value "list --limit past its bound" -- list --limit 1000001 --db "$db"
sp list --status waiting --db "$db"
expect_rc 0 "an empty list (text)"
[[ "$out" == "no runs match in $db"* ]] || fail "an empty list does not say so: $out"
sp list --db "$db"
grep -q "^$ext  *running  *rev [0-9]*  *ext-1  *external-review  *at review$" <<<"$out" ||
  fail "list (text) does not show the workflow and position: $out"

# ---- 5. read commands never create a store ----
mkdir "$tmp/none"
for cmd in "status run_x" "list" "events run_x" "signal run_x approval" "resume run_x" "release run_x"; do
  # shellcheck disable=SC2086
  expect_error 10 store.not-found "$cmd on a path without a store" -- $cmd --db "$tmp/none/x.db"
done
[[ "$(jq -r .error.message <<<"$out")" == *"$tmp/none/x.db"* ]] || fail "store.not-found does not name the path: $out"
[ -z "$(ls -A "$tmp/none")" ] || fail "a read command created files: $(ls -A "$tmp/none")"
printf 'not a database, just text\n' >"$tmp/none/text.db"
sqlite3 "$tmp/none/other.db" "CREATE TABLE t (x); INSERT INTO t VALUES (1);"
sums=$(cd "$tmp/none" && md5sum text.db other.db)
expect_error 10 store.corrupt "a text file as the store" -- list --db "$tmp/none/text.db"
expect_error 10 schema.unknown "another program's database as the store" -- list --db "$tmp/none/other.db"
expect_error 10 schema.unknown "run on another program's database" -- \
  run "$wf/approval.json" --db "$tmp/none/other.db"
[ "$(cd "$tmp/none" && md5sum text.db other.db)" = "$sums" ] || fail "a file that is not a store was changed"
[ "$(ls -A "$tmp/none" | sort | tr '\n' ' ')" = "other.db text.db " ] ||
  fail "opening a non-store left files behind: $(ls -A "$tmp/none")"

# reading an existing store creates nothing beside it (no worker lock directory)
mkdir "$tmp/copy"
cp "$db" "$tmp/copy/c.db"
for cmd in "list" "status $id" "events $id"; do
  # shellcheck disable=SC2086
  sp $cmd --db "$tmp/copy/c.db" --json
  expect_rc 0 "$cmd on a copied store"
done
[ "$(ls -A "$tmp/copy")" = "c.db" ] || fail "read commands left files beside the store: $(ls -A "$tmp/copy")"

# several processes creating one new store at once: each succeeds
pids=()
for i in 1 2 3 4 5 6; do
  "$spore" start "$wf/approval.json" --key "race-$i" --db "$tmp/race.db" --json >"$tmp/race-$i.out" 2>&1 &
  pids+=("$!")
done
for i in 1 2 3 4 5 6; do
  wait "${pids[$((i - 1))]}" || fail "a concurrent first start failed: $(cat "$tmp/race-$i.out")"
  jq -e '.created == true' "$tmp/race-$i.out" >/dev/null 2>&1 || fail "race-$i: $(cat "$tmp/race-$i.out")"
done

# ---- 6. a private store ----
mode() { stat -c %a "$1"; }
(umask 000 && "$spore" start "$wf/approval.json" --db "$tmp/private.db" >/dev/null)
[ "$(mode "$tmp/private.db")" = 600 ] || fail "a new store is mode $(mode "$tmp/private.db"), want 600"
start_bg holder worker --db "$tmp/private.db" --poll-ms 50
wait_for 10 test -e "$tmp/private.db-wal" || fail "no -wal file while a worker holds the store"
wait_for 10 test -e "$tmp/private.db-shm" || fail "no -shm file while a worker holds the store"
for f in "$tmp/private.db-wal" "$tmp/private.db-shm"; do
  [ "$(mode "$f")" = 600 ] || fail "$f is mode $(mode "$f"), want 600"
done
kill -TERM "$bg_pid"
wait_bg "$bg_pid" 30
chmod 644 "$tmp/private.db"
expect_error 10 store.not-private "a store others can read" -- list --db "$tmp/private.db"
[[ "$(jq -r .error.message <<<"$out")" == *"--allow-shared-store"* ]] || fail "store.not-private does not say how to go on: $out"
sp list --db "$tmp/private.db" --allow-shared-store --json
expect_rc 0 "--allow-shared-store opens it"
sp --allow-shared-store list --db "$tmp/private.db" --json
expect_rc 0 "--allow-shared-store before the command"
chmod 600 "$tmp/private.db"
sp list --db "$tmp/private.db" --json
expect_rc 0 "a private store again"

# a store file another user owns is not private either (root only: chown)
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
  : >"$tmp/theirs.db"
  chmod 600 "$tmp/theirs.db"
  chown nobody "$tmp/theirs.db"
  expect_error 10 store.not-private "an empty store file another user owns" -- \
    start "$wf/approval.json" --db "$tmp/theirs.db"
  [ ! -s "$tmp/theirs.db" ] || fail "spore wrote into a store file another user owns"
else
  echo "$test_name: skipped: the store owned by another user (needs root and a nobody user)"
fi

# a read-only store: commands that write refuse it at once (store.io), reads work
if chattr +i "$tmp/private.db" 2>/dev/null; then
  sp signal run_x approval --db "$tmp/private.db" --json
  chattr -i "$tmp/private.db"
  expect_rc 10 "signal on a read-only store"
  expect_json '.error.code == "store.io" and (.error.message | test("read-only"))' \
    "signal on a read-only store is refused at open"
  chattr +i "$tmp/private.db"
  sp list --db "$tmp/private.db" --json
  chattr -i "$tmp/private.db"
  expect_rc 0 "list on a read-only store"
else
  echo "$test_name: skipped: the read-only store (chattr +i is not permitted here)"
fi

finish
