/*
 * outcome.c - what became of a COMMIT whose answer was lost (store.h:
 * sp_store_commit_outcome). Every PostgreSQL transaction that wrote carries,
 * sent just before its COMMIT in the same pipeline, an upsert of its
 * connection's row in commit_marks: (session, mark), the mark one more than
 * the last. When the COMMIT's answer never came - the connection was cut,
 * the backend ended, the server restarted - a new connection reads the row:
 * it holds this mark exactly when the transaction committed. The read takes
 * a share lock on the row, so a transaction still alive on the server (a
 * connection the client lost but the server has not noticed yet) is waited
 * for (lock_timeout, then unavailable: ask again), never taken for one that
 * did not commit.
 *
 * Why: the engine's batch holds claims, cancellations and notes that leave
 * the process only once the batch has committed. A batch that committed but
 * was taken for failed left its claims to run out their leases: a step
 * waited a whole lease, and an attempt that never ran was expired and
 * counted. Receipts answer a retried request, but a batch's turn is not
 * retried: the next pass finds it taken.
 *
 * A session's name is random, one per connection object (reconnecting keeps
 * it); a writer that opens the store removes the rows of sessions silent
 * for a day (sp_pg_marks_open).
 *
 * A batch sent behind another whose answer is unread (sent.c) carries a
 * chained mark: it commits only if that one did, so when both answers are
 * lost, a row holding either mark says that the first one committed.
 *
 * Must never call a commit happened that it cannot prove, nor answer for
 * any transaction but the last marked one of its connection (and those
 * chained to it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/random.h"
#include "store/postgres/postgres.h"

/* A session's row untouched this long is removed by a writer's open. */
#define SILENT_MS "86400000"

static const char MARK_SQL[] =
    "INSERT INTO commit_marks (session, mark, at_ms) VALUES (?, ?, " SP_PG_NOW_MS ")"
    " ON CONFLICT (session) DO UPDATE SET mark = EXCLUDED.mark, at_ms = EXCLUDED.at_ms";

/* The same, in a transaction whose COMMIT is to return before its WAL is on
 * the server's disk (flush.c makes it durable): the statement also sets
 * synchronous_commit off for this transaction - one statement, not two. */
static const char MARK_UNFLUSHED_SQL[] =
    "INSERT INTO commit_marks (session, mark, at_ms) SELECT ?, ?, " SP_PG_NOW_MS
    " FROM (SELECT set_config('synchronous_commit', 'off', true)) unflushed"
    " ON CONFLICT (session) DO UPDATE SET mark = EXCLUDED.mark, at_ms = EXCLUDED.at_ms";

/* The same, for a batch sent behind another whose answer is unread
 * (sent.c): written only where the row holds the mark before (that batch
 * committed), else it fails as a missed prediction, and with it the
 * whole batch - it was made on what that one would have committed.
 * COALESCE evaluates the failing cast only when the update returned no
 * row (no aggregate: predict.c, guards_make). */
static const char MARK_CHAINED_SQL[] =
    "WITH chained AS (UPDATE commit_marks SET mark = ?, at_ms = " SP_PG_NOW_MS
    " WHERE session = ? AND mark = ? RETURNING set_config('synchronous_commit', 'off', true))"
    " SELECT COALESCE((SELECT 0 FROM chained), ('" SP_DB_PREDICTION_MISSED
    ": the batch sent before this one did not commit ' || clock_timestamp())::int)";

void sp_pg_marks_init(pg_conn *c) { sp_random_hex(c->session, sizeof c->session / 2); }

void sp_pg_marks_open(pg_conn *c)
{
    c->marks = true;
    /* deletes nothing mostly: then it commits nothing either (no flush) */
    PQclear(PQexec(c->db, "DELETE FROM commit_marks WHERE at_ms < " SP_PG_NOW_MS " - " SILENT_MS));
}

sp_store_rc sp_pg_mark(pg_conn *c, bool unflushed, bool chained, sp_error *err)
{
    sp_db_val session = {.type = SP_DB_TEXT, .s = c->session, .len = strlen(c->session)};
    sp_db_val before = DB_INT(c->mark), mark = DB_INT(++c->mark);
    atomic_fetch_add_explicit(&c->own_statements, 1, memory_order_relaxed);
    if (chained) {
        sp_db_val params[3] = {mark, session, before};
        return sp_pg_write(c, MARK_CHAINED_SQL, params, 3, -1, err);
    }
    sp_db_val params[2] = {session, mark};
    return sp_pg_write(c, unflushed ? MARK_UNFLUSHED_SQL : MARK_SQL, params, 2, 1, err);
}

/* The session's mark as the server holds it, once the transaction that may
 * still hold the row is over (0: no row). */
static sp_store_rc read_mark(pg_conn *c, uint64_t *mark, sp_error *err)
{
    const char *values[1] = {c->session};
    atomic_fetch_add_explicit(&c->round_trips, 1, memory_order_relaxed);
    PGresult *res = PQexecParams(c->db,
                                 "SELECT mark FROM commit_marks WHERE session = $1 FOR SHARE", 1,
                                 NULL, values, NULL, NULL, 0);
    sp_store_rc rc = SP_STORE_OK;
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        rc = sp_pg_fail(c, res, "reading the commit mark", err);
    else
        *mark = PQntuples(res) == 1 ? strtoull(PQgetvalue(res, 0, 0), NULL, 10) : 0;
    PQclear(res);
    return rc;
}

sp_store_rc sp_pg_commit_outcome(void *conn, sp_commit_outcome *out, sp_error *err)
{
    pg_conn *c = conn;
    pthread_mutex_lock(&c->mu);
    sp_store_rc rc = SP_STORE_OK;
    uint64_t mark = 0;
    if (c->unresolved) {
        /* the lost COMMIT's connection is gone, or going: a server ending
         * a session answers its error before it closes the socket */
        if (PQstatus(c->db) != CONNECTION_OK || PQpipelineStatus(c->db) != PQ_PIPELINE_OFF ||
            PQtransactionStatus(c->db) != PQTRANS_IDLE)
            rc = sp_pg_reconnect(c, err);
        if (rc == SP_STORE_OK)
            rc = read_mark(c, &mark, err);
        if (rc == SP_STORE_OK) {
            *out = mark >= c->unresolved_mark && mark <= c->unresolved_hi
                       ? SP_COMMIT_HAPPENED
                       : SP_COMMIT_DID_NOT_HAPPEN;
            c->unresolved = false;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}
