/*
 * ops_events.c - the inbox: the shared append rule, append_event, load_turn
 * and list_events (store.md §3).
 *
 * Append rule (every event, including run.started and activity results):
 * the next gapless sequence of the run, acceptedAtMs = max(now, the previous
 * event's acceptedAtMs) so accepted times never decrease even when the clock
 * steps back, body <= 64 KiB (quota/event.too-large).
 *
 * append_event predicates, in order: run exists (not-found/run.not-found);
 * kind not run.started / activity.result / timer.fired (conflict/
 * event.reserved-kind: the store appends those itself);
 * body <= 64 KiB; evidence digest and canonical body (conflict/evidence.*);
 * same event ID with the same kind and digest -> the original {sequence,
 * acceptedAtMs} as `duplicate` without a receipt; same ID otherwise ->
 * conflict/event.id-conflict.
 *
 * What it must never do: leave a gap in the sequence, let an event ID name
 * two bodies (I2), or give an event an accepted time before its predecessor's.
 */
#include <stdlib.h>

#include "store/logic.h"

/* The append rule's sequence and accepted time for the next event. */
void lg_next_event(const lg_mut *m, uint64_t *sequence, uint64_t *accepted)
{
    bool exists = lg_run_exists(m);
    uint64_t previous = exists ? lg_run_u64(m, RUN_LAST_ACCEPTED) : 0;
    *sequence = exists ? lg_run_u64(m, RUN_NEXT) : 1;
    *accepted = m->now > previous ? m->now : previous;
}

sp_store_rc lg_insert_event(lg_mut *m, const lg_event_rec *ev, uint64_t consumed_revision,
                            sp_error *err)
{
    if (ev->len > SP_STORE_EVENT_MAX)
        return lg_fail(err, SP_STORE_QUOTA, "event.too-large", "event body is larger than %u bytes",
                       SP_STORE_EVENT_MAX);
    sp_db_val consumed = consumed_revision ? DB_INT(consumed_revision) : DB_NULL;
    sp_store_rc rc =
        LG_Q(m->s, NULL, err,
             "INSERT INTO events (tenant, run_id, sequence, event_id, kind, body,"
             " body_digest, accepted_at_ms, consumed_revision) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
             DB_TEXT(m->key->tenant), DB_TEXT(m->key->run_id), DB_INT(ev->sequence),
             DB_TEXT(ev->event_id), DB_TEXT(ev->kind), DB_TEXTN(ev->body, ev->len),
             DB_TEXT(ev->digest), DB_INT(ev->accepted_at_ms), consumed);
    if (rc == SP_STORE_OK && !consumed_revision)
        rc = lg_announce_work(m->s, "events", err);
    if (rc == SP_STORE_OK)
        lg_run_appended(m, ev->sequence, ev->accepted_at_ms);
    return rc;
}

sp_store_rc lg_append(lg_mut *m, const char *event_id, const char *kind, const char *body,
                      size_t len, const char *digest, uint64_t *sequence, uint64_t *accepted,
                      sp_error *err)
{
    lg_next_event(m, sequence, accepted);
    lg_event_rec ev = {event_id, kind, body, len, digest, *sequence, *accepted, NULL};
    return lg_insert_event(m, &ev, 0, err);
}

void lg_run_appended(lg_mut *m, uint64_t sequence, uint64_t accepted)
{
    m->delta.inbox = true;
    m->delta.next_sequence = sequence + 1;
    m->delta.last_accepted_ms = accepted;
}

/* ---- append_event ---- */

static sp_store_rc existing_event(lg_mut *m, const sp_append_event_req *req, sp_error *err)
{
    sp_db_rows rows;
    sp_store_rc rc =
        LG_Q(m->s, &rows, err,
             "SELECT kind, body_digest, sequence, accepted_at_ms FROM events"
             " WHERE tenant = ? AND run_id = ? AND event_id = ?",
             DB_TEXT(req->key.tenant), DB_TEXT(req->key.run_id), DB_TEXT(req->event_id));
    if (rc == SP_STORE_OK && rows.nrows) {
        if (strcmp(lg_text(&rows, 0, 0), req->kind) == 0 &&
            strcmp(lg_text(&rows, 0, 1), req->body.digest) == 0) {
            m->natural_duplicate = true;
            m->value = lg_appended_value(lg_u64(&rows, 0, 2), lg_u64(&rows, 0, 3));
        } else {
            rc = lg_fail(err, SP_STORE_CONFLICT, "event.id-conflict",
                         "event %s already exists with another kind or body", req->event_id);
        }
    }
    sp_db_rows_free(&rows);
    return rc;
}

