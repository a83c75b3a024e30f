/*
 * ops_logs.c - step logs (authoring.md §5): put_attempt_log and
 * list_attempt_logs (store.h).
 *
 * What it is for: keeping, per attempt, the tails of its stdout and stderr
 * that the runner kept (redacted, valid UTF-8, at most 64 KiB each) beside
 * the attempt, and reading them back for `spore logs` on any machine.
 *
 * put_attempt_log is one statement: an upsert whose rows come from the
 * attempt itself (INSERT ... SELECT FROM attempts JOIN invocations), so the
 * node and attempt number are the store's, an unknown attempt writes
 * nothing (not-found/attempt.not-found), and a repeated put replaces the
 * earlier one. It keeps no receipt: the write is idempotent by its key
 * (tenant, run, attempt ID). In a batch it is a savepoint like any request,
 * so it costs the tick no commit of its own.
 *
 * The list orders entries by the sequence of their attempt's result event
 * (att:<attemptId>, appended under the run's lock, so it grows in commit
 * order: what `spore logs --follow` pages by), then the attempts without a
 * result yet by attempt ID. The cursor is ["<sort key>", "<attemptId>"].
 *
 * The table (attempt_logs) joined schema version 1 later: the first writer
 * that opens an older store adds it (sqlite/schema.c, postgres/schema.c); a
 * reader of a store that never had a writer this recent finds no logs.
 *
 * What it must never do: keep more than SP_STORE_LOG_MAX bytes of a stream,
 * keep bytes that are not UTF-8, or keep logs for an attempt the store does
 * not hold.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/utf8.h"
#include "store/logic.h"

#define KEY_NONE UINT64_C(9223372036854775807) /* the sort key of an attempt without a result */

/* ---- put ---- */

static sp_store_rc check_tail(const char *name, const sp_log_tail *t, sp_error *err)
{
    if (!t)
        return lg_invalid(err, "the %s tail is required", name);
    if (t->len > SP_STORE_LOG_MAX)
        return lg_fail(err, SP_STORE_QUOTA, "log.too-large", "the %s log is %zu bytes (at most %u)",
                       name, t->len, SP_STORE_LOG_MAX);
    if (t->len && !t->bytes)
        return lg_invalid(err, "the %s log has a length but no bytes", name);
    if (t->len && !sp_utf8_valid(t->bytes, t->len))
        return lg_fail(err, SP_STORE_CONFLICT, "log.invalid", "the %s log is not valid UTF-8",
                       name);
    return lg_check_u63("dropped bytes", t->dropped, err);
}

static sp_db_val tail_bytes(const sp_log_tail *t)
{
    return DB_BLOB(t->len ? t->bytes : "", t->len);
}

#define PUT_SQL                                                                                    \
    "INSERT INTO attempt_logs (tenant, run_id, attempt_id, invocation_id, node_id,"                \
    " attempt_number, stdout, stdout_dropped, stderr, stderr_dropped, at_ms)"                      \
    " SELECT a.tenant, a.run_id, a.attempt_id, a.invocation_id, i.node_id, a.attempt_number,"      \
    " ?, ?, ?, ?, ? FROM attempts a JOIN invocations i ON i.tenant = a.tenant"                     \
    " AND i.run_id = a.run_id AND i.invocation_id = a.invocation_id"                               \
    " WHERE a.tenant = ? AND a.run_id = ? AND a.attempt_id = ? AND a.invocation_id = ?"            \
    " ON CONFLICT (tenant, run_id, attempt_id) DO UPDATE SET stdout = excluded.stdout,"            \
    " stdout_dropped = excluded.stdout_dropped, stderr = excluded.stderr,"                         \
    " stderr_dropped = excluded.stderr_dropped, at_ms = excluded.at_ms"

static sp_store_rc put(sp_store *s, const sp_attempt_ref *ref, const sp_log_tail *out,
                       const sp_log_tail *er, sp_error *err)
{
    const sp_db_val params[] = {tail_bytes(out),
                                DB_INT(out->dropped),
                                tail_bytes(er),
                                DB_INT(er->dropped),
                                DB_INT(lg_now(s)),
                                DB_TEXT(ref->key.tenant),
                                DB_TEXT(ref->key.run_id),
                                DB_TEXT(ref->attempt_id),
                                DB_TEXT(ref->invocation_id)};
    int64_t changes = 0;
    sp_store_rc rc = lg_query(s, PUT_SQL, params, sizeof params / sizeof params[0], NULL,
                              &changes, err);
    if (rc == SP_STORE_OK && changes == 0)
        rc = lg_fail(err, SP_STORE_NOT_FOUND, "attempt.not-found", "no attempt %s in run %s",
                     ref->attempt_id, ref->key.run_id);
    return rc;
}

