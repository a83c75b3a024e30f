/*
 * held.c - held async steps (engine.md §9, and component steps, runners.md):
 * once an async start returned a handle, no worker holds the attempt, but
 * every worker's tick looks after it: a watch per held attempt (outside
 * the activity slots, own limit, stopped on shutdown), a probe at most
 * every probeEveryMs, and at the deadline (or lease) the stop hook before
 * the attempt is expired. The first result from any channel wins (the store
 * fences the rest, which become late evidence). A runner's probe may
 * answer the step's result itself (a component runner's does), which
 * finishes the attempt like a watch result. What a held attempt allows is
 * its runner's to say (engine_action_can, runner->probe / watch / stop).
 *
 * Must never block the tick (hooks run in their own threads), expire a held
 * attempt on anything but an explicit `dead`, its deadline or its lease, or
 * start a second watch of one attempt in this engine, or name an action
 * kind.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/failpoint.h"
#include "engine/internal.h"
#include "engine/ledger.h"
#include "json/json.h"

#define WATCH_MAX 16
#define PROBE_MAX 4
#define WATCH_RETRY_MIN_MS 5000

static bool same_attempt(const sp_attempt_ref *a, const sp_attempt_ref *b)
{
    return engine_same_key(&a->key, &b->key) && strcmp(a->attempt_id, b->attempt_id) == 0;
}

/* ---- memos: what this engine did for each held attempt ---- */

static held_memo *memo(sp_engine *e, const sp_attempt_ref *ref)
{
    for (size_t i = 0; i < e->nmemos; i++)
        if (same_attempt(&e->memos[i].attempt, ref))
            return &e->memos[i];
    if (e->nmemos == e->memo_cap) {
        size_t cap = e->memo_cap ? 2 * e->memo_cap : 16;
        held_memo *m = realloc(e->memos, cap * sizeof *m);
        if (!m)
            return NULL;
        e->memos = m;
        e->memo_cap = cap;
    }
    held_memo *m = &e->memos[e->nmemos++];
    memset(m, 0, sizeof *m);
    m->attempt = *ref;
    return m;
}

/* Forget attempts that were not held in the last full scan. */
static void memos_sweep(sp_engine *e)
{
    size_t kept = 0;
    for (size_t i = 0; i < e->nmemos; i++)
        if (e->memos[i].seen) {
            e->memos[i].seen = false;
            e->memos[kept++] = e->memos[i];
        }
    e->nmemos = kept;
}

/* ---- jobs ---- */

static bool job_running(sp_engine *e, const sp_attempt_ref *ref, held_job_kind kind)
{
    for (held_job *j = e->held_jobs; j; j = j->next)
        if (!j->done && j->kind == kind && same_attempt(&j->attempt, ref))
            return true;
    return false;
}

static sp_runner_ctx hook_ctx(held_job *j)
{
    return (sp_runner_ctx){.tenant = j->attempt.key.tenant,
                           .run_id = j->attempt.key.run_id,
                           .node_id = j->node_id,
                           .action_id = j->action_id,
                           .invocation_id = j->attempt.invocation_id,
                           .effect_key = j->attempt.invocation_id,
                           .attempt = j->attempt_number,
                           .base_dir = j->engine->base_dir,
                           .stop = &j->stop,
                           .natives = j->engine->cfg.natives,
                           .artifacts = &j->arts.api};
}

static void finish_with(held_job *j, const sp_activity_output *out)
{
    sp_engine *e = j->engine;
    sp_claim claim;
    memset(&claim, 0, sizeof claim);
    claim.attempt = j->attempt;
    claim.attempt_number = j->attempt_number;
    sp_error err = {0};
    if (out->logs) /* before the result: whoever sees the result finds them */
        ledger_put_log(e, &j->attempt, out->logs);
    size_t len;
    char *body = engine_result_body(&claim, out, &len, &err);
    if (body) {
        ledger_finish_or_keep(e, &j->attempt, body, len, "watch-result-late", &err);
        free(body);
    }
    sp_error_clear(&err);
}