static bool reserved_kind(const char *kind)
{
    return strcmp(kind, "run.started") == 0 || strcmp(kind, "activity.result") == 0 ||
           strcmp(kind, "timer.fired") == 0;
}

static sp_store_rc append_apply(lg_mut *m, const void *r, sp_error *err)
{
    const sp_append_event_req *req = r;
    sp_store_rc rc = lg_need_run(m, err);
    if (rc)
        return rc;
    if (reserved_kind(req->kind))
        return lg_fail(err, SP_STORE_CONFLICT, "event.reserved-kind",
                       "%s events are appended by the store itself", req->kind);
    if (req->body.len > SP_STORE_EVENT_MAX)
        return lg_fail(err, SP_STORE_QUOTA, "event.too-large", "event body is larger than %u bytes",
                       SP_STORE_EVENT_MAX);
    rc = lg_verify_evidence(&req->body, NULL, err);
    if (rc == SP_STORE_OK)
        rc = existing_event(m, req, err);
    if (rc || m->natural_duplicate)
        return rc;
    uint64_t sequence, accepted;
    rc = lg_append(m, req->event_id, req->kind, req->body.body, req->body.len, req->body.digest,
                   &sequence, &accepted, err);
    if (rc == SP_STORE_OK)
        m->value = lg_appended_value(sequence, accepted);
    return rc;
}

static const lg_op APPEND_EVENT = {"append_event", "append-event", append_apply,
                                   lg_appended_decode, NULL, NULL, LG_PREDICT_NONE, NULL};

sp_store_rc sp_store_append_event(sp_store *s, const sp_append_event_req *req,
                                  sp_append_event_res *res, sp_error *err)
{
    memset(res, 0, sizeof *res);
    sp_store_rc rc = lg_check_key(&req->key, err);
    if (!rc)
        rc = lg_check_text("request ID", req->request_id, SP_STORE_REQUEST_ID_MAX, err);
    if (!rc)
        rc = lg_check_text("event ID", req->event_id, SP_STORE_ID_MAX, err);
    if (!rc)
        rc = lg_check_text("event kind", req->kind, SP_STORE_ID_MAX, err);
    if (!rc)
        rc = lg_check_evidence("event", &req->body, err);
    json_t *body = NULL;
    if (!rc)
        rc = lg_pack(&body, err, "[s s s s s]", req->key.tenant, req->key.run_id, req->event_id,
                     req->kind, req->body.digest);
    if (rc)
        return rc;
    return lg_mutate(s, &APPEND_EVENT, &req->key, req->request_id, body, req, res,
                     &res->disposition, err);
}

/* ---- reading events ---- */

#define EVENT_SELECT                                                                               \
    "SELECT e.sequence, e.event_id, e.kind, e.body, e.body_digest, e.accepted_at_ms,"              \
    " e.consumed_revision, t.diagnostics FROM events e LEFT JOIN transitions t"                    \
    " ON t.tenant = e.tenant AND t.run_id = e.run_id AND t.revision = e.consumed_revision"         \
    " WHERE e.tenant = ? AND e.run_id = ? "
enum { EV_SEQ, EV_ID, EV_KIND, EV_BODY, EV_DIGEST, EV_ACCEPTED, EV_REVISION, EV_DIAGNOSTICS };

static bool fill_event(const sp_db_rows *r, size_t i, sp_event *e)
{
    e->sequence = lg_u64(r, i, EV_SEQ);
    e->accepted_at_ms = lg_u64(r, i, EV_ACCEPTED);
    e->consumed = sp_db_cell(r, i, EV_REVISION)->type != SP_DB_NULL;
    e->consumed_revision = lg_u64(r, i, EV_REVISION);
    lg_copy(e->body_digest, sizeof e->body_digest, r, i, EV_DIGEST);
    return lg_dup(&e->event_id, NULL, r, i, EV_ID) && lg_dup(&e->kind, NULL, r, i, EV_KIND) &&
           lg_dup(&e->body, &e->body_len, r, i, EV_BODY) &&
           lg_dup(&e->diagnostics, NULL, r, i, EV_DIAGNOSTICS);
}

