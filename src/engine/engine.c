/*
 * engine.c - creating and freeing an engine, worker identity and request
 * IDs (engine.md §1-2). The loop itself is tick.c's.
 *
 * Must never free an engine while one of its pool threads still runs an
 * attempt.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/random.h"
#include "engine/internal.h"
#include "engine/ledger.h"

static atomic_ulong WORKER_COUNTER;

sp_engine_config sp_engine_defaults(void)
{
    return (sp_engine_config){
        .tenant = "default",
        .lease_ms = 10000,
        .heartbeat_ms = 3000,
        .poll_ms = 200,
        .listen_poll_ms = 5000,
        .shutdown_grace_ms = 10000,
        .max_concurrent_activities = 16,
        .turns_per_run = 32,
        .limits = SP_KERNEL_DEFAULT_LIMITS,
        .store_retry_ms = 60000,
        .max_wait_ms = 300000,
    };
}

bool engine_abandoning(sp_engine *e)
{
    pthread_mutex_lock(&e->mu);
    bool yes = e->abandon;
    pthread_mutex_unlock(&e->mu);
    return yes;
}

bool engine_interrupted(const sp_engine *e)
{
    return e->cfg.interrupt && atomic_load_explicit(e->cfg.interrupt, memory_order_relaxed);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t engine_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}


bool engine_same_key(const sp_run_key *a, const sp_run_key *b)
{
    return strcmp(a->tenant, b->tenant) == 0 && strcmp(a->run_id, b->run_id) == 0;
}

const char *engine_run_name(const sp_run_key *key, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", key->tenant, key->run_id);
    return out;
}

static int init_identity(sp_engine *e, sp_error *err)
{
    const sp_engine_config *c = &e->cfg;
    const char *tenant = c->tenant ? c->tenant : "default";
    if (strlen(tenant) > SP_STORE_ID_MAX)
        return sp_fail(err, "usage.invalid-value", "tenant longer than %d bytes", SP_STORE_ID_MAX);
    snprintf(e->tenant, sizeof e->tenant, "%s", tenant);
    sp_random_hex(e->nonce, 16);
    if (c->worker_id) {
        if (strlen(c->worker_id) > SP_STORE_ID_MAX)
            return sp_fail(err, "usage.invalid-value", "worker ID longer than %d bytes",
                           SP_STORE_ID_MAX);
        snprintf(e->worker_id, sizeof e->worker_id, "%s", c->worker_id);
    } else {
        snprintf(e->worker_id, sizeof e->worker_id, "worker-%x-%llx-%lu", (unsigned)getpid(),
                 (unsigned long long)mono_ns(), atomic_fetch_add(&WORKER_COUNTER, 1) + 1);
    }
    if (c->base_dir)
        snprintf(e->base_dir, sizeof e->base_dir, "%s", c->base_dir);
    else if (!getcwd(e->base_dir, sizeof e->base_dir))
        return sp_fail(err, "runtime", "cannot read the current directory");
    return 0;
}

sp_engine *sp_engine_new(sp_store *store, const sp_engine_config *config, sp_error *err)
{
    sp_engine *e = calloc(1, sizeof *e);
    if (!e) {
        sp_oom(err);
        return NULL;
    }
    e->store = store;
    e->inline_own_slots = ledger_one_writer(store);
    e->cfg = config ? *config : sp_engine_defaults();
    e->lock_fd = -1;
    sp_engine_config d = sp_engine_defaults();
    if (!e->cfg.lease_ms) e->cfg.lease_ms = d.lease_ms;
    if (!e->cfg.heartbeat_ms) e->cfg.heartbeat_ms = d.heartbeat_ms;
    if (!e->cfg.poll_ms) e->cfg.poll_ms = d.poll_ms;
    if (!e->cfg.listen_poll_ms) e->cfg.listen_poll_ms = d.listen_poll_ms;
    if (e->cfg.listen_poll_ms < e->cfg.poll_ms) e->cfg.listen_poll_ms = e->cfg.poll_ms;
    if (!e->cfg.max_concurrent_activities)
        e->cfg.max_concurrent_activities = d.max_concurrent_activities;
    if (e->cfg.max_concurrent_activities > SP_ENGINE_CONCURRENCY_MAX)
        e->cfg.max_concurrent_activities = SP_ENGINE_CONCURRENCY_MAX;
    if (!e->cfg.turns_per_run) e->cfg.turns_per_run = d.turns_per_run;
    if (!e->cfg.limits.microsteps) e->cfg.limits = d.limits;
    if (!e->cfg.store_retry_ms) e->cfg.store_retry_ms = d.store_retry_ms;
    if (!e->cfg.max_wait_ms) e->cfg.max_wait_ms = d.max_wait_ms;
    atomic_init(&e->counter, 0);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->settled_cv, NULL);
    pthread_cond_init(&e->pool_cv, NULL);
    e->queue_tail = &e->queue;
    pthread_mutex_init(&e->packages_mu, NULL);
    engine_fault_init(e);
    if (init_identity(e, err) || engine_takeover_init(e, err)) {
        sp_engine_free(e);
        return NULL;
    }
    return e;
}

void sp_engine_free(sp_engine *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    e->shutting_down = true;
    e->abandon = true;
    for (inflight *a = e->inflight; a; a = a->next)
        sp_stop_fire(&a->stop);
    pthread_mutex_unlock(&e->mu);
    engine_attempts_reap(e, true);
    engine_pool_stop(e);
    ledger_listen_stop(e); /* serve() stops it; an early exit may not have */
    engine_tick_free(e);
    engine_observe_free(e);
    engine_runstate_free(e);
    engine_held_reap(e, true);
    free(e->memos);
    engine_takeover_close(e);
    engine_packages_free(e);
    pthread_mutex_destroy(&e->packages_mu);
    pthread_cond_destroy(&e->settled_cv);
    pthread_cond_destroy(&e->pool_cv);
    pthread_mutex_destroy(&e->mu);
    engine_fault_destroy(e);
    free(e);
}