static void expire_now(held_job *j, sp_expire_reason reason);

/* A probe whose finished result is left to the periodic probe (probe()):
 * here it reads as unknown, so no caller decides on it. */
static sp_holder_state probe_state(const engine_action *ea, const sp_runner_ctx *ctx,
                                   const json_t *handle)
{
    sp_activity_output out;
    bool finished = false;
    sp_holder_state s = ea->runner->probe(ctx, &ea->prepared, handle, &out, &finished);
    if (finished) {
        sp_activity_output_free(&out);
        return SP_HOLDER_UNKNOWN;
    }
    return s;
}

static void run_watch(held_job *j, sp_runner_ctx *ctx)
{
    const engine_action *ea = j->ea;
    sp_activity_output out;
    if (ea->runner->watch(ctx, &ea->prepared, j->handle, &out)) {
        if (!sp_stop_fired(&j->stop))
            finish_with(j, &out);
        sp_activity_output_free(&out);
        return;
    }
    /* Lost sight. A job that is gone without a result is over: with a watch,
     * only the watch may conclude that (a probe alone could race the watch
     * reading the result of a job that just ended). */
    if (!sp_stop_fired(&j->stop) && engine_action_can(ea, SP_HOOK_PROBE, j->handle) &&
        probe_state(ea, ctx, j->handle) == SP_HOLDER_DEAD) {
        expire_now(j, SP_EXPIRE_PROBE_DEAD);
        return;
    }
    pthread_mutex_lock(&j->engine->mu); /* try again later */
    held_memo *m = memo(j->engine, &j->attempt);
    if (m)
        m->watch_after_ms = sp_mono_ms() + (ea->terms.probe_every_ms > WATCH_RETRY_MIN_MS
                                                ? ea->terms.probe_every_ms
                                                : WATCH_RETRY_MIN_MS);
    pthread_mutex_unlock(&j->engine->mu);
}

static void expire_now(held_job *j, sp_expire_reason reason)
{
    sp_tick_stats stats;
    memset(&stats, 0, sizeof stats);
    sp_error err = {0};
    engine_expire(j->engine, &j->attempt, reason, &stats, &err);
    sp_error_clear(&err);
}

/* A stop job for the attempt is running: it kills the job and expires the
 * attempt with the deadline's reason; a probe must not race it. */
static bool stopping(sp_engine *e, const sp_attempt_ref *ref)
{
    pthread_mutex_lock(&e->mu);
    bool yes = job_running(e, ref, HELD_STOP);
    pthread_mutex_unlock(&e->mu);
    return yes;
}

/* A probe saying dead ends the attempt, unless a watch can still deliver the
 * result of a job that just ended (then the watch decides: see run_watch),
 * or a stop job is ending it with the deadline's reason. */
static void probe(held_job *j, sp_runner_ctx *ctx)
{
    const engine_action *ea = j->ea;
    sp_activity_output out;
    bool finished = false;
    sp_holder_state state = ea->runner->probe(ctx, &ea->prepared, j->handle, &out, &finished);
    if (finished) { /* a component runner's probe returned the step's result */
        if (!sp_stop_fired(&j->stop) && !stopping(j->engine, &j->attempt))
            finish_with(j, &out);
        sp_activity_output_free(&out);
        return;
    }
    if (state != SP_HOLDER_DEAD || stopping(j->engine, &j->attempt))
        return;
    if (!engine_action_can(ea, SP_HOOK_WATCH, j->handle)) {
        expire_now(j, SP_EXPIRE_PROBE_DEAD);
        return;
    }
    pthread_mutex_lock(&j->engine->mu); /* let a watch run now, even if it lost sight */
    held_memo *m = memo(j->engine, &j->attempt);
    if (m)
        m->watch_after_ms = 0;
    pthread_mutex_unlock(&j->engine->mu);
}

