/*
 * pool.c - the fixed attempt pool (step-path.md §4): at most
 * max_concurrent_activities threads, made the first time they are needed and
 * kept until the engine is freed, take claimed attempts from one queue and
 * run them (engine_attempt_execute). No thread is made per step.
 *
 * Must never run an attempt twice, drop a queued one (a pool that cannot
 * grow still has at least one thread, or submit fails and the claim's lease
 * decides), or call the store while holding engine->mu.
 */
#include <stdlib.h>

#include "engine/internal.h"

static void *pool_main(void *arg)
{
    sp_engine *e = arg;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        while (!e->queue && !e->pool_quit) {
            e->pool_idle++;
            pthread_cond_wait(&e->pool_cv, &e->mu);
            e->pool_idle--;
        }
        if (!e->queue)
            break; /* quitting, nothing left */
        inflight *a = e->queue;
        e->queue = a->queue_next;
        if (!e->queue)
            e->queue_tail = &e->queue;
        engine_attempt_move(e, a, ATTEMPT_RUNNING);
        pthread_mutex_unlock(&e->mu);
        engine_attempt_execute(a);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

/* Under e->mu: one more thread when none is idle and the pool may grow. */
static int grow(sp_engine *e, sp_error *err)
{
    uint32_t queued = 0;
    for (const inflight *a = e->queue; a; a = a->queue_next)
        queued++;
    if (e->pool_idle > queued || e->npool >= e->cfg.max_concurrent_activities)
        return 0;
    if (!e->pool) {
        e->pool = calloc(e->cfg.max_concurrent_activities, sizeof *e->pool);
        if (!e->pool)
            return sp_oom(err);
    }
    if (pthread_create(&e->pool[e->npool], NULL, pool_main, e) != 0)
        return e->npool ? 0 : sp_fail(err, "runtime", "cannot start an attempt thread");
    e->npool++;
    return 0;
}

int engine_pool_submit(sp_engine *e, inflight *a, sp_error *err)
{
    pthread_mutex_lock(&e->mu);
    if (!e->queue_tail)
        e->queue_tail = &e->queue;
    int rc = grow(e, err);
    if (rc == 0) {
        engine_attempt_move(e, a, ATTEMPT_QUEUED);
        a->queue_next = NULL;
        *e->queue_tail = a;
        e->queue_tail = &a->queue_next;
        pthread_cond_signal(&e->pool_cv);
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

void engine_pool_stop(sp_engine *e)
{
    pthread_mutex_lock(&e->mu);
    e->pool_quit = true;
    pthread_cond_broadcast(&e->pool_cv);
    pthread_mutex_unlock(&e->mu);
    for (uint32_t i = 0; i < e->npool; i++)
        pthread_join(e->pool[i], NULL);
    free(e->pool);
    e->pool = NULL;
    e->npool = 0;
}