sp_store_rc sp_store_put_attempt_log(sp_store *s, const sp_attempt_ref *ref,
                                     const sp_log_tail *out, const sp_log_tail *err_tail,
                                     sp_error *err)
{
    sp_store_rc rc = lg_check_ref(ref, err);
    if (!rc)
        rc = check_tail("stdout", out, err);
    if (!rc)
        rc = check_tail("stderr", err_tail, err);
    if (!rc)
        rc = lg_begin(s, true, err);
    if (rc)
        return rc;
    rc = put(s, ref, out, err_tail, err);
    if (rc) {
        lg_rollback(s);
        return rc;
    }
    return lg_commit(s, err);
}

/* ---- list ---- */

void sp_attempt_log_list_free(sp_attempt_log_list *l)
{
    for (size_t i = 0; l->items && i < l->n; i++) {
        free(l->items[i].result);
        free(l->items[i].out);
        free(l->items[i].err);
    }
    free(l->items);
    free(l->next_cursor);
    memset(l, 0, sizeof *l);
}

#define SORT_KEY "coalesce(e.sequence, 9223372036854775807)"

#define LIST_SELECT                                                                                \
    "SELECT l.attempt_id, l.invocation_id, l.node_id, l.attempt_number, a.status,"                 \
    " a.expire_reason, a.result, e.sequence, a.started_at_ms, a.ended_at_ms, l.at_ms,"             \
    " l.stdout, l.stdout_dropped, l.stderr, l.stderr_dropped"                                      \
    " FROM attempt_logs l JOIN attempts a ON a.tenant = l.tenant AND a.run_id = l.run_id"          \
    " AND a.attempt_id = l.attempt_id LEFT JOIN events e ON e.tenant = l.tenant"                   \
    " AND e.run_id = l.run_id AND e.event_id = 'att:' || l.attempt_id"                             \
    " WHERE l.tenant = ? AND l.run_id = ?"
enum {
    LOG_ATTEMPT,
    LOG_INVOCATION,
    LOG_NODE,
    LOG_NUMBER,
    LOG_STATUS,
    LOG_REASON,
    LOG_RESULT,
    LOG_SEQUENCE,
    LOG_STARTED,
    LOG_ENDED,
    LOG_AT,
    LOG_OUT,
    LOG_OUT_DROPPED,
    LOG_ERR,
    LOG_ERR_DROPPED,
};

/* The statement and its parameters for one page (at most 8). */
typedef struct list_sql {
    char text[1024];
    sp_db_val params[8];
    size_t n;
} list_sql;

static void add_clause(list_sql *q, const char *clause)
{
    size_t used = strlen(q->text);
    snprintf(q->text + used, sizeof q->text - used, "%s", clause);
}

static void build_list(list_sql *q, const sp_run_key *key, const sp_attempt_log_query *f,
                       const char *const *after, uint64_t after_key, size_t limit)
{
    snprintf(q->text, sizeof q->text, "%s", LIST_SELECT);
    q->n = 0;
    q->params[q->n++] = DB_TEXT(key->tenant);
    q->params[q->n++] = DB_TEXT(key->run_id);
    if (f->node_id) {
        add_clause(q, " AND l.node_id = ?");
        q->params[q->n++] = DB_TEXT(f->node_id);
    }
    if (f->attempt_number) {
        add_clause(q, " AND l.attempt_number = ?");
        q->params[q->n++] = DB_INT(f->attempt_number);
    }
    if (f->ended_only)
        add_clause(q, " AND e.sequence IS NOT NULL");
    if (after) {
        add_clause(q, " AND (" SORT_KEY " > ? OR (" SORT_KEY " = ? AND l.attempt_id > ?))");
        q->params[q->n++] = DB_INT(after_key);
        q->params[q->n++] = DB_INT(after_key);
        q->params[q->n++] = DB_TEXT(after[1]);
    }
    add_clause(q, " ORDER BY " SORT_KEY ", l.attempt_id LIMIT ?");
    q->params[q->n++] = DB_INT(limit);
}

static sp_store_rc parse_cursor(const char *cursor, const char **after, uint64_t *key,
                                json_t **owner, sp_error *err)
{
    sp_store_rc rc = lg_cursor_parse(cursor, 2, after, owner, err);
    if (rc)
        return rc;
    char *end = NULL;
    unsigned long long v = strtoull(after[0], &end, 10);
    if (!after[0][0] || *end || after[0][0] == '-' || v > KEY_NONE ||
        strlen(after[1]) >= SP_ID_LEN + 16) {
        json_decref(*owner);
        *owner = NULL;
        return lg_fail(err, SP_STORE_CONFLICT, "cursor.invalid", "not a cursor of this list");
    }
    *key = v;
    return SP_STORE_OK;
}

static sp_store_rc check_query(const sp_run_key *key, const sp_attempt_log_query *q,
                               sp_error *err)
{
    sp_store_rc rc = lg_check_key(key, err);
    if (!rc && !q)
        rc = lg_invalid(err, "a query is required");
    if (!rc && q->node_id)
        rc = lg_check_text("node ID", q->node_id, SP_STORE_ID_MAX, err);
    return rc;
}

