/*
 * driver.c - the PostgreSQL driver under the shared store logic (store.md §6).
 *
 * What it is for: one libpq connection per store instance, serialized by a
 * mutex held from begin() to commit()/rollback() (as the SQLite driver), so
 * the public sp_store_* functions may be called from several threads on one
 * instance; every machine's workers connect to one database and its
 * transactions do all coordination:
 *   - WRITE: READ COMMITTED; the shared logic locks the run row first
 *     (dialect.for_update = FOR UPDATE) and then touches only that run's
 *     rows, so locks are always taken run row first (no lock-order cycles);
 *   - READ: REPEATABLE READ READ ONLY, one snapshot for a coherent view;
 *   - SCAN: READ COMMITTED; work selection ends with FOR UPDATE SKIP LOCKED;
 *   - "now": clock_timestamp() sampled when the logic asks, which is after
 *     the run row is locked (an injected clock wins, for tests);
 *   - statements: `?` rewritten to `$n` once per SQL text and prepared once
 *     per connection (and per parameter type list), binary parameters and
 *     results;
 *   - a lost connection is re-established at the next begin(); a COMMIT whose
 *     answer was lost is unknown-commit (the caller retries the identical
 *     request; receipts make that safe);
 *   - lock waits are bounded (lock_timeout 5 s, like SQLite's busy timeout)
 *     and a session idle inside a transaction is ended by the server.
 * Credentials: the location is the URL without its password, and every
 * message taken from libpq or the server is scrubbed of it.
 *
 * What it must never do: retry on its own (beyond re-sending BEGIN on a
 * fresh connection, when nothing has happened yet), run a statement outside
 * a transaction begun here, report a commit as failed when it may have
 * happened, or let the password reach an error.
 */
#include <ctype.h>
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "store/postgres/postgres.h"

/* Type OIDs (catalog/pg_type_d.h, stable across versions). */
enum {
    OID_BOOL = 16,
    OID_BYTEA = 17,
    OID_NAME = 19,
    OID_INT8 = 20,
    OID_INT2 = 21,
    OID_INT4 = 23,
    OID_TEXT = 25,
    OID_OID = 26,
    OID_JSON = 114,
    OID_UNKNOWN = 705,
    OID_BPCHAR = 1042,
    OID_VARCHAR = 1043,
};

typedef struct pg_stmt {
    char name[24];
} pg_stmt;

/* ---- secrets ---- */

/* Replace every occurrence of each secret in `s` by "***". */
static void scrub(const pg_conn *c, char *s, size_t cap)
{
    for (int i = 0; i < 4; i++) {
        const char *secret = c ? c->secrets[i] : NULL;
        size_t n = secret ? strlen(secret) : 0;
        if (!n)
            continue;
        char *at;
        while ((at = strstr(s, secret))) {
            size_t tail = strlen(at + n);
            if ((size_t)(at - s) + 3 + tail >= cap)
                tail = cap - (size_t)(at - s) - 4;
            memmove(at + 3, at + n, tail);
            at[3 + tail] = '\0';
            memcpy(at, "***", 3);
        }
    }
}

/* One line: newlines and runs of spaces of libpq's texts folded. */
static void one_line(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        char ch = (*r == '\n' || *r == '\r' || *r == '\t') ? ' ' : *r;
        if (ch == ' ' && (w == s || w[-1] == ' '))
            continue;
        *w++ = ch;
    }
    while (w > s && w[-1] == ' ')
        w--;
    *w = '\0';
}

/* ---- error mapping ---- */

static bool race_constraint(const char *name)
{
    static const char *const RACE[] = {"runs_pkey", "runs_start_key", "receipts_pkey", NULL};
    for (const char *const *p = RACE; name && *p; p++)
        if (strcmp(name, *p) == 0)
            return true;
    return false;
}

static bool starts(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

typedef struct pg_kind {
    sp_store_rc kind;
    const char *code;
} pg_kind;

static pg_kind kind_of(const char *state, const char *constraint)
{
    if (!state)
        return (pg_kind){SP_STORE_UNAVAILABLE, "store.io"};
    if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0 || strcmp(state, "55P03") == 0 ||
        strcmp(state, "57014") == 0)
        return (pg_kind){SP_STORE_UNAVAILABLE, "store.busy"};
    if (strcmp(state, "23505") == 0 && race_constraint(constraint))
        return (pg_kind){SP_STORE_UNAVAILABLE, "store.busy"};
    if (starts(state, "23"))
        return (pg_kind){SP_STORE_CONFLICT, "store.constraint"};
    if (starts(state, "22"))
        return (pg_kind){SP_STORE_CONFLICT, "store.encode"};
    if (starts(state, "54"))
        return (pg_kind){SP_STORE_QUOTA, "store.too-big"};
    if (starts(state, "28") || strcmp(state, "42501") == 0)
        return (pg_kind){SP_STORE_UNAUTHORIZED, "store.unauthorized"};
    if (starts(state, "42") || starts(state, "25") || strcmp(state, "0A000") == 0)
        return (pg_kind){SP_STORE_INCOMPATIBLE, "store.sql"};
    if (strcmp(state, "XX001") == 0 || strcmp(state, "XX002") == 0)
        return (pg_kind){SP_STORE_CORRUPT, "store.corrupt"};
    return (pg_kind){SP_STORE_UNAVAILABLE, "store.io"};
}

sp_store_rc sp_pg_fail(pg_conn *c, const PGresult *res, const char *what, sp_error *err)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    bool lost = c && c->db && PQstatus(c->db) == CONNECTION_BAD;
    char detail[SP_MESSAGE_MAX];
    snprintf(detail, sizeof detail, "%s",
             primary                               ? primary
             : res && PQresultErrorMessage(res)[0] ? PQresultErrorMessage(res)
             : c && c->db                          ? PQerrorMessage(c->db)
                                                   : "no connection");
    one_line(detail);
    if (!detail[0])
        snprintf(detail, sizeof detail, "no answer from the server");
    pg_kind k = lost
                    ? (pg_kind){SP_STORE_UNAVAILABLE, "store.io"}
                    : kind_of(state, res ? PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME) : NULL);
    if (!lost && primary && strstr(primary, SP_DB_PREDICTION_MISSED)) /* a guard (predict.c) */
        k = (pg_kind){SP_STORE_UNAVAILABLE, SP_STORE_PREDICTION_MISSED};
    /* behind a sent batch that did not commit: whatever failed, it was made on it */
    bool behind = !lost && c && c->behind_failed;
    if (behind)
        k = (pg_kind){SP_STORE_UNAVAILABLE, SP_STORE_PREDICTION_MISSED};
    char message[SP_MESSAGE_MAX + 160];
    snprintf(message, sizeof message, "postgres: %s%s: %s%s%s%s",
             behind ? "the batch sent before this one did not commit; " : "", what, detail,
             state ? " (SQLSTATE " : "", state ? state : "", state ? ")" : "");
    if (lost)
        snprintf(message + strlen(message), sizeof message - strlen(message),
                 " (connection lost; it is re-established on the next request)");
    scrub(c, message, sizeof message);
    sp_fail(err, k.code, "%s", message);
    return k.kind;
}

