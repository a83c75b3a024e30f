/*
 * sent.c - PostgreSQL batches whose COMMIT's answer is read later
 * (docs/postgres.md §3i; the driver's commit_send, answer and
 * begin_behind).
 *
 * What it is for: a sequential step on PostgreSQL spends most of its time
 * in the server (docs/performance.md). Instead of waiting for its batch's
 * answer - BEGIN, guards, writes, the commit mark, COMMIT, sync, in one
 * pipeline - the worker makes its next batch meanwhile (the next inline
 * step on what this one commits, its settle on predicted reads) and sends
 * it behind; then it reads the first answer. The server runs one batch
 * while the worker makes the next.
 *
 * Why it is safe: a batch sent behind one whose answer is unread carries
 * a chained commit mark (outcome.c): written only where the session's row
 * holds the mark of the batch before, so it commits only if that one did.
 * A batch whose answer says it did not commit is never followed by
 * another sent behind it. Tickets (flush.c) are given as answers are read,
 * in commit order, each with its own batch's mark. Nothing of a sent batch
 * leaves the process before its answer (the engine: docs/step-path.md).
 *
 * Must never take one batch's answer for another's, give a ticket to a
 * batch that did not commit, or let a statement that is not pipelined run
 * while answers are unread.
 */
#include <string.h>

#include "base/clock.h"
#include "store/postgres/postgres.h"

static void keep(pg_sent *s, sp_store_rc rc)
{
    s->read = true;
    s->rc = rc;
}

/* Its answer went with the connection: it may have committed. */
static void keep_lost(pg_sent *s)
{
    sp_fail(&s->err, "store.unknown-commit",
            "postgres: the connection went before a sent batch's answer came (the commit's"
            " outcome is unknown)");
    keep(s, SP_STORE_UNKNOWN_COMMIT);
}

/* One sent batch's answers, in the order sent: its statements', its
 * COMMIT's, its sync. False when they did not all come. */
static bool read_one(pg_conn *c, pg_sent *s)
{
    sp_store_rc rc = SP_STORE_OK;
    bool answered = true;
    for (size_t i = 0; i < s->n && answered; i++)
        answered = sp_pg_pending_result(c, s->expects[i], &rc, &s->err);
    PGresult *commit = answered ? PQgetResult(c->db) : NULL;
    if (commit)
        PQclear(PQgetResult(c->db)); /* the NULL that ends its results */
    answered = commit != NULL;
    if (answered) {
        sp_pg_read_to_sync(c);
        c->answered_ms = sp_mono_ms();
    }
    if (!answered) /* the connection went: even after a failure, only a read tells */
        keep_lost(s);
    else if (rc != SP_STORE_OK) /* a statement failed: nothing of it committed */
        keep(s, rc);
    else
        keep(s, sp_pg_commit_status(c, commit, &s->err));
    PQclear(commit);
    if (s->rc == SP_STORE_OK)
        s->ticket = sp_pg_flush_committed(c, s->mark);
    return answered;
}

bool sp_pg_sent_read(pg_conn *c)
{
    bool answered = true;
    for (size_t i = 0; i < c->nsent; i++) {
        pg_sent *s = &c->sent[i];
        if (s->read)
            continue;
        if (answered)
            answered = read_one(c, s);
        else
            keep_lost(s);
    }
    return answered;
}

void sp_pg_sent_lost(pg_conn *c)
{
    for (size_t i = 0; i < c->nsent; i++)
        if (!c->sent[i].read)
            keep_lost(&c->sent[i]);
}

/* Every answer read: the connection out of pipeline mode, and out of the
 * failed transaction a batch whose statement failed left. */
static void settle_idle(pg_conn *c)
{
    if (PQpipelineStatus(c->db) != PQ_PIPELINE_OFF)
        PQexitPipelineMode(c->db);
    if (PQstatus(c->db) == CONNECTION_OK &&
        PQtransactionStatus(c->db) == PQTRANS_INERROR) {
        atomic_fetch_add_explicit(&c->round_trips, 1, memory_order_relaxed);
        PQclear(PQexec(c->db, "ROLLBACK"));
    }
}

void sp_pg_sent_settle(pg_conn *c)
{
    if (!c->nsent || c->npending)
        return;
    if (sp_pg_sent_read(c))
        settle_idle(c);
}

/* A batch sent before and answered that it did not commit: nothing may
 * be sent behind it (it would be made on what that one did not commit). */
bool sp_pg_sent_failed(const pg_conn *c)
{
    for (size_t i = 0; i < c->nsent; i++)
        if (c->sent[i].read && c->sent[i].rc != SP_STORE_OK)
            return true;
    return false;
}

bool sp_pg_sent_unread(const pg_conn *c)
{
    for (size_t i = 0; i < c->nsent; i++)
        if (!c->sent[i].read)
            return true;
    return false;
}

