/*
 * batch.c - group commit (step-path.md §2): the mutations one thread makes
 * between sp_store_batch_begin and sp_store_batch_commit share one write
 * transaction, so they cost one durable commit (one flush) together. The
 * transaction begins at the batch's first write: a batch that only reads
 * never takes the write lock. Each
 * request keeps every rule of store.md §2 - receipt first, predicates,
 * writes, its receipt - and a request that fails leaves nothing: inside its
 * own savepoint the others stay; where a request has none (tx.c: on
 * PostgreSQL after the first, writes answered later) its failure after it
 * wrote fails the whole batch with store.busy, to be made again. Also the
 * store's counters.
 *
 * Failpoints: a request's store.<op>.before-commit and .after-commit points
 * fire when the batch commits - before and after its COMMIT - so a crash at
 * "after-commit" still means "this request is durable" (against a crash of
 * the process; a deferred commit is durable against a power loss once its
 * ticket is flushed). A batch sent with its answer read later
 * (sp_store_batch_send: PostgreSQL) fires them when its answer says it
 * committed.
 *
 * What it must never do: let another thread's request into the batch (the
 * batch belongs to the thread that began it; other threads wait for the
 * connection as for any transaction), report a request as durable before
 * the batch's COMMIT succeeded, or keep a batch open after commit/abort.
 */
#include <stdlib.h>
#include <string.h>

#include "base/failpoint.h"
#include "store/logic.h"

/* The store whose batch this thread holds, if any. */
static _Thread_local sp_store *held_batch;

bool lg_in_batch(const sp_store *s) { return s && held_batch == s; }

static void names_fire(const sp_strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        sp_failpoint(l->items[i]);
}

void lg_failpoint(sp_store *s, const char *name, bool after_commit)
{
    if (!lg_in_batch(s)) {
        sp_failpoint(name);
        return;
    }
    /* out of memory: a test-only point is lost, nothing else */
    sp_strlist_add(after_commit ? &s->batch.after_commit : &s->batch.before_commit, name);
}

static void batch_end(sp_store *s, bool committed)
{
    held_batch = NULL;
    lg_ahead_clear(s);
    lg_predict_batch_end(s, committed);
    sp_strlist_clear(&s->batch.before_commit);
    sp_strlist_clear(&s->batch.after_commit);
    s->batch = (sp_db_batch){0};
}

sp_store_rc sp_store_batch_begin(sp_store *s, sp_error *err)
{
    if (held_batch)
        return lg_fail(err, SP_STORE_CONFLICT, "store.batch-open",
                       "this thread already holds a batch");
    s->batch = (sp_db_batch){0};
    s->batch.answered_each = s->answered_batches > 0;
    s->answered_batches -= s->batch.answered_each;
    held_batch = s;
    return SP_STORE_OK;
}

sp_store_rc lg_batch_open(sp_store *s, sp_error *err)
{
    if (s->batch.open)
        return SP_STORE_OK;
    atomic_fetch_add_explicit(&s->statements, 1, memory_order_relaxed);
    /* behind a batch sent before, its answer unread: queued after it */
    sp_store_rc rc = s->nsent && s->driver->begin_behind
                         ? s->driver->begin_behind(s->conn, err)
                         : s->driver->begin(s->conn, SP_DB_WRITE, err);
    s->batch.open = rc == SP_STORE_OK;
    return rc;
}

/* The batch's COMMIT: flushed before it returns (ticket NULL), or left to
 * the driver's flusher where it has one (*ticket, left 0 when flushed), or
 * (later non-NULL) sent with its answer left unread where the driver can
 * (*later). */
static sp_store_rc driver_commit(sp_store *s, uint64_t *ticket, bool *later, sp_error *err)
{
    if (later && s->driver->commit_send && s->nsent < SP_DB_SENT_MAX)
        return s->driver->commit_send(s->conn, ticket, later, err);
    if (later)
        *later = false;
    if (!ticket || !s->driver->commit_deferred)
        return s->driver->commit(s->conn, err);
    return s->driver->commit_deferred(s->conn, ticket, err);
}