/* ---- statements: `?` -> `$n`, prepared once per connection ---- */

/* The statement text with `?` placeholders outside quotes numbered $1..$n. */
static char *rewrite(const char *sql, size_t *nparams)
{
    size_t len = strlen(sql), n = 0;
    char *out = malloc(len * 4 + 1); /* "?" -> "$nnn" at most */
    if (!out)
        return NULL;
    char quote = 0, *w = out;
    for (const char *r = sql; *r; r++) {
        if (quote) {
            if (*r == quote)
                quote = 0;
        } else if (*r == '\'' || *r == '"') {
            quote = *r;
        } else if (*r == '?') {
            w += sprintf(w, "$%zu", ++n);
            continue;
        }
        *w++ = *r;
    }
    *w = '\0';
    *nparams = n;
    return out;
}

static Oid type_of(const sp_db_val *v)
{
    switch (v->type) {
    case SP_DB_INT:
        return OID_INT8;
    case SP_DB_TEXT:
        return OID_TEXT;
    case SP_DB_BLOB:
        return OID_BYTEA;
    default:
        return 0; /* NULL: the server infers the type from the context */
    }
}

/* The cache key: SQL text, a separator, one letter per parameter type (a
 * statement first prepared with a NULL parameter is another statement than
 * the one with a value there). */
static char *statement_key(const char *sql, const sp_db_val *params, size_t n, size_t *len)
{
    size_t sql_len = strlen(sql);
    char *key = malloc(sql_len + n + 2);
    if (!key)
        return NULL;
    memcpy(key, sql, sql_len);
    key[sql_len] = '\x1f';
    for (size_t i = 0; i < n; i++)
        key[sql_len + 1 + i] = "nitb"[params[i].type]; /* NULL, INT, TEXT, BLOB */
    key[sql_len + 1 + n] = '\0';
    *len = sql_len + 1 + n;
    return key;
}

static sp_store_rc flush(pg_conn *c, sp_error *err);

static sp_store_rc prepare(pg_conn *c, const char *sql, const sp_db_val *params, size_t n,
                           pg_stmt **out, sp_error *err)
{
    size_t key_len = 0, found = 0;
    char *key = statement_key(sql, params, n, &key_len);
    if (!key)
        return sp_fail(err, "runtime.out-of-memory", "out of memory"), SP_STORE_UNAVAILABLE;
    if ((*out = sp_db_cache_get(&c->statements, key, key_len))) {
        free(key);
        return SP_STORE_OK;
    }
    char *text = rewrite(sql, &found);
    pg_stmt *st = calloc(1, sizeof *st);
    Oid *types = calloc(n ? n : 1, sizeof *types);
    sp_store_rc rc = SP_STORE_OK;
    if (!text || !st || !types) {
        sp_fail(err, "runtime.out-of-memory", "out of memory");
        rc = SP_STORE_UNAVAILABLE;
    } else if (found != n) {
        sp_fail(err, "store.sql", "postgres: statement has %zu placeholders, %zu parameters", found,
                n);
        rc = SP_STORE_INCOMPATIBLE;
    }
    if (rc == SP_STORE_OK) {
        for (size_t i = 0; i < n; i++)
            types[i] = type_of(&params[i]);
        snprintf(st->name, sizeof st->name, "sp%u", ++c->next_statement);
        rc = flush(c, err); /* a prepare waits: not inside a pipeline */
    }
    if (rc == SP_STORE_OK) {
        atomic_fetch_add_explicit(&c->round_trips, 1, memory_order_relaxed);
        PGresult *res = PQprepare(c->db, st->name, text, (int)n, types);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            rc = sp_pg_fail(c, res, "prepare", err);
        PQclear(res);
    }
    if (rc == SP_STORE_OK && !sp_db_cache_put(&c->statements, key, key_len, st)) {
        sp_fail(err, "runtime.out-of-memory", "out of memory");
        rc = SP_STORE_UNAVAILABLE;
    }
    if (rc == SP_STORE_OK)
        *out = st;
    else
        free(st);
    free(text);
    free(types);
    free(key);
    return rc;
}

/* ---- results ---- */

static int64_t be_int(const char *p, int len)
{
    uint64_t v = 0;
    for (int i = 0; i < len; i++)
        v = (v << 8) | (unsigned char)p[i];
    if (len < 8 && (v >> (8 * len - 1)) & 1) /* sign-extend */
        v |= ~UINT64_C(0) << (8 * len);
    return (int64_t)v;
}

static bool text_type(Oid t)
{
    return t == OID_TEXT || t == OID_VARCHAR || t == OID_BPCHAR || t == OID_NAME || t == OID_JSON ||
           t == OID_UNKNOWN;
}

/* 0 OK, 1 out of memory, 2 a column type this driver does not read. */
static int read_cell(const PGresult *res, int row, int col, sp_db_val *v)
{
    *v = (sp_db_val){SP_DB_NULL, 0, NULL, 0};
    if (PQgetisnull(res, row, col))
        return 0;
    Oid t = PQftype(res, col);
    const char *p = PQgetvalue(res, row, col);
    int len = PQgetlength(res, row, col);
    if (t == OID_INT8 || t == OID_INT4 || t == OID_INT2 || t == OID_BOOL || t == OID_OID) {
        if (len < 1 || len > 8)
            return 2;
        v->type = SP_DB_INT;
        v->i = t == OID_OID ? (int64_t)(uint32_t)be_int(p, len) : be_int(p, len);
        if (t == OID_BOOL)
            v->i = p[0] != 0;
        return 0;
    }
    if (t != OID_BYTEA && !text_type(t))
        return 2;
    char *copy = malloc((size_t)len + 1);
    if (!copy)
        return 1;
    memcpy(copy, p, (size_t)len);
    copy[len] = '\0';
    v->type = t == OID_BYTEA ? SP_DB_BLOB : SP_DB_TEXT;
    v->s = copy;
    v->len = (size_t)len;
    return 0;
}

