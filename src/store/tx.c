/*
 * tx.c - transactions, statements and row access for the store logic, over
 * sp_db_driver (see logic.h). Also the failure helpers every operation uses.
 *
 * What it is for: one thin place where the operations reach the driver, so
 * that every driver error keeps its kind and stable code.
 *
 * Inside a batch (batch.c) held by the calling thread, a request's write
 * transaction is the batch's (begun by the first write), and a read after
 * that runs in the batch's transaction, so a request keeps all its
 * semantics but not its own flush. A request has no savepoint of its own
 * (SP_DB_REQUEST_UNGUARDED: no sub-journal copy of every page it changes on
 * SQLite, no subtransaction on PostgreSQL): its failure before it wrote
 * leaves nothing, and its failure after it wrote fails the whole batch,
 * which the caller makes again - and the next batches, each request in its
 * own savepoint (SP_DB_REQUEST_SAVEPOINT), so that the failing request then
 * fails alone. Where the driver defers writes (PostgreSQL's pipeline), a
 * request's trailing writes are answered by the batch's next exchange.
 * Counts statements and durable commits for sp_store_counters.
 *
 * What it must never do: interpret rows, retry, or leave a transaction open
 * (a transaction started here ends with lg_commit or lg_rollback).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "json/json.h"
#include "store/logic.h"

sp_store_rc lg_fail(sp_error *err, sp_store_rc rc, const char *code, const char *fmt, ...)
{
    char message[SP_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    sp_fail(err, code, "%s", message);
    return rc;
}

sp_store_rc lg_encode_fail(sp_error *err, bool oom, const char *what)
{
    if (oom)
        return lg_fail(err, SP_STORE_UNAVAILABLE, "runtime.out-of-memory", "out of memory (%s)",
                       what);
    return lg_fail(err, SP_STORE_CONFLICT, "store.encode", "cannot encode %s", what);
}

sp_store_rc lg_encode(const json_t *v, char **out, size_t *len, const char *what, sp_error *err)
{
    sp_error eerr = {0};
    *out = v ? sp_json_encode_alloc(v, len, &eerr) : NULL;
    bool oom = !v || strcmp(eerr.code, "runtime.out-of-memory") == 0;
    sp_error_clear(&eerr);
    return *out ? SP_STORE_OK : lg_encode_fail(err, oom, what);
}

void sp_db_rows_free(sp_db_rows *r)
{
    if (!r || !r->cells)
        return;
    for (size_t i = 0; i < r->nrows * r->ncols; i++)
        free((char *)r->cells[i].s);
    free(r->cells);
    r->cells = NULL;
    r->nrows = r->ncols = 0;
}

bool sp_db_rows_copy(const sp_db_rows *src, size_t row, size_t col, size_t n, sp_db_rows *out)
{
    *out = (sp_db_rows){0};
    if (!(out->cells = calloc(n ? n : 1, sizeof *out->cells)))
        return false;
    out->nrows = 1, out->ncols = n;
    for (size_t i = 0; i < n; i++) {
        const sp_db_val *v = sp_db_cell(src, row, col + i);
        out->cells[i] = *v;
        char *copy = v->s ? malloc(v->len + 1) : NULL;
        if (copy) {
            memcpy(copy, v->s, v->len);
            copy[v->len] = '\0';
            out->cells[i].s = copy;
        }
        if (v->s && !copy) {
            for (size_t j = 0; j < i; j++)
                free((char *)out->cells[j].s);
            free(out->cells);
            *out = (sp_db_rows){0};
            return false;
        }
    }
    return true;
}

/* Inside a batch this thread holds, a write request runs in the batch's
 * transaction, which the first write begins (kept apart from the others as
 * request_kind says); a read before that runs on its own, a read after it
 * in the batch's. */
static bool batch_request(sp_store *s, sp_db_tx mode)
{
    return lg_in_batch(s) && (s->batch.open || mode == SP_DB_WRITE);
}

/* After a request failed for good inside a batch it could not leave alone,
 * this many batches keep each request in its own savepoint (answered_each;
 * on PostgreSQL its deferred writes answered at its RELEASE). */
#define ANSWERED_BATCHES_AFTER_FAILURE 64

/* A write request that the batch's transaction holds nothing before needs
 * no savepoint of its own: its failure rolls the whole transaction back. A
 * sequential step - one request per batch - saves a SAVEPOINT and a RELEASE
 * (on SQLite the sub-journal's copies of the pages it changes). */
static bool first_write_request(const sp_store *s)
{
    return s->batch.requests == 0 && !s->batch.answered_each;
}

