#!/usr/bin/env bash
# test_commands.sh - every store-using command in text and JSON with its exit
# code (cli.md §1-3, §6 first item), through the real binary:
#
# - `--help` on every command exits 0 with its usage; unknown subcommand,
#   missing arguments, bad options: exit 2 `usage`;
# - `validate` creates no database; missing workflow file (`file.unreadable`)
#   and bad JSON (`json.invalid`, also for --input/--data) exit 2;
# - `status`/`events`/`signal`/`resolve`/`release` of an unknown run:
#   `run.not-found`, exit 2;
# - `start` twice with one key: the same run, `created` true then false; a
#   generated key is key_<16 hex>; the key of another workflow: `run.exists`;
# - `run` exits 3 at a signal wait; a repeated signal ID is `duplicate` and
#   changes nothing; a generated message ID is msg_<16 hex>; completion exits 0
#   with the output; the rejected route exits 1 (`worker --run … --until-parked`
#   gives the same codes); `release` without a quarantine exits 0 and changes
#   nothing;
# - the shapes of `status`, `list` and `events` (format spore.cli/0.1,
#   counters and timestamps as decimal strings) and of their text forms;
# - a directory as --db: exit 10 `store.io`; a file that is not a database:
#   exit 10 `store.corrupt`, and the file is left untouched.
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"

commands=(validate trace start run worker status list events signal resolve release)

# ---- help, usage ----
for cmd in "${commands[@]}"; do
  sp "$cmd" --help
  expect_rc 0 "$cmd --help"
  [[ "$out" == "usage: spore $cmd"* ]] || fail "$cmd --help: stdout \"${out:0:200}\""
  [ -z "$err" ] || fail "$cmd --help: stderr \"${err:0:200}\""
  sp "$cmd" --json --help
  expect_rc 0 "$cmd --json --help"
done
sp --help
expect_rc 0 "spore --help"
for cmd in "${commands[@]}"; do
  grep -q "^  $cmd " <<<"$out" || fail "spore --help does not list $cmd"
done
sp frobnicate --db "$db"
expect_rc 2 "unknown subcommand"
[[ "$err" == *frobnicate* ]] || fail "unknown subcommand: stderr does not name it: $err"

expect_error 2 usage "worker --run without --until-parked" -- worker --run run_x --db "$db"
expect_error 2 usage "worker --until-parked without --run" -- worker --until-parked --db "$db"
expect_error 2 usage "status without a run ID" -- status --db "$db"
expect_error 2 usage "start without a workflow" -- start --db "$db"
expect_error 2 usage "signal without a name" -- signal run_x --db "$db"
expect_error 2 usage.invalid-value "a bad --lease-ms" -- worker --lease-ms abc --db "$db"
expect_error 2 usage "an unknown option" -- list --frobnicate --db "$db"

# ---- validate creates no database ----
sp validate "$wf/approval.json" --db "$tmp/validate.db"
expect_rc 0 "validate"
[ ! -e "$tmp/validate.db" ] && [ ! -e "$tmp/validate.db.workers" ] || fail "validate created $tmp/validate.db"

# ---- missing file, bad JSON ----
printf '{"format": "runspore.workflow/0.1", "name": ' >"$tmp/truncated.json"
for cmd in start run; do
  expect_error 2 file.unreadable "$cmd of a missing file" -- "$cmd" "$tmp/nope.json" --db "$db"
  expect_error 2 json.invalid "$cmd of bad JSON" -- "$cmd" "$tmp/truncated.json" --db "$db"
  expect_error 2 json.invalid "$cmd with bad --input" -- "$cmd" "$wf/approval.json" --input '{x' --db "$db"
  expect_error 2 file.unreadable "$cmd with a missing --input-file" -- \
    "$cmd" "$wf/approval.json" --input-file "$tmp/nope.json" --db "$db"
done
# the workflow-file bound (8 MiB): exactly at it is read, one byte over is refused
limit=$((8 * 1024 * 1024))
{ cat "$wf/approval.json"; head -c $((limit - $(wc -c <"$wf/approval.json"))) /dev/zero | tr '\0' ' '; } \
  >"$tmp/at-limit.json"
[ "$(wc -c <"$tmp/at-limit.json")" -eq "$limit" ] || fail "fixture: at-limit.json is not $limit bytes"
sp validate "$tmp/at-limit.json"
expect_rc 0 "a workflow file of exactly 8 MiB"
printf ' ' >>"$tmp/at-limit.json"
expect_error 2 file.too-large "a workflow file one byte over 8 MiB" -- validate "$tmp/at-limit.json"
expect_error 2 workflow.invalid "start of an invalid workflow" -- \
  start "$root/tests/fixtures/invalid/workflow.invalid--w05-start-missing.json" --db "$db"
