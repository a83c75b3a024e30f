/*
 * crash.c - the interrupted mutations of Q03 (see crash.h).
 */
#include "crash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

static const char *const NAMES[CRASH_OPS] = {
    "create-run", "append-event",   "commit-turn",    "claim-attempt",
    "heartbeat",  "finish-attempt", "settle-attempt", "expire-attempt",
};

const char *crash_op_name(crash_op op) { return NAMES[op]; }

static sp_run_key crash_key(void) { return fx_key("run_crash"); }

/* The attempt prepare claimed: <inv>.1 owned by w1 with fence 1. */
static bool crash_ref(sp_store *s, sp_attempt_ref *ref)
{
    memset(ref, 0, sizeof *ref);
    ref->key = crash_key();
    if (!fx_invocation(s, &ref->key, ref->invocation_id))
        return false;
    snprintf(ref->attempt_id, sizeof ref->attempt_id, "%s.1", ref->invocation_id);
    snprintf(ref->owner, sizeof ref->owner, "w1");
    ref->fence = 1;
    return true;
}

bool crash_prepare(sp_store *s, crash_op op)
{
    sp_run_key k = crash_key();
    sp_error err = {0};
    sp_create_run_res cr;
    if (op == CRASH_CREATE_RUN)
        return true;
    bool ok = fx_create(s, &k, "crash", &cr, &err) == SP_STORE_OK;
    if (ok && op >= CRASH_CLAIM_ATTEMPT)
        ok = fx_settle(s, &k) == 1;
    char inv[SP_ID_LEN + 1];
    sp_claim c;
    uint64_t lease = op == CRASH_EXPIRE_ATTEMPT ? 100 : 100000;
    if (ok && op >= CRASH_HEARTBEAT) {
        ok = fx_invocation(s, &k, inv) &&
             fx_claim(s, &k, inv, "w1", lease, "prepare", &c, &err) == SP_STORE_OK;
        if (ok)
            sp_claim_free(&c);
    }
    sp_error_clear(&err);
    return ok;
}

/* The first commit's request, rebuilt without the store: the decision for
 * `start` at revision 0 is a pure function of the package and the event. */
static bool start_decision(fx_decision *d)
{
    memset(d, 0, sizeof *d);
    sp_run_key k = crash_key();
    fx_body b = fx_started_body(&k);
    d->turn.key = k;
    snprintf(d->turn.package_digest, sizeof d->turn.package_digest, "%s", fx_package_digest());
    d->turn.event = (sp_event){.sequence = 1,
                               .event_id = strdup("start"),
                               .kind = strdup("run.started"),
                               .body = b.text,
                               .body_len = b.len,
                               .accepted_at_ms = CRASH_PREPARE_MS};
    return fx_decide_turn(d);
}

static sp_store_rc perform_commit(sp_store *s, sp_disposition *d, sp_error *err)
{
    fx_decision dec;
    if (!start_decision(&dec))
        return sp_fail(err, "test.kernel", "no decision"), SP_STORE_CORRUPT;
    sp_commit_turn_res r;
    sp_store_rc rc = sp_store_commit_turn(s, &dec.req, &r, err);
    *d = r.disposition;
    fx_decision_free(&dec);
    return rc;
}

static sp_store_rc perform_attempt(sp_store *s, crash_op op, sp_disposition *d, sp_error *err)
{
    sp_attempt_ref ref;
    if (!crash_ref(s, &ref))
        return sp_fail(err, "test.prepare", "no invocation"), SP_STORE_NOT_FOUND;
    sp_store_rc rc;
    sp_finish_res f;
    if (op == CRASH_CLAIM_ATTEMPT) {
        sp_claim c;
        rc = fx_claim(s, &ref.key, ref.invocation_id, "w2", 1000, "crash", &c, err);
        *d = c.disposition;
        sp_claim_free(&c);
    } else if (op == CRASH_HEARTBEAT) {
        sp_heartbeat_req req = {ref, "heartbeat/crash", 5000};
        sp_heartbeat_res h;
        rc = sp_store_heartbeat(s, &req, &h, err);
        *d = h.disposition;
    } else if (op == CRASH_SETTLE_ATTEMPT) {
        fx_decider dc = {0};
        sp_settle_res r;
        rc = fx_settle_attempt(s, &ref, "success", &dc, &r, err);
        *d = r.disposition;
        if (rc == SP_STORE_OK)
            sp_settle_res_free(&r);
        fx_decider_free(&dc);
    } else {
        rc = op == CRASH_FINISH_ATTEMPT ? fx_finish(s, &ref, "success", &f, err)
                                        : fx_expire(s, &ref, SP_EXPIRE_LEASE, &f, err);
        *d = f.disposition;
    }
    return rc;
}