/* How a write request of the batch is kept apart (sp_db_request). */
static sp_db_request request_kind(const sp_store *s)
{
    if (first_write_request(s))
        return SP_DB_REQUEST_BARE;
    return s->batch.answered_each ? SP_DB_REQUEST_SAVEPOINT : SP_DB_REQUEST_UNGUARDED;
}

/* What the open request of the batch did: a write, or a failed statement
 * (after either, only its savepoint - if it has one - undoes it). */
static void request_did(sp_store *s, bool wrote, sp_store_rc rc)
{
    if (!lg_in_batch(s) || !s->batch.request_open)
        return;
    s->batch.request_touched |= wrote || rc != SP_STORE_OK;
    if (rc != SP_STORE_OK && s->batch.request_rc == SP_STORE_OK)
        s->batch.request_rc = rc;
}

/* A request failed with `rc` where it could not fail alone: a failure that
 * is not the connection's or the server's will come again when the batch is
 * made again, and would fail it every time; the next batches keep each
 * request in its own savepoint, so the failing request fails alone. */
void lg_batch_request_failed(sp_store *s, sp_store_rc rc)
{
    if (!sp_store_rc_transient(rc))
        s->answered_batches = ANSWERED_BATCHES_AFTER_FAILURE;
}

/* Deferred writes of an earlier request of the batch this thread holds are
 * not answered yet: the next exchange answers them first. */
static bool unanswered(const sp_store *s) { return lg_in_batch(s) && s->batch.unanswered; }

sp_store_rc lg_batch_usable(sp_store *s, sp_error *err)
{
    if (!s->batch.failed)
        return SP_STORE_OK;
    return lg_fail(err, SP_STORE_UNAVAILABLE,
                   s->batch.missed ? SP_STORE_PREDICTION_MISSED : "store.busy",
                   "the batch cannot commit: %s; it is rolled back and its requests are to be"
                   " made again",
                   s->batch.failure);
}

/* `rc`: the answer of an exchange that also answered deferred writes of an
 * earlier request of the batch (`earlier`). When it failed, the failure may
 * be theirs - PostgreSQL skips everything after a failed statement of a
 * pipeline - and that request has returned already: the batch can only be
 * aborted (everything in it is rolled back and the caller makes its
 * requests again), and this and every later request of it fail with
 * store.busy naming the failure. */
static sp_store_rc answered(sp_store *s, bool earlier, sp_store_rc rc, sp_error *err)
{
    if (!earlier)
        return rc;
    s->batch.unanswered = false;
    return rc == SP_STORE_OK ? rc : lg_batch_fail(s, rc, err);
}

sp_store_rc lg_batch_fail(sp_store *s, sp_store_rc rc, sp_error *err)
{
    if (s->batch.failed)
        return rc;
    s->batch.failed = true;
    s->batch.missed = sp_store_prediction_missed(err);
    s->batch.mispredicted |= s->batch.missed;
    snprintf(s->batch.failure, sizeof s->batch.failure, "%s", err->message);
    lg_batch_request_failed(s, rc);
    sp_error_clear(err);
    return lg_batch_usable(s, err);
}

static sp_store_rc begin(sp_store *s, sp_db_tx mode, sp_error *err)
{
    if (lg_in_batch(s))
        s->batch.request_alone = !batch_request(s, mode);
    if (lg_in_batch(s) && !s->batch.request_alone) {
        sp_store_rc rc = lg_batch_usable(s, err);
        if (rc)
            return rc;
    }
    if (!batch_request(s, mode)) {
        atomic_fetch_add_explicit(&s->statements, mode == SP_DB_ONE ? 0 : 1,
                                  memory_order_relaxed); /* its BEGIN */
        return s->driver->begin(s->conn, mode, err);
    }
    sp_store_rc rc = lg_batch_open(s, err);
    sp_db_request kind = mode == SP_DB_WRITE ? request_kind(s) : SP_DB_REQUEST_READ;
    if (rc == SP_STORE_OK && kind == SP_DB_REQUEST_SAVEPOINT) /* sent with its first read */
        rc = lg_write(s, "SAVEPOINT spore_request", NULL, 0, -1, err);
    if (rc == SP_STORE_OK)
        s->batch.request_open = true, s->batch.request = kind,
        s->batch.request_touched = false, s->batch.request_rc = SP_STORE_OK,
        s->batch.request_missed = false;
    return rc;
}

/* The open request runs in the batch's transaction. */
static bool in_batch_request(const sp_store *s)
{
    return lg_in_batch(s) && !s->batch.request_alone;
}

sp_store_rc lg_begin(sp_store *s, bool write, sp_error *err)
{
    return begin(s, write ? SP_DB_WRITE : SP_DB_READ, err);
}