int sp_engine_key(const sp_engine *e, const char *run_id, sp_run_key *key, sp_error *err)
{
    if (engine_check_token("a run ID", run_id ? run_id : "", SP_STORE_ID_MAX, err))
        return -1;
    memset(key, 0, sizeof *key);
    snprintf(key->tenant, sizeof key->tenant, "%s", e->tenant);
    snprintf(key->run_id, sizeof key->run_id, "%s", run_id);
    return 0;
}

sp_store *sp_engine_store(sp_engine *e) { return e->store; }

const char *sp_engine_worker_id(const sp_engine *e) { return e->worker_id; }


int engine_get_run(sp_engine *e, const sp_run_key *key, sp_run_view *view, sp_error *err)
{
    bool found = false;
    if (ledger_get_run(e, key, view, &found, err) != SP_STORE_OK)
        return -1;
    return found ? 0 : sp_fail(err, "run.not-found", "no run %s", key->run_id);
}

int engine_each_due(sp_engine *e, engine_due_scan which, const sp_run_key *only,
                    sp_tick_stats *stats, engine_due_visitor visit, void *ctx, sp_error *err)
{
    char *cursor = NULL;
    int r = 0;
    do {
        sp_due_page page;
        sp_store_rc rc = which == ENGINE_DUE_EXPIRING
                             ? ledger_scan_expiring(e, cursor, ENGINE_PAGE, &page, err)
                             : ledger_scan_outbox(e, only, cursor, ENGINE_PAGE, &page, err);
        free(cursor);
        cursor = NULL;
        if (rc != SP_STORE_OK) {
            if (stats)
                stats->store_unavailable = sp_store_rc_transient(rc);
            return -1;
        }
        for (size_t i = 0; i < page.n && r == 0; i++)
            r = visit(e, &page.items[i], ctx, err);
        if (r == 0 && page.next_cursor)
            cursor = strdup(page.next_cursor);
        sp_due_page_free(&page);
    } while (cursor);
    return r;
}

void sp_engine_set_serve_progress(sp_engine *e,
                                  void (*fn)(void *, uint32_t, uint64_t, uint64_t, uint64_t),
                                  void *ctx)
{
    e->cfg.serve_progress = fn;
    e->cfg.serve_progress_ctx = ctx;
}
