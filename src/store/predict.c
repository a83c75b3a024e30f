/*
 * predict.c - a settle's first reads predicted from this handle's own last
 * commit on its run, and checked by the database inside the request's own
 * transaction (docs/step-path.md "The store side", docs/postgres.md §3e).
 *
 * What it is for: every mutation begins by locking its run row and reading
 * its receipt and attempt (request.c). On PostgreSQL that read is a round
 * trip before the request can decide anything, so a sequential step cost
 * two: the read, then the writes with the COMMIT. But a handle whose batch
 * claimed a run's step (a settle whose decision claims the next one, or a
 * claim_attempt) knows what that step's settle will read: the run row as
 * the batch left it, no receipt, and the attempt row it inserted. Here such
 * a prediction is kept per run (PREDICT_RUNS of them, once the batch
 * committed; up to PREDICT_ATTEMPTS running attempts each, carried from
 * request to request) and handed to the settle of that attempt in place of
 * the reads (the batch does not lock that run ahead: lock_ahead.c), with a
 * "now" predicted from the database's clock as the last lock read saw it.
 * Two guard statements go ahead of the request's writes, in the same
 * pipeline:
 *   1. lock the run row only if every column equals the prediction;
 *   2. require the attempt row to equal it, its lease to hold by the
 *      database's clock, no receipt for the request, and the predicted
 *      "now" to be at most PREDICT_WINDOW_MS behind that clock, not ahead.
 * A guard that does not hold raises an error (a cast of a text that names
 * SP_DB_PREDICTION_MISSED): PostgreSQL then skips every later statement of
 * the transaction, none of the batch's writes applies, and the batch
 * answers unavailable/store.prediction-missed when the COMMIT (or its next
 * exchange) answers. The engine makes the batch again at once; the
 * prediction is gone, so that request reads.
 *
 * What it must never do: let a request write on a prediction without both
 * guards ahead of its writes in its transaction; use one in a request that
 * a savepoint keeps apart from the rest of its batch (a guard's failure
 * aborts the whole transaction: the batch fails and is made again); keep
 * a prediction whose batch did not commit; predict a "now" ahead of the
 * database's clock; answer a failure computed from predicted rows (it is a
 * miss: the request is made again on what the database holds); keep any
 * once a batch sent with its answer unread (batch.c: sp_store_batch_send,
 * whose predictions the next batch uses at once) answers that it did not
 * commit; or be
 * touched by a thread that does not hold the handle's batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "store/logic.h"

#define PREDICT_RUNS 64
#define PREDICT_ATTEMPTS 4
/* How far behind the database's clock a predicted "now" may be. */
#define PREDICT_WINDOW_MS 1000

typedef struct predicted_attempt {
    char attempt_id[SP_ID_LEN + 16], invocation_id[SP_ID_LEN + 1];
    char owner[SP_STORE_ID_MAX + 1];
    uint64_t number, fence, lease_until_ms, deadline_ms;
} predicted_attempt;

typedef enum prediction_state {
    PREDICTION_NONE,
    PREDICTION_STAGED, /* made by a request of the open batch */
    PREDICTION_VALID,  /* its batch committed */
} prediction_state;

typedef struct prediction {
    prediction_state state;
    sp_run_key key;
    sp_db_rows run; /* LG_RUN_COLS and the lock's "now", as the commit left them */
    size_t nattempts;
    predicted_attempt attempts[PREDICT_ATTEMPTS]; /* the attempts it inserted */
} prediction;

struct lg_predictions {
    /* The guards' SQL, made once: its address finds the prepared statement
     * at once (sp_db_cache's recent keys). */
    char guard_run_sql[1024], guard_known_sql[1536];
    prediction runs[PREDICT_RUNS];
    prediction lifted; /* the open request's run's, taken out as it began */
    predicted_attempt claimed[PREDICT_ATTEMPTS]; /* by the open request */
    size_t nclaimed;
    int64_t clock_offset_ms; /* the database's clock minus ours, as last seen */
    bool clock_known;
};

