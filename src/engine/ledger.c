/*
 * ledger.c - every store mutation of the engine with its request ID and its
 * retry (see ledger.h). The request-ID formats are in request_id() below,
 * all of them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/random.h"
#include "engine/internal.h"
#include "engine/ledger.h"

typedef enum request_kind {
    ID_START,       /* start/<startKey> */
    /* signal/<messageId>: ledger_signal_id() */
    ID_RELEASE,     /* release/<revision>/<quarantineAtMs> (a, b: decimals) */
    ID_COMMIT,      /* commit/<revision+1>/<eventId> (a: decimal) */
    ID_QUARANTINE,  /* quarantine/<runId>/<nonce>/<n> */
    ID_CLAIM,       /* claim/<invocationId>/<nonce>/<n> */
    ID_CLAIM_ACTOR, /* claim/<invocationId>/<owner> */
    ID_HEARTBEAT,   /* heartbeat/<attemptId>/<nonce>/<n> */
    ID_RENEW,       /* renew/<attemptId>/<nonce>/<n> */
    ID_HOLD,        /* hold/<attemptId> */
    ID_FINISH,      /* finish/<attemptId> */
    ID_SETTLE,      /* settle/<attemptId> */
    ID_EXPIRE,      /* expire/<attemptId> */
    ID_LATE,        /* late/<attemptId>/<kind>/<nonce> */
    ID_AGENT_EVENT, /* agent-event/<attemptId>/<n> (b: decimal) */
    ID_AUDIT,       /* audit/<attemptId>/<kind>/<random> */
    ID_TIMER,       /* timer/<timerId>: one firing per timer, whoever fires it */
} request_kind;

/* <nonce>: this engine's random nonce; <n>: its request counter (a new
 * request each time: a retry of the same call reuses the ID it built). */
static void request_id(sp_engine *e, request_kind kind, const char *a, const char *b,
                       char out[SP_STORE_REQUEST_ID_MAX])
{
    const size_t n = SP_STORE_REQUEST_ID_MAX;
    unsigned long count = atomic_fetch_add(&e->counter, 1) + 1;
    char rnd[17];
    switch (kind) {
    case ID_START: snprintf(out, n, "start/%s", a); return;
    case ID_RELEASE: snprintf(out, n, "release/%s/%s", a, b); return;
    case ID_COMMIT: snprintf(out, n, "commit/%s/%s", a, b); return;
    case ID_QUARANTINE: snprintf(out, n, "quarantine/%s/%s/%lu", a, e->nonce, count); return;
    case ID_CLAIM: snprintf(out, n, "claim/%s/%s/%lu", a, e->nonce, count); return;
    case ID_CLAIM_ACTOR: snprintf(out, n, "claim/%s/%s", a, b); return;
    case ID_HEARTBEAT: snprintf(out, n, "heartbeat/%s/%s/%lu", a, e->nonce, count); return;
    case ID_RENEW: snprintf(out, n, "renew/%s/%s/%lu", a, e->nonce, count); return;
    case ID_HOLD: snprintf(out, n, "hold/%s", a); return;
    case ID_FINISH: snprintf(out, n, "finish/%s", a); return;
    case ID_SETTLE: snprintf(out, n, "settle/%s", a); return;
    case ID_EXPIRE: snprintf(out, n, "expire/%s", a); return;
    case ID_LATE: snprintf(out, n, "late/%s/%s/%s", a, b, e->nonce); return;
    case ID_AGENT_EVENT: snprintf(out, n, "agent-event/%s/%s", a, b); return;
    case ID_TIMER: snprintf(out, n, "timer/%s", a); return;
    case ID_AUDIT:
        sp_random_hex(rnd, 8);
        snprintf(out, n, "audit/%s/%s/%s", a, b, rnd);
        return;
    }
}

static void decimal(uint64_t v, char out[24]) { snprintf(out, 24, "%llu", (unsigned long long)v); }

sp_store_rc ledger_put_blob(sp_engine *e, const char *digest, const void *bytes, size_t len,
                            sp_error *err)
{
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_put_blob(e->store, digest, bytes, len, err));
    return rc;
}

sp_store_rc ledger_create_run(sp_engine *e, sp_create_run_req *req, sp_create_run_res *res,
                              sp_error *err)
{
    char id[SP_STORE_REQUEST_ID_MAX];
    request_id(e, ID_START, req->start_key, NULL, id);
    req->request_id = id;
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_create_run(e->store, req, res, err));
    req->request_id = NULL;
    return rc;
}

