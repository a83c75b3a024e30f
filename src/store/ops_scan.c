/*
 * ops_scan.c - work selection: scan_ready, scan_due, scan_running, and the
 * opaque JSON-array cursors of store.md §4.
 *
 * scan_ready: non-quarantined runs with a pending event (next_sequence >
 * applied_sequence + 1, spelled as the dialect's run_ready), ascending
 * (tenant, run); cursor [tenant, run].
 *
 * scan_due, in three phases read in one transaction at one "now":
 *   lease    running attempts with leaseUntilMs <= now, by (lease, attempt ID)
 *   deadline running attempts with 0 < deadlineMs <= now whose lease has not
 *            run out (those are lease items already), by (deadline, attempt ID)
 *   outbox   pending invocations with notBeforeMs <= now in non-quarantined
 *            runs, by (notBeforeMs, invocation ID)
 * ties broken by (tenant, run); cursor [phase, ms, id, tenant, run] with ms
 * a decimal string. A full page carries a cursor; the last page has none.
 *
 * Work selection does not serialize workers: scan_ready and scan_due run in
 * a scan transaction (lg_begin_scan) and end their SELECTs with the
 * dialect's skip_locked - PostgreSQL `FOR UPDATE SKIP LOCKED` - so a row
 * that another worker's transaction holds right now (a run being committed,
 * an invocation being claimed, a lease being renewed) is left out of this
 * page instead of waited for; the next poll sees it again. With SQLite
 * (one writer, no row locks) the string is empty and nothing is skipped.
 *
 * scan_expiring: the lease and deadline phases of scan_due alone, for the
 * sweep (it stopped at the first outbox item, after reading and locking a
 * page of them); cursor as scan_due's.
 *
 * scan_outbox: the outbox phase of scan_due alone (optionally of one run),
 * one statement, for dispatch to read no more than its free slots; cursor
 * as scan_due's.
 *
 * scan_running: running attempts without a holder whose owner recorded this
 * host, by attempt ID then key; cursor [attemptId, tenant, run]. (A held
 * attempt's job outlives its worker by design: its owner's death means
 * nothing.)
 *
 * scan_held: running attempts with a holder, with their action and package,
 * by attempt ID then key; cursor [attemptId, tenant, run].
 *
 * What it must never do: write, skip (other than a row locked right now)
 * or repeat an item between pages, or
 * accept a cursor that is not exactly the documented array (conflict/
 * cursor.invalid).
 */
#include <stdlib.h>

#include "json/decimal.h"
#include "json/json.h"
#include "store/logic.h"

#define CURSOR_MAX 2048

size_t lg_clamp_limit(size_t limit)
{
    return limit == 0 || limit > SP_STORE_PAGE_MAX ? SP_STORE_PAGE_MAX : limit;
}

sp_store_rc lg_cursor_parse(const char *cursor, size_t n, const char **out, json_t **owner,
                            sp_error *err)
{
    size_t len = strnlen(cursor, CURSOR_MAX + 1);
    sp_error perr = {0};
    json_t *v = len <= CURSOR_MAX ? sp_json_parse(cursor, len, &perr) : NULL;
    sp_error_clear(&perr);
    bool ok = json_is_array(v) && json_array_size(v) == n;
    for (size_t i = 0; ok && i < n; i++)
        ok = (out[i] = json_string_value(json_array_get(v, i))) != NULL;
    if (!ok) {
        json_decref(v);
        return lg_fail(err, SP_STORE_CONFLICT, "cursor.invalid", "not a cursor of this scan");
    }
    *owner = v;
    return SP_STORE_OK;
}

char *lg_cursor_make(const char *const *parts, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_string(parts[i]))) {
            json_decref(a);
            a = NULL;
        }
    sp_error eerr = {0};
    char *text = a ? sp_json_encode_alloc(a, NULL, &eerr) : NULL;
    sp_error_clear(&eerr);
    json_decref(a);
    return text;
}

/* ---- scan_ready ---- */

/* %s: the dialect's run_ready term */
#define READY_SELECT "SELECT tenant, run_id FROM runs WHERE quarantine_code IS NULL AND %s "

