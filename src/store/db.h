/*
 * db.h - the narrow SQL driver interface under the store logic.
 *
 * What it is for: the store's operations (predicates, writes, receipts) are
 * written once, in src/store/ops_*.c, as SQL with `?` placeholders over this
 * interface. An adapter is a driver (connection, transactions, statements,
 * error mapping, clock) plus its schema DDL: SQLite in src/store/sqlite/,
 * PostgreSQL in src/store/postgres/ (which rewrites `?` to `$n` and adds
 * row locks through the dialect strings). dbutil.c holds what both drivers
 * share: the statement cache and the schema version rule.
 *
 * What it must never do: interpret results (that is the logic's job), retry
 * on its own, or hide which failure kind happened: every driver error maps
 * to an sp_store_rc with a stable code (store.busy, store.io, store.corrupt).
 */
#ifndef SPORE_STORE_DB_H
#define SPORE_STORE_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stdatomic.h>

#include "base/strlist.h"
#include "store/store.h"

typedef enum sp_db_type { SP_DB_NULL, SP_DB_INT, SP_DB_TEXT, SP_DB_BLOB } sp_db_type;

typedef struct sp_db_val {
    sp_db_type type;
    int64_t i;
    const char *s; /* TEXT (NUL-terminated in results) or BLOB bytes */
    size_t len;
} sp_db_val;

#define DB_NULL ((sp_db_val){SP_DB_NULL, 0, NULL, 0})
#define DB_INT(x) ((sp_db_val){SP_DB_INT, (int64_t)(x), NULL, 0})
#define DB_TEXT(str) ((sp_db_val){SP_DB_TEXT, 0, (str), strlen(str)})
#define DB_TEXTN(str, n) ((sp_db_val){SP_DB_TEXT, 0, (str), (n)})
#define DB_BLOB(p, n) ((sp_db_val){SP_DB_BLOB, 0, (const char *)(p), (n)})
#define DB_OPT_TEXT(str) ((str) ? DB_TEXT(str) : DB_NULL)

/* Materialized result rows; every TEXT/BLOB cell is an owned copy. */
typedef struct sp_db_rows {
    size_t nrows, ncols;
    sp_db_val *cells; /* row-major */
} sp_db_rows;

static inline const sp_db_val *sp_db_cell(const sp_db_rows *r, size_t row, size_t col)
{
    return &r->cells[row * r->ncols + col];
}

void sp_db_rows_free(sp_db_rows *r);
/* One row of `n` cells: a copy of `src`'s row `row` from column `col`
 * (false when out of memory; *out is then empty). */
bool sp_db_rows_copy(const sp_db_rows *src, size_t row, size_t col, size_t n, sp_db_rows *out);

/* A run with a pending event, over the runs table's own columns: SQLite's
 * runs_ready predicate and scan_ready term, PostgreSQL's runs.ready. */
#define SP_DB_RUN_READY "next_sequence > applied_sequence + 1"

typedef struct sp_db_dialect {
    const char *for_update;  /* appended to a SELECT that must lock its rows */
    const char *skip_locked; /* appended to work-selection SELECTs (SP_DB_SCAN) */
    const char *unindexed;   /* before a column: keep the planner off its indexes
                              * for that term (SQLite's unary +; "" elsewhere) */
    /* A run with a pending event, spelled as the database's partial index
     * runs_ready is (a planner uses the index only for the predicate it
     * names). PostgreSQL names a stored generated column, so that a step's
     * update of the counters it is made of changes no indexed column (a HOT
     * update; src/store/postgres/schema.c). */
    const char *run_ready;
    /* Optional (NULL: the database has no wake-ups): a statement that tells
     * listening workers, when the transaction commits, that it left new work
     * for them; its one parameter names what ("events", "invocations",
     * "timers"). PostgreSQL: pg_notify on the schema's channel (listen.c),
     * delivered at commit, once per transaction and payload. */
    const char *notify_work;
} sp_db_dialect;

