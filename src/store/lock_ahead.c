/*
 * lock_ahead.c - the first reads of a batch's next requests, made ahead in
 * one exchange (sp_store_batch_lock_ahead, store.h; docs/step-path.md).
 *
 * What it is for: every mutation begins by locking its run row and reading
 * its receipt and attempt (request.c, lg_first_reads). On PostgreSQL that
 * is a round trip of its own, and a batch that settles many attempts would
 * make one per request. Here the batch sends the two reads of each of its
 * next requests in ONE exchange (the driver's query_all: each read runs
 * once the one before it has finished, so each known read sees what its
 * lock waited for), keeps the rows, and hands each request the rows made
 * for it (lg_ahead_take). The runs stay locked by the batch's transaction,
 * so nothing but the batch itself can change what was read: the first
 * request on a run takes its rows when they were made for it, and any
 * other request on that run (or any later one) reads again.
 *
 * What it must never do: hand a request rows read before a request of the
 * batch locked (and may have changed) that run; keep rows once the
 * transaction that holds their locks was rolled back; lock outside the
 * batch's transaction or inside a request's savepoint (a rollback to it
 * would release the locks); or leave the batch usable after a failed
 * exchange (its transaction is aborted).
 */
#include <stdlib.h>

#include "store/logic.h"

struct lg_ahead {
    sp_run_key key;
    char request_id[SP_STORE_REQUEST_ID_MAX + 1];
    char attempt_id[SP_ID_LEN + 16]; /* as sp_attempt_ref's */
    bool offered; /* a request on this run came: its rows are gone */
    sp_db_rows run, known;
};

static int by_run(const void *a, const void *b)
{
    const sp_run_key *x = &(*(const sp_lock_ahead *const *)a)->attempt->key;
    const sp_run_key *y = &(*(const sp_lock_ahead *const *)b)->attempt->key;
    int c = strcmp(x->tenant, y->tenant);
    return c ? c : strcmp(x->run_id, y->run_id);
}

void lg_ahead_clear(sp_store *s)
{
    for (size_t i = 0; i < s->batch.nahead; i++) {
        sp_db_rows_free(&s->batch.ahead[i].run);
        sp_db_rows_free(&s->batch.ahead[i].known);
    }
    free(s->batch.ahead);
    s->batch.ahead = NULL;
    s->batch.nahead = 0;
}

bool lg_ahead_take(sp_store *s, const sp_run_key *key, const char *request_id,
                   const sp_attempt_ref *attempt, sp_db_rows *run, sp_db_rows *known)
{
    if (!lg_in_batch(s))
        return false;
    for (size_t i = 0; i < s->batch.nahead; i++) {
        struct lg_ahead *a = &s->batch.ahead[i];
        if (a->offered || !lg_same_run(&a->key, key))
            continue;
        a->offered = true;
        bool mine = attempt && strcmp(a->request_id, request_id) == 0 &&
                    strcmp(a->attempt_id, attempt->attempt_id) == 0;
        if (mine) {
            *run = a->run, *known = a->known;
            a->run = a->known = (sp_db_rows){0};
        }
        sp_db_rows_free(&a->run);
        sp_db_rows_free(&a->known);
        return mine;
    }
    return false;
}

/* The requests worth locking ahead, at most one per run, in run order (the
 * order every worker locks them in); *n_out of them in `picked`. A settle
 * that will run on predicted reads is not one (predict.c: its guard locks
 * its run, in its own request). */
static void pick(sp_store *s, const sp_lock_ahead *reqs, size_t n, const sp_lock_ahead **picked,
                 size_t *n_out)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < SP_LOCK_AHEAD_MAX; i++)
        if (reqs[i].attempt && reqs[i].request_id &&
            strlen(reqs[i].request_id) <= SP_STORE_REQUEST_ID_MAX &&
            !lg_predict_ready(s, reqs[i].attempt))
            picked[k++] = &reqs[i];
    qsort(picked, k, sizeof *picked, by_run);
    size_t unique = 0;
    for (size_t i = 0; i < k; i++)
        if (!unique || !lg_same_run(&picked[unique - 1]->attempt->key, &picked[i]->attempt->key))
            picked[unique++] = picked[i];
    *n_out = unique;
}

/* Keep read pair i's rows for its request. */
static void keep(struct lg_ahead *a, const sp_lock_ahead *req, sp_db_rows *outs)
{
    a->key = req->attempt->key;
    snprintf(a->request_id, sizeof a->request_id, "%s", req->request_id);
    snprintf(a->attempt_id, sizeof a->attempt_id, "%s", req->attempt->attempt_id);
    a->run = outs[0], a->known = outs[1];
}

/* Send the reads of the `n` requests in one exchange and keep their rows. */
static sp_store_rc read_ahead(sp_store *s, const sp_lock_ahead **picked, size_t n,
                              sp_error *err)
{
    lg_first_reads *f = calloc(n, sizeof *f);
    sp_db_read *reads = calloc(2 * n, sizeof *reads);
    sp_db_rows *outs = calloc(2 * n, sizeof *outs);
    struct lg_ahead *ahead = calloc(n, sizeof *ahead);
    sp_store_rc rc = SP_STORE_OK;
    bool read = false; /* out of memory: each request reads on its own */
    if (f && reads && outs && ahead) {
        for (size_t i = 0; i < n; i++) {
            lg_first_reads_make(s, &picked[i]->attempt->key, picked[i]->request_id,
                                picked[i]->attempt, false, &f[i]);
            reads[2 * i] = f[i].reads[0], reads[2 * i + 1] = f[i].reads[1];
        }
        rc = lg_query_all(s, reads, 2 * n, outs, err);
        read = rc == SP_STORE_OK;
    }
    if (read) {
        for (size_t i = 0; i < n; i++)
            keep(&ahead[i], picked[i], &outs[2 * i]);
        s->batch.ahead = ahead, s->batch.nahead = n;
        ahead = NULL;
    }
    free(ahead);
    free(outs);
    free(reads);
    free(f);
    return rc;
}

sp_store_rc sp_store_batch_lock_ahead(sp_store *s, const sp_lock_ahead *reqs, size_t n,
                                      sp_error *err)
{
    if (!lg_in_batch(s))
        return lg_fail(err, SP_STORE_CONFLICT, "store.batch-closed", "no batch is open");
    if (n < 2 || !s->driver->query_all || s->batch.answered_each || s->batch.request_open)
        return SP_STORE_OK;
    sp_store_rc rc = lg_batch_usable(s, err);
    if (rc)
        return rc;
    lg_ahead_clear(s); /* what is left of an earlier call: read again */
    const sp_lock_ahead *picked[SP_LOCK_AHEAD_MAX];
    size_t k;
    pick(s, reqs, n, picked, &k);
    if (k < 2)
        return SP_STORE_OK;
    rc = lg_batch_open(s, err);
    if (rc == SP_STORE_OK)
        rc = read_ahead(s, picked, k, err);
    if (rc && !s->batch.failed)
        rc = lg_batch_fail(s, rc, err);
    return rc;
}