sp_store_rc lg_begin_scan(sp_store *s, sp_error *err) { return begin(s, SP_DB_SCAN, err); }

void lg_rollback(sp_store *s)
{
    if (!in_batch_request(s)) {
        s->driver->rollback(s->conn);
        return;
    }
    sp_db_request kind = s->batch.request_open ? s->batch.request : SP_DB_REQUEST_READ;
    s->batch.request_open = false;
    if (s->batch.failed) /* its transaction is to be rolled back whole */
        return;
    if (kind == SP_DB_REQUEST_BARE) {
        s->driver->rollback(s->conn); /* it held only this request (and locks) */
        s->batch.open = false;
        lg_ahead_clear(s);
    } else if (kind == SP_DB_REQUEST_SAVEPOINT) {
        sp_error ignored = {0}; /* a failed rollback fails the batch's commit */
        lg_query(s, "ROLLBACK TO SAVEPOINT spore_request", NULL, 0, NULL, NULL, &ignored);
        lg_query(s, "RELEASE SAVEPOINT spore_request", NULL, 0, NULL, NULL, &ignored);
        sp_error_clear(&ignored);
    } else if (kind == SP_DB_REQUEST_UNGUARDED && s->batch.request_missed) {
        /* it ran on predicted reads (predict.c): made again at once, as it was */
        sp_error why = {0};
        sp_fail(&why, SP_STORE_PREDICTION_MISSED,
                "a request on predicted first reads did not apply");
        lg_batch_fail(s, SP_STORE_UNAVAILABLE, &why);
        sp_error_clear(&why);
    } else if (kind == SP_DB_REQUEST_UNGUARDED && s->batch.request_touched) {
        /* nothing undoes it alone: the batch is made again, each request in
         * its own savepoint (a failure not transient: lg_batch_fail) */
        sp_store_rc rc = s->batch.request_rc ? s->batch.request_rc : SP_STORE_CONFLICT;
        sp_error why = {0};
        sp_fail(&why, "store.request-undone",
                "a request of the batch failed after it wrote, without a savepoint of its own");
        lg_batch_fail(s, rc, &why);
        sp_error_clear(&why);
    }
}

sp_store_rc lg_commit(sp_store *s, sp_error *err)
{
    if (!in_batch_request(s)) {
        atomic_fetch_add_explicit(&s->statements, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->commits, 1, memory_order_relaxed);
        return s->driver->commit(s->conn, err);
    }
    sp_store_rc rc = SP_STORE_OK;
    sp_db_request kind = s->batch.request_open ? s->batch.request : SP_DB_REQUEST_READ;
    if (kind == SP_DB_REQUEST_BARE || kind == SP_DB_REQUEST_UNGUARDED) {
        /* its deferred writes: answered by the batch's next exchange */
        s->batch.requests++;
        s->batch.unanswered = s->driver->write != NULL;
    } else if (kind == SP_DB_REQUEST_SAVEPOINT) {
        /* immediate: the request's deferred writes answer here, and one that
         * failed undoes the request alone, not the batch */
        rc = lg_query(s, "RELEASE SAVEPOINT spore_request", NULL, 0, NULL, NULL, err);
        if (rc == SP_STORE_OK)
            s->batch.requests++;
        else
            lg_rollback(s);
    }
    s->batch.request_open = false;
    return rc;
}

uint64_t lg_now(sp_store *s)
{
    uint64_t now = s->driver->now_ms(s->conn);
    return now > UINT64_C(9223372036854775807) ? UINT64_C(9223372036854775807) : now;
}

sp_store_rc lg_query(sp_store *s, const char *sql, const sp_db_val *params, size_t nparams,
                     sp_db_rows *out, int64_t *changes, sp_error *err)
{
    if (out)
        *out = (sp_db_rows){0};
    atomic_fetch_add_explicit(&s->statements, 1, memory_order_relaxed);
    bool earlier = unanswered(s);
    sp_store_rc rc = s->driver->query(s->conn, sql, params, nparams, out, changes, err);
    /* a statement whose rows nobody reads is a write (one that counted its
     * changes wrote only when it changed a row) */
    request_did(s, !out && (!changes || rc != SP_STORE_OK || *changes > 0), rc);
    return answered(s, earlier, rc, err);
}