/* What a transaction is for. READ: a coherent read of one snapshot (no
 * writes). WRITE: a mutation; the driver takes whatever write lock it needs
 * (SQLite BEGIN IMMEDIATE; PostgreSQL READ COMMITTED + row locks). SCAN:
 * work selection that reads only but may lock the rows it selects with
 * dialect.skip_locked (PostgreSQL READ COMMITTED; SQLite a plain read). */
/* ONE: a single statement in its own implicit transaction (no BEGIN, no
 * ROLLBACK: one statement reads one snapshot on both databases); a work
 * selection statement may still end with dialect.skip_locked. */
typedef enum sp_db_tx { SP_DB_READ, SP_DB_WRITE, SP_DB_SCAN, SP_DB_ONE } sp_db_tx;

/* What every adapter's listener starts with (its own state follows). */
struct sp_store_listener {
    void (*stop)(struct sp_store_listener *self); /* stop its thread, free it */
};

/* One read of a query_all exchange. */
typedef struct sp_db_read {
    const char *sql;
    const sp_db_val *params;
    size_t nparams;
} sp_db_read;

/* Batches of one connection sent with their answers unread, at most
 * (commit_send): the engine's last batch and, for a moment, the one sent
 * behind it. */
#define SP_DB_SENT_MAX 2

