/*
 * attempt.c - one attempt (engine.md §4): resolve the action from the run's
 * package, run it in a runner thread while this attempt thread heartbeats on
 * its own timer, then finish the attempt with what the runner reported - or,
 * when the lease was lost, keep it as late evidence.
 *
 * Must never call finish_attempt after a heartbeat was answered stale (the
 * runner is told to stop; what it learns becomes late evidence), report
 * anything when the run or package cannot be read (the lease expires and the
 * kernel decides, as after a crash), or report after shutdown abandoned it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/failpoint.h"
#include "base/random.h"
#include "engine/internal.h"
#include "json/json.h"

typedef struct runner_job {
    inflight *a;
    const sp_runner *runner;
    sp_runner_ctx ctx;
    json_t *input;
    sp_activity_output out;
    /* ---- agent progress (agent-step.md §3) ---- */
    bool beat_wanted;        /* an event asked for an early heartbeat (under a->mu) */
    uint64_t last_signal_ms; /* runner thread: when it last asked */
    uint32_t kept;           /* runner thread: kept events recorded */
} runner_job;

/* Events renew the lease at most this often (or every heartbeat_ms, if less). */
#define PROGRESS_BEAT_GAP_MS 1000u

static void *runner_main(void *arg)
{
    runner_job *job = arg;
    inflight *a = job->a;
    job->runner->run(&job->ctx, &a->ea->prepared, job->input, &job->out);
    pthread_mutex_lock(&a->mu);
    a->runner_done = true;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* Wait for the runner up to `ms`, or until an event asks for a heartbeat;
 * true when it finished. */
static bool wait_runner(inflight *a, runner_job *job, uint64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + (ms % 1000) * 1000000u;
    ts.tv_sec += (time_t)(ms / 1000 + ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    pthread_mutex_lock(&a->mu);
    while (!a->runner_done && !job->beat_wanted)
        if (pthread_cond_timedwait(&a->cv, &a->mu, &ts) != 0)
            break;
    bool done = a->runner_done;
    pthread_mutex_unlock(&a->mu);
    return done;
}

static void heartbeat(inflight *a)
{
    sp_engine *e = a->engine;
    char request_id[SP_STORE_REQUEST_ID_MAX];
    engine_request_id(e, "heartbeat", a->claim.attempt.attempt_id, request_id, sizeof request_id);
    sp_heartbeat_req req = {a->claim.attempt, request_id, e->cfg.lease_ms};
    sp_heartbeat_res res;
    sp_error err = {0};
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, &err, sp_store_heartbeat(e->store, &req, &res, &err));
    if (rc == SP_STORE_STALE) {
        a->lost = true;
        sp_stop_fire(&a->stop);
    }
    sp_error_clear(&err);
}

/* Run the runner in its own thread, heartbeating until it returns. */
static void run_with_heartbeats(inflight *a, runner_job *job)
{
    pthread_t t;
    if (pthread_create(&t, NULL, runner_main, job) != 0) {
        sp_output_failure(&job->out, "host.thread", true, NULL,
                          "cannot start a thread for the runner");
        return;
    }
    /* a heartbeat every heartbeat_ms, and an early one when an agent event
     * asks for it, at most every PROGRESS_BEAT_GAP_MS */
    uint64_t every = a->engine->cfg.heartbeat_ms;
    uint64_t gap = every < PROGRESS_BEAT_GAP_MS ? every : PROGRESS_BEAT_GAP_MS;
    uint64_t last = engine_mono_ms();
    bool wanted = false;
    for (;;) {
        uint64_t now = engine_mono_ms(), due = last + (wanted ? gap : every);
        if (wait_runner(a, job, due > now ? due - now : 0))
            break;
        pthread_mutex_lock(&a->mu);
        wanted |= job->beat_wanted;
        job->beat_wanted = false;
        pthread_mutex_unlock(&a->mu);
        now = engine_mono_ms();
        if (now >= last + every || (wanted && now >= last + gap)) {
            if (!a->lost)
                heartbeat(a);
            last = now;
            wanted = false;
        }
    }
    pthread_join(t, NULL);
}

/* The runner's progress hook (sp_runner_ctx.progress), on the runner's
 * thread: a kept agent event becomes an audit row of kind "agent.event"
 * (request ID agent-event/<attemptId>/<n>, so a retried write is the same
 * request); every event asks the attempt thread for an early heartbeat,
 * rate-limited here so a flood of events cannot flood the store. */
static void on_progress(void *ctx, const char *event_json, size_t len)
{
    runner_job *job = ctx;
    inflight *a = job->a;
    if (event_json) {
        sp_engine *e = a->engine;
        char request_id[SP_STORE_REQUEST_ID_MAX], digest[SP_DIGEST_TEXT_LEN + 1];
        snprintf(request_id, sizeof request_id, "agent-event/%s/%u", a->claim.attempt.attempt_id,
                 job->kept++);
        sp_digest_one("body", event_json, len, digest);
        sp_late_evidence_req req = {a->claim.attempt, request_id, "agent.event",
                                    {event_json, len, digest}};
        sp_late_evidence_res res;
        sp_error err = {0};
        sp_store_rc rc;
        ENGINE_RETRY(e, rc, &err, sp_store_record_late_evidence(e->store, &req, &res, &err));
        (void)rc; /* a view's detail: losing one never changes the attempt */
        sp_error_clear(&err);
    }
    uint64_t now = engine_mono_ms();
    if (now - job->last_signal_ms < PROGRESS_BEAT_GAP_MS / 4)
        return;
    job->last_signal_ms = now;
    pthread_mutex_lock(&a->mu);
    job->beat_wanted = true;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static void keep_late(sp_engine *e, const sp_attempt_ref *ref, const char *body, size_t len,
                      const char *kind)
{
    char request_id[SP_STORE_REQUEST_ID_MAX], digest[SP_DIGEST_TEXT_LEN + 1];
    snprintf(request_id, sizeof request_id, "late/%s/%s/%s", ref->attempt_id, kind, e->nonce);
    sp_digest_one("body", body, len, digest);
    sp_late_evidence_req req = {*ref, request_id, kind, {body, len, digest}};
    sp_late_evidence_res res;
    sp_error err = {0};
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, &err, sp_store_record_late_evidence(e->store, &req, &res, &err));
    sp_error_clear(&err);
}

static void record_late(inflight *a, const char *body, size_t len, const char *kind)
{
    keep_late(a->engine, &a->claim.attempt, body, len, kind);
}

sp_store_rc engine_finish_or_keep(sp_engine *e, const sp_attempt_ref *ref, const char *body,
                                  size_t len, const char *late_kind, sp_error *err)
{
    char request_id[SP_STORE_REQUEST_ID_MAX], digest[SP_DIGEST_TEXT_LEN + 1];
    snprintf(request_id, sizeof request_id, "finish/%s", ref->attempt_id);
    sp_digest_one("body", body, len, digest);
    sp_finish_req req = {*ref, request_id, {body, len, digest}};
    sp_finish_res res;
    sp_store_rc rc;
    ENGINE_RETRY(e, rc, err, sp_store_finish_attempt(e->store, &req, &res, err));
    if (rc == SP_STORE_STALE)
        keep_late(e, ref, body, len, late_kind);
    return rc;
}

/* An async start returned a handle: record it with hold_attempt; from now on
 * the worker holds nothing (engine.md §9). Lost lease: the handle is kept as
 * late evidence, so a person can find the job. */
static void hold(inflight *a, const sp_activity_output *out)
{
    sp_engine *e = a->engine;
    sp_error err = {0};
    sp_hold_terms terms;
    char *handle = sp_json_encode_alloc(out->handle, NULL, &err);
    if (!handle || engine_action_terms(a->ea, &terms, &err)) {
        free(handle);
        sp_error_clear(&err);
        return; /* cannot happen for a validated action; the lease decides */
    }
    if (a->lost) {
        record_late(a, handle, strlen(handle), "handle-after-lease-lost");
    } else {
        char request_id[SP_STORE_REQUEST_ID_MAX];
        snprintf(request_id, sizeof request_id, "hold/%s", a->claim.attempt.attempt_id);
        sp_hold_req req = {.attempt = a->claim.attempt,
                           .request_id = request_id,
                           .holder = handle,
                           .lease_in_ms = terms.lease_in_ms,
                           .deadline_in_ms = terms.deadline_in_ms};
        sp_heartbeat_res res;
        sp_store_rc rc;
        ENGINE_RETRY(e, rc, &err, sp_store_hold_attempt(e->store, &req, &res, &err));
        if (rc == SP_STORE_STALE)
            record_late(a, handle, strlen(handle), "handle-after-lease-expired");
        sp_error_clear(&err);
    }
    free(handle);
}

static void report(inflight *a, const sp_activity_output *out)
{
    sp_engine *e = a->engine;
    sp_error err = {0};
    if (out->kind == SP_OUTPUT_HELD) {
        hold(a, out);
        return;
    }
    size_t len;
    char *body = engine_result_body(&a->claim, out, &len, &err);
    if (!body) { /* out of memory: report nothing; the lease decides */
        sp_error_clear(&err);
        return;
    }
    if (a->lost) {
        record_late(a, body, len, "result-after-lease-lost");
        free(body);
        return;
    }
    sp_store_rc rc = engine_finish_or_keep(e, &a->claim.attempt, body, len,
                                           "result-after-lease-expired", &err);
    sp_error_clear(&err);
    free(body);
    if (rc == SP_STORE_OK)
        sp_failpoint("host.attempt.after-finish");
}

/* Resolve the action and its runner. Returns false to abandon (report
 * nothing); true with *host_failed set when the host itself produced the
 * output (missing action or runner). */
static bool resolve_action(inflight *a, const sp_runner **runner, sp_activity_output *out,
                           bool *host_failed)
{
    sp_engine *e = a->engine;
    sp_run_view view;
    bool found = false;
    sp_error err = {0};
    if (sp_store_get_run(e->store, &a->claim.attempt.key, &view, &found, &err) != SP_STORE_OK ||
        !found) {
        sp_error_clear(&err);
        return false;
    }
    const engine_action *ea;
    int rc = engine_action_find(e, view.package_digest, a->claim.action_id, &ea, &err);
    sp_run_view_free(&view);
    sp_error_clear(&err);
    if (rc)
        return false;
    *host_failed = true;
    if (!ea) {
        sp_output_failure(out, "host.action-missing", false, NULL,
                          "action %s is not in the run's package", a->claim.action_id);
        return true;
    }
    *runner = ea->runner;
    if (!*runner) {
        sp_output_failure(out, "host.runner-missing", false, NULL,
                          "no runner for the kind of action %s", a->claim.action_id);
        return true;
    }
    a->ea = ea;
    *host_failed = false;
    return true;
}

static void execute(inflight *a, runner_job *job, const sp_runner *runner)
{
    job->input = sp_json_parse_canonical(a->claim.input, a->claim.input_len, NULL);
    if (!job->input) {
        sp_output_failure(&job->out, "host.input-invalid", false, NULL,
                          "the claimed input is not canonical JSON");
        return;
    }
    const sp_claim *c = &a->claim;
    sp_engine *e = a->engine;
    char traceparent[64], span[17];
    sp_random_hex(span, 8);
    snprintf(traceparent, sizeof traceparent, "00-%.32s-%s-01", c->attempt.invocation_id + 4,
             span);
    char token[SP_TOKEN_MAX + 1];
    sp_error err = {0};
    bool has_token = json_object_get(a->ea->action->raw, "async") &&
                     engine_token_make(e, &c->attempt, token, sizeof token, &err) == 0;
    sp_error_clear(&err);
    engine_artifacts arts; /* component runners: blobs, secret, audit (artifacts.c) */
    engine_artifacts_init(e, &c->attempt, &arts);
    job->runner = runner;
    job->ctx = (sp_runner_ctx){.tenant = c->attempt.key.tenant,
                               .run_id = c->attempt.key.run_id,
                               .node_id = c->node_id,
                               .action_id = c->action_id,
                               .invocation_id = c->attempt.invocation_id,
                               .effect_key = c->effect_key,
                               .attempt = c->attempt_number,
                               .base_dir = e->base_dir,
                               .traceparent = traceparent,
                               .stop = &a->stop,
                               .natives = e->cfg.natives,
                               .token = has_token ? token : NULL,
                               .store_location = sp_store_location(e->store),
                               .progress = on_progress, /* agent events */
                               .progress_ctx = job,
                               .artifacts = &arts.api};
    run_with_heartbeats(a, job);
}

static void mark_done(inflight *a)
{
    pthread_mutex_lock(&a->engine->mu);
    a->done = true;
    a->engine->settled++;
    pthread_cond_broadcast(&a->engine->settled_cv);
    pthread_mutex_unlock(&a->engine->mu);
}

static void *attempt_main(void *arg)
{
    inflight *a = arg;
    runner_job job;
    memset(&job, 0, sizeof job);
    job.a = a;
    const sp_runner *runner = NULL;
    bool host_failed = false;
    if (resolve_action(a, &runner, &job.out, &host_failed)) {
        if (!host_failed)
            execute(a, &job, runner);
        sp_failpoint("host.attempt.after-effect");
        if (!engine_abandoning(a->engine))
            report(a, &job.out);
        sp_activity_output_free(&job.out);
    }
    json_decref(job.input);
    mark_done(a);
    return NULL;
}

int engine_attempt_start(sp_engine *e, sp_claim *claim, sp_error *err)
{
    inflight *a = calloc(1, sizeof *a);
    if (!a) {
        sp_claim_free(claim);
        return sp_oom(err);
    }
    a->engine = e;
    a->claim = *claim;
    memset(claim, 0, sizeof *claim);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    if (sp_stop_init(&a->stop, err)) {
        sp_claim_free(&a->claim);
        free(a);
        return -1;
    }
    pthread_mutex_lock(&e->mu);
    a->next = e->inflight;
    e->inflight = a;
    e->ninflight++;
    pthread_mutex_unlock(&e->mu);
    if (pthread_create(&a->thread, NULL, attempt_main, a) != 0) {
        pthread_mutex_lock(&e->mu);
        e->inflight = a->next;
        e->ninflight--;
        pthread_mutex_unlock(&e->mu);
        sp_stop_destroy(&a->stop);
        sp_claim_free(&a->claim);
        free(a);
        return sp_fail(err, "runtime", "cannot start an attempt thread");
    }
    return 0;
}

static void free_inflight(inflight *a)
{
    pthread_join(a->thread, NULL);
    sp_stop_destroy(&a->stop);
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
    sp_claim_free(&a->claim);
    free(a);
}

void engine_attempts_reap(sp_engine *e, bool wait_all)
{
    for (;;) {
        inflight *finished = NULL;
        pthread_mutex_lock(&e->mu);
        for (inflight **p = &e->inflight; *p;) {
            inflight *a = *p;
            if (a->done || wait_all) {
                *p = a->next;
                a->next = finished;
                finished = a;
                e->ninflight--;
            } else {
                p = &a->next;
            }
        }
        pthread_mutex_unlock(&e->mu);
        if (!finished)
            return;
        while (finished) {
            inflight *a = finished;
            finished = a->next;
            free_inflight(a);
        }
        if (!wait_all)
            return;
    }
}

bool engine_run_in_flight(sp_engine *e, const sp_run_key *key)
{
    pthread_mutex_lock(&e->mu);
    bool found = false;
    for (inflight *a = e->inflight; a && !found; a = a->next)
        found = !a->done && engine_same_key(&a->claim.attempt.key, key);
    pthread_mutex_unlock(&e->mu);
    return found;
}