sp_store_rc ledger_append(sp_engine *e, sp_append_event_req *req, sp_append_event_res *res,
                          sp_error *err)
{
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_append_event(e->store, req, res, err));
    return rc;
}

sp_store_rc ledger_fire_timer(sp_engine *e, const sp_timer_item *t, sp_append_event_res *res,
                              sp_error *err)
{
    char id[SP_STORE_REQUEST_ID_MAX];
    request_id(e, ID_TIMER, t->timer_id, NULL, id);
    sp_fire_timer_req req = {t->key, id, t->timer_id};
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_fire_timer(e->store, &req, res, err));
    return rc;
}

sp_store_rc ledger_scan_timers(sp_engine *e, size_t limit, sp_timer_page *out, sp_error *err)
{
    return sp_store_scan_timers(e->store, limit, out, err);
}

sp_store_rc ledger_next_timer(sp_engine *e, uint64_t *due_at_ms, sp_error *err)
{
    return sp_store_next_timer(e->store, NULL, due_at_ms, err);
}

sp_store_listener *ledger_listen(sp_engine *e, sp_wake_fn fn, void *ctx)
{
    sp_error err = {0};
    sp_store_listener *l = sp_store_listen(e->store, fn, ctx, &err);
    sp_error_clear(&err); /* no wake-ups: the engine polls, as without them */
    return l;
}

void ledger_listen_stop(sp_engine *e)
{
    sp_store_listener_stop(e->listener);
    e->listener = NULL;
    e->listening = false;
}

void ledger_signal_id(const char *message_id, char out[SP_STORE_REQUEST_ID_MAX])
{
    snprintf(out, SP_STORE_REQUEST_ID_MAX, "signal/%s", message_id);
}

sp_store_rc ledger_release(sp_engine *e, const sp_run_key *key, uint64_t revision,
                           uint64_t quarantine_at_ms, sp_flag_res *res, sp_error *err)
{
    char id[SP_STORE_REQUEST_ID_MAX], a[24], b[24];
    decimal(revision, a);
    decimal(quarantine_at_ms, b);
    request_id(e, ID_RELEASE, a, b, id);
    sp_release_req req = {*key, id};
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_release_run(e->store, &req, res, err));
    return rc;
}

sp_store_rc ledger_commit_turn(sp_engine *e, sp_commit_turn_req *req, sp_commit_turn_res *res,
                               sp_error *err)
{
    char id[SP_STORE_REQUEST_ID_MAX], next[24];
    decimal(req->expected_revision + 1, next);
    request_id(e, ID_COMMIT, next, req->event_id, id);
    req->request_id = id;
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_commit_turn(e->store, req, res, err));
    req->request_id = NULL;
    return rc;
}

sp_store_rc ledger_quarantine(sp_engine *e, sp_quarantine_req *req, sp_flag_res *res,
                              sp_error *err)
{
    char id[SP_STORE_REQUEST_ID_MAX];
    request_id(e, ID_QUARANTINE, req->key.run_id, NULL, id);
    req->request_id = id;
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_quarantine_run(e->store, req, res, err));
    req->request_id = NULL;
    return rc;
}

static sp_store_rc claim(sp_engine *e, request_kind kind, sp_claim_req *req, sp_claim *res,
                         sp_error *err)
{
    char id[SP_STORE_REQUEST_ID_MAX];
    request_id(e, kind, req->invocation_id, req->worker, id);
    req->request_id = id;
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_claim_attempt(e->store, req, res, err));
    req->request_id = NULL;
    return rc;
}

sp_store_rc ledger_claim(sp_engine *e, sp_claim_req *req, sp_claim *res, sp_error *err)
{
    return claim(e, ID_CLAIM, req, res, err);
}

sp_store_rc ledger_claim_actor(sp_engine *e, sp_claim_req *req, sp_claim *res, sp_error *err)
{
    return claim(e, ID_CLAIM_ACTOR, req, res, err);
}