typedef struct sp_db_driver {
    const char *name; /* "sqlite" | "postgres" */
    sp_db_dialect dialect;
    /* Every connection's write transactions take one lock in turn (SQLite):
     * a second writer adds no commit throughput. */
    bool one_writer;
    /* Start a transaction of `mode`; WRITE takes the write lock now (SQLite
     * BEGIN IMMEDIATE). Busy past the timeout -> SP_STORE_UNAVAILABLE/store.busy.
     * A successful begin gives the connection to the calling thread until
     * commit() or rollback(); both always end the transaction, even when
     * they fail. Every query() runs inside such a transaction. */
    sp_store_rc (*begin)(void *conn, sp_db_tx mode, sp_error *err);
    /* A failed commit whose outcome is unknown -> SP_STORE_UNKNOWN_COMMIT. */
    sp_store_rc (*commit)(void *conn, sp_error *err);
    /* Optional (NULL: unknowable): after commit answered unknown-commit,
     * whether that commit happened (sp_store_commit_outcome, store.h). */
    sp_store_rc (*commit_outcome)(void *conn, sp_commit_outcome *out, sp_error *err);
    /* Optional (NULL: commit, which flushes): commit, and leave the flush to
     * a thread of the driver's own (SQLite: the flusher syncs the WAL). The
     * commit is visible and survives a crash of this process when it
     * returns; *ticket (0: already flushed) names it for wait_flushed. */
    sp_store_rc (*commit_deferred)(void *conn, uint64_t *ticket, sp_error *err);
    /* Optional (NULL: commit_deferred answers at once): commit_deferred
     * whose COMMIT is sent and its answer left unread (*later true, c->mu
     * released), so that the caller prepares its next batch meanwhile
     * (docs/postgres.md §3i). The next transaction it may begin on the
     * connection is begin_behind's; answer() reads the answers, oldest
     * first. A batch sent behind one whose answer is unread commits only
     * if that one did (its commit mark is chained to the other's). Where
     * the driver cannot leave the answer (no flusher, a full queue, an
     * earlier batch known to have failed) it answers at once: *later
     * false, *ticket as commit_deferred's. */
    sp_store_rc (*commit_send)(void *conn, uint64_t *ticket, bool *later, sp_error *err);
    /* Optional with commit_send: the oldest sent batch's answer (OK and
     * its *ticket, or its failure; unknown-commit then commit_outcome
     * tells); OK with *ticket 0 when none is unanswered. Another call on
     * the connection may have read it already: it was kept. */
    sp_store_rc (*answer)(void *conn, uint64_t *ticket, sp_error *err);
    /* Optional with commit_send: begin(WRITE) without reading the sent
     * batches' answers first (its statements queue behind them). */
    sp_store_rc (*begin_behind)(void *conn, sp_error *err);
    /* Optional with commit_deferred: wait until every commit up to `ticket`
     * is on disk. A failed flush is final: corrupt/store.io. */
    sp_store_rc (*wait_flushed)(void *conn, uint64_t ticket, sp_error *err);
    /* Optional with commit_deferred: the syncs made so far, and the deferred
     * commits not yet on disk (sp_store_counters). */
    void (*flush_counts)(void *conn, uint64_t *flushes, uint64_t *unflushed);
    void (*rollback)(void *conn);
    /* Run one statement. `out` (may be NULL) receives the rows; `changes`
     * (may be NULL) the number of rows written. A unique-constraint
     * violation is SP_STORE_CONFLICT with code "store.constraint". */
    sp_store_rc (*query)(void *conn, const char *sql, const sp_db_val *params, size_t nparams,
                         sp_db_rows *out, int64_t *changes, sp_error *err);
    /* Authority time, sampled after the write lock is held: the injected
     * clock when one was given, else the database's (or system) clock. */
    uint64_t (*now_ms)(void *conn);
    /* Optional (NULL, or NULL returned: use now_ms): an SQL expression of
     * the authority time in ms that a mutation's first statement - the one
     * that locks the run row - evaluates after its lock is held, saving a
     * round trip (PostgreSQL's clock; not when a clock is injected). */
    const char *(*now_sql)(void *conn);
    void (*close)(void *conn);
    /* Optional (NULL: the adapter has no wake-ups, the engine polls): call
     * fn(ctx) from a thread of the driver's own whenever any process has
     * committed new work (sp_store_listen, store.h). */
    sp_store_listener *(*listen)(void *conn, sp_wake_fn fn, void *ctx, sp_error *err);
    /* Optional: the client/server round trips so far (NULL: none, SQLite). */
    uint64_t (*round_trips)(void *conn);
    /* Optional: the statements the driver sent on its own inside the
     * logic's transactions so far (PostgreSQL: a commit's mark), counted
     * with the logic's own in sp_store_counters.statements. */
    uint64_t (*own_statements)(void *conn);
    /* Optional (NULL: the shared logic uses query): a write whose rows are
     * not read, that the driver may send without waiting for its answer
     * (PostgreSQL: libpq pipeline mode). `expect_rows` >= 0: it must change
     * exactly that many rows (else corrupt/store.invariant). A failure of a
     * deferred write is the answer of the driver's next call on this
     * connection (query, write, commit), before that call does anything;
     * rollback discards what is pending. */
    sp_store_rc (*write)(void *conn, const char *sql, const sp_db_val *params, size_t nparams,
                         int64_t expect_rows, sp_error *err);
    /* Optional (NULL: the shared logic runs them one by one with query):
     * `n` reads run in order in one exchange, each after the one before it
     * has finished (its lock waits included), so each sees what was
     * committed before it began (PostgreSQL: pipelined behind one sync).
     * outs[i] receives read i's rows; the first failure is the answer, and
     * then no out holds rows. */
    sp_store_rc (*query_all)(void *conn, const struct sp_db_read *reads, size_t n,
                             sp_db_rows *outs, sp_error *err);
} sp_db_driver;

/* ---- shared by the drivers (dbutil.c) ---- */

/* The schema version both adapters create and understand (SQLite
 * PRAGMA user_version, PostgreSQL table schema_version). */
#define SP_DB_SCHEMA_VERSION 1

/* A newer version -> incompatible/schema.too-new; a negative one ->
 * incompatible/schema.unknown; else OK. */
sp_store_rc sp_db_check_schema_version(long long version, sp_error *err);

/* A driver's per-connection cache of prepared statements, keyed by the
 * statement's text (plus whatever a driver appends to it). Entries own a
 * copy of the key and a driver object released by `release`. A key's
 * address is remembered beside the entry it found last: most keys are
 * string literals, so the next lookup compares the text at once instead of
 * hashing it first. */