static sp_store_rc ready_query(sp_store *s, const char *const *after, size_t limit,
                               sp_db_rows *rows, sp_error *err)
{
    char sql[256];
    snprintf(sql, sizeof sql, READY_SELECT "%sORDER BY tenant, run_id LIMIT ?",
             s->driver->dialect.run_ready, after ? "AND (tenant, run_id) > (?, ?) " : "");
    if (after)
        return LG_S(s, rows, err, sql, DB_TEXT(after[0]), DB_TEXT(after[1]), DB_INT(limit + 1));
    return LG_S(s, rows, err, sql, DB_INT(limit + 1));
}

static sp_store_rc ready_fill(const sp_db_rows *rows, size_t limit, sp_key_page *out, sp_error *err)
{
    size_t n = rows->nrows > limit ? limit : rows->nrows;
    if (!(out->keys = calloc(n ? n : 1, sizeof *out->keys)))
        return lg_encode_fail(err, true, "key page");
    for (out->n = 0; out->n < n; out->n++) {
        lg_copy(out->keys[out->n].tenant, sizeof out->keys[0].tenant, rows, out->n, 0);
        lg_copy(out->keys[out->n].run_id, sizeof out->keys[0].run_id, rows, out->n, 1);
    }
    if (rows->nrows > limit) {
        const char *last[] = {out->keys[n - 1].tenant, out->keys[n - 1].run_id};
        if (!(out->next_cursor = lg_cursor_make(last, 2)))
            return lg_encode_fail(err, true, "cursor");
    }
    return SP_STORE_OK;
}

sp_store_rc sp_store_scan_ready(sp_store *s, const char *cursor, size_t limit, sp_key_page *out,
                                sp_error *err)
{
    memset(out, 0, sizeof *out);
    limit = lg_clamp_limit(limit);
    const char *after[2];
    json_t *owner = NULL;
    sp_store_rc rc = cursor ? lg_cursor_parse(cursor, 2, after, &owner, err) : SP_STORE_OK;
    sp_db_rows rows = {0};
    if (!rc)
        rc = ready_query(s, cursor ? after : NULL, limit, &rows, err);
    if (!rc)
        rc = ready_fill(&rows, limit, out, err);
    if (rc)
        sp_key_page_free(out);
    sp_db_rows_free(&rows);
    json_decref(owner);
    return rc;
}

/* ---- due items ---- */

#define DUE_ATTEMPT_COLS                                                                           \
    "attempt_id, tenant, run_id, invocation_id, owner, fence, owner_host, owner_pid,"              \
    " owner_started, holder IS NOT NULL, deadline_ms FROM attempts WHERE status = 'running' "
enum { DU_AT, DU_ID, DU_TENANT, DU_RUN, DU_INV, DU_OWNER, DU_FENCE, DU_HOST, DU_PID, DU_STARTED,
       DU_HELD, DU_DEADLINE };
/* outbox rows: at, invocation ID, tenant, run, action ID, package digest */
enum { DU_ACTION = 4, DU_PACKAGE = 5 };

static void fill_due(const sp_db_rows *r, size_t i, sp_due_kind kind, sp_due_item *item)
{
    memset(item, 0, sizeof *item);
    item->kind = kind;
    item->at_ms = lg_u64(r, i, DU_AT);
    lg_copy(item->key.tenant, sizeof item->key.tenant, r, i, DU_TENANT);
    lg_copy(item->key.run_id, sizeof item->key.run_id, r, i, DU_RUN);
    lg_copy(item->id, sizeof item->id, r, i, DU_ID);
    if (kind == SP_DUE_OUTBOX) {
        lg_copy(item->action_id, sizeof item->action_id, r, i, DU_ACTION);
        lg_copy(item->package_digest, sizeof item->package_digest, r, i, DU_PACKAGE);
        return;
    }
    item->held = sp_db_cell(r, i, DU_HELD)->i != 0;
    item->deadline_ms = lg_u64(r, i, DU_DEADLINE);
    item->attempt.key = item->key;
    lg_copy(item->attempt.invocation_id, sizeof item->attempt.invocation_id, r, i, DU_INV);
    lg_copy(item->attempt.attempt_id, sizeof item->attempt.attempt_id, r, i, DU_ID);
    lg_copy(item->attempt.owner, sizeof item->attempt.owner, r, i, DU_OWNER);
    item->attempt.fence = lg_u64(r, i, DU_FENCE);
    lg_copy(item->host.host_id, sizeof item->host.host_id, r, i, DU_HOST);
    item->host.pid = sp_db_cell(r, i, DU_PID)->i;
    item->host.pid_started = lg_u64(r, i, DU_STARTED);
}

