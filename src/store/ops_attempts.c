/*
 * ops_attempts.c - attempt ownership: claim_attempt, heartbeat (= renew) and
 * hold_attempt (store.md §3, engine.md §7, §9, §11), and the fenced-lease
 * check that finish_attempt shares.
 *
 * claim_attempt predicates, in order: invocation exists (not-found/
 * invocation.not-found); run not quarantined (stale/run.quarantined);
 * invocation pending (conflict/invocation.not-claimable); now >= notBeforeMs
 * (conflict/invocation.not-due). Writes: the run's fence counter +1 (never
 * reused), attempt `<invocationId>.<n>` running for `worker` with that fence,
 * leaseUntilMs = now + duration capped at the deadline (when one is given),
 * holder, owner host/pid/start; the invocation becomes running.
 *
 * heartbeat / hold_attempt: the attempt is running, (attempt ID, invocation,
 * owner, fence) match and now < leaseUntilMs - else stale/lease.lost. A
 * heartbeat sets leaseUntilMs = now + extendMs capped at the deadline. A hold
 * records the holder handle, sets the deadline (a 0 deadline keeps the
 * current one) and moves leaseUntilMs to min(requested, deadline). Claims
 * and holds may give the deadline (and a hold its lease) relative to the
 * store's "now" instead, so no client clock is involved.
 *
 * What it must never do: extend a lease that already ran out (no
 * resurrection), hand out a fence twice, or let a replayed heartbeat extend
 * anything (the receipt answers the historical lease).
 */
#include <stdio.h>
#include <stdlib.h>

#include "json/json.h"
#include "store/logic.h"

/* ---- the attempt row and the fenced-lease check ---- */

sp_store_rc lg_attempt_row(lg_mut *m, const sp_attempt_ref *ref, sp_db_rows *rows, sp_error *err)
{
    if (lg_prefetched_attempt(m, ref, rows))
        return SP_STORE_OK;
    return LG_Q(m->s, rows, err,
                "SELECT " LG_ATTEMPT_COLS " FROM attempts"
                " WHERE tenant = ? AND run_id = ? AND attempt_id = ?",
                DB_TEXT(ref->key.tenant), DB_TEXT(ref->key.run_id), DB_TEXT(ref->attempt_id));
}

bool lg_attempt_matches(const sp_db_rows *rows, const sp_attempt_ref *ref)
{
    return rows->nrows == 1 && strcmp(lg_text(rows, 0, AT_INVOCATION), ref->invocation_id) == 0 &&
           strcmp(lg_text(rows, 0, AT_OWNER), ref->owner) == 0 &&
           lg_u64(rows, 0, AT_FENCE) == ref->fence;
}

bool lg_attempt_running(const sp_db_rows *rows)
{
    return strcmp(lg_text(rows, 0, AT_STATUS), "running") == 0;
}

sp_store_rc lg_check_lease(lg_mut *m, const sp_attempt_ref *ref, sp_db_rows *rows, sp_error *err)
{
    sp_store_rc rc = lg_attempt_row(m, ref, rows, err);
    if (rc)
        return rc;
    if (!lg_attempt_matches(rows, ref) || !lg_attempt_running(rows) ||
        m->now >= lg_u64(rows, 0, AT_LEASE))
        return lg_fail(err, SP_STORE_STALE, "lease.lost",
                       "attempt %s is not running under this owner, fence and lease",
                       ref->attempt_id);
    return SP_STORE_OK;
}

static uint64_t capped(uint64_t lease, uint64_t deadline)
{
    return deadline && lease > deadline ? deadline : lease;
}

sp_store_rc lg_check_holder(const char *holder, sp_error *err)
{
    size_t len = strnlen(holder, SP_STORE_HOLDER_MAX + 1);
    if (len > SP_STORE_HOLDER_MAX)
        return lg_fail(err, SP_STORE_QUOTA, "holder.too-large", "holder is larger than %u bytes",
                       SP_STORE_HOLDER_MAX);
    sp_error perr = {0};
    json_t *v = sp_json_parse_canonical(holder, len, &perr);
    sp_error_clear(&perr);
    if (!v)
        return lg_fail(err, SP_STORE_CONFLICT, "holder.invalid", "holder is not canonical JSON");
    json_decref(v);
    return SP_STORE_OK;
}