sp_store_rc crash_perform(sp_store *s, crash_op op, sp_disposition *d, sp_error *err)
{
    sp_run_key k = crash_key();
    sp_create_run_res cr;
    sp_append_event_res ar;
    sp_store_rc rc;
    switch (op) {
    case CRASH_CREATE_RUN:
        rc = fx_create(s, &k, "crash", &cr, err);
        *d = cr.disposition;
        return rc;
    case CRASH_APPEND_EVENT:
        rc = fx_signal(s, &k, "crash", "go", &ar, err);
        *d = ar.disposition;
        return rc;
    case CRASH_COMMIT_TURN:
        return perform_commit(s, d, err);
    default:
        return perform_attempt(s, op, d, err);
    }
}

/* ---- effects ---- */

static bool receipt(sp_store *s, const char *request_id)
{
    sp_run_key k = crash_key();
    sp_receipt r;
    bool found = false;
    sp_error err = {0};
    sp_store_get_receipt(s, &k, request_id, &r, &found, &err);
    sp_receipt_free(&r);
    sp_error_clear(&err);
    return found;
}

static int run_effects(sp_store *s, crash_op op, bool *has_receipt)
{
    sp_run_key k = crash_key();
    sp_run_view v;
    bool found = false;
    sp_error err = {0};
    sp_store_get_run(s, &k, &v, &found, &err);
    sp_error_clear(&err);
    int n = 0;
    if (op == CRASH_CREATE_RUN) {
        n = found ? (int)fx_event_count(s, &k, "start") : 0;
        *has_receipt = receipt(s, "start/crash");
    } else if (op == CRASH_APPEND_EVENT) {
        n = (int)fx_event_count(s, &k, "sig:crash");
        *has_receipt = receipt(s, "signal/crash");
    } else {
        n = found ? (int)v.revision : -1;
        *has_receipt = receipt(s, "commit/1/start");
    }
    if (found)
        sp_run_view_free(&v);
    return n;
}

/* The run's revision (0 when it cannot be read). */
static uint64_t settled_revision(sp_store *s, const sp_run_key *key)
{
    sp_run_view v;
    bool found = false;
    sp_error err = {0};
    uint64_t revision = 0;
    if (sp_store_get_run(s, key, &v, &found, &err) == SP_STORE_OK && found) {
        revision = v.revision;
        sp_run_view_free(&v);
    }
    sp_error_clear(&err);
    return revision;
}

static int attempt_effects(sp_store *s, crash_op op, bool *has_receipt)
{
    sp_attempt_ref ref;
    if (!crash_ref(s, &ref))
        return -1;
    sp_invocation_list l;
    sp_error err = {0};
    if (sp_store_list_invocations(s, &ref.key, &l, &err) != SP_STORE_OK || l.n != 1) {
        sp_error_clear(&err);
        return -1;
    }
    const sp_invocation_view *v = &l.items[0];
    char id[SP_ID_LEN + 32], request_id[SP_STORE_REQUEST_ID_MAX];
    snprintf(id, sizeof id, "att:%s", ref.attempt_id);
    int n = -1;
    if (op == CRASH_CLAIM_ATTEMPT) {
        n = v->has_attempt ? (int)v->fence : 0;
        snprintf(request_id, sizeof request_id, "claim/%s/w2/crash", ref.invocation_id);
    } else if (op == CRASH_HEARTBEAT) {
        n = v->lease_until_ms == CRASH_MS + 5000 ? 1 : v->lease_until_ms == 110000 ? 0 : -1;
        snprintf(request_id, sizeof request_id, "heartbeat/crash");
    } else {
        const char *ended = op == CRASH_EXPIRE_ATTEMPT ? "expired" : "finished";
        n = (int)fx_event_count(s, &ref.key, id);
        if (n != (strcmp(v->attempt_status, ended) == 0))
            n = -1;
        /* settle: the decision on the result is committed with it, or nothing is */
        if (op == CRASH_SETTLE_ATTEMPT && n >= 0 && settled_revision(s, &ref.key) != (uint64_t)(1 + n))
            n = -1;
        snprintf(request_id, sizeof request_id, "%s/%s",
                 op == CRASH_FINISH_ATTEMPT   ? "finish"
                 : op == CRASH_SETTLE_ATTEMPT ? "settle"
                                              : "expire",
                 ref.attempt_id);
    }
    *has_receipt = receipt(s, request_id);
    sp_invocation_list_free(&l);
    return n;
}

int crash_effects(sp_store *s, crash_op op, bool *has_receipt)
{
    *has_receipt = false;
    if (op <= CRASH_COMMIT_TURN)
        return run_effects(s, op, has_receipt);
    return attempt_effects(s, op, has_receipt);
}
