/*
 * ops_finish.c - how an attempt ends: finish_attempt, expire_attempt and
 * record_late_evidence (store.md §3, engine.md §7, §9, §11).
 *
 * finish_attempt predicates, in order: body <= 64 KiB (quota/event.too-large,
 * checked before any parsing); evidence digest and canonical body
 * (conflict/evidence.*); the body is
 * an activity.result for this invocation, attempt ID and attempt number with
 * status success|failure|unknown (conflict/result.invalid); the fenced lease
 * holds (stale/lease.lost). Writes: event `att:<attemptId>` kind
 * activity.result under the append rule, attempt finished with its result,
 * invocation settled.
 *
 * expire_attempt predicates, in order: the attempt exists with this
 * invocation, owner and fence (not-found/attempt.not-found); it is running
 * (stale/lease.lost); reason `lease` needs now >= leaseUntilMs (conflict/
 * lease.not-due), `deadline` needs a deadline and now >= it (conflict/
 * deadline.not-due); probe-dead, abandoned and owner-dead have no time check.
 * Writes: event `att:<attemptId>` with the byte-identical canonical expired
 * body, attempt expired with the reason, invocation settled, an audit row.
 * Finish and expire compete for the same event ID: exactly one wins.
 *
 * record_late_evidence: the attempt exists (not-found/attempt.not-found);
 * evidence <= 64 KiB (quota/evidence.too-large) and verified; one
 * append-only audit row, nothing else changes.
 *
 * What it must never do: accept a result for a lease that ran out (I5), end
 * an attempt twice, or change run state when recording late evidence.
 */
#include <stdio.h>
#include <stdlib.h>

#include "json/json.h"
#include "store/logic.h"

/* ---- shared ---- */

sp_store_rc lg_attempt_ended(lg_mut *m, const sp_attempt_ref *ref, const char *status,
                             const char *reason, const char *result, sp_error *err)
{
    sp_store_rc rc =
        LG_W1(m->s, err,
              "UPDATE attempts SET status = ?, expire_reason = ?, result = ?, ended_at_ms = ?"
              " WHERE tenant = ? AND run_id = ? AND attempt_id = ?",
              DB_TEXT(status), DB_OPT_TEXT(reason), DB_OPT_TEXT(result), DB_INT(m->now),
              DB_TEXT(ref->key.tenant), DB_TEXT(ref->key.run_id), DB_TEXT(ref->attempt_id));
    if (rc == SP_STORE_OK)
        rc = LG_W1(m->s, err,
                   "UPDATE invocations SET status = 'settled'"
                   " WHERE tenant = ? AND run_id = ? AND invocation_id = ?",
                   DB_TEXT(ref->key.tenant), DB_TEXT(ref->key.run_id), DB_TEXT(ref->invocation_id));
    return rc;
}

void lg_result_event_id(const sp_attempt_ref *ref, char out[LG_EVENT_ID_MAX])
{
    snprintf(out, LG_EVENT_ID_MAX, "att:%s", ref->attempt_id);
}

/* Append att:<attemptId>, end the attempt, settle the invocation. */
static sp_store_rc end_attempt(lg_mut *m, const sp_attempt_ref *ref, const char *status,
                               const char *reason, const char *result, const char *body, size_t len,
                               const char *digest, sp_error *err)
{
    char event_id[LG_EVENT_ID_MAX];
    lg_result_event_id(ref, event_id);
    uint64_t sequence, accepted;
    sp_store_rc rc =
        lg_append(m, event_id, "activity.result", body, len, digest, &sequence, &accepted, err);
    if (rc == SP_STORE_OK)
        rc = lg_attempt_ended(m, ref, status, reason, result, err);
    if (rc == SP_STORE_OK)
        m->value = lg_result_value(sequence);
    return rc;
}