/* ---- claim_attempt ---- */

#define INV_COLS                                                                                   \
    "node_id, action_id, effect_key, input, input_digest, status, attempt_number, not_before_ms"
enum {
    IV_NODE,
    IV_ACTION,
    IV_EFFECT,
    IV_INPUT,
    IV_INPUT_DIGEST,
    IV_STATUS,
    IV_NUMBER,
    IV_NOT_BEFORE
};

static sp_store_rc claim_predicates(lg_mut *m, const char *invocation_id, const sp_db_rows *inv,
                                    sp_error *err)
{
    if (inv->nrows == 0)
        return lg_fail(err, SP_STORE_NOT_FOUND, "invocation.not-found",
                       "invocation %s does not exist", invocation_id);
    sp_store_rc rc = lg_need_unquarantined(m, err);
    if (rc)
        return rc;
    if (strcmp(lg_text(inv, 0, IV_STATUS), "pending") != 0)
        return lg_fail(err, SP_STORE_CONFLICT, "invocation.not-claimable", "invocation %s is %s",
                       invocation_id, lg_text(inv, 0, IV_STATUS));
    if (m->now < lg_u64(inv, 0, IV_NOT_BEFORE))
        return lg_fail(err, SP_STORE_CONFLICT, "invocation.not-due",
                       "invocation %s is not due before %llu", invocation_id,
                       (unsigned long long)lg_u64(inv, 0, IV_NOT_BEFORE));
    return SP_STORE_OK;
}

/* The invocation as `inv` (its row) says, borrowing its strings. */
static lg_invocation invocation_of(const char *invocation_id, const sp_db_rows *inv)
{
    return (lg_invocation){invocation_id,
                           lg_text(inv, 0, IV_NODE),
                           lg_text(inv, 0, IV_ACTION),
                           lg_text(inv, 0, IV_EFFECT),
                           lg_text(inv, 0, IV_INPUT),
                           lg_len(inv, 0, IV_INPUT),
                           lg_text(inv, 0, IV_INPUT_DIGEST),
                           (uint32_t)lg_u64(inv, 0, IV_NUMBER)};
}

/* The claim as it will be answered, borrowing strings from `inv`. */
static void claim_of(const lg_mut *m, const sp_claim_req *terms, const lg_invocation *inv,
                     sp_claim *c)
{
    c->attempt.key = *m->key;
    snprintf(c->attempt.invocation_id, sizeof c->attempt.invocation_id, "%s", inv->invocation_id);
    snprintf(c->attempt.owner, sizeof c->attempt.owner, "%s", terms->worker);
    c->attempt_number = inv->attempt_number;
    snprintf(c->attempt.attempt_id, sizeof c->attempt.attempt_id, "%s.%u", inv->invocation_id,
             c->attempt_number);
    c->attempt.fence = lg_run_u64(m, RUN_FENCE) + 1;
    c->deadline_ms =
        terms->deadline_in_ms ? lg_sat_add(m->now, terms->deadline_in_ms) : terms->deadline_ms;
    c->lease_until_ms = capped(lg_sat_add(m->now, terms->lease_duration_ms), c->deadline_ms);
    c->node_id = (char *)inv->node_id;
    c->action_id = (char *)inv->action_id;
    c->effect_key = (char *)inv->effect_key;
    c->input = (char *)inv->input;
    c->input_len = inv->input_len;
    snprintf(c->input_digest, sizeof c->input_digest, "%s", inv->input_digest);
}

/* The attempt of claim `c` (the run's fence counter in its delta); the
 * invocation becomes running unless it was inserted running. */