sp list --db "$db" --json
expect_rc 0 "list after failed starts"
expect_json '.runs == []' "no run was created by a failed start"

# ---- unknown run ----
for cmd in status events release; do
  expect_error 2 run.not-found "$cmd of an unknown run" -- "$cmd" run_nope --db "$db"
done
expect_error 2 run.not-found "signal to an unknown run" -- signal run_nope approval --db "$db"
expect_error 2 run.not-found "resolve on an unknown run" -- resolve run_nope inv_x --retry --db "$db"
expect_error 2 run.not-found "worker --until-parked of an unknown run" -- \
  worker --run run_nope --until-parked --db "$db"

# ---- start: one key, one run ----
sp start "$wf/approval.json" --key k-approve --db "$db" --json
expect_rc 0 "start"
expect_json '.created == true and .startKey == "k-approve" and (.runId | test("^run_[0-9a-f]{32}$"))' "start"
id=$(jq -r .runId <<<"$out")
sp start "$wf/approval.json" --key k-approve --db "$db" --json
expect_rc 0 "start again"
expect_json '.created == false and .runId == $id and .startKey == "k-approve"' \
  "start again" --arg id "$id"
sp start "$wf/approval.json" --key k-approve --db "$db"
expect_rc 0 "start again (text)"
[ "$out" = "existing run $id (start key k-approve)" ] || fail "start again (text): \"$out\""
sp start "$wf/approval.json" --db "$db"
expect_rc 0 "start without a key (text)"
[[ "$out" =~ ^started\ run\ run_[0-9a-f]{32}\ \(start\ key\ key_[0-9a-f]{16}\)$ ]] ||
  fail "start without a key (text): \"$out\""
sp start "$wf/approval.json" --db "$db" --json
expect_json '.created == true and (.startKey | test("^key_[0-9a-f]{16}$"))' "start without a key"
expect_error 2 run.exists "start of another workflow with a used key" -- \
  start "$wf/three-steps.json" --key k-approve --db "$db"

# ---- status before any work ----
sp status "$id" --db "$db" --json
expect_rc 0 "status of a created run"
expect_json '.runId == $id and .startKey == "k-approve" and .status == "created"
    and .revision == "0" and .position == null and .invocation == null and .result == null
    and .nodes == {} and .quarantine == null' \
  "status" --arg id "$id"

# ---- run: parks at the signal wait (exit 3) ----
sp run "$wf/approval.json" --key k-approve --db "$db" --json
expect_rc 3 "run to the signal wait"
expect_json '.created == false and .status == "waiting" and .revision == "2"
    and .position.nodeId == "approval" and .nodes.prepare.outcome == "ok"
    and .nodes.prepare.output.node == "prepare" and .result == null' "run to the signal wait"
[ "$(log_count start "$id" prepare)" -eq 1 ] || fail "prepare ran $(log_count start "$id" prepare) times, want 1"
sp run "$wf/approval.json" --key k-approve --db "$db"
expect_rc 3 "run again, still waiting (text)"
grep -q "^status  *waiting$" <<<"$out" || fail "run (text): no status line: $out"
grep -q "^run  *$id$" <<<"$out" || fail "run (text): no run line: $out"
grep -q "^position  *approval (approval/1)$" <<<"$out" || fail "run (text): no position line: $out"
[[ "$out" != *$'\r'* && "$out" != *$'\e'* ]] || fail "run (text) printed terminal progress to a pipe: $out"
[ "$(log_count start "$id" prepare)" -eq 1 ] || fail "prepare ran again on resume"
sp worker --run "$id" --until-parked --db "$db" --json
expect_rc 3 "worker --until-parked at the signal wait"
expect_json '.status == "waiting"' "worker --until-parked at the signal wait"

sp status "$id" --db "$db"
expect_rc 0 "status (text)"
for line in "^run  *$id$" "^start key  *k-approve$" "^status  *waiting$" "^revision  *2$" \
  "^position  *approval (approval/1)$"; do
  grep -q "$line" <<<"$out" || fail "status (text): no line matching $line: $out"
done