static sp_store_rc insert_audit(lg_mut *m, const sp_attempt_ref *ref, const char *kind,
                                const char *reason, const char *body, size_t len,
                                const char *digest, uint64_t *audit_id, sp_error *err)
{
    sp_db_rows rows;
    sp_store_rc rc = LG_Q(m->s, &rows, err,
                          "INSERT INTO audit (tenant, run_id, attempt_id, kind, reason,"
                          " evidence_digest, evidence, at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                          " RETURNING audit_id",
                          DB_TEXT(ref->key.tenant), DB_TEXT(ref->key.run_id),
                          DB_TEXT(ref->attempt_id), DB_TEXT(kind), DB_OPT_TEXT(reason),
                          DB_TEXT(digest), DB_TEXTN(body, len), DB_INT(m->now));
    if (rc == SP_STORE_OK && audit_id)
        *audit_id = rows.nrows == 1 ? lg_u64(&rows, 0, 0) : 0;
    sp_db_rows_free(&rows);
    return rc;
}

sp_store_rc lg_attempt_args(const sp_attempt_ref *ref, const char *request_id, sp_error *err)
{
    sp_store_rc rc = lg_check_ref(ref, err);
    return rc ? rc : lg_check_text("request ID", request_id, SP_STORE_REQUEST_ID_MAX, err);
}

/* ---- finish_attempt ---- */

/* Only the members of activity.result (kernel.md §7.5), with their types. */
static bool result_shape(const json_t *v)
{
    static const char *const known[] = {"attempt", "attemptId", "error",     "invocationId",
                                        "outcome", "output",    "retryable", "status"};
    size_t members = 0;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        members += json_object_get(v, known[i]) != NULL;
    const json_t *outcome = json_object_get(v, "outcome");
    const json_t *error = json_object_get(v, "error");
    const json_t *retryable = json_object_get(v, "retryable");
    return json_is_object(v) && members == json_object_size(v) &&
           (!outcome || json_is_null(outcome) || json_is_string(outcome)) &&
           (!error || json_is_null(error) || json_is_object(error)) &&
           (!retryable || json_is_boolean(retryable));
}

static bool same_str(const json_t *v, const char *name, const char *want)
{
    const char *s = lg_get_str(v, name);
    return s && strcmp(s, want) == 0;
}

/* A success, failure or unknown result of exactly this attempt. */
static bool result_matches(const json_t *v, const sp_attempt_ref *ref)
{
    json_int_t number = (json_int_t)lg_attempt_number(ref->invocation_id, ref->attempt_id);
    return result_shape(v) &&
           (same_str(v, "status", "success") || same_str(v, "status", "failure") ||
            same_str(v, "status", "unknown")) &&
           same_str(v, "invocationId", ref->invocation_id) &&
           same_str(v, "attemptId", ref->attempt_id) &&
           json_is_integer(json_object_get(v, "attempt")) &&
           json_integer_value(json_object_get(v, "attempt")) == number;
}

static sp_store_rc check_result(const sp_attempt_ref *ref, const sp_evidence *result,
                                json_t **parsed, sp_error *err)
{
    if (result->len > SP_STORE_EVENT_MAX)
        return lg_fail(err, SP_STORE_QUOTA, "event.too-large",
                       "result body is larger than %u bytes", SP_STORE_EVENT_MAX);
    json_t *v = NULL;
    sp_store_rc rc = lg_verify_evidence(result, &v, err);
    if (rc == SP_STORE_OK && !result_matches(v, ref))
        rc = lg_fail(err, SP_STORE_CONFLICT, "result.invalid",
                     "the result is not a success, failure or unknown activity.result of %s",
                     ref->attempt_id);
    if (rc == SP_STORE_OK && parsed)
        *parsed = v;
    else
        json_decref(v);
    return rc;
}

sp_store_rc lg_finish_predicates(lg_mut *m, const sp_attempt_ref *ref, const sp_evidence *result,
                                 json_t **parsed, sp_error *err)
{
    if (parsed)
        *parsed = NULL;
    sp_store_rc rc = check_result(ref, result, parsed, err);
    sp_db_rows rows = {0};
    if (rc == SP_STORE_OK)
        rc = lg_check_lease(m, ref, &rows, err);
    sp_db_rows_free(&rows);
    if (rc != SP_STORE_OK && parsed) {
        json_decref(*parsed);
        *parsed = NULL;
    }
    return rc;
}

