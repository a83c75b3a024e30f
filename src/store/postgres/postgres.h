/*
 * postgres.h - private interface of the PostgreSQL adapter (store.md §6):
 * the libpq driver (driver.c), its schema (schema.c), its wake-ups
 * (listen.c) and the outcome of a commit whose answer was lost (outcome.c).
 *
 * What it is for: sp_store_open() hands a postgres:// or postgresql:// URL
 * here and gets a store whose driver runs the shared logic (src/store/ops_*)
 * over one libpq connection: READ COMMITTED with the run row locked first,
 * `now` from the database clock after the lock, FOR UPDATE SKIP LOCKED work
 * selection, and every failure mapped by SQLSTATE to the same failure kinds
 * and codes as SQLite.
 *
 * What it must never do: be included outside src/store/, or let the
 * password of the URL reach a location, an error or a log line.
 */
#ifndef SPORE_STORE_POSTGRES_POSTGRES_H
#define SPORE_STORE_POSTGRES_POSTGRES_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>

#include "store/db.h"
#include "store/flusher.h"

/* Same bound on a lock wait as SQLite's busy timeout: then unavailable/store.busy. */
#define SP_PG_LOCK_TIMEOUT "5s"
/* The database's clock in ms, as an SQL expression ("now" of the store). */
#define SP_PG_NOW_MS "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
/* The wake-up channel of the store in the connection's current schema, as an
 * SQL expression: stores in other schemas of the database do not share it. */
#define SP_PG_CHANNEL "'spore_' || left(md5(current_schema()), 16)"
/* New work announced on it (sp_db_dialect.notify_work; listen.c). */
#define SP_PG_NOTIFY_WORK "SELECT pg_notify(" SP_PG_CHANNEL ", ?)"
/* A session idle inside a transaction this long is ended by the server, so a
 * worker that stalls mid-transaction cannot hold a run's lock for long. */
#define SP_PG_IDLE_TX_TIMEOUT "60s"

/* Writes sent in pipeline mode and not yet answered, at most (their
 * answers, some 50 bytes each, stay well inside the socket's buffers while
 * more is sent). */
#define SP_PG_PENDING_MAX 256

/* A batch sent, its answer read later (sent.c). */
typedef struct pg_sent {
    int64_t expects[SP_PG_PENDING_MAX]; /* its statements' answers before COMMIT's */
    size_t n;
    uint64_t mark;   /* its commit mark */
    bool behind;     /* sent behind another whose answer was unread (chained to it) */
    bool read;       /* its answer was read (rc, err, ticket) and waits to be taken */
    sp_store_rc rc;
    sp_error err;
    uint64_t ticket; /* when it committed: its flush's (flush.c) */
} pg_sent;

