/*
 * store.c - opening and closing a store, and the small shared pieces of the
 * public interface: failure-kind names, the system clock, the location and
 * the *_free functions of the result types.
 *
 * What it is for: sp_store_open() dispatches on the location - a file path
 * goes to the SQLite adapter; postgres:// and postgresql:// URLs go to the
 * PostgreSQL adapter (src/store/postgres/).
 *
 * What it must never do: hold state of its own, or put a credential into an
 * error message or the reported location.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/db.h"
#include "store/logic.h"
#include "store/postgres/postgres.h"
#include "store/sqlite/sqlite.h"

static const char *const RC_NAMES[] = {
    [SP_STORE_OK] = "ok",
    [SP_STORE_CONFLICT] = "conflict",
    [SP_STORE_STALE] = "stale",
    [SP_STORE_UNAVAILABLE] = "unavailable",
    [SP_STORE_UNKNOWN_COMMIT] = "unknown-commit",
    [SP_STORE_QUOTA] = "quota",
    [SP_STORE_INCOMPATIBLE] = "incompatible",
    [SP_STORE_CORRUPT] = "corrupt",
    [SP_STORE_UNAUTHORIZED] = "unauthorized",
    [SP_STORE_NOT_FOUND] = "not-found",
};

const char *sp_store_rc_name(sp_store_rc rc)
{
    if ((unsigned)rc < sizeof RC_NAMES / sizeof RC_NAMES[0])
        return RC_NAMES[rc];
    return "unknown";
}

bool sp_store_rc_transient(sp_store_rc rc)
{
    return rc == SP_STORE_UNAVAILABLE || rc == SP_STORE_UNKNOWN_COMMIT;
}

bool sp_store_prediction_missed(const sp_error *err)
{
    return err && strcmp(err->code, SP_STORE_PREDICTION_MISSED) == 0;
}

const char *sp_expire_reason_name(sp_expire_reason r)
{
    switch (r) {
    case SP_EXPIRE_LEASE:
        return "lease";
    case SP_EXPIRE_DEADLINE:
        return "deadline";
    case SP_EXPIRE_PROBE_DEAD:
        return "probe-dead";
    case SP_EXPIRE_ABANDONED:
        return "abandoned";
    case SP_EXPIRE_OWNER_DEAD:
        return "owner-dead";
    }
    return NULL;
}

static uint64_t system_now_ms(void *ctx)
{
    (void)ctx;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

sp_clock sp_clock_system(void) { return (sp_clock){system_now_ms, NULL}; }

static bool is_postgres(const char *location)
{
    return strncmp(location, "postgres://", 11) == 0 || strncmp(location, "postgresql://", 13) == 0;
}

sp_store *sp_store_open_with(const char *location, const sp_store_open_opts *opts, sp_error *err)
{
    if (!location || !*location) {
        sp_fail(err, "store.io", "no store location given");
        return NULL;
    }
    if (is_postgres(location))
        return sp_pg_open(location, opts, err);
    return sp_sqlite_open(location, opts, err);
}

sp_store *sp_store_open(const char *location, const sp_clock *clock, sp_error *err)
{
    sp_store_open_opts opts = {.mode = SP_STORE_OPEN_OR_CREATE, .clock = clock};
    return sp_store_open_with(location, &opts, err);
}

void sp_store_close(sp_store *s)
{
    if (!s)
        return;
    s->driver->close(s->conn); /* reads what was sent: its ticket is flushed */
    lg_predict_close(s);
    for (size_t i = 0; i < s->nsent; i++)
        sp_strlist_clear(&s->sent_after[i]);
    free(s->location);
    free(s);
}

const char *sp_store_location(const sp_store *s) { return s->location; }

/* ---- result types ---- */

void sp_event_free(sp_event *e)
{
    if (!e)
        return;
    free(e->event_id);
    free(e->kind);
    free(e->body);
    free(e->diagnostics);
    memset(e, 0, sizeof *e);
}

void sp_turn_free(sp_turn *t)
{
    if (!t)
        return;
    free(t->snapshot);
    sp_event_free(&t->event);
    memset(t, 0, sizeof *t);
}

void sp_claim_free(sp_claim *c)
{
    if (!c)
        return;
    free(c->node_id);
    free(c->action_id);
    free(c->effect_key);
    free(c->input);
    c->node_id = c->action_id = c->effect_key = c->input = NULL;
    c->input_len = 0;
}

void sp_settle_res_free(sp_settle_res *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nclaims; i++)
        sp_claim_free(&r->claims[i]);
    free(r->claims);
    r->claims = NULL;
    r->nclaims = 0;
}

void sp_key_page_free(sp_key_page *p)
{
    if (!p)
        return;
    free(p->keys);
    free(p->next_cursor);
    memset(p, 0, sizeof *p);
}

void sp_held_page_free(sp_held_page *p)
{
    for (size_t i = 0; p->items && i < p->n; i++)
        free(p->items[i].holder);
    free(p->items);
    free(p->next_cursor);
    memset(p, 0, sizeof *p);
}

void sp_due_page_free(sp_due_page *p)
{
    if (!p)
        return;
    free(p->items);
    free(p->next_cursor);
    memset(p, 0, sizeof *p);
}

void sp_run_view_free(sp_run_view *v)
{
    if (!v)
        return;
    free(v->start_key);
    free(v->artifact_digest);
    free(v->snapshot);
    free(v->quarantine_code);
    free(v->quarantine_details);
    memset(v, 0, sizeof *v);
}

void sp_run_list_free(sp_run_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->runs[i].start_key);
    free(l->runs);
    free(l->next_cursor);
    memset(l, 0, sizeof *l);
}

void sp_event_list_free(sp_event_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++)
        sp_event_free(&l->events[i]);
    free(l->events);
    memset(l, 0, sizeof *l);
}

void sp_invocation_list_free(sp_invocation_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        sp_invocation_view *v = &l->items[i];
        free(v->node_id);
        free(v->action_id);
        free(v->effect_key);
        free(v->owner);
        free(v->holder);
        free(v->input);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

void sp_receipt_free(sp_receipt *r)
{
    if (!r)
        return;
    free(r->request_id);
    free(r->operation);
    free(r->value);
    memset(r, 0, sizeof *r);
}

sp_store_listener *sp_store_listen(sp_store *s, sp_wake_fn fn, void *ctx, sp_error *err)
{
    return s->driver->listen ? s->driver->listen(s->conn, fn, ctx, err) : NULL;
}

void sp_store_listener_stop(sp_store_listener *l)
{
    if (l)
        l->stop(l);
}