static sp_store_rc insert_attempt(lg_mut *m, const sp_claim_req *terms, const sp_claim *c,
                                  bool invocation_running, sp_error *err)
{
    m->delta.fence = true;
    m->delta.fence_counter = c->attempt.fence;
    sp_store_rc rc =
        LG_Q(m->s, NULL, err,
             "INSERT INTO attempts (tenant, run_id, attempt_id, invocation_id,"
             " attempt_number, owner, fence, lease_until_ms, deadline_ms, status, holder,"
             " owner_host, owner_pid, owner_started, started_at_ms)"
             " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?, ?)",
             DB_TEXT(m->key->tenant), DB_TEXT(m->key->run_id), DB_TEXT(c->attempt.attempt_id),
             DB_TEXT(c->attempt.invocation_id), DB_INT(c->attempt_number), DB_TEXT(terms->worker),
             DB_INT(c->attempt.fence), DB_INT(c->lease_until_ms), DB_INT(c->deadline_ms),
             DB_OPT_TEXT(terms->holder), DB_TEXT(terms->host.host_id), DB_INT(terms->host.pid),
             DB_INT(terms->host.pid_started), DB_INT(m->now));
    if (rc == SP_STORE_OK && !terms->holder)
        lg_predict_claimed(m, &c->attempt, c->attempt_number, c->lease_until_ms, c->deadline_ms);
    if (rc == SP_STORE_OK && !invocation_running)
        rc = LG_W1(m->s, err,
                   "UPDATE invocations SET status = 'running'"
                   " WHERE tenant = ? AND run_id = ? AND invocation_id = ?",
                   DB_TEXT(m->key->tenant), DB_TEXT(m->key->run_id),
                   DB_TEXT(c->attempt.invocation_id));
    return rc;
}

#define INVOCATION_SQL                                                                             \
    "SELECT " INV_COLS " FROM invocations WHERE tenant = ? AND run_id = ? AND invocation_id = ?"

/* Claim the pending invocation `invocation_id` under `terms`, its row
 * `read` (NULL: read it here); *value is the claim's typed value. */
static sp_store_rc claim_pending(lg_mut *m, const sp_claim_req *terms, const char *invocation_id,
                                 const sp_db_rows *read, json_t **value, sp_error *err)
{
    sp_db_rows own = {0};
    sp_store_rc rc = read ? SP_STORE_OK
                          : LG_Q(m->s, &own, err, INVOCATION_SQL, DB_TEXT(m->key->tenant),
                                 DB_TEXT(m->key->run_id), DB_TEXT(invocation_id));
    const sp_db_rows *inv = read ? read : &own;
    if (rc == SP_STORE_OK)
        rc = claim_predicates(m, invocation_id, inv, err);
    sp_claim c = {0};
    if (rc == SP_STORE_OK) {
        lg_invocation facts = invocation_of(invocation_id, inv);
        claim_of(m, terms, &facts, &c);
        rc = insert_attempt(m, terms, &c, false, err);
    }
    if (rc == SP_STORE_OK && !(*value = lg_claim_value(&c)))
        rc = lg_encode_fail(err, true, "claim");
    sp_db_rows_free(&own);
    return rc;
}

static sp_store_rc claim_apply(lg_mut *m, const void *r, sp_error *err)
{
    const sp_claim_req *req = r;
    return claim_pending(m, req, req->invocation_id, &m->extra, &m->value, err);
}

/* The invocation's row, read with the lock (lg_op.extra_read). */
static void claim_extra_read(const void *r, sp_db_read *read, sp_db_val *params)
{
    const sp_claim_req *req = r;
    params[0] = DB_TEXT(req->key.tenant);
    params[1] = DB_TEXT(req->key.run_id);
    params[2] = DB_TEXT(req->invocation_id);
    *read = (sp_db_read){INVOCATION_SQL, params, 3};
}

/* ---- claims made inside a decision (settle_attempt) ---- */

bool lg_claim_wanted(const lg_mut *m, const char *invocation_id, uint64_t not_before_ms)
{
    const lg_claimer *c = m->claimer;
    if (!c || m->now < not_before_ms || lg_run_quarantined(m))
        return false;
    for (size_t i = 0; i < c->nwanted; i++)
        if (strcmp(c->wanted[i], invocation_id) == 0)
            return true;
    return false;
}

static sp_store_rc claimed(lg_mut *m, json_t *value, sp_error *err)
{
    if (!value || json_array_append_new(m->claimer->made, value))
        return lg_encode_fail(err, true, "claims");
    return SP_STORE_OK;
}

sp_store_rc lg_claim_inserted(lg_mut *m, const lg_invocation *inv, sp_error *err)
{
    sp_claim c = {0};
    claim_of(m, m->claimer->terms, inv, &c);
    sp_store_rc rc = insert_attempt(m, m->claimer->terms, &c, true, err);
    return rc ? rc : claimed(m, lg_claim_value(&c), err);
}