static sp_store_rc finish_apply(lg_mut *m, const void *r, sp_error *err)
{
    const sp_finish_req *req = r;
    sp_store_rc rc = lg_finish_predicates(m, &req->attempt, &req->result, NULL, err);
    if (rc)
        return rc;
    return end_attempt(m, &req->attempt, "finished", NULL, req->result.body, req->result.body,
                       req->result.len, req->result.digest, err);
}

static const sp_attempt_ref *attempt_of_finish_attempt(const void *req)
{
    return &((const sp_finish_req *)req)->attempt;
}

static const lg_op FINISH_ATTEMPT = {"finish_attempt", "finish-attempt", finish_apply,
                                     lg_result_decode, attempt_of_finish_attempt, NULL,
                                     LG_PREDICT_NONE, NULL};

sp_store_rc sp_store_finish_attempt(sp_store *s, const sp_finish_req *req, sp_finish_res *res,
                                    sp_error *err)
{
    memset(res, 0, sizeof *res);
    sp_store_rc rc = lg_attempt_args(&req->attempt, req->request_id, err);
    if (!rc)
        rc = lg_check_evidence("result", &req->result, err);
    json_t *body = NULL;
    if (!rc)
        rc = lg_pack(&body, err, "[" LG_REF_FMT " s]", LG_REF_ARGS(&req->attempt),
                     req->result.digest);
    if (rc)
        return rc;
    return lg_mutate(s, &FINISH_ATTEMPT, &req->attempt.key, req->request_id, body, req, res,
                     &res->disposition, err);
}

/* ---- expire_attempt ---- */

static sp_store_rc expire_predicates(lg_mut *m, const sp_expire_req *req, const sp_db_rows *rows,
                                     sp_error *err)
{
    if (!lg_attempt_matches(rows, &req->attempt))
        return lg_fail(err, SP_STORE_NOT_FOUND, "attempt.not-found",
                       "no attempt %s with this owner and fence", req->attempt.attempt_id);
    if (!lg_attempt_running(rows))
        return lg_fail(err, SP_STORE_STALE, "lease.lost", "attempt %s already ended",
                       req->attempt.attempt_id);
    uint64_t lease = lg_u64(rows, 0, AT_LEASE), deadline = lg_u64(rows, 0, AT_DEADLINE);
    if (req->reason == SP_EXPIRE_LEASE && m->now < lease)
        return lg_fail(err, SP_STORE_CONFLICT, "lease.not-due", "the lease of %s runs until %llu",
                       req->attempt.attempt_id, (unsigned long long)lease);
    if (req->reason == SP_EXPIRE_DEADLINE && (deadline == 0 || m->now < deadline))
        return lg_fail(err, SP_STORE_CONFLICT, "deadline.not-due",
                       "attempt %s has no deadline before %llu", req->attempt.attempt_id,
                       (unsigned long long)m->now);
    return SP_STORE_OK;
}

/* The canonical expired body every store writes (kernel.md §7.5). */
static json_t *expired_value(const sp_attempt_ref *ref)
{
    return json_pack("{s:I, s:s, s:n, s:s, s:n, s:n, s:b, s:s}", "attempt",
                     (json_int_t)lg_attempt_number(ref->invocation_id, ref->attempt_id),
                     "attemptId", ref->attempt_id, "error", "invocationId", ref->invocation_id,
                     "outcome", "output", "retryable", 1, "status", "expired");
}

static sp_store_rc write_expiry(lg_mut *m, const sp_expire_req *req, sp_error *err)
{
    size_t len = 0;
    char *body = NULL;
    json_t *v = expired_value(&req->attempt);
    sp_store_rc rc = lg_encode(v, &body, &len, "expired result", err);
    json_decref(v);
    if (rc)
        return rc;
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_digest_one("body", body, len, digest);
    const char *reason = sp_expire_reason_name(req->reason);
    rc = end_attempt(m, &req->attempt, "expired", reason, NULL, body, len, digest, err);
    if (rc == SP_STORE_OK)
        rc = insert_audit(m, &req->attempt, "expired", reason, body, len, digest, NULL, err);
    free(body);
    return rc;
}

