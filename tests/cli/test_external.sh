#!/usr/bin/env bash
# test_external.sh - external steps (engine.md §9, cli.md §5) through the real
# binary: a step claimed and completed from another process; only a matching
# actor claims; the token is the only way to act and cannot be forged; an
# undeclared outcome, a non-canonical or oversize output record nothing; a
# claim that outlives its lease is fenced out; `step fail`, `step abandon`;
# `run` exits 6 while the run waits on an external actor; status shows the
# step (kind, actor, state, holder, deadline, lease, attempt).
set -euo pipefail
source "$(dirname "$0")/lib.sh" "$@"
ext="$wf/external.json"

# ---- a run parks on an external step: exit 6, status shows it ready ----
sp run "$ext" --db "$db" --key e1 --input '{"doc":"draft-1"}' --json
expect_rc 6 "run waiting on an external step"
expect_json '.status == "running" and .step.kind == "external" and .step.actor == "reviewer"
  and .step.state == "ready" and .step.attempt == 1 and .step.holder == null' "status while ready"
run=$(jq -r .runId <<<"$out")

# ---- only the matching actor claims; nothing is claimed without one ----
sp step claim --db "$db" --json
expect_rc 0 "claim without an actor"
expect_json '.claimed == false' "no unlabelled step to claim"
sp step claim --db "$db" --actor someone-else --json
expect_json '.claimed == false' "another actor claims nothing"

# ---- claimed from another process with a holder label ----
sp step claim "$run" --db "$db" --actor reviewer --holder '{"who":"ana"}' --json
expect_rc 0 "claim"
expect_json '.claimed == true and .runId == $r and .nodeId == "review" and .attempt == 1
  and .input == {"doc":"draft-1"} and .outcomes == ["approved","changes"]
  and (.instructions | test("Review")) and (.deadlineMs | test("^[0-9]+$"))
  and (.leaseUntilMs | test("^[0-9]+$")) and (.token | startswith("spt1."))' "claim output" \
  --arg r "$run"
token=$(jq -r .token <<<"$out")
lease1=$(jq -r .leaseUntilMs <<<"$out")
sp status "$run" --db "$db" --json
expect_json '.step.state == "held" and .step.holder == {"who":"ana"} and .step.leaseUntilMs == $l' \
  "status while held" --arg l "$lease1"
sp step claim "$run" --db "$db" --actor reviewer --json
expect_json '.claimed == false' "a held step is not claimed twice"

# ---- renew extends the lease ----
sleep 0.1
sp step renew "$token" --db "$db" --json
expect_rc 0 "renew"
jq -e --arg l "$lease1" '(.leaseUntilMs | tonumber) > ($l | tonumber)' <<<"$out" >/dev/null ||
  fail "renew did not extend the lease: $out (was $lease1)"

# ---- invalid answers record nothing ----
events_before=$(events_json "$run" | jq '.events | length')
expect_error 2 step.undeclared-outcome "undeclared outcome" -- step complete "$token" --db "$db" --outcome maybe
expect_error 2 canonical.non-integer "float output" -- step complete "$token" --db "$db" --outcome approved --output '{"score":0.5}'
expect_error 2 json.invalid "bad JSON output" -- step complete "$token" --db "$db" --outcome approved --output '{"a":'
big=$(head -c 70000 /dev/zero | tr '\0' 'x')
expect_error 2 step.output-too-large "output over 64 KiB" -- step complete "$token" --db "$db" --outcome approved --output "\"$big\""
forged="${token%?}$( [ "${token: -1}" = 0 ] && echo 1 || echo 0 )"
expect_error 2 step.token-invalid "forged token" -- step complete "$forged" --db "$db" --outcome approved
altered=$(sed 's/^spt1\.W/spt1.X/' <<<"$token")
expect_error 2 step.token-invalid "altered token" -- step complete "$altered" --db "$db" --outcome approved
expect_error 2 step.token-invalid "not a token" -- step complete "hello" --db "$db" --outcome approved
long="spt1.$(head -c 1100 /dev/zero | tr '\0' A).0123456789abcdef0123456789abcdef"
expect_error 2 step.token-invalid "a token over the 1 KiB bound" -- step complete "$long" --db "$db" --outcome approved
[ "$(events_json "$run" | jq '.events | length')" = "$events_before" ] ||
  fail "a refused answer recorded an event"