sp_store_rc ledger_heartbeat(sp_engine *e, const sp_attempt_ref *ref, uint64_t extend_ms,
                             bool renew, sp_heartbeat_res *res, sp_error *err)
{
    char id[SP_STORE_REQUEST_ID_MAX];
    request_id(e, renew ? ID_RENEW : ID_HEARTBEAT, ref->attempt_id, NULL, id);
    sp_heartbeat_req req = {*ref, id, extend_ms};
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_heartbeat(e->store, &req, res, err));
    return rc;
}

sp_store_rc ledger_hold(sp_engine *e, sp_hold_req *req, sp_heartbeat_res *res, sp_error *err)
{
    char id[SP_STORE_REQUEST_ID_MAX];
    request_id(e, ID_HOLD, req->attempt.attempt_id, NULL, id);
    req->request_id = id;
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_hold_attempt(e->store, req, res, err));
    req->request_id = NULL;
    return rc;
}

static void evidence(sp_engine *e, const sp_attempt_ref *ref, const char *id, const char *kind,
                     const char *body, size_t len)
{
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_digest_one("body", body, len, digest);
    sp_late_evidence_req req = {*ref, id, kind, {body, len, digest}};
    sp_late_evidence_res res;
    sp_error err = {0};
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, &err, sp_store_record_late_evidence(e->store, &req, &res, &err));
    (void)rc; /* best effort: the evidence's owner already acted */
    sp_error_clear(&err);
}

void ledger_keep_late(sp_engine *e, const sp_attempt_ref *ref, const char *kind, const char *body,
                      size_t len)
{
    char id[SP_STORE_REQUEST_ID_MAX];
    request_id(e, ID_LATE, ref->attempt_id, kind, id);
    evidence(e, ref, id, kind, body, len);
}

void ledger_agent_event(sp_engine *e, const sp_attempt_ref *ref, uint32_t n, const char *body,
                        size_t len)
{
    char id[SP_STORE_REQUEST_ID_MAX], number[24];
    decimal(n, number);
    request_id(e, ID_AGENT_EVENT, ref->attempt_id, number, id);
    evidence(e, ref, id, "agent.event", body, len);
}

void ledger_audit(sp_engine *e, const sp_attempt_ref *ref, const char *kind, const char *body,
                  size_t len)
{
    char id[SP_STORE_REQUEST_ID_MAX];
    request_id(e, ID_AUDIT, ref->attempt_id, kind, id);
    evidence(e, ref, id, kind, body, len);
}

void ledger_put_log(sp_engine *e, const sp_attempt_ref *ref, const sp_attempt_logs *logs)
{
    sp_log_tail out = {logs->out.text, logs->out.len, logs->out.dropped};
    sp_log_tail err_tail = {logs->err.text, logs->err.len, logs->err.dropped};
    sp_error err = {0};
    sp_store_rc rc;
    if (sp_store_in_batch(e->store))
        rc = sp_store_put_attempt_log(e->store, ref, &out, &err_tail, &err);
    else
        ENGINE_RETRY(e, rc, &err, sp_store_put_attempt_log(e->store, ref, &out, &err_tail, &err));
    (void)rc; /* best effort: the step's result is what counts */
    sp_error_clear(&err);
}

sp_store_rc ledger_finish_or_keep(sp_engine *e, const sp_attempt_ref *ref, const char *body,
                                  size_t len, const char *late_kind, sp_error *err)
{
    char id[SP_STORE_REQUEST_ID_MAX], digest[SP_DIGEST_TEXT_LEN + 1];
    request_id(e, ID_FINISH, ref->attempt_id, NULL, id);
    sp_digest_one("body", body, len, digest);
    sp_finish_req req = {*ref, id, {body, len, digest}};
    sp_finish_res res;
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_finish_attempt(e->store, &req, &res, err));
    if (rc == SP_STORE_STALE)
        ledger_keep_late(e, ref, late_kind, body, len);
    return rc;
}

sp_store_rc ledger_settle(sp_engine *e, const sp_attempt_ref *ref, const char *body, size_t len,
                          const sp_decider *decider, sp_settle_res *res, sp_error *err)
{
    char id[SP_STORE_REQUEST_ID_MAX], digest[SP_DIGEST_TEXT_LEN + 1];
    request_id(e, ID_SETTLE, ref->attempt_id, NULL, id);
    sp_digest_one("body", body, len, digest);
    sp_settle_req req = {.attempt = *ref,
                         .request_id = id,
                         .result = {body, len, digest},
                         .decider = decider,
                         .worker = e->worker_id,
                         .lease_duration_ms = e->cfg.lease_ms,
                         .host = e->host};
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_settle_attempt(e->store, &req, res, err));
    return rc;
}