/* Append rows[0..n) to the page. */
static sp_store_rc page_add(sp_due_page *p, size_t *cap, const sp_db_rows *r, size_t n,
                            sp_due_kind kind, sp_error *err)
{
    if (p->n + n > *cap) {
        size_t grow = p->n + n;
        sp_due_item *items = realloc(p->items, grow * sizeof *items);
        if (!items)
            return lg_encode_fail(err, true, "due page");
        p->items = items;
        *cap = grow;
    }
    for (size_t i = 0; i < n; i++)
        fill_due(r, i, kind, &p->items[p->n++]);
    return SP_STORE_OK;
}

typedef struct due_phase {
    const char *name;
    sp_due_kind kind;
    const char *first; /* params: now, [now,] limit */
    const char *after; /* params: now, [now,] ms, id, tenant, run, limit */
} due_phase;

#define LEASE_SELECT "SELECT lease_until_ms, " DUE_ATTEMPT_COLS "AND lease_until_ms <= ? "
#define LEASE_ORDER " ORDER BY lease_until_ms, attempt_id, tenant, run_id LIMIT ?"
#define DEADLINE_SELECT                                                                            \
    "SELECT deadline_ms, " DUE_ATTEMPT_COLS                                                        \
    "AND deadline_ms <> 0 AND deadline_ms <= ? AND lease_until_ms > ? "
#define DEADLINE_ORDER " ORDER BY deadline_ms, attempt_id, tenant, run_id LIMIT ?"
#define OUTBOX_SELECT                                                                              \
    "SELECT i.not_before_ms, i.invocation_id, i.tenant, i.run_id, i.action_id, r.package_digest"   \
    " FROM invocations i"                                                                          \
    " JOIN runs r ON r.tenant = i.tenant AND r.run_id = i.run_id"                                  \
    " WHERE i.status = 'pending' AND i.not_before_ms <= ? AND r.quarantine_code IS NULL "
#define OUTBOX_ORDER " ORDER BY i.not_before_ms, i.invocation_id, i.tenant, i.run_id LIMIT ?"

static const due_phase PHASES[] = {
    {"lease", SP_DUE_LEASE, LEASE_SELECT LEASE_ORDER,
     LEASE_SELECT "AND (lease_until_ms, attempt_id, tenant, run_id) > (?, ?, ?, ?)" LEASE_ORDER},
    {"deadline", SP_DUE_DEADLINE, DEADLINE_SELECT DEADLINE_ORDER,
     DEADLINE_SELECT "AND (deadline_ms, attempt_id, tenant, run_id) > (?, ?, ?, ?)" DEADLINE_ORDER},
    {"outbox", SP_DUE_OUTBOX, OUTBOX_SELECT OUTBOX_ORDER,
     OUTBOX_SELECT
     "AND (i.not_before_ms, i.invocation_id, i.tenant, i.run_id) > (?, ?, ?, ?)" OUTBOX_ORDER},
};
#define NPHASES (sizeof PHASES / sizeof PHASES[0])
#define OUTBOX_PHASE (NPHASES - 1) /* the outbox phase is the last */

typedef struct due_cursor {
    size_t phase;
    uint64_t ms;
    const char *id, *tenant, *run;
} due_cursor;

/* The cursor's four parameters (none without one); the new count. */
static size_t after_params(sp_db_val *params, size_t n, const due_cursor *after)
{
    if (after) {
        params[n++] = DB_INT(after->ms);
        params[n++] = DB_TEXT(after->id);
        params[n++] = DB_TEXT(after->tenant);
        params[n++] = DB_TEXT(after->run);
    }
    return n;
}

static sp_store_rc phase_query(sp_store *s, size_t p, const due_cursor *after, uint64_t now,
                               size_t limit, sp_db_rows *rows, sp_error *err)
{
    sp_db_val params[8];
    size_t n = 0;
    params[n++] = DB_INT(now);
    if (PHASES[p].kind == SP_DUE_DEADLINE)
        params[n++] = DB_INT(now);
    n = after_params(params, n, after);
    params[n++] = DB_INT(limit);
    char sql[1024];
    snprintf(sql, sizeof sql, "%s%s", after ? PHASES[p].after : PHASES[p].first,
             s->driver->dialect.skip_locked);
    return lg_query(s, sql, params, n, rows, NULL, err);
}