static bool fill_item(const sp_db_rows *r, size_t i, sp_attempt_log *it)
{
    lg_copy(it->attempt_id, sizeof it->attempt_id, r, i, LOG_ATTEMPT);
    lg_copy(it->invocation_id, sizeof it->invocation_id, r, i, LOG_INVOCATION);
    lg_copy(it->node_id, sizeof it->node_id, r, i, LOG_NODE);
    lg_copy(it->status, sizeof it->status, r, i, LOG_STATUS);
    lg_copy(it->expire_reason, sizeof it->expire_reason, r, i, LOG_REASON);
    it->attempt_number = (uint32_t)lg_u64(r, i, LOG_NUMBER);
    it->result_sequence = lg_u64(r, i, LOG_SEQUENCE);
    it->started_at_ms = lg_u64(r, i, LOG_STARTED);
    it->ended_at_ms = lg_u64(r, i, LOG_ENDED);
    it->logged_at_ms = lg_u64(r, i, LOG_AT);
    it->out_dropped = lg_u64(r, i, LOG_OUT_DROPPED);
    it->err_dropped = lg_u64(r, i, LOG_ERR_DROPPED);
    return lg_dup(&it->result, NULL, r, i, LOG_RESULT) &&
           lg_dup(&it->out, &it->out_len, r, i, LOG_OUT) &&
           lg_dup(&it->err, &it->err_len, r, i, LOG_ERR) && (it->out || (it->out = strdup(""))) &&
           (it->err || (it->err = strdup("")));
}

static char *cursor_after(const sp_attempt_log *last)
{
    char key[24];
    snprintf(key, sizeof key, "%" PRIu64,
             last->result_sequence ? last->result_sequence : KEY_NONE);
    const char *parts[2] = {key, last->attempt_id};
    return lg_cursor_make(parts, 2);
}

static sp_store_rc fill_list(const sp_db_rows *rows, sp_attempt_log_list *out, sp_error *err)
{
    if (rows->nrows && !(out->items = calloc(rows->nrows, sizeof *out->items)))
        return lg_encode_fail(err, true, "attempt logs");
    for (size_t i = 0; i < rows->nrows; i++)
        if (!fill_item(rows, i, &out->items[out->n++]))
            return lg_encode_fail(err, true, "attempt logs");
    if (out->n && !(out->next_cursor = cursor_after(&out->items[out->n - 1])))
        return lg_encode_fail(err, true, "cursor");
    return SP_STORE_OK;
}

/* The table is there (a store no writer of this version opened has none). */
static bool table_present(sp_store *s)
{
    bool sqlite = strcmp(s->driver->name, "sqlite") == 0;
    sp_db_rows rows = {0};
    sp_error ignored = {0};
    sp_store_rc rc =
        sqlite ? LG_R(s, &rows, &ignored,
                      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
                      DB_TEXT("attempt_logs"))
               : LG_R(s, &rows, &ignored,
                      "SELECT CASE WHEN to_regclass(?) IS NULL THEN 0 ELSE 1 END",
                      DB_TEXT("attempt_logs"));
    bool present = rc != SP_STORE_OK || (rows.nrows == 1 && lg_u64(&rows, 0, 0) > 0);
    sp_db_rows_free(&rows);
    sp_error_clear(&ignored);
    return present;
}

sp_store_rc sp_store_list_attempt_logs(sp_store *s, const sp_run_key *key,
                                       const sp_attempt_log_query *q, sp_attempt_log_list *out,
                                       sp_error *err)
{
    memset(out, 0, sizeof *out);
    sp_store_rc rc = check_query(key, q, err);
    const char *after[2] = {NULL, NULL};
    uint64_t after_key = 0;
    json_t *owner = NULL;
    if (!rc && q->cursor)
        rc = parse_cursor(q->cursor, after, &after_key, &owner, err);
    if (rc)
        return rc;
    size_t limit = q->limit == 0 || q->limit > SP_STORE_LOG_PAGE_MAX ? SP_STORE_LOG_PAGE_MAX
                                                                     : q->limit;
    list_sql sql;
    build_list(&sql, key, q, q->cursor ? after : NULL, after_key, limit);
    sp_db_rows rows = {0};
    rc = lg_read(s, sql.text, sql.params, sql.n, &rows, err);
    if (rc && !table_present(s)) {
        sp_error_clear(err);
        rc = SP_STORE_OK; /* an older store: no step has logs in it */
    } else if (rc == SP_STORE_OK) {
        rc = fill_list(&rows, out, err);
    }
    sp_db_rows_free(&rows);
    json_decref(owner);
    if (rc)
        sp_attempt_log_list_free(out);
    return rc;
}