# ---- signal: applied, then the same ID is a duplicate ----
sp signal "$id" approval --outcome approved --data '{"by":"ada"}' --id m-1 --db "$db" --json
expect_rc 0 "signal"
expect_json '.runId == $id and .messageId == "m-1" and .disposition == "applied"' \
  "signal" --arg id "$id"
sp signal "$id" approval --outcome approved --data '{"by":"ada"}' --id m-1 --db "$db" --json
expect_rc 0 "the same signal again"
expect_json '.messageId == "m-1" and .disposition == "duplicate"' "the same signal again"
sp signal "$id" approval --outcome approved --data '{"by":"ada"}' --id m-1 --db "$db"
expect_rc 0 "the same signal again (text)"
[ "$out" = "signal approval to $id: duplicate" ] || fail "the same signal again (text): \"$out\""
expect_error 2 json.invalid "signal with bad --data" -- signal "$id" approval --data '{bad' --db "$db"
expect_error 2 request.digest-mismatch "the same signal ID with another content" -- \
  signal "$id" approval --outcome rejected --id m-1 --db "$db"
sp events "$id" --db "$db" --json
[ "$(jq '[.events[] | select(.id == "sig:m-1")] | length' <<<"$out")" -eq 1 ] ||
  fail "signal m-1 delivered three times is not exactly one event: ${out:0:600}"

# ---- completion: exit 0 with the output ----
sp run "$wf/approval.json" --key k-approve --db "$db" --json
expect_rc 0 "run to completion"
expect_json '.created == false and .status == "completed" and .revision == "3"
    and .result.output == {"prepared": "prepare", "approval": {"by": "ada"}}
    and .nodes.approval.outcome == "approved" and .position == null' "run to completion"
sp run "$wf/approval.json" --key k-approve --db "$db"
expect_rc 0 "run of a completed run (text)"
grep -q '^result  *{"output":{"approval":{"by":"ada"},"prepared":"prepare"}}$' <<<"$out" ||
  fail "run (text): no result line: $out"
sp worker --run "$id" --until-parked --db "$db" --json
expect_rc 0 "worker --until-parked of a completed run"
[ "$(log_count start "$id" prepare)" -eq 1 ] || fail "prepare ran $(log_count start "$id" prepare) times, want 1"

# A signal to a completed run is refused (run.terminal, exit 2) and nothing
# is recorded, with a generated or a given message ID.
expect_error 2 run.terminal "signal to a completed run" -- signal "$id" approval --outcome approved --db "$db"
expect_error 2 run.terminal "signal with an ID to a completed run" -- \
  signal "$id" approval --outcome approved --id late-1 --db "$db"
sp worker --run "$id" --until-parked --db "$db"
expect_rc 0 "worker --until-parked of the completed run"

# ---- events and list shapes ----
sp events "$id" --db "$db" --json
expect_rc 0 "events"
expect_json '
    .runId == $id and (.events | length) == 3
    and ([.events[].sequence] == ["1", "2", "3"])
    and ([.events[].consumedRevision] == ["1", "2", "3"])
    and ([.events[].kind] == ["run.started", "activity.result", "signal.received"])
    and ([.events[].id] | .[0] == "start" and (.[1] | test("^att:inv_[0-9a-f]{32}[.]1$"))
                          and .[2] == "sig:m-1")
    and all(.events[]; (.acceptedAtMs | test($d)) and (.diagnostics | type == "array")
                       and (.payload | type == "object"))
    and ([.events[].acceptedAtMs | tonumber] | . == sort)
    and (.events[0].payload.input == {} and .events[0].payload.runId == $id)
    and (.events[1].payload.status == "success" and .events[1].payload.attempt == 1)
    and (.events[2].payload.name == "approval" and .events[2].payload.outcome == "approved"
         and .events[2].payload.data == {"by": "ada"})
    and ([.events[].diagnostics[]] == [])' \
  "events" --arg id "$id" --arg d "$decimal"
sp events "$id" --db "$db"
expect_rc 0 "events (text)"
[ "$(wc -l <<<"$out")" -eq 3 ] || fail "events (text): want 3 lines: $out"
grep -q "^1  run.started  rev 1  start$" <<<"$out" || fail "events (text): line 1: $out"
grep -q "^2  activity.result  rev 2  att:inv_[0-9a-f]*[.]1$" <<<"$out" || fail "events (text): line 2: $out"
grep -q "^3  signal.received  rev 3  sig:m-1$" <<<"$out" || fail "events (text): line 3: $out"