static sp_store_rc due_cursor_parse(const char *text, due_cursor *c, json_t **owner, sp_error *err)
{
    const char *parts[5];
    sp_store_rc rc = lg_cursor_parse(text, 5, parts, owner, err);
    if (rc)
        return rc;
    for (c->phase = 0; c->phase < NPHASES; c->phase++)
        if (strcmp(parts[0], PHASES[c->phase].name) == 0)
            break;
    c->id = parts[2], c->tenant = parts[3], c->run = parts[4];
    if (c->phase == NPHASES || !sp_decimal_parse(parts[1], strlen(parts[1]), &c->ms))
        return lg_fail(err, SP_STORE_CONFLICT, "cursor.invalid", "not a scan_due cursor");
    return SP_STORE_OK;
}

static sp_store_rc due_cursor_make(const sp_due_item *last, sp_due_page *out, sp_error *err)
{
    char ms[SP_DECIMAL_MAX_LEN + 1];
    sp_decimal_format(last->at_ms, ms);
    const char *parts[] = {PHASES[last->kind].name, ms, last->id, last->key.tenant,
                           last->key.run_id};
    out->next_cursor = lg_cursor_make(parts, 5);
    return out->next_cursor ? SP_STORE_OK : lg_encode_fail(err, true, "cursor");
}

/* Fill the page phase by phase; stop with a cursor as soon as an item is
 * left over. */
static sp_store_rc due_fill(sp_store *s, const due_cursor *after, size_t limit, size_t end,
                            sp_due_page *out, sp_error *err)
{
    uint64_t now = lg_now(s);
    size_t cap = 0;
    sp_store_rc rc = SP_STORE_OK;
    for (size_t p = after ? after->phase : 0; p < end && rc == SP_STORE_OK; p++) {
        size_t room = limit - out->n;
        sp_db_rows rows;
        rc =
            phase_query(s, p, after && p == after->phase ? after : NULL, now, room + 1, &rows, err);
        if (rc == SP_STORE_OK)
            rc = page_add(out, &cap, &rows, rows.nrows > room ? room : rows.nrows, PHASES[p].kind,
                          err);
        bool more = rows.nrows > room;
        sp_db_rows_free(&rows);
        if (rc == SP_STORE_OK && more)
            return due_cursor_make(&out->items[out->n - 1], out, err);
    }
    return rc;
}

/* scan_due's phases before `end`, in one scan transaction. */
static sp_store_rc scan_phases(sp_store *s, const char *cursor, size_t limit, size_t end,
                               sp_due_page *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    due_cursor after;
    json_t *owner = NULL;
    sp_store_rc rc = cursor ? due_cursor_parse(cursor, &after, &owner, err) : SP_STORE_OK;
    if (!rc && cursor && after.phase >= end)
        rc = lg_fail(err, SP_STORE_CONFLICT, "cursor.invalid", "not a cursor of this scan");
    if (!rc)
        rc = lg_begin_scan(s, err);
    if (!rc) {
        rc = due_fill(s, cursor ? &after : NULL, lg_clamp_limit(limit), end, out, err);
        lg_rollback(s);
    }
    if (rc)
        sp_due_page_free(out);
    json_decref(owner);
    return rc;
}

sp_store_rc sp_store_scan_due(sp_store *s, const char *cursor, size_t limit, sp_due_page *out,
                              sp_error *err)
{
    return scan_phases(s, cursor, limit, NPHASES, out, err);
}

sp_store_rc sp_store_scan_expiring(sp_store *s, const char *cursor, size_t limit,
                                   sp_due_page *out, sp_error *err)
{
    return scan_phases(s, cursor, limit, OUTBOX_PHASE, out, err);
}

/* ---- scan_outbox: the outbox phase alone, for dispatch ---- */

/* dialect.unindexed keeps SQLite's planner on the due index (the run's few
 * pending rows among the due ones) instead of the primary key, which would
 * walk every invocation the run ever had and sort them. */
#define OUTBOX_RUN " AND %si.tenant = ? AND %si.run_id = ?"
#define OUTBOX_AFTER " AND (i.not_before_ms, i.invocation_id, i.tenant, i.run_id) > (?, ?, ?, ?)"