sp_store_rc sp_store_list_events(sp_store *s, const sp_run_key *key, uint64_t after_sequence,
                                 size_t limit, sp_event_list *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    limit = lg_clamp_limit(limit);
    sp_store_rc rc = lg_check_key(key, err);
    sp_db_rows rows = {0};
    if (!rc)
        rc = LG_R(s, &rows, err, EVENT_SELECT "AND e.sequence > ? ORDER BY e.sequence LIMIT ?",
                  DB_TEXT(key->tenant), DB_TEXT(key->run_id),
                  DB_INT(after_sequence > INT64_MAX ? INT64_MAX : after_sequence), DB_INT(limit));
    if (!rc && rows.nrows && !(out->events = calloc(rows.nrows, sizeof *out->events)))
        rc = lg_encode_fail(err, true, "event list");
    for (size_t i = 0; !rc && i < rows.nrows; i++, out->n++)
        if (!fill_event(&rows, i, &out->events[i]))
            rc = lg_encode_fail(err, true, "event list");
    if (rc)
        sp_event_list_free(out);
    sp_db_rows_free(&rows);
    return rc;
}

/* ---- load_turn: one statement, the run row and its next event ---- */

#define TURN_SELECT                                                                                \
    "SELECT e.sequence, e.event_id, e.kind, e.body, e.body_digest, e.accepted_at_ms,"              \
    " e.consumed_revision, CAST(NULL AS TEXT), r.package_digest, r.revision,"                      \
    " r.applied_sequence, r.snapshot, r.snapshot_digest, r.next_sequence"                          \
    " FROM runs r LEFT JOIN events e"            \
    " ON e.tenant = r.tenant AND e.run_id = r.run_id AND e.sequence = r.applied_sequence + 1"      \
    " WHERE r.tenant = ? AND r.run_id = ? AND r.quarantine_code IS NULL"                           \
    " AND r.next_sequence > r.applied_sequence + 1"
/* after the EVENT_SELECT columns */
enum {
    TU_PACKAGE = EV_DIAGNOSTICS + 1,
    TU_REVISION,
    TU_APPLIED,
    TU_SNAPSHOT,
    TU_SNAPSHOT_DIGEST,
    TU_NEXT
};

static sp_store_rc turn_read(sp_store *s, sp_turn *t, bool *found, sp_error *err)
{
    sp_db_rows rows;
    sp_store_rc rc =
        LG_R(s, &rows, err, TURN_SELECT, DB_TEXT(t->key.tenant), DB_TEXT(t->key.run_id));
    if (rc || rows.nrows != 1) {
        sp_db_rows_free(&rows);
        return rc; /* nothing pending */
    }
    lg_copy(t->package_digest, sizeof t->package_digest, &rows, 0, TU_PACKAGE);
    lg_copy(t->snapshot_digest, sizeof t->snapshot_digest, &rows, 0, TU_SNAPSHOT_DIGEST);
    t->revision = lg_u64(&rows, 0, TU_REVISION);
    t->applied_sequence = lg_u64(&rows, 0, TU_APPLIED);
    t->next_sequence = lg_u64(&rows, 0, TU_NEXT);
    if (sp_db_cell(&rows, 0, EV_SEQ)->type == SP_DB_NULL)
        rc = lg_fail(err, SP_STORE_CORRUPT, "store.invariant", "pending event %llu is missing",
                     (unsigned long long)(t->applied_sequence + 1));
    else if (!lg_dup(&t->snapshot, &t->snapshot_len, &rows, 0, TU_SNAPSHOT) ||
             !fill_event(&rows, 0, &t->event))
        rc = lg_encode_fail(err, true, "turn");
    *found = rc == SP_STORE_OK;
    sp_db_rows_free(&rows);
    return rc;
}

sp_store_rc sp_store_load_turn(sp_store *s, const sp_run_key *key, sp_turn *out, bool *found,
                               sp_error *err)
{
    memset(out, 0, sizeof *out);
    *found = false;
    sp_store_rc rc = lg_check_key(key, err);
    if (rc)
        return rc;
    out->key = *key;
    rc = turn_read(s, out, found, err);
    if (rc || !*found) {
        sp_turn_free(out);
        *found = false;
    }
    return rc;
}
