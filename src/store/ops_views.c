/*
 * ops_views.c - read-only views: list_invocations, get_receipt and
 * capabilities (store.md §3). (get_run, list_runs live with the runs in
 * ops_runs.c; list_events and load_turn with the inbox in ops_events.c.)
 *
 * What it must never do: write, or show a half-committed state (each view
 * is one read transaction).
 */
#include <stdlib.h>

#include "store/logic.h"

/* A run holds at most maxActivations (<= 10000, kernel.md §7.12) invocations. */
#define INVOCATIONS_MAX 10000

#define INVOCATION_SELECT                                                                          \
    "SELECT i.invocation_id, i.node_id, i.action_id, i.effect_key, i.status,"                      \
    " i.attempt_number, i.not_before_ms, i.input, a.attempt_id, a.status, a.owner,"                \
    " a.fence, a.lease_until_ms, a.deadline_ms, a.holder"                                          \
    " FROM invocations i LEFT JOIN attempts a"                                                     \
    " ON a.tenant = i.tenant AND a.run_id = i.run_id AND a.invocation_id = i.invocation_id"        \
    " AND a.attempt_number = (SELECT max(b.attempt_number) FROM attempts b"                        \
    " WHERE b.tenant = i.tenant AND b.run_id = i.run_id AND b.invocation_id = i.invocation_id)"    \
    " WHERE i.tenant = ? AND i.run_id = ? ORDER BY i.invocation_id LIMIT ?"
enum {
    IN_ID,
    IN_NODE,
    IN_ACTION,
    IN_EFFECT,
    IN_STATUS,
    IN_NUMBER,
    IN_NOT_BEFORE,
    IN_INPUT,
    IN_ATTEMPT,
    IN_ATTEMPT_STATUS,
    IN_OWNER,
    IN_FENCE,
    IN_LEASE,
    IN_DEADLINE,
    IN_HOLDER
};

static bool fill_invocation(const sp_db_rows *r, size_t i, sp_invocation_view *v)
{
    lg_copy(v->invocation_id, sizeof v->invocation_id, r, i, IN_ID);
    lg_copy(v->status, sizeof v->status, r, i, IN_STATUS);
    v->attempt_number = (uint32_t)lg_u64(r, i, IN_NUMBER);
    v->not_before_ms = lg_u64(r, i, IN_NOT_BEFORE);
    v->has_attempt = lg_text(r, i, IN_ATTEMPT) != NULL;
    lg_copy(v->attempt_id, sizeof v->attempt_id, r, i, IN_ATTEMPT);
    lg_copy(v->attempt_status, sizeof v->attempt_status, r, i, IN_ATTEMPT_STATUS);
    v->fence = lg_u64(r, i, IN_FENCE);
    v->lease_until_ms = lg_u64(r, i, IN_LEASE);
    v->deadline_ms = lg_u64(r, i, IN_DEADLINE);
    return lg_dup(&v->node_id, NULL, r, i, IN_NODE) &&
           lg_dup(&v->action_id, NULL, r, i, IN_ACTION) &&
           lg_dup(&v->effect_key, NULL, r, i, IN_EFFECT) &&
           lg_dup(&v->input, &v->input_len, r, i, IN_INPUT) &&
           lg_dup(&v->owner, NULL, r, i, IN_OWNER) && lg_dup(&v->holder, NULL, r, i, IN_HOLDER);
}

sp_store_rc sp_store_list_invocations(sp_store *s, const sp_run_key *key, sp_invocation_list *out,
                                      sp_error *err)
{
    memset(out, 0, sizeof *out);
    sp_store_rc rc = lg_check_key(key, err);
    sp_db_rows rows = {0};
    if (!rc)
        rc = LG_R(s, &rows, err, INVOCATION_SELECT, DB_TEXT(key->tenant), DB_TEXT(key->run_id),
                  DB_INT(INVOCATIONS_MAX));
    if (!rc && rows.nrows && !(out->items = calloc(rows.nrows, sizeof *out->items)))
        rc = lg_encode_fail(err, true, "invocation list");
    for (size_t i = 0; !rc && i < rows.nrows; i++, out->n++)
        if (!fill_invocation(&rows, i, &out->items[i]))
            rc = lg_encode_fail(err, true, "invocation list");
    if (rc)
        sp_invocation_list_free(out);
    sp_db_rows_free(&rows);
    return rc;
}

sp_store_rc sp_store_get_receipt(sp_store *s, const sp_run_key *key, const char *request_id,
                                 sp_receipt *out, bool *found, sp_error *err)
{
    memset(out, 0, sizeof *out);
    *found = false;
    sp_store_rc rc = lg_check_key(key, err);
    if (!rc)
        rc = lg_check_text("request ID", request_id, SP_STORE_REQUEST_ID_MAX, err);
    sp_db_rows rows = {0};
    if (!rc)
        rc = LG_R(s, &rows, err,
                  "SELECT request_id, request_digest, operation, value FROM receipts"
                  " WHERE tenant = ? AND run_id = ? AND request_id = ?",
                  DB_TEXT(key->tenant), DB_TEXT(key->run_id), DB_TEXT(request_id));
    if (!rc && rows.nrows) {
        lg_copy(out->request_digest, sizeof out->request_digest, &rows, 0, 1);
        *found = lg_dup(&out->request_id, NULL, &rows, 0, 0) &&
                 lg_dup(&out->operation, NULL, &rows, 0, 2) &&
                 lg_dup(&out->value, NULL, &rows, 0, 3);
        if (!*found) {
            sp_receipt_free(out);
            rc = lg_encode_fail(err, true, "receipt");
        }
    }
    sp_db_rows_free(&rows);
    return rc;
}

void sp_store_capabilities_get(sp_store *s, sp_store_capabilities *out)
{
    *out = (sp_store_capabilities){
        .protocol = "0.1",
        .atomic_run_mutation = true,
        .conditional_writes = true,
        .unique_insert = true,
        .authoritative_readback = true,
        .ordered_recovery_scan = true,
        .multiworker_claims = true,
        .persistent_wakeup = false,
        .failure_model = "crash-stop",
        .transaction_scope = "database",
        .max_record_bytes = SP_STORE_SNAPSHOT_MAX,
        .adapter = s->driver->name,
        .one_writer = s->driver->one_writer,
    };
}