static sp_store_rc batch_commit(sp_store *s, uint64_t *ticket, bool *later, sp_error *err)
{
    if (!lg_in_batch(s))
        return lg_fail(err, SP_STORE_CONFLICT, "store.batch-closed", "no batch is open");
    if (!s->batch.open) { /* nothing was written */
        batch_end(s, true);
        return SP_STORE_OK;
    }
    if (s->batch.failed) { /* a request's writes failed after it had returned */
        sp_store_rc rc = lg_batch_usable(s, err);
        sp_store_batch_abort(s);
        return rc;
    }
    sp_strlist after = s->batch.after_commit;
    s->batch.after_commit = (sp_strlist){0};
    size_t requests = s->batch.requests;
    names_fire(&s->batch.before_commit);
    held_batch = NULL; /* the COMMIT is the batch's own, not a request's */
    atomic_fetch_add_explicit(&s->statements, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->commits, requests ? 1 : 0, memory_order_relaxed);
    bool unanswered = s->batch.unanswered;
    sp_store_rc rc = driver_commit(s, ticket, later, err);
    s->batch.mispredicted |= rc != SP_STORE_OK && sp_store_prediction_missed(err);
    if (rc != SP_STORE_OK && unanswered)
        lg_batch_request_failed(s, rc);
    batch_end(s, rc == SP_STORE_OK); /* sent: the next batch builds on it */
    if (rc == SP_STORE_OK && later && *later) {
        atomic_fetch_add_explicit(&s->sent, 1, memory_order_relaxed);
        s->sent_after[s->nsent++] = after; /* fired with its answer */
        return rc;
    }
    if (rc == SP_STORE_OK)
        names_fire(&after);
    sp_strlist_clear(&after);
    return rc;
}

sp_store_rc sp_store_batch_commit(sp_store *s, sp_error *err)
{
    return batch_commit(s, NULL, NULL, err);
}

sp_store_rc sp_store_batch_commit_deferred(sp_store *s, uint64_t *ticket, sp_error *err)
{
    *ticket = 0; /* also when there is nothing to commit */
    return batch_commit(s, ticket, NULL, err);
}

sp_store_rc sp_store_batch_send(sp_store *s, uint64_t *ticket, bool *later, sp_error *err)
{
    *ticket = 0;
    *later = false;
    return batch_commit(s, ticket, later, err);
}

sp_store_rc sp_store_batch_answer(sp_store *s, uint64_t *ticket, sp_error *err)
{
    *ticket = 0;
    if (!s->nsent)
        return SP_STORE_OK;
    sp_store_rc rc = s->driver->answer(s->conn, ticket, err);
    sp_strlist after = s->sent_after[0];
    s->nsent--;
    memmove(&s->sent_after[0], &s->sent_after[1], s->nsent * sizeof s->sent_after[0]);
    s->sent_after[s->nsent] = (sp_strlist){0};
    if (rc == SP_STORE_OK) {
        names_fire(&after);
    } else { /* the next batch was made on what this one would have committed */
        lg_predict_forget(s);
        if (sp_store_prediction_missed(err))
            atomic_fetch_add_explicit(&s->missed, 1, memory_order_relaxed);
        else if (rc != SP_STORE_UNKNOWN_COMMIT)
            lg_batch_request_failed(s, rc);
    }
    sp_strlist_clear(&after);
    return rc;
}

bool sp_store_batch_sent(const sp_store *s) { return s->nsent > 0; }

sp_store_rc sp_store_wait_flushed(sp_store *s, uint64_t ticket, sp_error *err)
{
    if (!ticket || !s->driver->wait_flushed)
        return SP_STORE_OK;
    return s->driver->wait_flushed(s->conn, ticket, err);
}

void sp_store_batch_abort(sp_store *s)
{
    if (!lg_in_batch(s))
        return;
    held_batch = NULL;
    if (s->batch.open)
        s->driver->rollback(s->conn);
    batch_end(s, false);
}

bool sp_store_in_batch(const sp_store *s) { return lg_in_batch(s); }

sp_store_rc sp_store_commit_outcome(sp_store *s, sp_commit_outcome *out, sp_error *err)
{
    *out = SP_COMMIT_UNKNOWABLE;
    return s->driver->commit_outcome ? s->driver->commit_outcome(s->conn, out, err) : SP_STORE_OK;
}

bool sp_store_batch_writes(const sp_store *s) { return lg_in_batch(s) && s->batch.requests > 0; }

void sp_store_counters_get(sp_store *s, sp_store_counters *out)
{
    out->commits = atomic_load_explicit(&s->commits, memory_order_relaxed);
    out->statements = atomic_load_explicit(&s->statements, memory_order_relaxed);
    if (s->driver->own_statements)
        out->statements += s->driver->own_statements(s->conn);
    out->round_trips = s->driver->round_trips ? s->driver->round_trips(s->conn) : 0;
    out->predicted = atomic_load_explicit(&s->predicted, memory_order_relaxed);
    out->missed = atomic_load_explicit(&s->missed, memory_order_relaxed);
    out->sent = atomic_load_explicit(&s->sent, memory_order_relaxed);
    out->flushes = out->unflushed = 0;
    if (s->driver->flush_counts)
        s->driver->flush_counts(s->conn, &out->flushes, &out->unflushed);
}