void sp_pg_sent_close(pg_conn *c)
{
    sp_pg_sent_settle(c);
    for (size_t i = 0; i < c->nsent; i++)
        sp_error_clear(&c->sent[i].err);
    c->nsent = 0;
}

/* Whether this transaction's answer may be left for later: a deferred
 * commit (marked, with a flusher) whose statements are in the pipeline. */
static bool may_send(pg_conn *c)
{
    bool marked = c->wrote && c->marks;
    sp_flusher *f = marked ? sp_pg_flusher(c) : NULL;
    return f && c->npending && c->npending + 2 <= SP_PG_PENDING_MAX &&
           c->nsent < SP_DB_SENT_MAX && PQpipelineStatus(c->db) != PQ_PIPELINE_OFF;
}

/* COMMIT and the sync sent; the batch waits in c->sent for its answer. */
static sp_store_rc send(pg_conn *c, sp_error *err)
{
    sp_store_rc rc = sp_flusher_failed(atomic_load(&c->flusher), err);
    bool behind = sp_pg_sent_unread(c);
    if (rc == SP_STORE_OK)
        rc = sp_pg_mark(c, true, behind, err);
    if (rc == SP_STORE_OK && PQsendQueryParams(c->db, "COMMIT", 0, NULL, NULL, NULL, NULL, 0) != 1)
        rc = sp_pg_fail(c, NULL, "commit", err); /* never sent: nothing commits */
    if (rc) {
        sp_pg_rollback_locked(c);
        return rc;
    }
    atomic_fetch_add_explicit(&c->round_trips, 1, memory_order_relaxed);
    bool synced = PQpipelineSync(c->db) == 1; /* sends what is queued */
    pg_sent *s = &c->sent[c->nsent++];
    memcpy(s->expects, c->pending, c->npending * sizeof c->pending[0]);
    s->n = c->npending;
    c->npending = 0;
    s->mark = c->mark;
    s->behind = behind;
    s->read = false;
    s->rc = SP_STORE_OK;
    s->ticket = 0;
    s->err = (sp_error){0};
    if (!synced) /* it may have left: what it did is read back */
        keep_lost(s);
    return SP_STORE_OK;
}

sp_store_rc sp_pg_commit_send(void *conn, uint64_t *ticket, bool *later, sp_error *err)
{
    pg_conn *c = conn;
    *ticket = 0;
    *later = false;
    sp_store_rc rc;
    if (sp_pg_sent_failed(c)) {
        sp_pg_rollback_locked(c);
        sp_fail(err, SP_STORE_PREDICTION_MISSED,
                "the batch sent before this one did not commit: this one, made on it, is"
                " rolled back");
        rc = SP_STORE_UNAVAILABLE;
    } else if (may_send(c)) {
        rc = send(c, err);
        *later = rc == SP_STORE_OK;
    } else {
        rc = sp_pg_finish(c, ticket, err);
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

sp_store_rc sp_pg_answer(void *conn, uint64_t *ticket, sp_error *err)
{
    pg_conn *c = conn;
    *ticket = 0;
    pthread_mutex_lock(&c->mu);
    if (!c->nsent) {
        pthread_mutex_unlock(&c->mu);
        return SP_STORE_OK;
    }
    pg_sent *s = &c->sent[0];
    if (!s->read && !read_one(c, s)) /* the oldest only: those behind it run on */
        sp_pg_sent_lost(c);
    if (!sp_pg_sent_unread(c)) /* no transaction is under way: c->mu was free */
        settle_idle(c);
    sp_store_rc rc = s->rc;
    *ticket = s->ticket;
    if (rc && rc != SP_STORE_UNKNOWN_COMMIT && s->behind && c->taken_failed) {
        /* whatever the server said (its transaction failed before it, or its
         * chained mark did not hold), it failed because that one did */
        sp_fail(&s->err, SP_STORE_PREDICTION_MISSED,
                "the batch sent before this one did not commit: this one, made on it, did not");
        rc = SP_STORE_UNAVAILABLE;
    }
    c->taken_failed = rc != SP_STORE_OK;
    if (rc == SP_STORE_UNKNOWN_COMMIT) { /* those sent behind it commit only after it */
        c->unresolved = true;
        c->unresolved_mark = c->unresolved_hi = s->mark;
        for (size_t i = 1; i < c->nsent && c->sent[i].behind; i++)
            c->unresolved_hi = c->sent[i].mark;
    }
    if (rc)
        sp_error_move(err, &s->err);
    sp_error_clear(&s->err);
    c->nsent--;
    memmove(&c->sent[0], &c->sent[1], c->nsent * sizeof c->sent[0]);
    c->sent[c->nsent].err = (sp_error){0}; /* moved: the copy left owns nothing */
    pthread_mutex_unlock(&c->mu);
    return rc;
}