typedef struct pg_conn {
    PGconn *db;
    pthread_mutex_t mu; /* held from begin() to commit()/rollback() */
    sp_clock clock;
    bool has_clock;        /* an injected clock (tests), else clock_timestamp() */
    bool writer;           /* opened to write: it selects work (session_setup) */
    sp_db_cache statements; /* pg_stmt by SQL text + parameter types */
    unsigned next_statement;
    char *secrets[4]; /* the URL's passwords (userinfo, parameter) as written and decoded */
    char *url;        /* as given: the listener connects with it (never shown) */
    atomic_ullong round_trips; /* requests sent to the server and waited for */
    atomic_ullong own_statements; /* commit marks sent inside the logic's transactions */
    /* writes sent in pipeline mode, not yet answered (driver.c: flush) */
    int64_t pending[SP_PG_PENDING_MAX]; /* each one's expected row count, -1: any */
    bool writes_answered;  /* the last sync answered every pending write, all applied */
    bool answer_lost;      /* the last sync lost answers with the connection */
    size_t npending;
    uint64_t answered_ms; /* monotonic: when the server last answered (0: never) */
    /* The database's clock as last read (pg_now), and when its answer came
     * (monotonic; 0: never read) */
    uint64_t clock_read, clock_read_at;
    /* Commit marks (outcome.c): this connection's session name, the mark of
     * its last write transaction; `marks`: the store has them (a writer
     * opened it); `wrote`: the transaction under way wrote; `unresolved`:
     * the last marked COMMIT's answer was lost: it committed when the
     * session's row holds a mark from unresolved_mark to unresolved_hi (a
     * batch sent behind it, chained to it, may have committed too). */
    char session[33];
    uint64_t mark, unresolved_mark, unresolved_hi;
    bool marks, wrote, unresolved;
    /* Batches sent with their answers unread (sent.c), oldest first. */
    pg_sent sent[SP_DB_SENT_MAX];
    size_t nsent;
    bool taken_failed; /* the last answer taken (sp_pg_answer) said its batch did not commit */
    /* The transaction under way was begun behind sent batches (begin_behind);
     * and one of them answered that it did not commit: every failure of this
     * transaction is then a missed prediction (sp_pg_fail). */
    bool behind, behind_failed;
    /* Deferred commits (flush.c): the flusher, started on first use (NULL
     * with no_flusher: every commit flushes itself); its context; the
     * backends this connection has had (a reconnect adds one); whether a
     * reconnect left tickets to prove before anything else begins. */
    _Atomic(sp_flusher *) flusher;
    struct pg_flush *flush;
    bool no_flusher, flush_unresolved;
    atomic_ullong generation;
} pg_conn;

/* Open the store at `url` (in OR_CREATE mode creating the schema when the
 * database's current schema is empty; in EXISTING mode store.not-found). */
sp_store *sp_pg_open(const char *url, const sp_store_open_opts *opts, sp_error *err);

/* The libpq connection for `url` with the driver's defaults (application
 * name, connect timeout, UTF8); NULL only when out of memory. */
PGconn *sp_pg_connect(const char *url);

/* LISTEN/NOTIFY wake-ups (listen.c; the driver's listen). */
sp_store_listener *sp_pg_listen(void *conn, sp_wake_fn fn, void *ctx, sp_error *err);

/* `url` without its password (the userinfo's and any password= parameter);
 * NULL on out-of-memory. */
char *sp_pg_redact(const char *url);

/* Fill `err` from a failed result (or the connection's last error when
 * `res` is NULL), with every secret removed; returns the failure kind:
 *   40001 serialization, 40P01 deadlock, 55P03 lock timeout, 57014 canceled
 *       -> unavailable/store.busy
 *   23505 on runs_pkey, runs_start_key or receipts_pkey (a racing create_run
 *       or receipt: retrying the identical request answers duplicate)
 *       -> unavailable/store.busy
 *   other 23xxx -> conflict/store.constraint
 *   22xxx -> conflict/store.encode;  54xxx -> quota/store.too-big
 *   28xxx, 42501 -> unauthorized/store.unauthorized
 *   42xxx, 0A000, 25xxx -> incompatible/store.sql
 *   XX001, XX002 -> corrupt/store.corrupt
 *   08xxx, 57Pxx, 53xxx, a lost connection, anything else -> unavailable/store.io */
sp_store_rc sp_pg_fail(pg_conn *c, const PGresult *res, const char *what, sp_error *err);

/* Check or create the schema in the connection's current schema
 * (current_schema(), the first existing schema of search_path): version 1
 * -> OK; newer -> incompatible/schema.too-new; tables but no
 * schema_version -> incompatible/schema.unknown; empty -> created inside a
 * transaction that holds an advisory lock, so concurrent first connects do
 * not race. A connection that `writes` (any open but a reader's) adds to
 * an existing version-1 store what later spores added to it (add_missing). */
sp_store_rc sp_pg_schema_ensure(pg_conn *c, bool create, bool writes, sp_error *err);

/* A lost connection established again (its prepared statements went with
 * it) and its session set up (driver.c). */