static sp_store_rc read_rows(const PGresult *res, sp_db_rows *out, sp_error *err)
{
    size_t nrows = (size_t)PQntuples(res), ncols = (size_t)PQnfields(res);
    out->ncols = ncols;
    out->cells = calloc(nrows * ncols + 1, sizeof *out->cells);
    if (!out->cells)
        return sp_fail(err, "runtime.out-of-memory", "out of memory"), SP_STORE_UNAVAILABLE;
    for (size_t r = 0; r < nrows; r++, out->nrows++)
        for (size_t col = 0; col < ncols; col++) {
            int bad = read_cell(res, (int)r, (int)col, &out->cells[r * ncols + col]);
            if (bad) {
                out->nrows++; /* free what this row has so far */
                sp_db_rows_free(out);
                if (bad == 1)
                    return sp_fail(err, "runtime.out-of-memory", "out of memory"),
                           SP_STORE_UNAVAILABLE;
                sp_fail(err, "store.sql", "postgres: a result column has type %u",
                        (unsigned)PQftype(res, (int)col));
                return SP_STORE_INCOMPATIBLE;
            }
        }
    return SP_STORE_OK;
}

/* ---- the driver ---- */

/* The binary parameters of one statement (freed with bound_free). */
typedef struct bound {
    const char **values;
    int *lengths, *formats;
    uint64_t *ints;
} bound;

static void bound_free(bound *b)
{
    free(b->values), free(b->lengths), free(b->formats), free(b->ints);
}

static sp_store_rc bind(const sp_db_val *params, size_t n, bound *b, sp_error *err)
{
    b->values = calloc(n ? n : 1, sizeof *b->values);
    b->lengths = calloc(n ? n : 1, sizeof *b->lengths);
    b->formats = calloc(n ? n : 1, sizeof *b->formats);
    b->ints = calloc(n ? n : 1, sizeof *b->ints);
    if (!b->values || !b->lengths || !b->formats || !b->ints) {
        bound_free(b);
        return sp_fail(err, "runtime.out-of-memory", "out of memory"), SP_STORE_UNAVAILABLE;
    }
    for (size_t i = 0; i < n; i++) {
        b->formats[i] = 1;
        if (params[i].type == SP_DB_INT) {
            b->ints[i] = htobe64((uint64_t)params[i].i);
            b->values[i] = (const char *)&b->ints[i];
            b->lengths[i] = 8;
        } else if (params[i].type == SP_DB_TEXT || params[i].type == SP_DB_BLOB) {
            b->values[i] = params[i].s ? params[i].s : "";
            b->lengths[i] = params[i].s ? (int)params[i].len : 0;
        }
    }
    return SP_STORE_OK;
}

/* ---- deferred writes: libpq pipeline mode ----
 * A write whose rows nobody reads is sent at once and answered later: the
 * next statement that must wait (a read, a prepare, RELEASE, COMMIT) first
 * syncs the pipeline, so a request's trailing writes and its RELEASE cost
 * one round trip. The first failure among them is that statement's
 * answer; PostgreSQL skips the rest (aborted pipeline). */