static sp_store_rc outbox_query(sp_store *s, const sp_run_key *only, const due_cursor *after,
                                size_t limit, sp_db_rows *rows, sp_error *err)
{
    sp_db_val params[8];
    size_t n = 0;
    params[n++] = DB_INT(lg_now(s));
    if (only) {
        params[n++] = DB_TEXT(only->tenant);
        params[n++] = DB_TEXT(only->run_id);
    }
    n = after_params(params, n, after);
    params[n++] = DB_INT(limit);
    const char *plus = s->driver->dialect.unindexed;
    char run[128] = "";
    if (only)
        snprintf(run, sizeof run, OUTBOX_RUN, plus, plus);
    char sql[1024];
    snprintf(sql, sizeof sql, "%s%s%s%s", OUTBOX_SELECT, run, after ? OUTBOX_AFTER : "",
             OUTBOX_ORDER);
    return lg_scan(s, sql, params, n, rows, err);
}

sp_store_rc sp_store_scan_outbox(sp_store *s, const sp_run_key *only, const char *cursor,
                                 size_t limit, sp_due_page *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    due_cursor after;
    json_t *owner = NULL;
    sp_store_rc rc = cursor ? due_cursor_parse(cursor, &after, &owner, err) : SP_STORE_OK;
    if (!rc && cursor && PHASES[after.phase].kind != SP_DUE_OUTBOX)
        rc = lg_fail(err, SP_STORE_CONFLICT, "cursor.invalid", "not a scan_outbox cursor");
    limit = lg_clamp_limit(limit);
    sp_db_rows rows = {0};
    size_t cap = 0;
    if (!rc)
        rc = outbox_query(s, only, cursor ? &after : NULL, limit + 1, &rows, err);
    if (!rc)
        rc = page_add(out, &cap, &rows, rows.nrows > limit ? limit : rows.nrows, SP_DUE_OUTBOX,
                      err);
    if (!rc && rows.nrows > limit)
        rc = due_cursor_make(&out->items[out->n - 1], out, err);
    if (rc)
        sp_due_page_free(out);
    sp_db_rows_free(&rows);
    json_decref(owner);
    return rc;
}

/* ---- scan_running ---- */

#define RUNNING_SELECT                                                                             \
    "SELECT lease_until_ms, " DUE_ATTEMPT_COLS "AND holder IS NULL AND owner_host = ? "
#define RUNNING_ORDER " ORDER BY attempt_id, tenant, run_id LIMIT ?"

static sp_store_rc running_query(sp_store *s, const char *host, const char *const *after,
                                 size_t limit, sp_db_rows *rows, sp_error *err)
{
    if (after)
        return LG_R(s, rows, err,
                    RUNNING_SELECT "AND (attempt_id, tenant, run_id) > (?, ?, ?)" RUNNING_ORDER,
                    DB_TEXT(host), DB_TEXT(after[0]), DB_TEXT(after[1]), DB_TEXT(after[2]),
                    DB_INT(limit + 1));
    return LG_R(s, rows, err, RUNNING_SELECT RUNNING_ORDER, DB_TEXT(host), DB_INT(limit + 1));
}

sp_store_rc sp_store_scan_running(sp_store *s, const char *host_id, const char *cursor,
                                  size_t limit, sp_due_page *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    limit = lg_clamp_limit(limit);
    const char *after[3];
    json_t *owner = NULL;
    size_t cap = 0;
    sp_store_rc rc = cursor ? lg_cursor_parse(cursor, 3, after, &owner, err) : SP_STORE_OK;
    if (!rc && (!host_id || !*host_id)) { /* an unknown host never matches */
        json_decref(owner);
        return SP_STORE_OK;
    }
    sp_db_rows rows = {0};
    if (!rc)
        rc = running_query(s, host_id, cursor ? after : NULL, limit, &rows, err);
    if (!rc)
        rc = page_add(out, &cap, &rows, rows.nrows > limit ? limit : rows.nrows, SP_DUE_LEASE, err);
    if (!rc && rows.nrows > limit) {
        const sp_due_item *last = &out->items[out->n - 1];
        const char *parts[] = {last->id, last->key.tenant, last->key.run_id};
        if (!(out->next_cursor = lg_cursor_make(parts, 3)))
            rc = lg_encode_fail(err, true, "cursor");
    }
    if (rc)
        sp_due_page_free(out);
    sp_db_rows_free(&rows);
    json_decref(owner);
    return rc;
}

/* ---- scan_held ---- */