static void *job_main(void *arg)
{
    held_job *j = arg;
    sp_runner_ctx ctx = hook_ctx(j);
    if (j->kind == HELD_WATCH) {
        run_watch(j, &ctx);
    } else if (j->kind == HELD_PROBE) {
        probe(j, &ctx);
    } else if (j->kind == HELD_STOP) {
        j->ea->runner->stop(&ctx, &j->ea->prepared, j->handle);
        expire_now(j, j->reason);
    }
    pthread_mutex_lock(&j->engine->mu);
    j->done = true;
    j->engine->settled++;
    pthread_cond_broadcast(&j->engine->settled_cv);
    pthread_mutex_unlock(&j->engine->mu);
    return NULL;
}

static void free_job(held_job *j)
{
    json_decref(j->handle);
    sp_stop_destroy(&j->stop);
    free(j);
}

/* Start a job (called with e->mu held). */
static void start_job(sp_engine *e, held_job_kind kind, const sp_attempt_ref *ref,
                      uint32_t attempt_number, const char *node_id, const engine_action *ea,
                      const json_t *handle, sp_expire_reason reason)
{
    held_job *j = calloc(1, sizeof *j);
    sp_error err = {0};
    if (!j || sp_stop_init(&j->stop, &err)) {
        free(j);
        sp_error_clear(&err);
        return;
    }
    j->engine = e;
    j->kind = kind;
    j->attempt = *ref;
    j->attempt_number = attempt_number;
    snprintf(j->node_id, sizeof j->node_id, "%s", node_id);
    snprintf(j->action_id, sizeof j->action_id, "%s", ea->action->id);
    j->ea = ea;
    j->handle = json_deep_copy(handle);
    j->reason = reason;
    engine_artifacts_init(e, ref, &j->arts);
    if (!j->handle || pthread_create(&j->thread, NULL, job_main, j) != 0) {
        free_job(j);
        return;
    }
    j->next = e->held_jobs;
    e->held_jobs = j;
}

void engine_held_reap(sp_engine *e, bool wait_all)
{
    held_job *finished = NULL;
    pthread_mutex_lock(&e->mu);
    for (held_job **p = &e->held_jobs; *p;) {
        held_job *j = *p;
        if (wait_all)
            sp_stop_fire(&j->stop);
        if (j->done || wait_all) {
            *p = j->next;
            j->next = finished;
            finished = j;
        } else {
            p = &j->next;
        }
    }
    pthread_mutex_unlock(&e->mu);
    while (finished) {
        held_job *j = finished;
        finished = j->next;
        pthread_join(j->thread, NULL);
        free_job(j);
    }
}

void engine_held_stop_watches(sp_engine *e)
{
    pthread_mutex_lock(&e->mu);
    for (held_job *j = e->held_jobs; j; j = j->next)
        if (j->kind == HELD_WATCH)
            sp_stop_fire(&j->stop);
    pthread_mutex_unlock(&e->mu);
}

static uint32_t count_jobs(sp_engine *e, held_job_kind kind)
{
    uint32_t n = 0;
    for (held_job *j = e->held_jobs; j; j = j->next)
        n += !j->done && j->kind == kind;
    return n;
}

/* ---- the tick's part ---- */

/* The action of a held item, when a worker of this host can look after it
 * (not an external step, nor one this host cannot serve). */
static const engine_action *load_action(sp_engine *e, const char *package_digest,
                                        const char *action_id)
{
    sp_error err = {0};
    const engine_action *ea = engine_action_get(e, package_digest, action_id, &err);
    sp_error_clear(&err);
    return engine_action_observable(ea) ? ea : NULL;
}

