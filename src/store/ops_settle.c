/*
 * ops_settle.c - settle_attempt (store.h; step-path.md §1, docs/step-path.md):
 * a finished attempt, the turn its result becomes and the claims that turn
 * makes, as ONE request with one receipt and one write of the run row.
 *
 * Predicates, in order: finish_attempt's (result size, evidence, shape, the
 * fenced lease). Then - only when a decider is given, the run is not
 * quarantined and the result is the next event to apply (no older event
 * pending) - the decider is asked for the decision on that turn, and the
 * decision's predicates are commit_turn's (its members within bounds,
 * snapshot digest and size, command IDs, each command's rules); a decision
 * that fails them fails the request: nothing is written, and the caller
 * falls back to finish_attempt.
 *
 * Writes: the attempt finished, its invocation settled, the result event
 * att:<attemptId> under the append rule - stored consumed by the new
 * revision when a decision commits, else pending for a later commit_turn -
 * then commit_turn's writes, in which every wanted invocation the decision
 * schedules or retries and that is due gets claim_attempt's writes under the
 * request's claim terms.
 *
 * Request digest: settle_attempt [REF, resultDigest, worker|null,
 * leaseDurationMs, hostId, pid, pidStarted, decides]. Value:
 * {claims, decisionDigest|null, resultSequence, revision|null} (values.c).
 *
 * What it must never do: commit a decision on any event but the result it
 * appended, claim an invocation its own decision did not make pending, or
 * call the decider outside the request's transaction (or twice for more
 * than the snapshot it asked for).
 */
#include <stdio.h>
#include <stdlib.h>

#include "store/logic.h"

/* The turn the result becomes, borrowing from the request and the run row. */
static void turn_of(const lg_mut *m, const lg_event_rec *ev, sp_turn *t)
{
    memset(t, 0, sizeof *t);
    t->key = *m->key;
    t->revision = lg_run_u64(m, RUN_REVISION);
    t->applied_sequence = lg_run_u64(m, RUN_APPLIED);
    lg_copy(t->package_digest, sizeof t->package_digest, &m->run, 0, RUN_PACKAGE_DIGEST);
    lg_copy(t->snapshot_digest, sizeof t->snapshot_digest, &m->run, 0, RUN_SNAPSHOT_DIGEST);
    t->event.sequence = ev->sequence;
    t->event.event_id = (char *)ev->event_id;
    t->event.kind = (char *)ev->kind;
    t->event.body = (char *)ev->body;
    t->event.body_len = ev->len;
    snprintf(t->event.body_digest, sizeof t->event.body_digest, "%s", ev->digest);
    t->event.accepted_at_ms = ev->accepted_at_ms;
    t->event.body_value = ev->value;
    t->next_sequence = ev->sequence + 1;
}

static sp_store_rc read_snapshot(lg_mut *m, sp_db_rows *rows, sp_turn *t, sp_error *err)
{
    sp_store_rc rc = LG_Q(m->s, rows, err,
                          "SELECT snapshot FROM runs WHERE tenant = ? AND run_id = ?",
                          DB_TEXT(m->key->tenant), DB_TEXT(m->key->run_id));
    if (rc == SP_STORE_OK && rows->nrows == 1 && lg_text(rows, 0, 0)) {
        t->snapshot = (char *)lg_text(rows, 0, 0);
        t->snapshot_len = lg_len(rows, 0, 0);
    }
    return rc;
}

/* Ask the decider; *snapshot holds the snapshot it asked for, if any. */
static sp_store_rc ask(lg_mut *m, const sp_decider *dc, sp_turn *t, sp_decision *d,
                       sp_db_rows *snapshot, sp_decide_rc *answer, sp_error *err)
{
    *answer = dc->decide(dc->ctx, t, d);
    if (*answer != SP_DECIDE_NEED_SNAPSHOT)
        return SP_STORE_OK;
    sp_store_rc rc = read_snapshot(m, snapshot, t, err);
    if (rc)
        return rc;
    *answer = t->snapshot ? dc->decide(dc->ctx, t, d) : SP_DECIDE_PASS;
    if (*answer == SP_DECIDE_NEED_SNAPSHOT)
        *answer = SP_DECIDE_PASS;
    return SP_STORE_OK;
}

/* The decision as commit_turn takes it, on the turn `t`. */
static sp_commit_turn_req commit_of(const sp_turn *t, const sp_decision *d)
{
    return (sp_commit_turn_req){t->key,           NULL,           t->revision,
                                t->event.event_id, t->event.sequence, d->decision_digest,
                                d->snapshot,      d->snapshot_len, d->snapshot_digest,
                                d->status,        d->commands,    d->ncommands,
                                d->diagnostics,   d->ndiagnostics, d->snapshot_digest_computed,
                                false};
}

/* The event consumed by the decision, the decision, its claims. */
static sp_store_rc commit(lg_mut *m, const sp_settle_req *req, const sp_turn *t,
                          const lg_event_rec *ev, const sp_decision *d, json_t *claims,
                          sp_error *err)
{
    sp_commit_turn_req c = commit_of(t, d);
    sp_store_rc rc = lg_check_decision(&c, err);
    if (rc == SP_STORE_OK && d->nclaim > SP_SETTLE_CLAIMS_MAX)
        rc = lg_invalid(err, "a decision claims at most %u invocations", SP_SETTLE_CLAIMS_MAX);
    if (rc == SP_STORE_OK)
        rc = lg_insert_event(m, ev, t->revision + 1, err);
    if (rc)
        return rc;
    sp_claim_req terms = {.key = *m->key,
                          .worker = req->worker,
                          .lease_duration_ms = req->lease_duration_ms,
                          .host = req->host};
    lg_claimer claimer = {d->claim, d->nclaim, &terms, claims};
    m->claimer = &claimer;
    rc = lg_commit_decision(m, &c, true, err);
    m->claimer = NULL;
    return rc;
}