#define HELD_SELECT                                                                                \
    "SELECT a.attempt_id, a.tenant, a.run_id, a.invocation_id, a.owner, a.fence, a.holder,"        \
    " a.attempt_number, a.lease_until_ms, a.deadline_ms, i.node_id, i.action_id,"                  \
    " r.package_digest FROM attempts a"                                                            \
    " JOIN invocations i ON i.tenant = a.tenant AND i.run_id = a.run_id"                           \
    " AND i.invocation_id = a.invocation_id"                                                       \
    " JOIN runs r ON r.tenant = a.tenant AND r.run_id = a.run_id"                                  \
    " WHERE a.status = 'running' AND a.holder IS NOT NULL "
#define HELD_ORDER " ORDER BY a.attempt_id, a.tenant, a.run_id LIMIT ?"
enum { HE_ID, HE_TENANT, HE_RUN, HE_INV, HE_OWNER, HE_FENCE, HE_HOLDER, HE_NUMBER, HE_LEASE,
       HE_DEADLINE, HE_NODE, HE_ACTION, HE_PACKAGE };

static sp_store_rc held_query(sp_store *s, const char *const *after, size_t limit,
                              sp_db_rows *rows, sp_error *err)
{
    if (after)
        return LG_R(s, rows, err,
                    HELD_SELECT "AND (a.attempt_id, a.tenant, a.run_id) > (?, ?, ?)" HELD_ORDER,
                    DB_TEXT(after[0]), DB_TEXT(after[1]), DB_TEXT(after[2]), DB_INT(limit + 1));
    return LG_R(s, rows, err, HELD_SELECT HELD_ORDER, DB_INT(limit + 1));
}

static bool fill_held(const sp_db_rows *r, size_t i, sp_held_item *item)
{
    memset(item, 0, sizeof *item);
    sp_attempt_ref *a = &item->attempt;
    lg_copy(a->key.tenant, sizeof a->key.tenant, r, i, HE_TENANT);
    lg_copy(a->key.run_id, sizeof a->key.run_id, r, i, HE_RUN);
    lg_copy(a->invocation_id, sizeof a->invocation_id, r, i, HE_INV);
    lg_copy(a->attempt_id, sizeof a->attempt_id, r, i, HE_ID);
    lg_copy(a->owner, sizeof a->owner, r, i, HE_OWNER);
    a->fence = lg_u64(r, i, HE_FENCE);
    item->attempt_number = (uint32_t)lg_u64(r, i, HE_NUMBER);
    item->lease_until_ms = lg_u64(r, i, HE_LEASE);
    item->deadline_ms = lg_u64(r, i, HE_DEADLINE);
    lg_copy(item->node_id, sizeof item->node_id, r, i, HE_NODE);
    lg_copy(item->action_id, sizeof item->action_id, r, i, HE_ACTION);
    lg_copy(item->package_digest, sizeof item->package_digest, r, i, HE_PACKAGE);
    item->holder = strdup(lg_text(r, i, HE_HOLDER));
    return item->holder != NULL;
}

sp_store_rc sp_store_scan_held(sp_store *s, const char *cursor, size_t limit, sp_held_page *out,
                               sp_error *err)
{
    memset(out, 0, sizeof *out);
    limit = lg_clamp_limit(limit);
    const char *after[3];
    json_t *owner = NULL;
    sp_store_rc rc = cursor ? lg_cursor_parse(cursor, 3, after, &owner, err) : SP_STORE_OK;
    sp_db_rows rows = {0};
    if (!rc)
        rc = held_query(s, cursor ? after : NULL, limit, &rows, err);
    size_t n = rows.nrows > limit ? limit : rows.nrows;
    if (!rc && !(out->items = calloc(n ? n : 1, sizeof *out->items)))
        rc = lg_encode_fail(err, true, "held page");
    for (; !rc && out->n < n; out->n++)
        if (!fill_held(&rows, out->n, &out->items[out->n]))
            rc = lg_encode_fail(err, true, "held page");
    if (!rc && rows.nrows > limit) {
        const sp_attempt_ref *last = &out->items[n - 1].attempt;
        const char *parts[] = {last->attempt_id, last->key.tenant, last->key.run_id};
        if (!(out->next_cursor = lg_cursor_make(parts, 3)))
            rc = lg_encode_fail(err, true, "cursor");
    }
    if (rc)
        sp_held_page_free(out);
    sp_db_rows_free(&rows);
    json_decref(owner);
    return rc;
}