static void look_after(sp_engine *e, const sp_held_item *item, uint64_t now)
{
    const engine_action *ea = load_action(e, item->package_digest, item->action_id);
    if (!ea)
        return; /* external, or capability missing: left untouched */
    json_t *handle = sp_json_parse(item->holder, strlen(item->holder), NULL);
    pthread_mutex_lock(&e->mu);
    held_memo *m = handle ? memo(e, &item->attempt) : NULL;
    if (m && !e->shutting_down) {
        m->seen = true;
        if (engine_action_can(ea, SP_HOOK_WATCH, handle) && now >= m->watch_after_ms &&
            !job_running(e, &item->attempt, HELD_WATCH) && count_jobs(e, HELD_WATCH) < WATCH_MAX)
            start_job(e, HELD_WATCH, &item->attempt, item->attempt_number, item->node_id, ea,
                      handle, SP_EXPIRE_LEASE);
        if (engine_action_can(ea, SP_HOOK_PROBE, handle) &&
            now - m->last_probe_ms >= ea->terms.probe_every_ms &&
            !job_running(e, &item->attempt, HELD_PROBE) &&
            !job_running(e, &item->attempt, HELD_STOP) && count_jobs(e, HELD_PROBE) < PROBE_MAX) {
            m->last_probe_ms = now;
            start_job(e, HELD_PROBE, &item->attempt, item->attempt_number, item->node_id, ea,
                      handle, SP_EXPIRE_PROBE_DEAD);
        }
    }
    pthread_mutex_unlock(&e->mu);
    json_decref(handle);
}

int engine_held_tick(sp_engine *e, sp_tick_stats *stats, sp_error *err)
{
    engine_held_reap(e, false);
    char *cursor = NULL;
    uint64_t now = sp_mono_ms();
    do {
        sp_held_page page;
        sp_store_rc rc = ledger_scan_held(e, cursor, ENGINE_PAGE, &page, err);
        free(cursor);
        cursor = NULL;
        if (rc != SP_STORE_OK) {
            stats->store_unavailable = sp_store_rc_transient(rc);
            return -1;
        }
        for (size_t i = 0; i < page.n; i++)
            look_after(e, &page.items[i], now);
        if (page.next_cursor)
            cursor = strdup(page.next_cursor);
        sp_held_page_free(&page);
    } while (cursor);
    pthread_mutex_lock(&e->mu);
    memos_sweep(e);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

/* A held attempt is due (lease or deadline): stop the job first when a stop
 * is possible, then expire (engine.md §9: "stop on deadline"). */
int engine_held_expire(sp_engine *e, const sp_due_item *item, sp_tick_stats *stats, sp_error *err)
{
    sp_expire_reason reason = item->deadline_ms && item->at_ms >= item->deadline_ms
                                  ? SP_EXPIRE_DEADLINE
                                  : SP_EXPIRE_LEASE;
    sp_held_item held;
    bool found = false;
    if (engine_held_lookup(e, &item->attempt, &held, &found, err))
        return -1;
    json_t *handle = found ? sp_json_parse(held.holder, strlen(held.holder), NULL) : NULL;
    const engine_action *ea = handle ? load_action(e, held.package_digest, held.action_id) : NULL;
    bool stoppable = ea && engine_action_can(ea, SP_HOOK_STOP, handle);
    if (stoppable) {
        pthread_mutex_lock(&e->mu);
        if (!job_running(e, &item->attempt, HELD_STOP))
            start_job(e, HELD_STOP, &item->attempt, held.attempt_number, held.node_id, ea, handle,
                      reason);
        pthread_mutex_unlock(&e->mu);
    }
    json_decref(handle);
    if (found)
        free(held.holder);
    return stoppable ? 0 : engine_expire(e, &item->attempt, reason, stats, err);
}

/* One run's reads (its invocations and its package), not a scan of every
 * held attempt of the store: this runs once per due held attempt. */
int engine_held_lookup(sp_engine *e, const sp_attempt_ref *ref, sp_held_item *out, bool *found,
                       sp_error *err)
{
    *found = false;
    sp_run_view view;
    sp_invocation_list list;
    if (engine_get_run(e, &ref->key, &view, err))
        return strcmp(err->code, "run.not-found") == 0 ? (sp_error_clear(err), 0) : -1;
    int rc = ledger_list_invocations(e, &ref->key, &list, err) == SP_STORE_OK ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < list.n && !*found; i++) {
        sp_invocation_view *v = &list.items[i];
        if (engine_attempt_state_of(v) != ENGINE_ATTEMPT_RUNNING || !v->holder ||
            strcmp(v->attempt_id, ref->attempt_id) != 0)
            continue;
        memset(out, 0, sizeof *out);
        out->attempt = *ref;
        out->holder = v->holder;
        v->holder = NULL; /* moved to the caller */
        out->attempt_number = v->attempt_number;
        out->lease_until_ms = v->lease_until_ms;
        out->deadline_ms = v->deadline_ms;
        snprintf(out->node_id, sizeof out->node_id, "%s", v->node_id);
        snprintf(out->action_id, sizeof out->action_id, "%s", v->action_id);
        snprintf(out->package_digest, sizeof out->package_digest, "%s", view.package_digest);
        *found = true;
    }
    if (rc == 0)
        sp_invocation_list_free(&list);
    sp_run_view_free(&view);
    return rc;
}