sp_store_rc lg_claim_retried(lg_mut *m, const char *invocation_id, sp_error *err)
{
    json_t *value = NULL;
    sp_store_rc rc = claim_pending(m, m->claimer->terms, invocation_id, NULL, &value, err);
    return rc ? rc : claimed(m, value, err);
}

static sp_store_rc claim_validate(const sp_claim_req *req, sp_error *err)
{
    sp_store_rc rc = lg_check_key(&req->key, err);
    if (!rc)
        rc = lg_check_text("request ID", req->request_id, SP_STORE_REQUEST_ID_MAX, err);
    if (!rc)
        rc = lg_check_text("invocation ID", req->invocation_id, SP_ID_LEN, err);
    if (!rc)
        rc = lg_check_text("worker", req->worker, SP_STORE_ID_MAX, err);
    if (!rc && strnlen(req->host.host_id, sizeof req->host.host_id) == sizeof req->host.host_id)
        rc = lg_invalid(err, "host ID must be NUL-terminated");
    if (!rc)
        rc = lg_check_u63("lease duration", req->lease_duration_ms, err);
    if (!rc)
        rc = lg_check_u63("deadline", req->deadline_ms, err);
    if (!rc)
        rc = lg_check_u63("relative deadline", req->deadline_in_ms, err);
    if (!rc)
        rc = lg_check_u63("owner start time", req->host.pid_started, err);
    if (!rc && req->holder)
        rc = lg_check_holder(req->holder, err);
    return rc;
}

static bool claim_skips_busy(const void *req)
{
    return ((const sp_claim_req *)req)->skip_busy;
}

static const lg_op CLAIM_ATTEMPT = {"claim_attempt",  "claim-attempt",  claim_apply,
                                    lg_claim_decode,  NULL,             claim_extra_read,
                                    LG_PREDICT_LEAVES, claim_skips_busy};

sp_store_rc sp_store_claim_attempt(sp_store *s, const sp_claim_req *req, sp_claim *res,
                                   sp_error *err)
{
    memset(res, 0, sizeof *res);
    sp_store_rc rc = claim_validate(req, err);
    json_t *body = NULL;
    if (!rc)
        rc = lg_pack(&body, err, "[s s s s o s? o s I o o]", req->key.tenant, req->key.run_id,
                     req->invocation_id, req->worker, lg_u63_json(req->lease_duration_ms),
                     req->holder, lg_u63_json(req->deadline_ms), req->host.host_id,
                     (json_int_t)req->host.pid, lg_u63_json(req->host.pid_started),
                     lg_u63_json(req->deadline_in_ms));
    if (rc)
        return rc;
    return lg_mutate(s, &CLAIM_ATTEMPT, &req->key, req->request_id, body, req, res,
                     &res->disposition, err);
}

/* ---- heartbeat ---- */

static sp_store_rc set_lease(lg_mut *m, const sp_attempt_ref *ref, uint64_t lease, sp_error *err)
{
    sp_store_rc rc = LG_W1(m->s, err,
                           "UPDATE attempts SET lease_until_ms = ?"
                           " WHERE tenant = ? AND run_id = ? AND attempt_id = ?",
                           DB_INT(lease), DB_TEXT(ref->key.tenant), DB_TEXT(ref->key.run_id),
                           DB_TEXT(ref->attempt_id));
    if (rc == SP_STORE_OK)
        m->value = lg_lease_value(lease);
    return rc;
}

static sp_store_rc heartbeat_apply(lg_mut *m, const void *r, sp_error *err)
{
    const sp_heartbeat_req *req = r;
    sp_db_rows rows;
    sp_store_rc rc = lg_check_lease(m, &req->attempt, &rows, err);
    uint64_t lease =
        capped(lg_sat_add(m->now, req->extend_ms), rc ? 0 : lg_u64(&rows, 0, AT_DEADLINE));
    sp_db_rows_free(&rows);
    return rc ? rc : set_lease(m, &req->attempt, lease, err);
}

static const sp_attempt_ref *attempt_of_heartbeat(const void *req)
{
    return &((const sp_heartbeat_req *)req)->attempt;
}