static sp_store_rc expire_apply(lg_mut *m, const void *r, sp_error *err)
{
    const sp_expire_req *req = r;
    sp_db_rows rows;
    sp_store_rc rc = lg_attempt_row(m, &req->attempt, &rows, err);
    if (rc == SP_STORE_OK)
        rc = expire_predicates(m, req, &rows, err);
    sp_db_rows_free(&rows);
    return rc ? rc : write_expiry(m, req, err);
}

static const sp_attempt_ref *attempt_of_expire_attempt(const void *req)
{
    return &((const sp_expire_req *)req)->attempt;
}

static const lg_op EXPIRE_ATTEMPT = {"expire_attempt", "expire-attempt", expire_apply,
                                     lg_result_decode, attempt_of_expire_attempt, NULL,
                                     LG_PREDICT_NONE, NULL};

sp_store_rc sp_store_expire_attempt(sp_store *s, const sp_expire_req *req, sp_finish_res *res,
                                    sp_error *err)
{
    memset(res, 0, sizeof *res);
    sp_store_rc rc = lg_attempt_args(&req->attempt, req->request_id, err);
    const char *reason = sp_expire_reason_name(req->reason);
    if (!rc && !reason)
        rc = lg_invalid(err, "unknown expiry reason %d", (int)req->reason);
    json_t *body = NULL;
    if (!rc)
        rc = lg_pack(&body, err, "[" LG_REF_FMT " s]", LG_REF_ARGS(&req->attempt), reason);
    if (rc)
        return rc;
    return lg_mutate(s, &EXPIRE_ATTEMPT, &req->attempt.key, req->request_id, body, req, res,
                     &res->disposition, err);
}

/* ---- record_late_evidence ---- */

static sp_store_rc late_apply(lg_mut *m, const void *r, sp_error *err)
{
    const sp_late_evidence_req *req = r;
    sp_db_rows rows;
    sp_store_rc rc = lg_attempt_row(m, &req->attempt, &rows, err);
    if (rc == SP_STORE_OK &&
        (rows.nrows == 0 || strcmp(lg_text(&rows, 0, AT_INVOCATION), req->attempt.invocation_id)))
        rc = lg_fail(err, SP_STORE_NOT_FOUND, "attempt.not-found", "no attempt %s",
                     req->attempt.attempt_id);
    sp_db_rows_free(&rows);
    if (rc == SP_STORE_OK && req->evidence.len > SP_STORE_EVENT_MAX)
        rc = lg_fail(err, SP_STORE_QUOTA, "evidence.too-large", "evidence is larger than %u bytes",
                     SP_STORE_EVENT_MAX);
    if (rc == SP_STORE_OK)
        rc = lg_verify_evidence(&req->evidence, NULL, err);
    uint64_t audit_id = 0;
    if (rc == SP_STORE_OK)
        rc = insert_audit(m, &req->attempt, req->kind, NULL, req->evidence.body, req->evidence.len,
                          req->evidence.digest, &audit_id, err);
    if (rc == SP_STORE_OK)
        m->value = lg_audit_value(audit_id);
    return rc;
}

static const sp_attempt_ref *attempt_of_late_evidence(const void *req)
{
    return &((const sp_late_evidence_req *)req)->attempt;
}

static const lg_op LATE_EVIDENCE = {"record_late_evidence", NULL, late_apply,
                                    lg_audit_decode, attempt_of_late_evidence, NULL,
                                    LG_PREDICT_NONE, NULL};

sp_store_rc sp_store_record_late_evidence(sp_store *s, const sp_late_evidence_req *req,
                                          sp_late_evidence_res *res, sp_error *err)
{
    memset(res, 0, sizeof *res);
    sp_store_rc rc = lg_attempt_args(&req->attempt, req->request_id, err);
    if (!rc)
        rc = lg_check_text("evidence kind", req->kind, SP_STORE_ID_MAX, err);
    if (!rc)
        rc = lg_check_evidence("evidence", &req->evidence, err);
    json_t *body = NULL;
    if (!rc)
        rc = lg_pack(&body, err, "[" LG_REF_FMT " s s]", LG_REF_ARGS(&req->attempt), req->kind,
                     req->evidence.digest);
    if (rc)
        return rc;
    return lg_mutate(s, &LATE_EVIDENCE, &req->attempt.key, req->request_id, body, req, res,
                     &res->disposition, err);
}
