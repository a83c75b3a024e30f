/*
 * request.c - what defines a store request, and the mutation runner that
 * every mutation goes through (store.md §2).
 *
 * Request digest = sp_digest_request(<operation>, canonical JSON array):
 *
 * | operation            | canonical JSON array (u63 counters/times as decimal strings)      |
 * | -------------------- | ------------------------------------------------------------------ |
 * | create_run           | [tenant, runId, startKey, packageDigest, artifactDigest|null,      |
 * |                      |  startedDigest]                                                     |
 * | append_event         | [tenant, runId, eventId, kind, bodyDigest]                          |
 * | commit_turn          | [tenant, runId, expectedRevision, eventId, eventSequence,           |
 * |                      |  decisionDigest, snapshotDigest, status,                            |
 * |                      |  [[commandId, activationId, kind, payloadDigest], ...],             |
 * |                      |  [[code, nodeId|null, detailsDigest], ...]]                         |
 * | claim_attempt        | [tenant, runId, invocationId, worker, leaseDurationMs,              |
 * |                      |  holder|null, deadlineMs, hostId, pid (integer), pidStarted,       |
 * |                      |  deadlineInMs]                                                      |
 * | heartbeat            | REF + [extendMs]                                                    |
 * | hold_attempt         | REF + [holder, leaseUntilMs, deadlineMs, leaseInMs, deadlineInMs]   |
 * | finish_attempt       | REF + [resultDigest]                                                |
 * | settle_attempt       | REF + [resultDigest, worker|null, leaseDurationMs, hostId,          |
 * |                      |  pid (integer), pidStarted, decides (boolean)]                      |
 * | expire_attempt       | REF + [reason]  ("lease", "deadline", "probe-dead", ...)            |
 * | record_late_evidence | REF + [kind, evidenceDigest]                                        |
 * | quarantine_run       | [tenant, runId, expectedRevision, code, details|null]               |
 * | release_run          | [tenant, runId]                                                     |
 * | fire_timer           | [tenant, runId, timerId]                                            |
 *
 * REF = tenant, runId, invocationId, attemptId, owner, fence. payloadDigest
 * and detailsDigest are digest::body of the bytes; holder and details are
 * carried as JSON strings (their text), not as nested values.
 *
 * The runner: begin(write) -> lock the run row (dialect.for_update; with the
 * database's now when the driver has one) -> one read of the receipt and of
 * the attempt an attempt operation names, and the operation's own first
 * read (lg_op.extra_read), in the lock's exchange (or, for a settle on
 * PostgreSQL, the first reads its claim's batch predicted, with the guards
 * that check them ahead of its writes: predict.c) ->
 * receipt first (same digest: the stored value, `duplicate`, nothing else
 * evaluated; other digest: conflict/request.digest-mismatch) -> now ->
 * op->apply (predicates in order, writes) -> the run row's changes in one
 * UPDATE (lg_run_flush) -> receipt -> failpoint
 * store.<op>.before-commit -> commit -> store.<op>.after-commit. A failure
 * rolls everything back, receipt included. The result is always decoded from
 * the value, fresh or replayed, so both paths answer the same bytes.
 *
 * What it must never do: evaluate a predicate before the receipt lookup,
 * write a receipt for a failure or a natural-key duplicate, or take a "now"
 * that the lock does not bound: sampled after it is held, or - predicted -
 * behind the run's last one and checked by the guard that takes the lock
 * (not ahead of the database's clock, at most a second behind it, and the
 * lease held by that clock: predict.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/failpoint.h"
#include "json/json.h"
#include "store/logic.h"

/* ---- request validation ---- */

static bool key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

static bool key_part_ok(const char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    if (n == 0 || n == cap)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!key_char(s[i]))
            return false;
    return true;
}

sp_store_rc lg_check_key(const sp_run_key *key, sp_error *err)
{
    if (!key || !key_part_ok(key->tenant, sizeof key->tenant) ||
        !key_part_ok(key->run_id, sizeof key->run_id))
        return lg_invalid(err, "tenant and run ID must match [A-Za-z0-9_.-]{1,128}");
    return SP_STORE_OK;
}