sp_store_rc sp_pg_reconnect(pg_conn *c, sp_error *err);
/* The driver's deferred write (db.h: write). */
sp_store_rc sp_pg_write(void *conn, const char *sql, const sp_db_val *params, size_t n,
                        int64_t expect_rows, sp_error *err);

/* Commit marks (outcome.c): the connection's session name; the store's
 * marks in use (a writer's open), stale ones removed; the next mark sent
 * (deferred) in the transaction under way, just before its COMMIT - with
 * `unflushed`, the same statement lets that COMMIT return before its WAL
 * is on disk (synchronous_commit off for the transaction); the driver's
 * commit_outcome. */
void sp_pg_marks_init(pg_conn *c);
void sp_pg_marks_open(pg_conn *c);
/* With `chained`, the mark is written only where the session's row holds
 * the mark before it (a batch sent and not yet answered committed), else
 * the statement fails as a missed prediction: this batch cannot commit
 * without that one (sent.c). */
sp_store_rc sp_pg_mark(pg_conn *c, bool unflushed, bool chained, sp_error *err);
sp_store_rc sp_pg_commit_outcome(void *conn, sp_commit_outcome *out, sp_error *err);

/* Deferred commits (flush.c): the connection's flusher, started on first
 * use (NULL: commits flush themselves); a deferred commit that returned,
 * recorded and given its ticket (under c->mu, after its COMMIT); after a
 * reconnect, the tickets still unflushed proved on the new backend before
 * anything else (confirmed, or a final failure when the server lost them;
 * unavailable when it could not be asked: asked again at the next begin). */
sp_flusher *sp_pg_flusher(pg_conn *c);
uint64_t sp_pg_flush_committed(pg_conn *c, uint64_t mark);
sp_store_rc sp_pg_flush_resolve(pg_conn *c, sp_error *err);

/* Shared by driver.c and sent.c: one pending statement's answer read
 * into *rcp (false: none came, the connection went); what is left of the
 * answers up to the pipeline's next sync, read and dropped; a COMMIT's
 * answer (its result, read) as the store's outcome; the transaction's
 * COMMIT, answered now (with `ticket`: deferred where it can be), c->mu
 * kept. */
bool sp_pg_pending_result(pg_conn *c, int64_t expect, sp_store_rc *rcp, sp_error *err);
void sp_pg_read_to_sync(pg_conn *c);
sp_store_rc sp_pg_commit_status(pg_conn *c, PGresult *res, sp_error *err);
sp_store_rc sp_pg_finish(pg_conn *c, uint64_t *ticket, sp_error *err);
/* The transaction under way rolled back, what is queued discarded (c->mu
 * stays held). */
void sp_pg_rollback_locked(pg_conn *c);

/* Batches sent with their answers read later (sent.c): the driver's
 * commit_send and answer; every unread answer read and kept, in order
 * (false: the connection went with them, and they are kept as unknown);
 * the same, and the connection left out of pipeline mode and out of a
 * failed transaction, for a statement that is not pipelined; the unread
 * ones lost with the connection (a reconnect). */
sp_store_rc sp_pg_commit_send(void *conn, uint64_t *ticket, bool *later, sp_error *err);
sp_store_rc sp_pg_answer(void *conn, uint64_t *ticket, sp_error *err);
bool sp_pg_sent_read(pg_conn *c);
void sp_pg_sent_settle(pg_conn *c);
void sp_pg_sent_lost(pg_conn *c);
/* A sent batch's answer is unread (a transaction begun now is behind it);
 * at the connection's close: every answer read, every kept one dropped. */
bool sp_pg_sent_unread(const pg_conn *c);
/* A sent batch's answer, read and not yet taken, says it did not commit
 * (nothing may be sent behind it). */
bool sp_pg_sent_failed(const pg_conn *c);
void sp_pg_sent_close(pg_conn *c);

#endif
