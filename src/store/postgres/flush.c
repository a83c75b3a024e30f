/*
 * flush.c - PostgreSQL commits whose WAL flush runs beside the next step
 * (docs/postgres.md §3h; the driver's commit_deferred, over the store's
 * flusher, src/store/flusher.h).
 *
 * What it is for: a batch of the engine commits with synchronous_commit off
 * (set for that transaction only), so its COMMIT returns once the commit
 * record is in the server's WAL buffers, not once it is on the server's
 * disk. The store's flusher thread then makes it durable on a connection of
 * its own: a transaction with an ID, committed synchronously, flushes the
 * WAL up to its own commit record, so every commit made before it began.
 * The engine lets nothing of a batch out of the process (a pool step, an
 * unsafe step, an answer) before its ticket is flushed, as on SQLite.
 *
 * What proves a flush: the flushing transaction also reads the committing
 * connection's commit mark (outcome.c). Marks grow with each of that
 * session's write transactions, and the WAL is flushed in order, so the
 * row holding at least the mark of the last deferred commit that returned
 * proves that every one before it is durable. A server that crashed before
 * its WAL reached the disk has lost them, and the row says so: that is a
 * final failure (store.io: stop and start again), never a flush. The
 * proof holds while the committing connection has not committed anything
 * on a new backend (its generation); a reconnect makes the committing
 * connection prove the tickets itself (sp_pg_flush_resolve) before it
 * begins anything else, and the flusher's answers about an older
 * generation count for nothing.
 *
 * What it must never do: call a ticket flushed that it has not proved, use
 * the committing thread's connection, or hide a lost commit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "store/postgres/postgres.h"

typedef struct pg_flush {
    pg_conn *main;  /* whose commits: its session, URL and generation */
    PGconn *db;     /* the flusher's own connection (NULL: not yet) */
    pthread_mutex_t mu;
    uint64_t mark, generation; /* of the last deferred commit that returned */
} pg_flush;

/* A transaction with an ID, committed synchronously, and the session's
 * mark as its snapshot saw it (0: no row). */
static const char FLUSH_SQL[] =
    "SELECT txid_current(), (SELECT mark FROM commit_marks WHERE session = $1)";

/* Flush the server's WAL on `db` and read `session`'s mark: 0 when done,
 * 1 when the connection failed, -1 with `why` on another failure. */
static int flush_and_read(PGconn *db, const char *session, uint64_t *mark, char *why, size_t cap)
{
    const char *values[1] = {session};
    PGresult *res = PQexecParams(db, FLUSH_SQL, 1, NULL, values, NULL, NULL, 0);
    int rc = 0;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        rc = PQstatus(db) == CONNECTION_OK ? -1 : 1;
        if (rc < 0)
            snprintf(why, cap, "postgres: flushing committed work failed: %s",
                     PQresultErrorMessage(res));
    } else {
        *mark = PQgetisnull(res, 0, 1) ? 0 : strtoull(PQgetvalue(res, 0, 1), NULL, 10);
    }
    PQclear(res);
    return rc;
}

static void lost(char *why, size_t cap, uint64_t durable, uint64_t want)
{
    snprintf(why, cap,
             "postgres: the server lost commits it had answered (its last durable commit of "
             "this connection is mark %llu, %llu was answered): it crashed before its WAL "
             "reached the disk",
             (unsigned long long)durable, (unsigned long long)want);
}

/* The flusher's connection, connected when needed; NULL for now. */
static PGconn *flush_connection(pg_flush *x)
{
    if (x->db && PQstatus(x->db) == CONNECTION_OK)
        return x->db;
    PQfinish(x->db);
    x->db = sp_pg_connect(x->main->url);
    if (!x->db || PQstatus(x->db) != CONNECTION_OK)
        return NULL;
    /* its commits must wait for the disk, whatever the server's default */
    PQclear(PQexec(x->db, "SELECT set_config('synchronous_commit', 'on', false)"
                          " WHERE current_setting('synchronous_commit') = 'off'"));
    return x->db;
}

static sp_flush_result pg_flush_fn(void *ctx, char *why, size_t cap)
{
    pg_flush *x = ctx;
    pthread_mutex_lock(&x->mu);
    uint64_t want = x->mark, generation = x->generation;
    pthread_mutex_unlock(&x->mu);
    if (atomic_load(&x->main->generation) != generation) {
        sp_sleep_ms(10); /* the committing connection proves these itself (resolve) */
        return SP_FLUSH_AGAIN;
    }
    PGconn *db = flush_connection(x);
    uint64_t durable = 0;
    int rc = db ? flush_and_read(db, x->main->session, &durable, why, cap) : 1;
    if (rc > 0) { /* no connection: nothing is known, try again shortly */
        sp_sleep_ms(50);
        return SP_FLUSH_AGAIN;
    }
    if (rc < 0)
        return SP_FLUSH_FAILED;
    if (atomic_load(&x->main->generation) != generation)
        return SP_FLUSH_AGAIN; /* a reconnect during the flush: the mark may be a new backend's */
    if (durable >= want)
        return SP_FLUSH_DONE;
    lost(why, cap, durable, want);
    return SP_FLUSH_FAILED;
}

static void pg_flush_release(void *ctx)
{
    pg_flush *x = ctx;
    PQfinish(x->db);
    pthread_mutex_destroy(&x->mu);
    free(x);
}

sp_flusher *sp_pg_flusher(pg_conn *c)
{
    sp_flusher *f = atomic_load(&c->flusher);
    if (f || c->no_flusher)
        return f;
    pg_flush *x = calloc(1, sizeof *x);
    sp_error ignored = {0};
    if (x) {
        x->main = c;
        pthread_mutex_init(&x->mu, NULL);
        f = sp_flusher_start(pg_flush_fn, pg_flush_release, x, &ignored);
        if (!f)
            pg_flush_release(x);
        else
            c->flush = x;
    }
    sp_error_clear(&ignored);
    c->no_flusher = f == NULL;
    atomic_store(&c->flusher, f);
    return f;
}

uint64_t sp_pg_flush_committed(pg_conn *c, uint64_t mark)
{
    pthread_mutex_lock(&c->flush->mu);
    c->flush->mark = mark;
    c->flush->generation = atomic_load(&c->generation);
    pthread_mutex_unlock(&c->flush->mu);
    return sp_flusher_committed(atomic_load(&c->flusher));
}

sp_store_rc sp_pg_flush_resolve(pg_conn *c, sp_error *err)
{
    sp_flusher *f = atomic_load(&c->flusher);
    uint64_t flushes = 0, unflushed = 0;
    if (f)
        sp_flusher_counts(f, &flushes, &unflushed);
    if (!unflushed) {
        c->flush_unresolved = false;
        return SP_STORE_OK;
    }
    c->flush_unresolved = true;
    pthread_mutex_lock(&c->flush->mu);
    uint64_t want = c->flush->mark;
    pthread_mutex_unlock(&c->flush->mu);
    char why[512] = "";
    uint64_t durable = 0;
    atomic_fetch_add_explicit(&c->round_trips, 1, memory_order_relaxed);
    int rc = flush_and_read(c->db, c->session, &durable, why, sizeof why);
    if (rc > 0)
        return sp_pg_fail(c, NULL, "flushing committed work", err);
    if (rc == 0 && durable >= want)
        sp_flusher_confirm(f);
    else {
        if (rc == 0)
            lost(why, sizeof why, durable, want);
        sp_flusher_fail(f, why);
    }
    c->flush_unresolved = false;
    return sp_flusher_failed(f, err);
}