void ledger_lock_ahead_settles(sp_engine *e, const sp_attempt_ref *const *refs, size_t n)
{
    char(*ids)[SP_STORE_REQUEST_ID_MAX] = n ? calloc(n, sizeof *ids) : NULL;
    sp_lock_ahead *reqs = n ? calloc(n, sizeof *reqs) : NULL;
    if (ids && reqs) { /* out of memory: each settle reads on its own */
        for (size_t i = 0; i < n; i++) {
            request_id(e, ID_SETTLE, refs[i]->attempt_id, NULL, ids[i]); /* as ledger_settle's */
            reqs[i] = (sp_lock_ahead){refs[i], ids[i]};
        }
        sp_error err = {0};
        sp_store_rc rc;
        ENGINE_RETRY(e, rc, &err, sp_store_batch_lock_ahead(e->store, reqs, n, &err));
        sp_error_clear(&err); /* the batch failed: its requests say so, and it is aborted */
    }
    free(ids);
    free(reqs);
}

sp_store_rc ledger_expire(sp_engine *e, const sp_attempt_ref *ref, sp_expire_reason reason,
                          sp_finish_res *res, sp_error *err)
{
    char id[SP_STORE_REQUEST_ID_MAX];
    request_id(e, ID_EXPIRE, ref->attempt_id, NULL, id);
    sp_expire_req req = {*ref, id, reason};
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_expire_attempt(e->store, &req, res, err));
    return rc;
}

/* ---- reads ---- */

sp_store_rc ledger_get_run(sp_engine *e, const sp_run_key *key, sp_run_view *out, bool *found, sp_error *err)
{
    return sp_store_get_run(e->store, key, out, found, err);
}

sp_store_rc ledger_list_invocations(sp_engine *e, const sp_run_key *key, sp_invocation_list *out, sp_error *err)
{
    return sp_store_list_invocations(e->store, key, out, err);
}

sp_store_rc ledger_list_events(sp_engine *e, const sp_run_key *key, uint64_t after_sequence, size_t limit, sp_event_list *out, sp_error *err)
{
    return sp_store_list_events(e->store, key, after_sequence, limit, out, err);
}

sp_store_rc ledger_get_receipt(sp_engine *e, const sp_run_key *key, const char *request_id, sp_receipt *out, bool *found, sp_error *err)
{
    return sp_store_get_receipt(e->store, key, request_id, out, found, err);
}

sp_store_rc ledger_get_blob(sp_engine *e, const char *digest, void **bytes, size_t *len, bool *found, sp_error *err)
{
    return sp_store_get_blob(e->store, digest, bytes, len, found, err);
}

sp_store_rc ledger_secret(sp_engine *e, unsigned char out[32], sp_error *err)
{
    return sp_store_secret(e->store, out, err);
}

sp_store_rc ledger_load_turn(sp_engine *e, const sp_run_key *key, sp_turn *out, bool *found, sp_error *err)
{
    return sp_store_load_turn(e->store, key, out, found, err);
}

sp_store_rc ledger_scan_ready(sp_engine *e, const char *cursor, size_t limit, sp_key_page *out, sp_error *err)
{
    return sp_store_scan_ready(e->store, cursor, limit, out, err);
}

sp_store_rc ledger_scan_outbox(sp_engine *e, const sp_run_key *only, const char *cursor, size_t limit, sp_due_page *out, sp_error *err)
{
    return sp_store_scan_outbox(e->store, only, cursor, limit, out, err);
}

sp_store_rc ledger_scan_expiring(sp_engine *e, const char *cursor, size_t limit, sp_due_page *out, sp_error *err)
{
    return sp_store_scan_expiring(e->store, cursor, limit, out, err);
}

sp_store_rc ledger_scan_running(sp_engine *e, const char *host_id, const char *cursor, size_t limit, sp_due_page *out, sp_error *err)
{
    return sp_store_scan_running(e->store, host_id, cursor, limit, out, err);
}

sp_store_rc ledger_scan_held(sp_engine *e, const char *cursor, size_t limit, sp_held_page *out, sp_error *err)
{
    return sp_store_scan_held(e->store, cursor, limit, out, err);
}