sp_store_rc lg_write(sp_store *s, const char *sql, const sp_db_val *params, size_t nparams,
                     int64_t expect_rows, sp_error *err)
{
    if (s->driver->write) {
        atomic_fetch_add_explicit(&s->statements, 1, memory_order_relaxed);
        /* a full pipeline is answered first: its failure may be an earlier
         * request's (its success answers them, unseen: they stay unanswered) */
        bool earlier = unanswered(s);
        sp_store_rc rc = s->driver->write(s->conn, sql, params, nparams, expect_rows, err);
        request_did(s, true, rc);
        return rc ? answered(s, earlier, rc, err) : rc;
    }
    int64_t changes = 0;
    sp_store_rc rc = lg_query(s, sql, params, nparams, NULL, &changes, err);
    if (rc == SP_STORE_OK && expect_rows >= 0 && changes != expect_rows)
        return lg_fail(err, SP_STORE_CORRUPT, "store.invariant",
                       "a write expected to change %lld row(s) changed %lld",
                       (long long)expect_rows, (long long)changes);
    return rc;
}

sp_store_rc lg_write1(sp_store *s, const char *sql, const sp_db_val *params, size_t nparams,
                      sp_error *err)
{
    return lg_write(s, sql, params, nparams, 1, err);
}

sp_store_rc lg_announce_work(sp_store *s, const char *what, sp_error *err)
{
    const char *sql = s->driver->dialect.notify_work;
    return sql ? lg_write(s, sql, LG_PARAMS(DB_TEXT(what)), 1, -1, err) : SP_STORE_OK;
}

sp_store_rc lg_query_all(sp_store *s, const sp_db_read *reads, size_t n, sp_db_rows *outs,
                         sp_error *err)
{
    for (size_t i = 0; i < n; i++)
        outs[i] = (sp_db_rows){0};
    if (s->driver->query_all) {
        atomic_fetch_add_explicit(&s->statements, n, memory_order_relaxed);
        bool earlier = unanswered(s);
        sp_store_rc rc = s->driver->query_all(s->conn, reads, n, outs, err);
        request_did(s, false, rc);
        return answered(s, earlier, rc, err);
    }
    sp_store_rc rc = SP_STORE_OK;
    for (size_t i = 0; i < n && rc == SP_STORE_OK; i++)
        rc = lg_query(s, reads[i].sql, reads[i].params, reads[i].nparams, &outs[i], NULL, err);
    if (rc)
        for (size_t i = 0; i < n; i++)
            sp_db_rows_free(&outs[i]);
    return rc;
}

sp_store_rc lg_query_or_write(sp_store *s, const char *sql, const sp_db_val *params,
                              size_t nparams, sp_db_rows *out, sp_error *err)
{
    return out ? lg_query(s, sql, params, nparams, out, NULL, err)
               : lg_write(s, sql, params, nparams, -1, err);
}

/* One statement on its own: in a batch, inside the batch's transaction;
 * otherwise in the statement's implicit transaction (no BEGIN...ROLLBACK). */
static sp_store_rc one_statement(sp_store *s, const char *sql, const sp_db_val *params,
                                 size_t nparams, sp_db_rows *out, sp_error *err)
{
    sp_store_rc rc = begin(s, SP_DB_ONE, err);
    if (rc)
        return rc;
    rc = lg_query(s, sql, params, nparams, out, NULL, err);
    if (in_batch_request(s))
        s->batch.request_open = false;
    else
        s->driver->rollback(s->conn); /* ends nothing: releases the connection */
    return rc;
}

sp_store_rc lg_read(sp_store *s, const char *sql, const sp_db_val *params, size_t nparams,
                    sp_db_rows *out, sp_error *err)
{
    *out = (sp_db_rows){0};
    return one_statement(s, sql, params, nparams, out, err);
}

sp_store_rc lg_scan(sp_store *s, const char *sql, const sp_db_val *params, size_t nparams,
                    sp_db_rows *out, sp_error *err)
{
    char text[2048];
    *out = (sp_db_rows){0};
    if ((size_t)snprintf(text, sizeof text, "%s%s", sql, s->driver->dialect.skip_locked) >=
        sizeof text)
        return lg_fail(err, SP_STORE_INCOMPATIBLE, "store.sql", "a scan statement is too long");
    return one_statement(s, text, params, nparams, out, err);
}

void lg_copy(char *dst, size_t cap, const sp_db_rows *r, size_t row, size_t col)
{
    const char *s = lg_text(r, row, col);
    size_t n = s ? lg_len(r, row, col) : 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, s, n);
    dst[n] = '\0';
}

bool lg_dup(char **dst, size_t *len, const sp_db_rows *r, size_t row, size_t col)
{
    const char *s = lg_text(r, row, col);
    size_t n = s ? lg_len(r, row, col) : 0;
    *dst = NULL;
    if (len)
        *len = n;
    if (!s)
        return true;
    *dst = malloc(n + 1);
    if (!*dst)
        return false;
    memcpy(*dst, s, n);
    (*dst)[n] = '\0';
    return true;
}