/* One pending write's answer; false when there is none (connection lost). */
bool sp_pg_pending_result(pg_conn *c, int64_t expect, sp_store_rc *rcp, sp_error *err)
{
    PGresult *res = PQgetResult(c->db);
    if (!res) {
        if (*rcp == SP_STORE_OK)
            *rcp = sp_pg_fail(c, NULL, "pipeline", err);
        return false;
    }
    sp_store_rc rc = *rcp;
    ExecStatusType status = PQresultStatus(res);
    if (rc == SP_STORE_OK && status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
        rc = status == PGRES_PIPELINE_ABORTED
                 ? (sp_fail(err, "store.io", "postgres: a pipelined write was skipped"),
                    SP_STORE_UNAVAILABLE)
                 : sp_pg_fail(c, res, "query", err);
    if (rc == SP_STORE_OK && expect >= 0) {
        const char *tuples = PQcmdTuples(res);
        long long changed = tuples && *tuples ? strtoll(tuples, NULL, 10) : 0;
        if (changed != expect) {
            sp_fail(err, "store.invariant", "a write expected to change %lld row(s) changed %lld",
                    (long long)expect, changed);
            rc = SP_STORE_CORRUPT;
        }
    }
    PQclear(res);
    PQclear(PQgetResult(c->db)); /* the NULL that ends each command's results */
    *rcp = rc;
    return true;
}

void sp_pg_read_to_sync(pg_conn *c)
{
    PGresult *res;
    while ((res = PQgetResult(c->db)) != NULL) {
        bool synced = PQresultStatus(res) == PGRES_PIPELINE_SYNC;
        PQclear(res);
        if (synced)
            break;
    }
}

/* Sync the pipeline: the pending writes' answers in order, then the
 * answers of the `nlast` statements sent after them (last[i]: the caller's
 * to clear; NULL when there is none). One round trip. */
static sp_store_rc sync_pipeline(pg_conn *c, PGresult **last, size_t nlast, sp_error *err)
{
    atomic_fetch_add_explicit(&c->round_trips, 1, memory_order_relaxed);
    sp_store_rc rc = SP_STORE_OK;
    if (PQpipelineSync(c->db) != 1)
        rc = sp_pg_fail(c, NULL, "pipeline", err);
    bool answered = rc == SP_STORE_OK;
    /* batches sent before this exchange are answered before it (sent.c) */
    if (answered && c->nsent && !sp_pg_sent_read(c))
        answered = false, rc = sp_pg_fail(c, NULL, "pipeline", err);
    c->behind_failed |= c->behind && sp_pg_sent_failed(c);
    for (size_t i = 0; i < c->npending && answered; i++)
        answered = sp_pg_pending_result(c, c->pending[i], &rc, err);
    c->writes_answered = answered && rc == SP_STORE_OK;
    for (size_t i = 0; i < nlast; i++)
        last[i] = NULL;
    for (size_t i = 0; i < nlast && answered; i++) {
        last[i] = PQgetResult(c->db);
        if (last[i])
            PQclear(PQgetResult(c->db)); /* the NULL that ends its results */
        else
            answered = false, rc = rc ? rc : sp_pg_fail(c, NULL, "pipeline", err);
    }
    c->answer_lost = !answered;
    if (answered)
        sp_pg_read_to_sync(c);
    c->npending = 0;
    if (PQexitPipelineMode(c->db) != 1 && rc == SP_STORE_OK)
        rc = sp_pg_fail(c, NULL, "pipeline", err);
    if (answered)
        c->answered_ms = sp_mono_ms();
    return rc;
}

static sp_store_rc flush(pg_conn *c, sp_error *err)
{
    return c->npending == 0 ? SP_STORE_OK : sync_pipeline(c, NULL, 0, err);
}

/* After `rc` (a flush's answer): the statement prepared and its parameters
 * bound (free them with bound_free). */
static sp_store_rc ready(pg_conn *c, sp_store_rc rc, const char *sql, const sp_db_val *params,
                         size_t n, pg_stmt **st, bound *b, sp_error *err)
{
    if (rc == SP_STORE_OK)
        rc = prepare(c, sql, params, n, st, err);
    return rc == SP_STORE_OK ? bind(params, n, b, err) : rc;
}

sp_store_rc sp_pg_write(void *conn, const char *sql, const sp_db_val *params, size_t n,
                        int64_t expect_rows, sp_error *err)
{
    pg_conn *c = conn;
    c->wrote = true;
    pg_stmt *st = NULL;
    bound b = {0};
    bool full = c->npending == sizeof c->pending / sizeof c->pending[0];
    sp_store_rc rc = ready(c, full ? flush(c, err) : SP_STORE_OK, sql, params, n, &st, &b, err);
    if (rc)
        return rc;
    if (PQpipelineStatus(c->db) == PQ_PIPELINE_OFF && PQenterPipelineMode(c->db) != 1)
        rc = sp_pg_fail(c, NULL, "pipeline", err);
    else if (PQsendQueryPrepared(c->db, st->name, (int)n, b.values, b.lengths, b.formats, 1) != 1)
        rc = sp_pg_fail(c, NULL, "query", err);
    else
        c->pending[c->npending++] = expect_rows;
    bound_free(&b);
    return rc;
}

/* The answer of a statement just sent after the pending writes (`sent`:
 * the send worked): one sync answers them all, a write's failure first. */
static sp_store_rc joined_answer(pg_conn *c, bool sent, const char *what, PGresult **res,
                                 sp_error *err)
{
    if (res)
        *res = NULL;
    if (!sent) {
        sp_store_rc failed = sp_pg_fail(c, NULL, what, err);
        sp_error ignored = {0};
        flush(c, &ignored);
        sp_error_clear(&ignored);
        c->writes_answered = c->answer_lost = false; /* it never left: nothing to wait for */
        return failed;
    }
    sp_store_rc rc = sync_pipeline(c, res, 1, err);
    if (rc) {
        PQclear(*res);
        *res = NULL;
    }
    return rc;
}

/* A statement that must be answered: after pending writes, it joins their
 * pipeline; otherwise it is sent and waited for on its own. */
static sp_store_rc execute(pg_conn *c, const pg_stmt *st, const bound *b, size_t n,
                           PGresult **res, sp_error *err)
{
    if (c->npending)
        return joined_answer(c,
                             PQsendQueryPrepared(c->db, st->name, (int)n, b->values, b->lengths,
                                                 b->formats, 1) == 1,
                             "query", res, err);
    atomic_fetch_add_explicit(&c->round_trips, 1, memory_order_relaxed);
    *res = PQexecPrepared(c->db, st->name, (int)n, b->values, b->lengths, b->formats, 1);
    if (*res && PQstatus(c->db) == CONNECTION_OK)
        c->answered_ms = sp_mono_ms();
    return SP_STORE_OK;
}

static sp_store_rc pg_query(void *conn, const char *sql, const sp_db_val *params, size_t n,
                            sp_db_rows *out, int64_t *changes, sp_error *err)
{
    pg_conn *c = conn;
    if (out)
        *out = (sp_db_rows){0};
    c->wrote |= !out || starts(sql, "INSERT") || starts(sql, "UPDATE") || starts(sql, "DELETE");
    pg_stmt *st = NULL;
    bound b = {0};
    sp_store_rc rc = ready(c, SP_STORE_OK, sql, params, n, &st, &b, err);
    if (rc) {
        sp_error ignored = {0}; /* what is pending is rolled back with the rest */
        flush(c, &ignored);
        sp_error_clear(&ignored);
        return rc;
    }
    PGresult *res;
    rc = execute(c, st, &b, n, &res, err);
    bound_free(&b);
    if (rc)
        return rc;
    ExecStatusType status = PQresultStatus(res);
    if (status == PGRES_TUPLES_OK && out)
        rc = read_rows(res, out, err);
    else if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
        rc = sp_pg_fail(c, res, "query", err);
    if (rc == SP_STORE_OK && changes) {
        const char *tuples = PQcmdTuples(res);
        *changes = tuples && *tuples ? strtoll(tuples, NULL, 10) : 0;
    }
    PQclear(res);
    return rc;
}

/* An answered read's rows into *out; its failure otherwise. */
static sp_store_rc read_answer(pg_conn *c, const PGresult *res, sp_db_rows *out, sp_error *err)
{
    ExecStatusType status = PQresultStatus(res);
    if (status == PGRES_TUPLES_OK)
        return read_rows(res, out, err);
    if (status == PGRES_PIPELINE_ABORTED) {
        sp_fail(err, "store.io", "postgres: a pipelined read was skipped");
        return SP_STORE_UNAVAILABLE;
    }
    return sp_pg_fail(c, res, "query", err);
}

/* The reads of one exchange: a request's two, or a batch's lock-ahead. */
enum { READS_MAX = 2 * SP_LOCK_AHEAD_MAX };

/* Reads sent one after the other behind the pending writes, one sync for
 * all: the server runs each after the one before it has finished. */
static sp_store_rc pg_query_all(void *conn, const sp_db_read *reads, size_t n, sp_db_rows *outs,
                                sp_error *err)
{
    pg_conn *c = conn;
    sp_store_rc rc = SP_STORE_OK;
    if (n > READS_MAX) { /* the shared logic sends at most that many */
        sp_fail(err, "store.invariant", "postgres: %zu reads in one exchange (at most %d)", n,
                READS_MAX);
        return SP_STORE_CORRUPT;
    }
    pg_stmt *st[READS_MAX] = {0};
    bound b[READS_MAX] = {0};
    for (size_t i = 0; i < n; i++)
        rc = ready(c, rc, reads[i].sql, reads[i].params, reads[i].nparams, &st[i], &b[i], err);
    bool sent = rc == SP_STORE_OK && (PQpipelineStatus(c->db) != PQ_PIPELINE_OFF ||
                                      PQenterPipelineMode(c->db) == 1);
    for (size_t i = 0; i < n && sent; i++)
        sent = PQsendQueryPrepared(c->db, st[i]->name, (int)reads[i].nparams, b[i].values,
                                   b[i].lengths, b[i].formats, 1) == 1;
    for (size_t i = 0; i < n; i++)
        bound_free(&b[i]);
    if (rc) { /* nothing sent: what is pending is rolled back with the rest */
        sp_error ignored = {0};
        flush(c, &ignored);
        sp_error_clear(&ignored);
        return rc;
    }
    if (!sent) /* as joined_answer: the connection is gone or going */
        return joined_answer(c, false, "query", NULL, err);
    PGresult *res[READS_MAX] = {0};
    rc = sync_pipeline(c, res, n, err);
    for (size_t i = 0; i < n; i++) {
        if (rc == SP_STORE_OK)
            rc = read_answer(c, res[i], &outs[i], err);
        PQclear(res[i]);
    }
    if (rc)
        for (size_t i = 0; i < n; i++)
            sp_db_rows_free(&outs[i]);
    return rc;
}

static bool exec_ok(pg_conn *c, const char *sql, PGresult **out)
{
    atomic_fetch_add_explicit(&c->round_trips, 1, memory_order_relaxed);
    PGresult *res = PQexec(c->db, sql);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
    if (out)
        *out = res;
    else
        PQclear(res);
    return ok;
}

static void discard_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* Session settings: bounded lock waits (unless the URL or the role already
 * set one), and a run's snapshot compressed with lz4 - it is rewritten
 * every step, and lz4 compresses it in about half pglz's time
 * (docs/postgres.md §3c) - only where the server has lz4 and nobody chose
 * otherwise. */
#define SESSION_SQL                                                                                \
    "SELECT set_config('lock_timeout', '" SP_PG_LOCK_TIMEOUT "', false)"                           \
    " WHERE current_setting('lock_timeout') = '0';"                                                \
    "SELECT set_config('idle_in_transaction_session_timeout', '" SP_PG_IDLE_TX_TIMEOUT             \
    "', false) WHERE current_setting('idle_in_transaction_session_timeout') = '0';"                \
    "SELECT set_config('default_toast_compression', 'lz4', false) FROM pg_settings"                \
    " WHERE name = 'default_toast_compression' AND source = 'default'"                             \
    " AND 'lz4' = ANY(enumvals)"

/* And a writer's: its work selection (ops_scan.c: the outbox, ready runs,
 * leases, timers) reads a page in the order of a partial index, under
 * LIMIT. A queue's table changes faster than its statistics: right after
 * a burst (a bulk start, a fan-out), or on a table whose last ANALYZE saw
 * almost nothing pending, the planner expects a handful of rows, prefers a
 * bitmap scan and sorts - reading, joining and row-locking the whole queue
 * to return one page (5 ms for 1,000 pending invocations instead of
 * 0.15 ms, growing with the queue). Without bitmap scans the cheap plan
 * left is the index in its order, which stops at the page
 * (docs/postgres.md §3j). Only where nobody chose otherwise. */
#define WRITER_SQL                                                                                 \
    ";SELECT set_config('enable_bitmapscan', 'off', false) FROM pg_settings"                       \
    " WHERE name = 'enable_bitmapscan' AND source = 'default'"

/* The session settings, and no notices on stderr. */
static sp_store_rc session_setup(pg_conn *c, sp_error *err)
{
    PQsetNoticeProcessor(c->db, discard_notice, NULL);
    PGresult *res = NULL;
    bool ok = exec_ok(c, c->writer ? SESSION_SQL WRITER_SQL : SESSION_SQL, &res);
    sp_store_rc rc = ok ? SP_STORE_OK : sp_pg_fail(c, res, "session settings", err);
    PQclear(res);
    return rc;
}

static sp_store_rc connection_failed(pg_conn *c, const char *what, sp_error *err)
{
    char detail[SP_MESSAGE_MAX];
    snprintf(detail, sizeof detail, "%s", c->db ? PQerrorMessage(c->db) : "out of memory");
    one_line(detail);
    bool denied = strstr(detail, "password authentication failed") ||
                  strstr(detail, "no pg_hba.conf entry") || strstr(detail, "permission denied");
    char message[SP_MESSAGE_MAX + 64];
    snprintf(message, sizeof message, "postgres: %s: %s", what, detail);
    scrub(c, message, sizeof message);
    sp_fail(err, denied ? "store.unauthorized" : "store.io", "%s", message);
    return denied ? SP_STORE_UNAUTHORIZED : SP_STORE_UNAVAILABLE;
}

sp_store_rc sp_pg_reconnect(pg_conn *c, sp_error *err)
{
    sp_db_cache_clear(&c->statements);
    sp_pg_sent_lost(c); /* their answers went with the connection */
    PQreset(c->db);
    atomic_fetch_add(&c->generation, 1); /* a new backend: flush.c's proofs start over */
    c->flush_unresolved = true;
    if (PQstatus(c->db) != CONNECTION_OK)
        return connection_failed(c, "reconnecting", err);
    sp_store_rc rc = session_setup(c, err);
    return rc ? rc : sp_pg_flush_resolve(c, err);
}

static const char *begin_sql(sp_db_tx mode)
{
    switch (mode) {
    case SP_DB_READ:
        return "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
    case SP_DB_ONE: /* one statement: its own implicit transaction */
        return NULL;
    case SP_DB_WRITE:
    case SP_DB_SCAN:
        break;
    }
    return "BEGIN ISOLATION LEVEL READ COMMITTED READ WRITE";
}

/* A connection the server answered this recently is taken to be alive: its
 * BEGIN goes out with the transaction's first statements (one round trip
 * less). An older one sends BEGIN alone first, so that a connection lost
 * while idle is re-established before anything happened. */
#define BEGIN_PIPELINED_MS 2000u

/* BEGIN into the pipeline, answered with the next sync (a failure there -
 * the connection went - is that statement's answer; the next begin
 * reconnects). */
static bool begin_pipelined(pg_conn *c, const char *sql)
{
    if (!c->answered_ms || sp_mono_ms() - c->answered_ms > BEGIN_PIPELINED_MS ||
        c->npending == sizeof c->pending / sizeof c->pending[0])
        return false;
    if (PQpipelineStatus(c->db) == PQ_PIPELINE_OFF && PQenterPipelineMode(c->db) != 1)
        return false;
    if (PQsendQueryParams(c->db, sql, 0, NULL, NULL, NULL, NULL, 0) != 1) {
        if (c->npending == 0)
            PQexitPipelineMode(c->db);
        return false;
    }
    c->pending[c->npending++] = -1;
    return true;
}

/* pg_begin, c->mu held (released when it fails). */
static sp_store_rc begin_locked(pg_conn *c, sp_db_tx mode, sp_error *err)
{
    c->wrote = c->behind = c->behind_failed = false;
    /* tickets a reconnect left unproved come first (flush.c) */
    if (c->flush_unresolved && PQstatus(c->db) == CONNECTION_OK) {
        sp_store_rc rc = sp_pg_flush_resolve(c, err);
        if (rc) {
            pthread_mutex_unlock(&c->mu);
            return rc;
        }
    }
    if (PQstatus(c->db) == CONNECTION_OK && begin_sql(mode) && begin_pipelined(c, begin_sql(mode)))
        return SP_STORE_OK;
    sp_store_rc rc = PQstatus(c->db) == CONNECTION_OK ? SP_STORE_OK : sp_pg_reconnect(c, err);
    PGresult *res = NULL;
    if (rc == SP_STORE_OK && begin_sql(mode) && !exec_ok(c, begin_sql(mode), &res)) {
        /* The server may have gone away since the last request: nothing has
         * happened in this transaction yet, so one fresh connection is safe. */
        bool retry = PQstatus(c->db) == CONNECTION_BAD;
        PQclear(res);
        res = NULL;
        rc = retry ? sp_pg_reconnect(c, err) : SP_STORE_OK;
        if (rc == SP_STORE_OK && !exec_ok(c, begin_sql(mode), &res))
            rc = sp_pg_fail(c, res, "begin", err);
    }
    PQclear(res);
    if (rc)
        pthread_mutex_unlock(&c->mu);
    return rc;
}

static sp_store_rc pg_begin(void *conn, sp_db_tx mode, sp_error *err)
{
    pg_conn *c = conn;
    pthread_mutex_lock(&c->mu);
    sp_pg_sent_settle(c); /* batches sent before are answered first (sent.c) */
    return begin_locked(c, mode, err);
}

/* A write transaction queued behind the batches sent before it, their
 * answers unread (sent.c); as pg_begin when there are none, or when the
 * connection has not answered lately. */
static sp_store_rc pg_begin_behind(void *conn, sp_error *err)
{
    pg_conn *c = conn;
    pthread_mutex_lock(&c->mu);
    c->wrote = c->behind_failed = false;
    c->behind = sp_pg_sent_unread(c) && !c->npending && !c->flush_unresolved &&
                PQstatus(c->db) == CONNECTION_OK && begin_pipelined(c, begin_sql(SP_DB_WRITE));
    if (c->behind)
        return SP_STORE_OK;
    sp_pg_sent_settle(c);
    return begin_locked(c, SP_DB_WRITE, err);
}

/* The transaction under way rolled back (c->mu stays held). */
void sp_pg_rollback_locked(pg_conn *c)
{
    if (!c->npending)
        sp_pg_sent_settle(c); /* nothing of its own is queued behind them */
    sp_error ignored = {0};
    flush(c, &ignored); /* what is pending is rolled back with the rest */
    sp_error_clear(&ignored);
    if (PQstatus(c->db) == CONNECTION_OK && PQtransactionStatus(c->db) != PQTRANS_IDLE)
        exec_ok(c, "ROLLBACK", NULL);
}

/* COMMIT's answer: after pending writes it joins their pipeline (a write
 * that failed is the answer and nothing commits; a COMMIT sent and left
 * unanswered - every write answered, or the answers lost with the
 * connection - may have committed: unknown-commit). */
static sp_store_rc send_commit(pg_conn *c, PGresult **res, sp_error *err)
{
    if (!c->npending) {
        atomic_fetch_add_explicit(&c->round_trips, 1, memory_order_relaxed);
        *res = PQexec(c->db, "COMMIT");
        return SP_STORE_OK;
    }
    bool sent = PQsendQueryParams(c->db, "COMMIT", 0, NULL, NULL, NULL, NULL, 0) == 1;
    sp_store_rc rc = joined_answer(c, sent, "commit", res, err);
    if (rc && sent && (c->writes_answered || c->answer_lost)) {
        char message[SP_MESSAGE_MAX];
        snprintf(message, sizeof message, "%s", err->message);
        sp_fail(err, "store.unknown-commit", "%s (the commit's outcome is unknown)", message);
        rc = SP_STORE_UNKNOWN_COMMIT;
    }
    return rc;
}

/* The transaction's COMMIT - after its commit mark when `marked`, left
 * unflushed (flush.c makes it durable) when `deferred`, which only a marked
 * commit is - and what its answer says. */
static sp_store_rc commit_answer(pg_conn *c, bool marked, bool deferred, sp_error *err)
{
    PGresult *res = NULL;
    /* behind a sent batch whose answer is unread, chained to it (sent.c) */
    bool chained = deferred && sp_pg_sent_unread(c);
    sp_store_rc failed = marked ? sp_pg_mark(c, deferred, chained, err) : SP_STORE_OK;
    if (!failed) /* a deferred write that failed: nothing commits */
        failed = send_commit(c, &res, err);
    if (failed) {
        if (PQstatus(c->db) == CONNECTION_OK && PQtransactionStatus(c->db) != PQTRANS_IDLE)
            exec_ok(c, "ROLLBACK", NULL);
        return failed;
    }
    sp_store_rc rc = sp_pg_commit_status(c, res, err);
    PQclear(res);
    return rc;
}

sp_store_rc sp_pg_commit_status(pg_conn *c, PGresult *res, sp_error *err)
{
    sp_store_rc rc = SP_STORE_OK;
    if (PQresultStatus(res) != PGRES_COMMAND_OK) {
        const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        rc = sp_pg_fail(c, res, "commit", err);
        if (!state || PQstatus(c->db) == CONNECTION_BAD || starts(state, "08")) {
            /* No answer: the server may have committed before the connection went. */
            char message[SP_MESSAGE_MAX];
            snprintf(message, sizeof message, "%s", err->message);
            sp_fail(err, "store.unknown-commit", "%s (the commit's outcome is unknown)", message);
            rc = SP_STORE_UNKNOWN_COMMIT;
        }
    } else if (strcmp(PQcmdStatus(res), "COMMIT") != 0) {
        sp_fail(err, "store.io",
                "postgres: commit: the transaction had failed and was rolled back");
        rc = SP_STORE_UNAVAILABLE;
    }
    return rc;
}

/* COMMIT; with `ticket` (deferred), a write transaction's flush is left to
 * the flusher when it can be (marked: flush.c proves it by the mark) and
 * *ticket names it, else 0. After a failed flush nothing more commits. */
sp_store_rc sp_pg_finish(pg_conn *c, uint64_t *ticket, sp_error *err)
{
    bool marked = c->wrote && c->marks; /* its outcome can be read back (outcome.c) */
    sp_flusher *f = ticket && marked ? sp_pg_flusher(c) : NULL;
    sp_store_rc rc = f ? sp_flusher_failed(f, err) : SP_STORE_OK;
    if (rc) {
        sp_pg_rollback_locked(c);
        return rc;
    }
    rc = commit_answer(c, marked, f != NULL, err);
    if (marked) { /* a new mark hides whether the one before committed */
        c->unresolved = rc == SP_STORE_UNKNOWN_COMMIT;
        c->unresolved_mark = c->unresolved_hi = c->mark;
    }
    if (f && rc == SP_STORE_OK)
        *ticket = sp_pg_flush_committed(c, c->mark);
    return rc;
}

static sp_store_rc pg_commit(void *conn, sp_error *err)
{
    pg_conn *c = conn;
    sp_store_rc rc = sp_pg_finish(c, NULL, err);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static sp_store_rc pg_commit_deferred(void *conn, uint64_t *ticket, sp_error *err)
{
    pg_conn *c = conn;
    *ticket = 0;
    sp_store_rc rc = sp_pg_finish(c, ticket, err);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static sp_store_rc pg_wait_flushed(void *conn, uint64_t ticket, sp_error *err)
{
    pg_conn *c = conn;
    sp_flusher *f = atomic_load(&c->flusher);
    return ticket && f ? sp_flusher_wait(f, ticket, err) : SP_STORE_OK;
}

static void pg_flush_counts(void *conn, uint64_t *flushes, uint64_t *unflushed)
{
    pg_conn *c = conn;
    *flushes = *unflushed = 0;
    sp_flusher *f = atomic_load(&c->flusher);
    if (f)
        sp_flusher_counts(f, flushes, unflushed);
}

static void pg_rollback(void *conn)
{
    pg_conn *c = conn;
    sp_pg_rollback_locked(c);
    pthread_mutex_unlock(&c->mu);
}

/* The database's clock read within this long is carried forward by the
 * monotonic clock instead of read again: a scan's or a new run's "now"
 * costs no round trip of its own. A mutation of a run takes its "now" from
 * its lock read (request.c), never from here. */
#define CLOCK_CARRIED_MS 1000

static uint64_t pg_now(void *conn)
{
    pg_conn *c = conn;
    if (c->has_clock)
        return c->clock.now_ms(c->clock.ctx);
    uint64_t at = sp_mono_ms();
    /* read before its answer travelled here: carried forward, never ahead */
    if (c->clock_read_at && at - c->clock_read_at < CLOCK_CARRIED_MS)
        return c->clock_read + (at - c->clock_read_at);
    sp_db_rows rows;
    sp_error err = {0};
    uint64_t now = 0;
    /* A failure here leaves the transaction failed (or the connection gone):
     * the next statement fails with the real cause, so 0 is never written. */
    if (pg_query(c, "SELECT " SP_PG_NOW_MS, NULL, 0,
                 &rows, NULL, &err) == SP_STORE_OK &&
        rows.nrows == 1 && sp_db_cell(&rows, 0, 0)->type == SP_DB_INT)
        now = (uint64_t)sp_db_cell(&rows, 0, 0)->i;
    if (now)
        c->clock_read = now, c->clock_read_at = sp_mono_ms();
    sp_db_rows_free(&rows);
    sp_error_clear(&err);
    return now;
}

static const char *pg_now_sql(void *conn)
{
    pg_conn *c = conn;
    return c->has_clock ? NULL : SP_PG_NOW_MS;
}

static void release_statement(void *stmt)
{
    free(stmt);
}

static void pg_close(void *conn)
{
    pg_conn *c = conn;
    if (!c)
        return;
    sp_pg_sent_close(c); /* a sent batch's ticket comes with its answer */
    sp_flusher_stop(atomic_load(&c->flusher)); /* committed is durable before the close */
    sp_db_cache_clear(&c->statements);
    PQfinish(c->db);
    pthread_mutex_destroy(&c->mu);
    for (int i = 0; i < 4; i++)
        free(c->secrets[i]);
    free(c->url);
    free(c);
}

static uint64_t pg_round_trips(void *conn)
{
    pg_conn *c = conn;
    return atomic_load_explicit(&c->round_trips, memory_order_relaxed);
}

static uint64_t pg_own_statements(void *conn)
{
    pg_conn *c = conn;
    return atomic_load_explicit(&c->own_statements, memory_order_relaxed);
}

static const sp_db_driver PG_DRIVER = {
    .name = "postgres",
    .dialect = {.for_update = " FOR UPDATE", .skip_locked = " FOR UPDATE SKIP LOCKED",
                .unindexed = "", .run_ready = "ready", .notify_work = SP_PG_NOTIFY_WORK},
    .begin = pg_begin,
    .commit = pg_commit,
    .commit_deferred = pg_commit_deferred,
    .commit_send = sp_pg_commit_send,
    .answer = sp_pg_answer,
    .begin_behind = pg_begin_behind,
    .wait_flushed = pg_wait_flushed,
    .flush_counts = pg_flush_counts,
    .commit_outcome = sp_pg_commit_outcome,
    .rollback = pg_rollback,
    .query = pg_query,
    .now_ms = pg_now,
    .now_sql = pg_now_sql,
    .close = pg_close,
    .listen = sp_pg_listen,
    .round_trips = pg_round_trips,
    .own_statements = pg_own_statements,
    .write = sp_pg_write,
    .query_all = pg_query_all,
};

/* ---- the URL ---- */

/* The span of the userinfo's password (after ':' before '@') and of the
 * password=... parameter's value, as offsets into url; len 0 when absent. */
typedef struct span {
    size_t at, len;
} span;

static void find_secrets(const char *url, span *user_pw, span *param_pw)
{
    *user_pw = *param_pw = (span){0, 0};
    const char *auth = strstr(url, "://");
    if (!auth)
        return;
    auth += 3;
    size_t auth_len = strcspn(auth, "/?");
    const char *at = NULL;
    for (const char *p = auth; p < auth + auth_len; p++)
        if (*p == '@')
            at = p;
    if (at) {
        const char *colon = memchr(auth, ':', (size_t)(at - auth));
        if (colon)
            *user_pw = (span){(size_t)(colon + 1 - url), (size_t)(at - colon - 1)};
    }
    const char *q = strchr(auth, '?');
    for (const char *p = q; p && *p;) {
        p++;
        if (strncmp(p, "password=", 9) == 0) {
            *param_pw = (span){(size_t)(p + 9 - url), strcspn(p + 9, "&")};
            return;
        }
        p = strchr(p, '&');
    }
}

char *sp_pg_redact(const char *url)
{
    span user_pw, param_pw;
    find_secrets(url, &user_pw, &param_pw);
    size_t len = strlen(url);
    char *out = malloc(len + 1), *w = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        if (user_pw.len && i == user_pw.at - 1) { /* ":password" */
            i = user_pw.at + user_pw.len;
            continue;
        }
        if (param_pw.len && i == param_pw.at - 9 - 1) { /* "?password=..." or "&password=..." */
            size_t end = param_pw.at + param_pw.len;
            if (url[i] == '?') {
                *w++ = '?';
                end += url[end] == '&';
            }
            i = end;
            continue;
        }
        *w++ = url[i++];
    }
    if (w > out && w[-1] == '?')
        w--;
    *w = '\0';
    return out;
}

static int hex_digit(char ch)
{
    return isdigit((unsigned char)ch) ? ch - '0'
           : (ch >= 'a' && ch <= 'f') ? ch - 'a' + 10
           : (ch >= 'A' && ch <= 'F') ? ch - 'A' + 10
                                      : -1;
}

static char *percent_decode(const char *s, size_t n)
{
    char *out = malloc(n + 1), *w = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
            *w++ = (char)(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
            i += 2;
        } else {
            *w++ = s[i];
        }
    }
    *w = '\0';
    return out;
}

static bool remember_secrets(pg_conn *c, const char *url)
{
    span spans[2];
    find_secrets(url, &spans[0], &spans[1]);
    for (int i = 0; i < 2; i++) {
        if (!spans[i].len)
            continue;
        c->secrets[2 * i] = strndup(url + spans[i].at, spans[i].len);
        c->secrets[2 * i + 1] = percent_decode(url + spans[i].at, spans[i].len);
        if (!c->secrets[2 * i] || !c->secrets[2 * i + 1])
            return false;
    }
    return true;
}

/* ---- opening ---- */

PGconn *sp_pg_connect(const char *url)
{
    /* Defaults first (the URL and libpq's environment override them), the
     * URL, then what the driver needs whatever the URL says. */
    const char *timeout = getenv("PGCONNECT_TIMEOUT");
    const char *keys[] = {"fallback_application_name", "connect_timeout", "dbname",
                          "client_encoding", NULL};
    const char *values[] = {"spore", timeout && *timeout ? timeout : "10", url, "UTF8", NULL};
    return PQconnectdbParams(keys, values, 1);
}

static pg_conn *connect_to(const char *url, const sp_clock *clock, bool create, bool writes,
                           sp_error *err)
{
    pg_conn *c = calloc(1, sizeof *c);
    if (!c || !remember_secrets(c, url)) {
        pg_close(c);
        sp_oom(err);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->statements.release = release_statement;
    sp_pg_marks_init(c);
    c->clock = clock ? *clock : sp_clock_system();
    c->has_clock = clock != NULL;
    c->writer = create || writes;
    /* Defaults first (the URL and libpq's environment override them), the
     * URL, then what the driver needs whatever the URL says. */
    c->url = strdup(url);
    c->db = c->url ? sp_pg_connect(url) : NULL;
    sp_store_rc rc = c->db && PQstatus(c->db) == CONNECTION_OK
                         ? SP_STORE_OK
                         : connection_failed(c, "connecting", err);
    if (rc == SP_STORE_OK)
        rc = session_setup(c, err);
    if (rc == SP_STORE_OK)
        rc = sp_pg_schema_ensure(c, create, writes, err);
    if (rc == SP_STORE_OK && (create || writes))
        sp_pg_marks_open(c);
    if (rc != SP_STORE_OK && strcmp(err->code, "store.not-found") == 0) {
        char *where = sp_pg_redact(url); /* never the password */
        sp_fail(err, "store.not-found",
                "no spore store at %s (its current schema holds none yet; spore run or spore "
                "start creates one)",
                where ? where : "the PostgreSQL database");
        free(where);
    }
    if (rc != SP_STORE_OK) {
        pg_close(c);
        return NULL;
    }
    return c;
}

sp_store *sp_pg_open(const char *url, const sp_store_open_opts *opts, sp_error *err)
{
    pg_conn *c = connect_to(url, opts->clock, opts->mode == SP_STORE_OPEN_OR_CREATE,
                            !opts->reads_only, err);
    if (!c)
        return NULL;
    sp_store *s = calloc(1, sizeof *s);
    if (!s || !(s->location = sp_pg_redact(url))) {
        free(s);
        pg_close(c);
        sp_oom(err);
        return NULL;
    }
    s->driver = &PG_DRIVER;
    s->conn = c;
    s->clock = c->clock;
    s->has_clock = c->has_clock;
    return s;
}