# ---- completed from another process; the run moves on ----
sp step complete "$token" --db "$db" --outcome approved --output '{"by":"ana"}' --json
expect_rc 0 "complete"
expect_json '.completed == true and .outcome == "approved"' "complete output"
sp step complete "$token" --db "$db" --outcome approved --output '{"by":"ana"}'
expect_rc 0 "the same answer again is a duplicate, not an error"
sp run "$ext" --db "$db" --key e1 --json
expect_rc 6 "run now waits on the second external step (no actor)"
expect_json '.nodes.review.outcome == "approved" and .nodes.review.output == {"by":"ana"}
  and .step.kind == "external" and .step.actor == null' "first step recorded"

# ---- step fail ----
sp step claim "$run" --db "$db" --json
expect_json '.claimed == true and .nodeId == "note"' "unlabelled step claimed without --actor"
token2=$(jq -r .token <<<"$out")
expect_error 2 usage.invalid-value "bad error code" -- step fail "$token2" --db "$db" --error boom --code "Not Valid"
sp step fail "$token2" --db "$db" --error "the note could not be written" --code note.failed --json
expect_rc 0 "fail"
sp run "$ext" --db "$db" --key e1 --json
expect_rc 1 "the run failed with the actor's error"
expect_json '.result.error.code == "note.failed" and .result.error.nodeId == "note"' "failure recorded"

# ---- a claim that outlives its lease is fenced out ----
short="$tmp/external-short-lease.json"
jq '.actions.review.async.leaseMs = "1500"' "$ext" >"$short"
sp run "$short" --db "$db" --key e2 --input '{"doc":"draft-2"}' --json
run2=$(jq -r .runId <<<"$out")
sp step claim "$run2" --db "$db" --actor reviewer --json
old=$(jq -r .token <<<"$out")
sleep 1.7 # past the 1.5 s lease
sp step claim "$run2" --db "$db" --actor reviewer --json
expect_json '.claimed == true and .attempt == 2' "after the lease ran out, the step is claimable again (attempt 2)"
new=$(jq -r .token <<<"$out")
# the new holder answers first, well inside its own 1.5 s lease (on a busy
# machine the three commands below can take longer than that)
sp step complete "$new" --db "$db" --outcome changes --output '{"notes":["typo"]}'
expect_rc 0 "the current token completes"
expect_error 2 lease.lost "the old token is fenced out" -- step complete "$old" --db "$db" --outcome approved
expect_error 2 lease.lost "the old token cannot renew" -- step renew "$old" --db "$db"
sql "SELECT count(*) FROM audit WHERE kind = 'step-result-late'" | grep -qx '[1-9][0-9]*' ||
  fail "the fenced-out answer was not kept as late evidence"
sp run "$short" --db "$db" --key e2 --json
expect_rc 0 "run e2 completes"
expect_json '.result.output.review.outcome == "changes" and .result.output.review.visit == 1' "e2 result"

# ---- abandon: a person fences out the holder; unsafe -> needs-intervention ----
sp run "$ext" --db "$db" --key e3 --input '{}' --json
run3=$(jq -r .runId <<<"$out")
sp step claim "$run3" --db "$db" --actor reviewer --json
t3=$(jq -r .token <<<"$out")
sp step complete "$t3" --db "$db" --outcome approved
sp run "$ext" --db "$db" --key e3
sp step claim "$run3" --db "$db" --json
t4=$(jq -r .token <<<"$out")
sp step abandon "$run3" --db "$db" --json
expect_rc 0 "abandon"
expect_json '.runId == $r and (.abandoned | endswith(".1"))' "abandon output" --arg r "$run3"
expect_error 2 lease.lost "the abandoned holder is fenced out" -- step complete "$t4" --db "$db" --outcome ok
sp run "$ext" --db "$db" --key e3 --json
expect_rc 4 "an abandoned unsafe step needs intervention"
sql "SELECT reason FROM audit WHERE kind = 'expired' AND run_id = '$run3'" | grep -qx abandoned ||
  fail "the audit row does not record the abandon"
expect_error 2 step.none "nothing left to abandon" -- step abandon "$run3" --db "$db"

finish