bool engine_held_unobservable(sp_engine *e, const sp_run_key *key, const char *invocation_id,
                              const engine_action *action)
{
    sp_invocation_list list;
    sp_error err = {0};
    if (!invocation_id || !engine_action_observable(action) ||
        ledger_list_invocations(e, key, &list, &err) != SP_STORE_OK) {
        sp_error_clear(&err);
        return false;
    }
    bool unobservable = false;
    for (size_t i = 0; i < list.n; i++) {
        const sp_invocation_view *v = &list.items[i];
        if (strcmp(v->invocation_id, invocation_id) != 0 ||
            engine_attempt_state_of(v) != ENGINE_ATTEMPT_RUNNING || !v->holder)
            continue;
        json_t *handle = sp_json_parse(v->holder, strlen(v->holder), NULL);
        if (handle)
            unobservable = !engine_action_can(action, SP_HOOK_PROBE, handle) &&
                           !engine_action_can(action, SP_HOOK_WATCH, handle);
        json_decref(handle);
    }
    sp_invocation_list_free(&list);
    return unobservable;
}

bool engine_hook_now(sp_engine *e, const sp_run_key *key, const sp_invocation_view *v,
                     const engine_action *a, engine_hook which, sp_holder_state *probe_state_out)
{
    if (!v->holder || !engine_action_observable(a))
        return false;
    sp_error err = {0};
    json_t *handle = sp_json_parse(v->holder, strlen(v->holder), NULL);
    bool possible =
        handle && engine_action_can(a, which == ENGINE_HOOK_PROBE ? SP_HOOK_PROBE : SP_HOOK_STOP,
                                    handle);
    sp_stop_signal never;
    if (possible && sp_stop_init(&never, &err) == 0) {
        sp_attempt_ref ref = {.key = *key, .fence = v->fence};
        snprintf(ref.invocation_id, sizeof ref.invocation_id, "%s", v->invocation_id);
        snprintf(ref.attempt_id, sizeof ref.attempt_id, "%s", v->attempt_id);
        snprintf(ref.owner, sizeof ref.owner, "%s", v->owner ? v->owner : "");
        engine_artifacts arts;
        engine_artifacts_init(e, &ref, &arts);
        sp_runner_ctx ctx = {.artifacts = &arts.api,
                             .tenant = key->tenant,
                             .run_id = key->run_id,
                             .node_id = v->node_id,
                             .action_id = v->action_id,
                             .invocation_id = v->invocation_id,
                             .effect_key = v->effect_key,
                             .attempt = v->attempt_number,
                             .base_dir = e->base_dir,
                             .stop = &never};
        if (which == ENGINE_HOOK_PROBE)
            *probe_state_out = probe_state(a, &ctx, handle);
        else
            a->runner->stop(&ctx, &a->prepared, handle);
        sp_stop_destroy(&never);
    } else {
        possible = false;
    }
    sp_error_clear(&err);
    json_decref(handle);
    return possible;
}
