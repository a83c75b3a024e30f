/*
 * listen.c - wake-ups over LISTEN/NOTIFY (step-path.md item 6, issue 12):
 * the store's own writes notify the schema's channel when a transaction
 * commits new work - an event left pending, an invocation left pending, a
 * timer (sp_db_dialect.notify_work, lg_announce_work in tx.c);
 * this listener keeps its own connection LISTENing on that channel and
 * calls the engine's wake function for every notification, so an idle
 * worker starts its next tick at once instead of at its next poll.
 *
 * The channel is `spore_` + the first 16 hex of md5(current_schema())
 * (SP_PG_CHANNEL): the notifying statement computes the same name, so
 * stores in other schemas of the same database do not wake this one.
 *
 * What it must never do: block a store call (it has its own connection and
 * thread), show the URL's password, give up (a lost connection is retried
 * every second, and the wake function is called once after every
 * reconnection for what was missed), or outlive sp_store_listener_stop.
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/postgres/postgres.h"

enum { RECONNECT_MS = 1000, WAIT_MS = 1000 };

typedef struct pg_listener {
    sp_store_listener base; /* first: sp_store_listener_stop */
    pthread_t thread;
    atomic_bool stopping;
    int stop_pipe[2];
    char *url;
    sp_wake_fn fn;
    void *ctx;
} pg_listener;

/* The payload is the table that got new work. */
static unsigned wake_of(const char *payload)
{
    if (strcmp(payload, "events") == 0)
        return SP_WAKE_EVENTS;
    if (strcmp(payload, "invocations") == 0)
        return SP_WAKE_INVOCATIONS;
    if (strcmp(payload, "timers") == 0)
        return SP_WAKE_TIMERS;
    return SP_WAKE_ALL;
}

/* Wait up to `ms` for the connection's socket (fd >= 0) or the stop pipe.
 * True when the socket is readable. */
static bool wait_readable(pg_listener *l, int fd, int ms)
{
    struct pollfd fds[2] = {{l->stop_pipe[0], POLLIN, 0}, {fd, POLLIN, 0}};
    int n = poll(fds, fd >= 0 ? 2 : 1, ms);
    return n > 0 && fd >= 0 && (fds[1].revents & (POLLIN | POLLERR | POLLHUP));
}

/* Connect and LISTEN on the schema's channel; NULL when it did not work. */
static PGconn *subscribe(const pg_listener *l)
{
    PGconn *db = sp_pg_connect(l->url);
    if (!db || PQstatus(db) != CONNECTION_OK) {
        PQfinish(db);
        return NULL;
    }
    PGresult *res = PQexec(db, "SELECT " SP_PG_CHANNEL);
    bool ok = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
    char sql[64] = "";
    if (ok) /* [a-z0-9_] only: no quoting needed */
        snprintf(sql, sizeof sql, "LISTEN %s", PQgetvalue(res, 0, 0));
    PQclear(res);
    res = ok ? PQexec(db, sql) : NULL;
    ok = ok && PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    if (!ok) {
        PQfinish(db);
        return NULL;
    }
    return db;
}

/* Deliver what arrived; false when the connection is gone. */
static bool drain(pg_listener *l, PGconn *db)
{
    if (!PQconsumeInput(db))
        return false;
    unsigned what = 0;
    PGnotify *n;
    while ((n = PQnotifies(db)) != NULL) {
        what |= wake_of(n->extra ? n->extra : "");
        PQfreemem(n);
    }
    if (what)
        l->fn(l->ctx, what);
    return PQstatus(db) == CONNECTION_OK;
}

static void *listen_main(void *arg)
{
    pg_listener *l = arg;
    PGconn *db = NULL;
    while (!atomic_load(&l->stopping)) {
        if (!db) {
            db = subscribe(l);
            if (!db) {
                wait_readable(l, -1, RECONNECT_MS);
                continue;
            }
            l->fn(l->ctx, SP_WAKE_ALL); /* what committed while nobody listened */
        }
        if (wait_readable(l, PQsocket(db), WAIT_MS) && !drain(l, db)) {
            PQfinish(db);
            db = NULL;
        }
    }
    PQfinish(db);
    return NULL;
}

static void listener_stop(sp_store_listener *base)
{
    pg_listener *l = (pg_listener *)base;
    atomic_store(&l->stopping, true);
    ssize_t w;
    do
        w = write(l->stop_pipe[1], "x", 1);
    while (w < 0 && errno == EINTR);
    pthread_join(l->thread, NULL);
    close(l->stop_pipe[0]);
    close(l->stop_pipe[1]);
    free(l->url);
    free(l);
}

sp_store_listener *sp_pg_listen(void *conn, sp_wake_fn fn, void *ctx, sp_error *err)
{
    pg_conn *c = conn;
    pg_listener *l = calloc(1, sizeof *l);
    if (!l || !(l->url = strdup(c->url))) {
        free(l);
        sp_oom(err);
        return NULL;
    }
    l->base.stop = listener_stop;
    l->fn = fn;
    l->ctx = ctx;
    atomic_init(&l->stopping, false);
    if (pipe2(l->stop_pipe, O_CLOEXEC) != 0) {
        free(l->url);
        free(l);
        sp_fail(err, "store.io", "postgres: cannot make the listener's pipe");
        return NULL;
    }
    if (pthread_create(&l->thread, NULL, listen_main, l) != 0) {
        close(l->stop_pipe[0]);
        close(l->stop_pipe[1]);
        free(l->url);
        free(l);
        sp_fail(err, "store.io", "postgres: cannot start the listener's thread");
        return NULL;
    }
    return &l->base;
}
