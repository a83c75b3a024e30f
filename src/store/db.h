/*
 * db.h - the narrow SQL driver interface under the store logic.
 *
 * What it is for: the store's operations (predicates, writes, receipts) are
 * written once, in src/store/ops_*.c, as SQL with `?` placeholders over this
 * interface. An adapter is a driver (connection, transactions, statements,
 * error mapping, clock) plus its schema DDL: SQLite in src/store/sqlite/,
 * PostgreSQL later in src/store/postgres/ (which rewrites `?` to `$n` and
 * adds row locks through the dialect strings).
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

typedef struct sp_db_dialect {
    const char *for_update;  /* appended to a SELECT that must lock its rows */
    const char *skip_locked; /* appended to work-selection SELECTs */
} sp_db_dialect;

typedef struct sp_db_driver {
    const char *name; /* "sqlite" | "postgres" */
    sp_db_dialect dialect;
    /* Start a transaction; `write` = take the write lock now (SQLite BEGIN
     * IMMEDIATE). Busy past the timeout -> SP_STORE_UNAVAILABLE/store.busy.
     * A successful begin gives the connection to the calling thread until
     * commit() or rollback(); both always end the transaction, even when
     * they fail. Every query() runs inside such a transaction. */
    sp_store_rc (*begin)(void *conn, bool write, sp_error *err);
    /* A failed commit whose outcome is unknown -> SP_STORE_UNKNOWN_COMMIT. */
    sp_store_rc (*commit)(void *conn, sp_error *err);
    void (*rollback)(void *conn);
    /* Run one statement. `out` (may be NULL) receives the rows; `changes`
     * (may be NULL) the number of rows written. A unique-constraint
     * violation is SP_STORE_CONFLICT with code "store.constraint". */
    sp_store_rc (*query)(void *conn, const char *sql, const sp_db_val *params, size_t nparams,
                         sp_db_rows *out, int64_t *changes, sp_error *err);
    /* Authority time, sampled after the write lock is held: the injected
     * clock when one was given, else the database's (or system) clock. */
    uint64_t (*now_ms)(void *conn);
    void (*close)(void *conn);
} sp_db_driver;

/* What the adapters hand to the shared logic. */
struct sp_store {
    const sp_db_driver *driver;
    void *conn;
    char *location; /* credentials removed */
    sp_clock clock;
    bool has_clock;
};

#endif