sp_store_rc lg_check_text(const char *what, const char *s, size_t max, sp_error *err)
{
    if (!s || !*s)
        return lg_invalid(err, "%s is required", what);
    if (strnlen(s, max + 1) > max)
        return lg_invalid(err, "%s is longer than %zu bytes", what, max);
    return SP_STORE_OK;
}

sp_store_rc lg_check_digest(const char *what, const char *d, sp_error *err)
{
    bool ok = d && strnlen(d, SP_DIGEST_TEXT_LEN + 1) == SP_DIGEST_TEXT_LEN &&
              strncmp(d, "sha256:", 7) == 0;
    for (size_t i = 7; ok && i < SP_DIGEST_TEXT_LEN; i++)
        ok = (d[i] >= '0' && d[i] <= '9') || (d[i] >= 'a' && d[i] <= 'f');
    return ok ? SP_STORE_OK : lg_invalid(err, "%s must be sha256:<64 lowercase hex>", what);
}

uint32_t lg_attempt_number(const char *invocation_id, const char *attempt_id)
{
    size_t n = strlen(invocation_id);
    if (strncmp(attempt_id, invocation_id, n) != 0 || attempt_id[n] != '.')
        return 0;
    const char *digits = attempt_id + n + 1;
    if (*digits < '1' || *digits > '9' || strlen(digits) > 10)
        return 0;
    uint64_t v = 0;
    for (const char *p = digits; *p; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    return v > UINT32_MAX ? 0 : (uint32_t)v;
}

sp_store_rc lg_check_ref(const sp_attempt_ref *ref, sp_error *err)
{
    if (!ref)
        return lg_invalid(err, "attempt reference is required");
    sp_store_rc rc = lg_check_key(&ref->key, err);
    if (rc)
        return rc;
    if (strnlen(ref->invocation_id, sizeof ref->invocation_id) == sizeof ref->invocation_id ||
        strnlen(ref->attempt_id, sizeof ref->attempt_id) == sizeof ref->attempt_id ||
        strnlen(ref->owner, sizeof ref->owner) == sizeof ref->owner)
        return lg_invalid(err, "attempt reference fields must be NUL-terminated");
    if (!ref->invocation_id[0] || !ref->owner[0] ||
        lg_attempt_number(ref->invocation_id, ref->attempt_id) == 0)
        return lg_invalid(err, "attempt ID must be <invocationId>.<attempt number>");
    return lg_check_u63("fence", ref->fence, err);
}

sp_store_rc lg_check_u63(const char *what, uint64_t v, sp_error *err)
{
    return v <= UINT64_C(9223372036854775807) ? SP_STORE_OK
                                              : lg_invalid(err, "%s is above 2^63-1", what);
}

sp_store_rc lg_check_evidence(const char *what, const sp_evidence *ev, sp_error *err)
{
    if (!ev->body)
        return lg_invalid(err, "%s body is required", what);
    return lg_check_digest(what, ev->digest, err);
}

sp_store_rc lg_verify_evidence(const sp_evidence *ev, json_t **parsed, sp_error *err)
{
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_digest_one("body", ev->body, ev->len, digest);
    if (strcmp(digest, ev->digest) != 0)
        return lg_fail(err, SP_STORE_CONFLICT, "evidence.digest-mismatch",
                       "evidence digest %s does not match its body (%s)", ev->digest, digest);
    sp_error perr = {0};
    json_t *v = sp_json_parse_canonical(ev->body, ev->len, &perr);
    if (!v) {
        bool oom = strcmp(perr.code, "runtime.out-of-memory") == 0;
        sp_error_clear(&perr);
        if (oom)
            return lg_encode_fail(err, true, "evidence");
        return lg_fail(err, SP_STORE_CONFLICT, "evidence.not-canonical",
                       "evidence body is not canonical JSON");
    }
    if (parsed)
        *parsed = v;
    else
        json_decref(v);
    return SP_STORE_OK;
}

sp_store_rc lg_pack(json_t **out, sp_error *err, const char *fmt, ...)
{
    json_error_t jerr;
    va_list ap;
    va_start(ap, fmt);
    *out = json_vpack_ex(&jerr, 0, fmt, ap);
    va_end(ap);
    if (*out)
        return SP_STORE_OK;
    if (json_error_code(&jerr) == json_error_invalid_utf8)
        return lg_invalid(err, "request text is not valid UTF-8");
    return lg_encode_fail(err, true, "request");
}

/* ---- the run predicates every run operation shares ---- */

sp_store_rc lg_need_run(const lg_mut *m, sp_error *err)
{
    if (lg_run_exists(m))
        return SP_STORE_OK;
    return lg_fail(err, SP_STORE_NOT_FOUND, "run.not-found", "run %s/%s does not exist",
                   m->key->tenant, m->key->run_id);
}

sp_store_rc lg_need_unquarantined(const lg_mut *m, sp_error *err)
{
    if (!lg_run_quarantined(m))
        return SP_STORE_OK;
    return lg_fail(err, SP_STORE_STALE, "run.quarantined", "run %s/%s is quarantined",
                   m->key->tenant, m->key->run_id);
}

sp_store_rc lg_need_revision(const lg_mut *m, uint64_t expected, sp_error *err)
{
    uint64_t revision = lg_run_u64(m, RUN_REVISION);
    if (revision == expected)
        return SP_STORE_OK;
    return lg_fail(err, SP_STORE_STALE, "revision.mismatch", "run is at revision %llu, not %llu",
                   (unsigned long long)revision, (unsigned long long)expected);
}

/* ---- the run row as the request leaves it ---- */

uint64_t lg_run_u64(const lg_mut *m, int col)
{
    const lg_run_delta *d = &m->delta;
    if (d->inbox && col == RUN_NEXT)
        return d->next_sequence;
    if (d->inbox && col == RUN_LAST_ACCEPTED)
        return d->last_accepted_ms;
    if (d->turn && col == RUN_REVISION)
        return d->revision;
    if (d->turn && col == RUN_APPLIED)
        return d->applied_sequence;
    if (d->fence && col == RUN_FENCE)
        return d->fence_counter;
    return lg_u64(&m->run, 0, col);
}

/* The UPDATE of the changed groups: one of seven statements, each prepared
 * once (the driver caches statements by their text). */
static void delta_sql(const lg_run_delta *d, char *sql, size_t n)
{
    snprintf(sql, n, "UPDATE runs SET %s%s%supdated_at_ms = ? WHERE tenant = ? AND run_id = ?",
             d->inbox ? "next_sequence = ?, last_accepted_ms = ?, " : "",
             d->turn ? "revision = ?, applied_sequence = ?, snapshot = ?, snapshot_digest = ?,"
                       " status = ?, "
                     : "",
             d->fence ? "fence = ?, " : "");
}

sp_store_rc lg_run_flush(lg_mut *m, sp_error *err)
{
    const lg_run_delta *d = &m->delta;
    if (!d->inbox && !d->turn && !d->fence)
        return SP_STORE_OK;
    sp_db_val p[11];
    size_t n = 0;
    if (d->inbox) {
        p[n++] = DB_INT(d->next_sequence);
        p[n++] = DB_INT(d->last_accepted_ms);
    }
    if (d->turn) {
        p[n++] = DB_INT(d->revision);
        p[n++] = DB_INT(d->applied_sequence);
        p[n++] = DB_TEXTN(d->snapshot, d->snapshot_len);
        p[n++] = DB_TEXT(d->snapshot_digest);
        p[n++] = DB_TEXT(d->status);
    }
    if (d->fence)
        p[n++] = DB_INT(d->fence_counter);
    p[n++] = DB_INT(m->now);
    p[n++] = DB_TEXT(m->key->tenant);
    p[n++] = DB_TEXT(m->key->run_id);
    char sql[320];
    delta_sql(d, sql, sizeof sql);
    return lg_write1(m->s, sql, p, n, err);
}

/* ---- the mutation runner ---- */

static sp_store_rc request_digest(const char *op, json_t *body, char *out, sp_error *err)
{
    size_t len = 0;
    char *bytes = NULL;
    sp_store_rc rc = lg_encode(body, &bytes, &len, "request digest body", err);
    json_decref(body);
    if (rc)
        return rc;
    sp_digest_request(op, bytes, len, out);
    free(bytes);
    return SP_STORE_OK;
}

/* The first two statements of a mutation. The lock read: the run row
 * locked (dialect.for_update) and - where the driver offers it - the
 * database's "now", evaluated under the lock (a materialized CTE takes the
 * lock before anything after it is evaluated). Then, in a statement of its
 * own - on PostgreSQL a new snapshot, which sees what the lock waited for -
 * the request's receipt and, for an operation on an attempt, the attempt's
 * row: one row always, NULLs where there is none. */
#define LOCK_NOW RUN_NCOLS
#define KNOWN_RECEIPT_DIGEST 0
#define KNOWN_RECEIPT_VALUE 1
#define KNOWN_ATTEMPT 2

/* The run row, locked (PostgreSQL: FOR UPDATE, with the database's clock
 * sampled once the lock is held; `skip`: SKIP LOCKED, no row when another
 * transaction holds it), into `sql`. */
static void lock_sql(sp_store *s, bool skip, char *sql, size_t cap)
{
    const char *now_sql = s->driver->now_sql ? s->driver->now_sql(s->conn) : NULL;
    const char *lock = skip ? s->driver->dialect.skip_locked : s->driver->dialect.for_update;
    if (now_sql)
        snprintf(sql, cap,
                 "WITH r AS MATERIALIZED (SELECT " LG_RUN_COLS
                 " FROM runs WHERE tenant = ? AND run_id = ?%s) SELECT r.*, %s FROM r",
                 lock, now_sql);
    else
        snprintf(sql, cap,
                 "SELECT " LG_RUN_COLS ", NULL FROM runs WHERE tenant = ? AND run_id = ?%s",
                 lock);
}

void lg_first_reads_make(sp_store *s, const sp_run_key *key, const char *request_id,
                         const sp_attempt_ref *attempt, bool skip_busy, lg_first_reads *f)
{
    const char *t = key->tenant, *r = key->run_id;
    lock_sql(s, skip_busy, f->lock_sql, sizeof f->lock_sql);
    f->lock_params[0] = DB_TEXT(t), f->lock_params[1] = DB_TEXT(r);
    f->known_params[0] = DB_TEXT(t), f->known_params[1] = DB_TEXT(r);
    f->known_params[2] = DB_TEXT(request_id);
    f->reads[0] = (sp_db_read){f->lock_sql, f->lock_params, 2};
    f->reads[1] = (sp_db_read){"SELECT rc.request_digest, rc.value FROM (SELECT 1 AS one) d"
                               " LEFT JOIN receipts rc ON rc.tenant = ? AND rc.run_id = ?"
                               " AND rc.request_id = ?",
                               f->known_params, 3};
    if (!attempt)
        return;
    f->known_params[3] = DB_TEXT(t), f->known_params[4] = DB_TEXT(r);
    f->known_params[5] = DB_TEXT(attempt->attempt_id);
    f->reads[1] = (sp_db_read){
        "SELECT rc.request_digest, rc.value, a.invocation_id, a.attempt_number, a.owner,"
        " a.fence, a.lease_until_ms, a.deadline_ms, a.status FROM (SELECT 1 AS one) d"
        " LEFT JOIN receipts rc ON rc.tenant = ? AND rc.run_id = ? AND rc.request_id = ?"
        " LEFT JOIN attempts a ON a.tenant = ? AND a.run_id = ? AND a.attempt_id = ?",
        f->known_params, 6};
}

/* Lock the run, then read what the request already knows - its receipt
 * and (for a request about an attempt) the attempt's row - as two reads of
 * one exchange: the second runs once the first holds the lock, so it sees
 * every commit before the lock (under PostgreSQL's READ COMMITTED one
 * statement could not: its other tables would be read in the snapshot
 * taken before the lock wait). The batch may have made both reads ahead
 * (lock_ahead.c). */
static sp_store_rc lock_and_read_known(lg_mut *m, const lg_op *op, const void *req,
                                       const char *request_id, sp_error *err)
{
    const sp_attempt_ref *attempt = op->attempt ? op->attempt(req) : NULL;
    m->prefetched = attempt;
    if (!op->extra_read && lg_ahead_take(m->s, m->key, request_id, attempt, &m->run, &m->known))
        return SP_STORE_OK;
    if (op->predicts == LG_PREDICT_USES) {
        sp_store_rc rc = lg_predict_reads(m, attempt, request_id, &m->predicted, err);
        if (rc || m->predicted)
            return rc;
    }
    lg_first_reads f;
    lg_first_reads_make(m->s, m->key, request_id, attempt, m->skips_busy, &f);
    sp_db_read reads[3] = {f.reads[0], f.reads[1]};
    sp_db_val extra_params[LG_EXTRA_PARAMS];
    if (op->extra_read)
        op->extra_read(req, &reads[2], extra_params);
    sp_db_rows outs[3] = {0};
    sp_store_rc rc = lg_query_all(m->s, reads, op->extra_read ? 3 : 2, outs, err);
    m->run = outs[0];
    m->known = outs[1];
    m->extra = outs[2];
    return rc;
}

bool lg_run_exists(const lg_mut *m) { return m->run.nrows == 1; }

bool lg_prefetched_attempt(const lg_mut *m, const sp_attempt_ref *ref, sp_db_rows *rows)
{
    *rows = (sp_db_rows){0};
    if (!m->prefetched || m->known.nrows != 1 ||
        strcmp(m->prefetched->attempt_id, ref->attempt_id) != 0 ||
        strcmp(ref->key.tenant, m->key->tenant) != 0 || strcmp(ref->key.run_id, m->key->run_id) != 0)
        return false;
    if (sp_db_cell(&m->known, 0, KNOWN_ATTEMPT)->type == SP_DB_NULL)
        return true; /* no such attempt: no rows */
    return sp_db_rows_copy(&m->known, 0, KNOWN_ATTEMPT, 7, rows);
}

/* Receipt first: *stored = the stored value on a matching digest. */
static sp_store_rc receipt_first(lg_mut *m, const char *request_id, const char *digest,
                                 json_t **stored, sp_error *err)
{
    const char *have = m->known.nrows == 1 ? lg_text(&m->known, 0, KNOWN_RECEIPT_DIGEST) : NULL;
    if (!have)
        return SP_STORE_OK;
    if (strcmp(have, digest) != 0)
        return lg_fail(err, SP_STORE_CONFLICT, "request.digest-mismatch",
                       "request %s was already used for a different request", request_id);
    const char *value = lg_text(&m->known, 0, KNOWN_RECEIPT_VALUE);
    size_t len = lg_len(&m->known, 0, KNOWN_RECEIPT_VALUE);
    if (!value || !(*stored = json_loadb(value, len, 0, NULL)))
        return lg_fail(err, SP_STORE_CORRUPT, "store.corrupt", "receipt %s does not decode",
                       request_id);
    return SP_STORE_OK;
}

/* Authority time: the lock read's, or the driver's - both after the lock
 * (or, on a prediction, checked by its guard against the database's). */
static uint64_t locked_now(lg_mut *m)
{
    const sp_db_val *now = lg_run_exists(m) ? sp_db_cell(&m->run, 0, LOCK_NOW) : NULL;
    if (!now || now->type != SP_DB_INT)
        return lg_now(m->s);
    uint64_t ms = now->i < 0 ? 0 : (uint64_t)now->i;
    if (!m->predicted)
        lg_predict_clock(m->s, ms);
    return ms;
}

static sp_store_rc insert_receipt(lg_mut *m, const lg_op *op, const char *request_id,
                                  const char *digest, sp_error *err)
{
    size_t len = 0;
    char *value = NULL;
    sp_store_rc rc = lg_encode(m->value, &value, &len, "receipt value", err);
    if (rc)
        return rc;
    rc = LG_Q(m->s, NULL, err,
              "INSERT INTO receipts (tenant, run_id, request_id, request_digest, operation, value)"
              " VALUES (?, ?, ?, ?, ?, ?)",
              DB_TEXT(m->key->tenant), DB_TEXT(m->key->run_id), DB_TEXT(request_id),
              DB_TEXT(digest), DB_TEXT(op->name), DB_TEXTN(value, len));
    free(value);
    return rc;
}

static void failpoint(sp_store *s, const lg_op *op, const char *when)
{
    if (!op->failpoint)
        return;
    char name[96];
    snprintf(name, sizeof name, "store.%s.%s", op->failpoint, when);
    lg_failpoint(s, name, strcmp(when, "after-commit") == 0);
}

/* Receipt, failpoints, commit. The transaction is over when this returns. */
static sp_store_rc finish_applied(lg_mut *m, const lg_op *op, const char *request_id,
                                  const char *digest, sp_error *err)
{
    sp_store_rc rc = lg_run_flush(m, err);
    if (rc == SP_STORE_OK)
        rc = insert_receipt(m, op, request_id, digest, err);
    if (rc) {
        lg_rollback(m->s);
        return rc;
    }
    failpoint(m->s, op, "before-commit");
    rc = lg_commit(m->s, err);
    if (rc == SP_STORE_OK && op->predicts)
        lg_predict_stage(m, m->prefetched);
    if (rc == SP_STORE_OK)
        failpoint(m->s, op, "after-commit");
    return rc;
}

/* Inside the transaction: lock, receipt first, now, apply. A replay
 * (*stored set) or a natural duplicate leaves the transaction open for the
 * caller to roll back. */
static sp_store_rc run_locked(lg_mut *m, const lg_op *op, const char *request_id,
                              const char *digest, const void *req, json_t **stored, sp_error *err)
{
    m->skips_busy = op->skips_busy && op->skips_busy(req);
    sp_store_rc rc = lock_and_read_known(m, op, req, request_id, err);
    if (rc == SP_STORE_OK && m->skips_busy && !lg_run_exists(m))
        return lg_fail(err, SP_STORE_CONFLICT, "run.busy",
                       "run %s is held by another transaction: skipped", m->key->run_id);
    if (rc == SP_STORE_OK)
        rc = receipt_first(m, request_id, digest, stored, err);
    if (rc || *stored)
        return rc;
    m->now = locked_now(m);
    rc = op->apply(m, req, err);
    if (rc == SP_STORE_OK && !m->value)
        rc = lg_encode_fail(err, true, "result value");
    if (m->predicted && (rc || m->natural_duplicate))
        rc = lg_predict_missed(m->s, err); /* decided on rows the database may not hold */
    return rc;
}

sp_store_rc lg_mutate(sp_store *s, const lg_op *op, const sp_run_key *key, const char *request_id,
                      json_t *body, const void *req, void *res, sp_disposition *disposition,
                      sp_error *err)
{
    char digest[SP_DIGEST_TEXT_LEN + 1];
    sp_store_rc rc = request_digest(op->name, body, digest, err);
    if (rc == SP_STORE_OK)
        rc = lg_begin(s, true, err);
    if (rc)
        return rc;
    lg_mut m = {.s = s, .key = key};
    lg_predict_begin(s, key);
    json_t *stored = NULL;
    rc = run_locked(&m, op, request_id, digest, req, &stored, err);
    if (rc || stored || m.natural_duplicate)
        lg_rollback(s);
    else
        rc = finish_applied(&m, op, request_id, digest, err);
    sp_db_rows_free(&m.run);
    sp_db_rows_free(&m.known);
    sp_db_rows_free(&m.extra);
    const json_t *value = stored ? stored : m.value;
    if (rc == SP_STORE_OK)
        rc = op->decode(value, res, err);
    if (rc == SP_STORE_OK)
        *disposition = (stored || m.natural_duplicate) ? SP_DUPLICATE : SP_APPLIED;
    json_decref(stored);
    json_decref(m.value);
    return rc;
}