/* The turn, when the result is the next event to apply: the decision on it
 * committed (*revision, *digest) or the event left pending. */
static sp_store_rc turn(lg_mut *m, const sp_settle_req *req, const lg_event_rec *ev,
                        json_t *claims, uint64_t *revision, char *digest, sp_error *err)
{
    sp_turn t;
    turn_of(m, ev, &t);
    sp_decision d = {0};
    sp_db_rows snapshot = {0};
    sp_decide_rc answer;
    sp_store_rc rc = ask(m, req->decider, &t, &d, &snapshot, &answer, err);
    if (rc == SP_STORE_OK && answer == SP_DECIDE_COMMIT) {
        rc = commit(m, req, &t, ev, &d, claims, err);
        if (rc == SP_STORE_OK) {
            *revision = t.revision + 1;
            snprintf(digest, SP_DIGEST_TEXT_LEN + 1, "%s", d.decision_digest);
        }
    } else if (rc == SP_STORE_OK) {
        rc = lg_insert_event(m, ev, 0, err);
    }
    sp_db_rows_free(&snapshot);
    return rc;
}

static bool turn_due(const lg_mut *m, const sp_settle_req *req, const lg_event_rec *ev)
{
    return req->decider && !lg_run_quarantined(m) &&
           lg_run_u64(m, RUN_APPLIED) + 1 == ev->sequence;
}

static sp_store_rc settle_apply(lg_mut *m, const void *r, sp_error *err)
{
    const sp_settle_req *req = r;
    json_t *body = NULL; /* parsed once: the decider's kernel reads this value */
    sp_store_rc rc = lg_finish_predicates(m, &req->attempt, &req->result, &body, err);
    if (rc == SP_STORE_OK)
        rc = lg_attempt_ended(m, &req->attempt, "finished", NULL, req->result.body, err);
    if (rc) {
        json_decref(body);
        return rc;
    }
    char event_id[LG_EVENT_ID_MAX];
    lg_result_event_id(&req->attempt, event_id);
    lg_event_rec ev = {event_id, "activity.result", req->result.body, req->result.len,
                       req->result.digest, 0, 0, body};
    lg_next_event(m, &ev.sequence, &ev.accepted_at_ms);
    json_t *claims = json_array();
    uint64_t revision = 0;
    char digest[SP_DIGEST_TEXT_LEN + 1] = "";
    if (!claims)
        rc = lg_encode_fail(err, true, "claims");
    else if (turn_due(m, req, &ev))
        rc = turn(m, req, &ev, claims, &revision, digest, err);
    else
        rc = lg_insert_event(m, &ev, 0, err);
    if (rc == SP_STORE_OK) {
        m->value = lg_settled_value(ev.sequence, revision, revision ? digest : NULL, claims);
        claims = NULL;
    }
    json_decref(claims);
    json_decref(body);
    return rc;
}

static const sp_attempt_ref *attempt_of_settle_attempt(const void *req)
{
    return &((const sp_settle_req *)req)->attempt;
}

static const lg_op SETTLE_ATTEMPT = {"settle_attempt", "settle-attempt", settle_apply,
                                     lg_settled_decode, attempt_of_settle_attempt, NULL,
                                     LG_PREDICT_USES, NULL};

static sp_store_rc settle_validate(const sp_settle_req *req, sp_error *err)
{
    sp_store_rc rc = lg_attempt_args(&req->attempt, req->request_id, err);
    if (!rc)
        rc = lg_check_evidence("result", &req->result, err);
    if (!rc && req->decider && !req->decider->decide)
        rc = lg_invalid(err, "a decider needs its decide function");
    if (!rc && req->decider)
        rc = lg_check_text("worker", req->worker, SP_STORE_ID_MAX, err);
    if (!rc)
        rc = lg_check_u63("lease duration", req->lease_duration_ms, err);
    if (!rc && strnlen(req->host.host_id, sizeof req->host.host_id) == sizeof req->host.host_id)
        rc = lg_invalid(err, "host ID must be NUL-terminated");
    if (!rc)
        rc = lg_check_u63("owner start time", req->host.pid_started, err);
    return rc;
}

sp_store_rc sp_store_settle_attempt(sp_store *s, const sp_settle_req *req, sp_settle_res *res,
                                    sp_error *err)
{
    memset(res, 0, sizeof *res);
    sp_store_rc rc = settle_validate(req, err);
    json_t *body = NULL;
    if (!rc)
        rc = lg_pack(&body, err, "[" LG_REF_FMT " s s? o s I o b]", LG_REF_ARGS(&req->attempt),
                     req->result.digest, req->decider ? req->worker : NULL,
                     lg_u63_json(req->lease_duration_ms), req->host.host_id,
                     (json_int_t)req->host.pid, lg_u63_json(req->host.pid_started),
                     req->decider != NULL);
    if (rc)
        return rc;
    return lg_mutate(s, &SETTLE_ATTEMPT, &req->attempt.key, req->request_id, body, req, res,
                     &res->disposition, err);
}