static const lg_op HEARTBEAT = {"heartbeat", "heartbeat", heartbeat_apply,
                                lg_lease_decode, attempt_of_heartbeat, NULL, LG_PREDICT_NONE, NULL};

sp_store_rc sp_store_heartbeat(sp_store *s, const sp_heartbeat_req *req, sp_heartbeat_res *res,
                               sp_error *err)
{
    memset(res, 0, sizeof *res);
    sp_store_rc rc = lg_check_ref(&req->attempt, err);
    if (!rc)
        rc = lg_check_text("request ID", req->request_id, SP_STORE_REQUEST_ID_MAX, err);
    if (!rc)
        rc = lg_check_u63("extension", req->extend_ms, err);
    json_t *body = NULL;
    if (!rc)
        rc = lg_pack(&body, err, "[" LG_REF_FMT " o]", LG_REF_ARGS(&req->attempt),
                     lg_u63_json(req->extend_ms));
    if (rc)
        return rc;
    return lg_mutate(s, &HEARTBEAT, &req->attempt.key, req->request_id, body, req, res,
                     &res->disposition, err);
}

/* ---- hold_attempt ---- */

static sp_store_rc hold_apply(lg_mut *m, const void *r, sp_error *err)
{
    const sp_hold_req *req = r;
    sp_db_rows rows;
    sp_store_rc rc = lg_check_lease(m, &req->attempt, &rows, err);
    uint64_t deadline = req->deadline_in_ms ? lg_sat_add(m->now, req->deadline_in_ms)
                        : req->deadline_ms  ? req->deadline_ms
                                            : (rc ? 0 : lg_u64(&rows, 0, AT_DEADLINE));
    uint64_t requested = req->lease_in_ms ? lg_sat_add(m->now, req->lease_in_ms) : req->lease_until_ms;
    uint64_t lease = capped(requested, deadline);
    sp_db_rows_free(&rows);
    if (rc == SP_STORE_OK)
        rc = LG_W1(m->s, err,
                   "UPDATE attempts SET holder = ?, deadline_ms = ?"
                   " WHERE tenant = ? AND run_id = ? AND attempt_id = ?",
                   DB_TEXT(req->holder), DB_INT(deadline), DB_TEXT(req->attempt.key.tenant),
                   DB_TEXT(req->attempt.key.run_id), DB_TEXT(req->attempt.attempt_id));
    return rc ? rc : set_lease(m, &req->attempt, lease, err);
}

static const sp_attempt_ref *attempt_of_hold_attempt(const void *req)
{
    return &((const sp_hold_req *)req)->attempt;
}

static const lg_op HOLD_ATTEMPT = {"hold_attempt", "hold-attempt", hold_apply,
                                   lg_lease_decode, attempt_of_hold_attempt, NULL, LG_PREDICT_NONE, NULL};

sp_store_rc sp_store_hold_attempt(sp_store *s, const sp_hold_req *req, sp_heartbeat_res *res,
                                  sp_error *err)
{
    memset(res, 0, sizeof *res);
    sp_store_rc rc = lg_check_ref(&req->attempt, err);
    if (!rc)
        rc = lg_check_text("request ID", req->request_id, SP_STORE_REQUEST_ID_MAX, err);
    if (!rc)
        rc = lg_check_u63("lease end", req->lease_until_ms, err);
    if (!rc)
        rc = lg_check_u63("deadline", req->deadline_ms, err);
    if (!rc)
        rc = lg_check_u63("relative lease", req->lease_in_ms, err);
    if (!rc)
        rc = lg_check_u63("relative deadline", req->deadline_in_ms, err);
    if (!rc)
        rc =
            req->holder ? lg_check_holder(req->holder, err) : lg_invalid(err, "holder is required");
    json_t *body = NULL;
    if (!rc)
        rc = lg_pack(&body, err, "[" LG_REF_FMT " s o o o o]", LG_REF_ARGS(&req->attempt),
                     req->holder, lg_u63_json(req->lease_until_ms), lg_u63_json(req->deadline_ms),
                     lg_u63_json(req->lease_in_ms), lg_u63_json(req->deadline_in_ms));
    if (rc)
        return rc;
    return lg_mutate(s, &HOLD_ATTEMPT, &req->attempt.key, req->request_id, body, req, res,
                     &res->disposition, err);
}
