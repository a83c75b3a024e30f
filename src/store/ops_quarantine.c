/*
 * ops_quarantine.c - quarantine_run and release_run (store.md §3).
 *
 * quarantine_run predicates, in order: run exists (not-found/run.not-found);
 * revision matches (stale/revision.mismatch). A run already quarantined with
 * the same code and details is left as it is (idempotent; the first `at`
 * stays); otherwise {code, details, at = now} is recorded. A quarantined run
 * is hidden from load_turn and scan_ready and refused by commit_turn and
 * claim_attempt; events are still accepted.
 *
 * release_run: run exists (not-found/run.not-found); clears the quarantine,
 * a no-op success when the run is not quarantined.
 *
 * What it must never do: touch revision, events, invocations or attempts.
 */
#include "store/logic.h"

static bool same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static sp_store_rc quarantine_apply(lg_mut *m, const void *r, sp_error *err)
{
    const sp_quarantine_req *req = r;
    sp_store_rc rc = lg_need_run(m, err);
    if (!rc)
        rc = lg_need_revision(m, req->expected_revision, err);
    if (rc)
        return rc;
    bool matching = lg_run_quarantined(m) && same_text(lg_run_text(m, RUN_Q_CODE), req->code) &&
                    same_text(lg_run_text(m, RUN_Q_DETAILS), req->details);
    if (!matching)
        rc = LG_W1(m->s, err,
                   "UPDATE runs SET quarantine_code = ?, quarantine_details = ?,"
                   " quarantine_at_ms = ?, updated_at_ms = ? WHERE tenant = ? AND run_id = ?",
                   DB_TEXT(req->code), DB_OPT_TEXT(req->details), DB_INT(m->now), DB_INT(m->now),
                   DB_TEXT(req->key.tenant), DB_TEXT(req->key.run_id));
    if (rc == SP_STORE_OK)
        m->value = lg_flag_value(true);
    return rc;
}

static const lg_op QUARANTINE_RUN = {"quarantine_run", NULL, quarantine_apply,
                                     lg_flag_decode, NULL, NULL, LG_PREDICT_NONE, NULL};

sp_store_rc sp_store_quarantine_run(sp_store *s, const sp_quarantine_req *req, sp_flag_res *res,
                                    sp_error *err)
{
    memset(res, 0, sizeof *res);
    sp_store_rc rc = lg_check_key(&req->key, err);
    if (!rc)
        rc = lg_check_text("request ID", req->request_id, SP_STORE_REQUEST_ID_MAX, err);
    if (!rc)
        rc = lg_check_text("quarantine code", req->code, SP_CODE_MAX - 1, err);
    if (!rc)
        rc = lg_check_u63("expected revision", req->expected_revision, err);
    if (!rc && req->details && strnlen(req->details, SP_STORE_EVENT_MAX + 1) > SP_STORE_EVENT_MAX)
        rc = lg_invalid(err, "quarantine details are longer than %u bytes", SP_STORE_EVENT_MAX);
    json_t *body = NULL;
    if (!rc)
        rc = lg_pack(&body, err, "[s s o s s?]", req->key.tenant, req->key.run_id,
                     lg_u63_json(req->expected_revision), req->code, req->details);
    if (rc)
        return rc;
    return lg_mutate(s, &QUARANTINE_RUN, &req->key, req->request_id, body, req, res,
                     &res->disposition, err);
}

static sp_store_rc release_apply(lg_mut *m, const void *r, sp_error *err)
{
    (void)r;
    sp_store_rc rc = lg_need_run(m, err);
    if (rc == SP_STORE_OK && lg_run_quarantined(m))
        rc = LG_W1(m->s, err,
                   "UPDATE runs SET quarantine_code = NULL, quarantine_details = NULL,"
                   " quarantine_at_ms = NULL, updated_at_ms = ? WHERE tenant = ? AND run_id = ?",
                   DB_INT(m->now), DB_TEXT(m->key->tenant), DB_TEXT(m->key->run_id));
    if (rc == SP_STORE_OK)
        m->value = lg_flag_value(false);
    return rc;
}

static const lg_op RELEASE_RUN = {"release_run", NULL,  release_apply, lg_flag_decode,
                                  NULL,          NULL,  LG_PREDICT_NONE, NULL};

sp_store_rc sp_store_release_run(sp_store *s, const sp_release_req *req, sp_flag_res *res,
                                 sp_error *err)
{
    memset(res, 0, sizeof *res);
    sp_store_rc rc = lg_check_key(&req->key, err);
    if (!rc)
        rc = lg_check_text("request ID", req->request_id, SP_STORE_REQUEST_ID_MAX, err);
    json_t *body = NULL;
    if (!rc)
        rc = lg_pack(&body, err, "[s s]", req->key.tenant, req->key.run_id);
    if (rc)
        return rc;
    return lg_mutate(s, &RELEASE_RUN, &req->key, req->request_id, body, req, res, &res->disposition,
                     err);
}