#define SP_DB_CACHE_BUCKETS 128
#define SP_DB_CACHE_RECENT 64
typedef struct sp_db_cache_entry sp_db_cache_entry;
typedef struct sp_db_cache {
    sp_db_cache_entry *buckets[SP_DB_CACHE_BUCKETS];
    struct {
        const char *key; /* an address the text was last looked up at */
        sp_db_cache_entry *entry;
    } recent[SP_DB_CACHE_RECENT];
    void (*release)(void *stmt);
} sp_db_cache;

/* The cached statement for `key`, or NULL. */
void *sp_db_cache_get(sp_db_cache *c, const char *key, size_t key_len);
/* Add `stmt` under `key`; false on out-of-memory (the caller releases stmt). */
bool sp_db_cache_put(sp_db_cache *c, const char *key, size_t key_len, void *stmt);
/* Release every entry (the cache stays usable). */
void sp_db_cache_clear(sp_db_cache *c);

/* How a write request of a batch is kept apart from the others (tx.c). */
typedef enum sp_db_request {
    SP_DB_REQUEST_READ,      /* not a write request: nothing to undo */
    SP_DB_REQUEST_BARE,      /* the batch's first: the transaction holds nothing
                              * else, so its failure rolls it all back */
    SP_DB_REQUEST_SAVEPOINT, /* in its own savepoint: its failure undoes it alone */
    SP_DB_REQUEST_UNGUARDED, /* neither (deferred writes, answered later): its
                              * failure after it wrote fails the batch */
} sp_db_request;

/* A batch in progress (batch.c): one write transaction that the requests of
 * one thread share, each kept apart as sp_db_request says. */
typedef struct sp_db_batch {
    bool open;          /* its transaction has begun (at the first write) */
    bool request_alone; /* the open request runs outside it (a read before any write) */
    bool request_open;  /* a request (or a read) is open ... */
    sp_db_request request; /* ... of this kind */
    bool request_touched;  /* ... and it wrote, or one of its statements failed */
    sp_store_rc request_rc; /* ... the first failure of its statements (0: none) */
    bool request_missed;    /* ... it ran on predicted reads, and they missed */
    bool answered_each; /* each request's deferred writes are answered at its
                         * RELEASE, each request in its own savepoint, the first
                         * one too (after deferred writes failed for good: tx.c) */
    bool unanswered;    /* deferred writes (a pipelining driver's) of a request
                         * that has returned are not answered yet: the
                         * batch's next exchange answers them first */
    bool failed;        /* that exchange failed: the batch can only be aborted */
    bool missed;        /* ... because a request on predicted reads missed */
    bool mispredicted;  /* a request of it on predicted reads missed (counted) */
    char failure[SP_MESSAGE_MAX]; /* ... and how */
    size_t requests;    /* write requests released into the batch */
    struct lg_ahead *ahead; /* first reads made ahead (lock_ahead.c) */
    size_t nahead;
    sp_strlist before_commit, after_commit; /* deferred failpoints */
} sp_db_batch;

/* What the adapters hand to the shared logic. */
struct sp_store {
    const sp_db_driver *driver;
    void *conn;
    char *location; /* credentials removed */
    sp_clock clock;
    bool has_clock;
    sp_db_batch batch; /* used only by the thread that holds the batch */
    /* Deferred writes of a request once failed for good (not a lost
     * connection) after it had returned: the next this-many batches answer
     * each request's writes at its RELEASE, so that the failing one fails
     * alone and the others commit when the batch is made again (tx.c). */
    unsigned answered_batches;
    /* First reads predicted from this handle's own commits (predict.c);
     * NULL until a request could use one. */
    struct lg_predictions *predictions;
    /* Batches this handle sent with their answers unread (batch.c:
     * sp_store_batch_send), oldest first: their after-commit failpoints,
     * fired once an answer says committed. */
    sp_strlist sent_after[SP_DB_SENT_MAX];
    size_t nsent;
    atomic_ullong commits, statements, predicted, missed, sent; /* sp_store_counters */
};

/* In the text of the error a guard of a predicted request raises when the
 * database does not hold what was predicted (predict.c); a driver maps an
 * error that names it to unavailable/store.prediction-missed. */
#define SP_DB_PREDICTION_MISSED "spore-prediction-missed"

#endif