sp list --db "$db" --json
expect_rc 0 "list"
jq -e --arg id "$id" --arg d "$decimal" '.format == "spore.cli/0.1" and (.runs | length) == 3
    and all(.runs[]; (.runId | test("^run_[0-9a-f]{32}$")) and (.startKey | type == "string")
                     and (.status | type == "string") and (.revision | test($d))
                     and (.quarantined == false))
    and ([.runs[] | select(.runId == $id) | {runId, startKey, status, revision, quarantined}] == [{"runId": $id, "startKey": "k-approve",
         "status": "completed", "revision": "3", "quarantined": false}])
    and ([.runs[].createdAtMs | tonumber] == ([.runs[].createdAtMs | tonumber] | sort | reverse))' <<<"$out" >/dev/null ||
  fail "list --json: ${out:0:800}"
sp list --db "$db"
expect_rc 0 "list (text)"
[ "$(wc -l <<<"$out")" -eq 3 ] || fail "list (text): want 3 lines: $out"
grep -q "^$id  *completed  *rev 3  *k-approve  *approval$" <<<"$out" || fail "list (text): no line for $id: $out"

# ---- release without a quarantine: exit 0, nothing changes ----
before=$(status_json "$id")
sp release "$id" --db "$db" --json
expect_rc 0 "release without a quarantine"
expect_json '.runId == $id and (.disposition | type == "string")' \
  "release" --arg id "$id"
sp release "$id" --db "$db"
expect_rc 0 "release without a quarantine (text)"
[[ "$out" == "release $id: "* ]] || fail "release (text): \"$out\""
[ "$(status_json "$id")" = "$before" ] || fail "release of a run without a quarantine changed it"

# ---- the rejected route: exit 1 ----
sp run "$wf/approval.json" --key k-reject --db "$db" --json
expect_rc 3 "second run to the signal wait"
id2=$(jq -r .runId <<<"$out")
sp signal "$id2" approval --outcome rejected --id m-2 --db "$db" --json
expect_rc 0 "signal rejected"
sp run "$wf/approval.json" --key k-reject --db "$db" --json
expect_rc 1 "run to the rejected route"
expect_json '.status == "failed" and .result.error.code == "review.rejected" and .result.error.nodeId == "rejected"' \
  "run to the rejected route"
sp run "$wf/approval.json" --key k-reject --db "$db"
expect_rc 1 "run of a failed run (text)"
grep -q "^status  *failed$" <<<"$out" || fail "run of a failed run (text): $out"
sp worker --run "$id2" --until-parked --db "$db" --json
expect_rc 1 "worker --until-parked of a failed run"

# ---- a real example completes with its output ----
sp run "$root/examples/hello.json" --input '{"name": "Ada"}' --db "$db" --json
expect_rc 0 "run examples/hello.json"
expect_json '.status == "completed" and .created == true and .result.output == {"attempt": 1, "shout": "HELLO, ADA!"}' \
  "run examples/hello.json"

# ---- a directory or a non-database file as --db: exit 10 ----
mkdir "$tmp/a-directory"
printf 'this is a text file, not a SQLite database; spore must not touch it\n%.0s' {1..64} >"$tmp/not-a-db"
sum_before=$(sha256sum <"$tmp/not-a-db")
for args in "list" "status $id" "events $id" "start $wf/approval.json" "run $wf/approval.json" \
  "worker --run $id --until-parked" "signal $id approval" "release $id"; do
  # shellcheck disable=SC2086
  expect_error 10 store.io "$args --db <a directory>" -- $args --db "$tmp/a-directory"
  # shellcheck disable=SC2086
  expect_error 10 store.corrupt "$args --db <a text file>" -- $args --db "$tmp/not-a-db"
done
[ "$(sha256sum <"$tmp/not-a-db")" = "$sum_before" ] || fail "spore modified the non-database file given as --db"
left=$(cd "$tmp" && ls -d not-a-db?* a-directory?* 2>/dev/null || true)
[ -z "$left" ] || fail "spore created files beside a bad --db: $left"
[ -z "$(ls -A "$tmp/a-directory")" ] || fail "spore created files in the directory given as --db"

# ---- SPORE_DB is the default database ----
(
  export SPORE_DB="$db"
  "$spore" status "$id" --json >"$tmp/env.out" 2>&1
) || fail "status with SPORE_DB: $(cat "$tmp/env.out")"
jq -e --arg id "$id" '.runId == $id and .status == "completed"' "$tmp/env.out" >/dev/null ||
  fail "status with SPORE_DB: $(cat "$tmp/env.out")"

finish