/* The database checks a prediction: a pipelining driver with its own clock
 * (not an injected one, which no statement can check against). */
static bool checkable(const sp_store *s)
{
    return s->driver->write && s->driver->now_sql && s->driver->now_sql(s->conn);
}

static void guards_make(sp_store *s, struct lg_predictions *t);

static struct lg_predictions *table(sp_store *s)
{
    if (s->predictions || !checkable(s))
        return s->predictions;
    s->predictions = calloc(1, sizeof *s->predictions); /* out of memory: none */
    if (s->predictions)
        guards_make(s, s->predictions);
    return s->predictions;
}

/* The predictions, to the thread that holds the handle's batch (they are
 * made, used and forgotten by batches only: no other thread's request
 * touches them, and the guards catch what such a request changed). */
static struct lg_predictions *mine(sp_store *s)
{
    return lg_in_batch(s) ? s->predictions : NULL;
}

static prediction *slot(struct lg_predictions *t, const sp_run_key *key)
{
    uint32_t h = 2166136261u;
    for (const char *p = key->tenant; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    for (const char *p = key->run_id; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return &t->runs[h % PREDICT_RUNS];
}

static void drop(prediction *p)
{
    sp_db_rows_free(&p->run);
    p->state = PREDICTION_NONE;
    p->nattempts = 0;
}

void lg_predict_begin(sp_store *s, const sp_run_key *key)
{
    struct lg_predictions *t = lg_in_batch(s) ? table(s) : NULL;
    if (!t)
        return;
    t->nclaimed = 0;
    drop(&t->lifted);
    prediction *p = slot(t, key);
    if (p->state == PREDICTION_NONE || !lg_same_run(&p->key, key))
        return;
    t->lifted = *p; /* its rows move with it */
    *p = (prediction){0};
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void lg_predict_clock(sp_store *s, uint64_t db_now_ms)
{
    struct lg_predictions *t = mine(s);
    if (!t)
        return;
    /* sampled before its answer travelled here: never ahead of the clock */
    t->clock_offset_ms = (int64_t)db_now_ms - wall_ms();
    t->clock_known = true;
}

/* ---- what a request's commit leaves ---- */

void lg_predict_claimed(lg_mut *m, const sp_attempt_ref *ref, uint64_t number,
                        uint64_t lease_until_ms, uint64_t deadline_ms)
{
    struct lg_predictions *t = mine(m->s);
    if (!t || t->nclaimed == PREDICT_ATTEMPTS)
        return;
    predicted_attempt *a = &t->claimed[t->nclaimed++];
    snprintf(a->attempt_id, sizeof a->attempt_id, "%s", ref->attempt_id);
    snprintf(a->invocation_id, sizeof a->invocation_id, "%s", ref->invocation_id);
    snprintf(a->owner, sizeof a->owner, "%s", ref->owner);
    a->number = number, a->fence = ref->fence;
    a->lease_until_ms = lease_until_ms, a->deadline_ms = deadline_ms;
}

static void set_int(sp_db_rows *r, size_t col, uint64_t v)
{
    sp_db_val *c = &r->cells[col];
    free((char *)c->s);
    *c = DB_INT(v);
}

static bool set_text(sp_db_rows *r, size_t col, const char *v)
{
    sp_db_val *c = &r->cells[col];
    char *copy = v ? strdup(v) : NULL;
    if (v && !copy)
        return false;
    free((char *)c->s);
    *c = copy ? (sp_db_val){SP_DB_TEXT, 0, copy, strlen(copy)} : DB_NULL;
    return true;
}

/* The run row after the request's delta (lg_run_flush writes the same). */
static bool run_after(const lg_mut *m, sp_db_rows *out)
{
    const lg_run_delta *d = &m->delta;
    if (m->run.nrows != 1 || m->run.ncols != RUN_NCOLS + 1 ||
        !sp_db_rows_copy(&m->run, 0, 0, m->run.ncols, out))
        return false;
    static const int counters[] = {RUN_NEXT, RUN_LAST_ACCEPTED, RUN_REVISION, RUN_APPLIED,
                                   RUN_FENCE};
    for (size_t i = 0; i < sizeof counters / sizeof counters[0]; i++)
        set_int(out, (size_t)counters[i], lg_run_u64(m, counters[i]));
    if (d->inbox || d->turn || d->fence)
        set_int(out, RUN_UPDATED, m->now);
    if (d->turn && (!set_text(out, RUN_STATUS, d->status) ||
                    !set_text(out, RUN_SNAPSHOT_DIGEST, d->snapshot_digest))) {
        sp_db_rows_free(out);
        return false;
    }
    return true;
}

/* The attempts the run's next requests may settle: those of the lifted
 * prediction but `settled`, then the ones this request claimed. */
static size_t running_after(const struct lg_predictions *t, const sp_attempt_ref *settled,
                            predicted_attempt *out)
{
    size_t n = 0;
    for (size_t i = 0; i < t->lifted.nattempts && n < PREDICT_ATTEMPTS; i++)
        if (!settled || strcmp(t->lifted.attempts[i].attempt_id, settled->attempt_id) != 0)
            out[n++] = t->lifted.attempts[i];
    for (size_t i = 0; i < t->nclaimed && n < PREDICT_ATTEMPTS; i++)
        out[n++] = t->claimed[i];
    return n;
}

void lg_predict_stage(lg_mut *m, const sp_attempt_ref *settled)
{
    struct lg_predictions *t = mine(m->s);
    predicted_attempt running[PREDICT_ATTEMPTS];
    size_t n = t ? running_after(t, settled, running) : 0;
    if (!n)
        return;
    prediction *p = slot(t, m->key);
    drop(p); /* another run's, or none */
    if (!run_after(m, &p->run))
        return; /* out of memory: the next request reads */
    p->key = *m->key;
    memcpy(p->attempts, running, n * sizeof running[0]);
    p->nattempts = n;
    p->state = PREDICTION_STAGED;
}

void lg_predict_batch_end(sp_store *s, bool committed)
{
    struct lg_predictions *t = s->predictions; /* the batch's thread: it ends the batch */
    if (s->batch.mispredicted)
        atomic_fetch_add_explicit(&s->missed, 1, memory_order_relaxed);
    for (size_t i = 0; t && i < PREDICT_RUNS; i++) {
        prediction *p = &t->runs[i];
        if (p->state == PREDICTION_STAGED && committed)
            p->state = PREDICTION_VALID;
        else if (p->state == PREDICTION_STAGED)
            drop(p);
    }
}

void lg_predict_forget(sp_store *s)
{
    struct lg_predictions *t = s->predictions; /* the batch's thread: it takes the answers */
    for (size_t i = 0; t && i < PREDICT_RUNS; i++)
        drop(&t->runs[i]);
}

void lg_predict_close(sp_store *s)
{
    struct lg_predictions *t = s->predictions;
    lg_predict_forget(s);
    if (t)
        drop(&t->lifted);
    free(t);
    s->predictions = NULL;
}

/* ---- a request on a prediction ---- */

/* The request may run on a prediction: a request of a batch without a
 * savepoint of its own (the first, or any on PostgreSQL), whose failure
 * fails the batch anyway. One that a savepoint keeps apart (the batch
 * answers each request alone after a failure) reads. */
static bool guardable(const sp_store *s)
{
    return lg_in_batch(s) && s->batch.request_open && !s->batch.answered_each &&
           (s->batch.request == SP_DB_REQUEST_BARE || s->batch.request == SP_DB_REQUEST_UNGUARDED);
}

static const predicted_attempt *find_attempt(const prediction *p, const sp_attempt_ref *ref)
{
    for (size_t i = 0; i < p->nattempts; i++) {
        const predicted_attempt *a = &p->attempts[i];
        if (strcmp(a->attempt_id, ref->attempt_id) == 0 &&
            strcmp(a->invocation_id, ref->invocation_id) == 0 &&
            strcmp(a->owner, ref->owner) == 0 && a->fence == ref->fence)
            return a;
    }
    return NULL;
}

/* The known read's row (request.c: receipt digest and value, then the
 * attempt's LG_ATTEMPT_COLS) as the prediction has it: no receipt. */
static bool known_of(const predicted_attempt *a, sp_db_rows *out)
{
    sp_db_val cells[9] = {DB_NULL,
                          DB_NULL,
                          DB_TEXT(a->invocation_id),
                          DB_INT(a->number),
                          DB_TEXT(a->owner),
                          DB_INT(a->fence),
                          DB_INT(a->lease_until_ms),
                          DB_INT(a->deadline_ms),
                          DB_TEXT("running")};
    sp_db_rows borrowed = {1, 9, cells};
    return sp_db_rows_copy(&borrowed, 0, 0, 9, out);
}

_Static_assert(RUN_NCOLS == 16, "the run guard compares LG_RUN_COLS with 16 parameters");

/* 1: the run row, locked only if every column is as predicted. 2: once it
 * is locked (a new snapshot), the attempt as predicted, its lease held by
 * the database's clock, no receipt, the predicted "now" not ahead of that
 * clock and at most PREDICT_WINDOW_MS behind it. Either raises an error
 * naming SP_DB_PREDICTION_MISSED when it does not hold; clock_timestamp()
 * keeps that branch volatile (never folded into a constant, never raised
 * while planning). The run's guard is a scalar subquery under COALESCE,
 * whose second argument is evaluated only when the first is NULL (no row
 * locked), not a count(*): an aggregate's node is set up again in every
 * execution (with the chained commit mark's, ~4 % of a sequential step's
 * backend CPU under ExecInitAgg, its own share ~1-2 %). */
static void guards_make(sp_store *s, struct lg_predictions *t)
{
    snprintf(t->guard_run_sql, sizeof t->guard_run_sql,
             "SELECT COALESCE((SELECT 0 FROM runs WHERE tenant = ? AND run_id = ? AND ("
             LG_RUN_COLS ") IS NOT DISTINCT FROM"
             " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)%s),"
             " ('" SP_DB_PREDICTION_MISSED ": the run moved at ' || clock_timestamp())::int)",
             s->driver->dialect.for_update);
    snprintf(t->guard_known_sql, sizeof t->guard_known_sql,
             "SELECT CASE WHEN (a.invocation_id, a.attempt_number, a.owner, a.fence,"
             " a.lease_until_ms, a.deadline_ms, a.status) IS NOT DISTINCT FROM"
             " (?, ?, ?, ?, ?, ?, 'running') AND a.lease_until_ms > k.clock"
             " AND ? <= k.clock AND ? > k.clock - %d AND NOT EXISTS (SELECT 1 FROM receipts rc"
             " WHERE rc.tenant = ? AND rc.run_id = ? AND rc.request_id = ?) THEN 0"
             " ELSE ('" SP_DB_PREDICTION_MISSED ": the attempt, receipt or clock moved at '"
             " || clock_timestamp())::int END FROM (SELECT %s AS clock) k"
             " LEFT JOIN attempts a ON a.tenant = ? AND a.run_id = ? AND a.attempt_id = ?",
             PREDICT_WINDOW_MS, s->driver->now_sql(s->conn));
}

static sp_store_rc guard_run(lg_mut *m, const struct lg_predictions *t, sp_error *err)
{
    sp_db_val p[2 + RUN_NCOLS];
    p[0] = DB_TEXT(m->key->tenant), p[1] = DB_TEXT(m->key->run_id);
    memcpy(&p[2], m->run.cells, RUN_NCOLS * sizeof p[0]);
    return lg_write(m->s, t->guard_run_sql, p, 2 + RUN_NCOLS, -1, err);
}

static sp_store_rc guard_known(lg_mut *m, const struct lg_predictions *t,
                               const predicted_attempt *a, const char *request_id, sp_error *err)
{
    const char *tenant = m->key->tenant, *run = m->key->run_id;
    sp_db_val p[] = {DB_TEXT(a->invocation_id), DB_INT(a->number),
                     DB_TEXT(a->owner),         DB_INT(a->fence),
                     DB_INT(a->lease_until_ms), DB_INT(a->deadline_ms),
                     DB_INT(m->now),            DB_INT(m->now),
                     DB_TEXT(tenant),           DB_TEXT(run),
                     DB_TEXT(request_id),       DB_TEXT(tenant),
                     DB_TEXT(run),              DB_TEXT(a->attempt_id)};
    return lg_write(m->s, t->guard_known_sql, p, sizeof p / sizeof p[0], -1, err);
}

bool lg_predict_ready(sp_store *s, const sp_attempt_ref *attempt)
{
    struct lg_predictions *t = mine(s);
    prediction *p = t && t->clock_known ? slot(t, &attempt->key) : NULL;
    return p && p->state == PREDICTION_VALID && lg_same_run(&p->key, &attempt->key) &&
           find_attempt(p, attempt) != NULL;
}

/* Fill the request's first reads from `p` and `a` with `now`. */
static bool fill(lg_mut *m, const prediction *p, const predicted_attempt *a, int64_t now)
{
    m->run = (sp_db_rows){0}, m->known = (sp_db_rows){0};
    if (!sp_db_rows_copy(&p->run, 0, 0, p->run.ncols, &m->run) || !known_of(a, &m->known)) {
        sp_db_rows_free(&m->run);
        return false;
    }
    set_int(&m->run, RUN_NCOLS, (uint64_t)now); /* the lock's "now" column */
    m->now = (uint64_t)now;
    return true;
}

sp_store_rc lg_predict_reads(lg_mut *m, const sp_attempt_ref *attempt, const char *request_id,
                             bool *used, sp_error *err)
{
    *used = false;
    struct lg_predictions *t = mine(m->s);
    const prediction *p = t ? &t->lifted : NULL; /* lg_predict_begin: this run's */
    if (!p || p->state != PREDICTION_VALID)
        return SP_STORE_OK;
    const predicted_attempt *a = attempt ? find_attempt(p, attempt) : NULL;
    int64_t now = t->clock_known ? wall_ms() + t->clock_offset_ms : -1;
    /* never behind the run's last "now" (the lock's order): else it reads */
    const sp_db_val *last = sp_db_cell(&p->run, 0, RUN_UPDATED);
    if (!a || now <= 0 || (last->type == SP_DB_INT && now < last->i) || !guardable(m->s) ||
        !fill(m, p, a, now))
        return SP_STORE_OK;
    *used = true;
    atomic_fetch_add_explicit(&m->s->predicted, 1, memory_order_relaxed);
    sp_store_rc rc = guard_run(m, t, err);
    return rc ? rc : guard_known(m, t, a, request_id, err);
}

sp_store_rc lg_predict_missed(sp_store *s, sp_error *err)
{
    s->batch.request_missed = s->batch.mispredicted = true; /* counted when the batch ends */
    char reason[SP_MESSAGE_MAX];
    snprintf(reason, sizeof reason, "%s", err->message);
    sp_error_clear(err);
    return lg_fail(err, SP_STORE_UNAVAILABLE, SP_STORE_PREDICTION_MISSED,
                   "the request ran on its predicted first reads and did not apply (%s); it is"
                   " to be made again on what the database holds",
                   reason);
}