sp_store_rc ledger_get_package(sp_engine *e, const char *digest, char **bytes, size_t *len, bool *found, sp_error *err)
{
    return sp_store_get_package(e->store, digest, bytes, len, found, err);
}

sp_store_rc ledger_find_run(sp_engine *e, const char *tenant, const char *start_key, sp_run_key *out, bool *found, sp_error *err)
{
    return sp_store_find_run(e->store, tenant, start_key, out, found, err);
}

/* ---- the batch, and the store itself ---- */

sp_store_rc ledger_batch_begin(sp_engine *e, sp_error *err)
{
    return sp_store_batch_begin(e->store, err);
}

/* A COMMIT whose answer was lost (`err`): whether it happened, asked until
 * the store can tell. OK when it did; unavailable when it did not (the
 * batch is made again); unknown-commit when the store cannot tell (its
 * claims then wait out their leases). */
static sp_store_rc commit_resolved(sp_engine *e, sp_error *err)
{
    sp_commit_outcome outcome = SP_COMMIT_UNKNOWABLE;
    sp_error asked = {0};
    sp_store_rc rc;
    ENGINE_RETRY_READ(e, rc, &asked, sp_store_commit_outcome(e->store, &outcome, &asked));
    sp_error_clear(&asked);
    if (rc != SP_STORE_OK || outcome == SP_COMMIT_UNKNOWABLE)
        return SP_STORE_UNKNOWN_COMMIT;
    if (outcome == SP_COMMIT_HAPPENED) {
        sp_error_clear(err);
        return SP_STORE_OK;
    }
    char lost[SP_MESSAGE_MAX];
    snprintf(lost, sizeof lost, "%s", err->message);
    sp_fail(err, "store.io", "%s; read back, it did not commit", lost);
    return SP_STORE_UNAVAILABLE;
}

/* A commit's answer `rc`: its ticket kept, a lost one read back. */
static sp_store_rc answered(sp_engine *e, sp_store_rc rc, uint64_t ticket, sp_error *err)
{
    if (ticket > e->unflushed) /* tickets grow: the last one covers the others */
        e->unflushed = ticket;
    return rc == SP_STORE_UNKNOWN_COMMIT ? commit_resolved(e, err) : rc;
}

sp_store_rc ledger_batch_commit(sp_engine *e, sp_error *err)
{
    uint64_t ticket = 0;
    sp_store_rc rc = sp_store_batch_commit_deferred(e->store, &ticket, err);
    return answered(e, rc, ticket, err);
}

sp_store_rc ledger_batch_send(sp_engine *e, bool *later, sp_error *err)
{
    uint64_t ticket = 0;
    sp_store_rc rc = sp_store_batch_send(e->store, &ticket, later, err);
    return answered(e, rc, ticket, err);
}

sp_store_rc ledger_batch_answer(sp_engine *e, sp_error *err)
{
    uint64_t ticket = 0;
    sp_store_rc rc = sp_store_batch_answer(e->store, &ticket, err);
    return answered(e, rc, ticket, err);
}

sp_store_rc ledger_wait_flushed(sp_engine *e, sp_error *err)
{
    if (!e->unflushed)
        return SP_STORE_OK;
    sp_store_rc rc = sp_store_wait_flushed(e->store, e->unflushed, err);
    if (rc == SP_STORE_OK)
        e->unflushed = 0;
    return rc;
}

bool ledger_unflushed(const sp_engine *e) { return e->unflushed != 0; }

void ledger_batch_abort(sp_engine *e) { sp_store_batch_abort(e->store); }

bool ledger_in_batch(sp_engine *e) { return sp_store_in_batch(e->store); }

bool ledger_batch_writes(sp_engine *e) { return sp_store_batch_writes(e->store); }

bool ledger_prediction_missed(const sp_error *err) { return sp_store_prediction_missed(err); }

const char *ledger_location(const sp_store *s) { return sp_store_location(s); }

bool ledger_one_writer(const sp_store *s)
{
    sp_store_capabilities caps;
    sp_store_capabilities_get((sp_store *)s, &caps);
    return caps.one_writer;
}

const char *ledger_adapter(const sp_store *s)
{
    sp_store_capabilities caps;
    sp_store_capabilities_get((sp_store *)s, &caps);
    return caps.adapter ? caps.adapter : "";
}
