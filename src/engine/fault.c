/*
 * fault.c - a failing store, as the engine sees it (engine.md §1: transient
 * store failures are retried with the identical request). Every transient
 * failure (unavailable, unknown-commit: a read-only or full disk, an
 * unreachable server, a store busy past its timeout) is noted here, from
 * whichever thread met it: this module owns the retry schedule of
 * ENGINE_RETRY and of the loops, the give-up bound (store_retry_ms; serve()
 * never gives up), and the reports to the store_fault hook: once a fault
 * has lasted FAULT_QUIET_MS, again every FAULT_REPEAT_MS while it lasts, and
 * once when the store works again.
 *
 * Must never print (the hook's owner does), call the hook twice at once,
 * or take a successful read for a recovery while writes were failing (a
 * read-only or full store still answers reads).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "engine/internal.h"
#include "engine/ledger.h"

#define QUICK_TRIES 9         /* 10 ms x try first: contention clears fast */
#define BACKOFF_FIRST_MS 100u /* then 100 ms, doubling ... */
#define BACKOFF_MAX_MS 5000u  /* ... up to 5 s */
#define FAULT_QUIET_MS 500u   /* a shorter fault (contention) is not reported */
#define FAULT_REPEAT_MS 10000u
#define RETRY_SLICE_MS 50u    /* a retry's sleep notices a stop this fast */

void engine_fault_init(sp_engine *e)
{
    memset(&e->fault, 0, sizeof e->fault);
    pthread_mutex_init(&e->fault.mu, NULL);
}

void engine_fault_destroy(sp_engine *e) { pthread_mutex_destroy(&e->fault.mu); }

/* n >= 1: 100, 200, 400, ... ms, at most 5 s. */
static uint64_t backoff_ms(unsigned n)
{
    uint64_t ms = BACKOFF_FIRST_MS;
    for (unsigned i = 1; i < n && ms < BACKOFF_MAX_MS; i++)
        ms *= 2;
    return ms < BACKOFF_MAX_MS ? ms : BACKOFF_MAX_MS;
}

static uint64_t retry_delay_ms(unsigned try_number)
{
    return try_number <= QUICK_TRIES ? 10u * try_number : backoff_ms(try_number - QUICK_TRIES);
}

/* Under fault.mu. */
static uint64_t bound_ms(const sp_engine *e)
{
    return e->fault.serving ? 0 : e->cfg.store_retry_ms;
}

/* "sp_store_finish_attempt(e->store, ...)" -> "finish_attempt". */
static void operation_name(const char *call, char *out, size_t n)
{
    out[0] = '\0';
    if (!call)
        return;
    if (strncmp(call, "sp_store_", 9) == 0)
        call += 9;
    else if (strncmp(call, "ledger_", 7) == 0)
        call += 7;
    size_t len = strcspn(call, "( ");
    snprintf(out, n, "%.*s", (int)len, call);
}

/* unknown-commit names the outcome, not the cause: an I/O failure. */
static const char *fault_code(const char *code)
{
    return !code[0] || strcmp(code, "store.unknown-commit") == 0 ? "store.io" : code;
}

static void tell(sp_engine *e, sp_fault_state state, uint64_t retry_in_ms, uint64_t now)
{
    engine_fault *f = &e->fault;
    sp_engine_fault r = {state, f->code, f->message, retry_in_ms, now - f->since_ms, bound_ms(e)};
    e->cfg.store_fault(e->cfg.store_fault_ctx, &r);
}

/* Under fault.mu: what failed, "<operation>: <the store's message>". */
static void describe(engine_fault *f, const char *call, const sp_error *err)
{
    char op[64];
    operation_name(call, op, sizeof op);
    snprintf(f->code, sizeof f->code, "%s", fault_code(err->code));
    const char *text = err->message[0] ? err->message : "the store failed";
    size_t n = (size_t)snprintf(f->message, sizeof f->message, "%s%s", op, op[0] ? ": " : "");
    snprintf(f->message + n, sizeof f->message - n, "%.*s", (int)(sizeof f->message - n - 1),
             text);
}

/* A store call failed with a transient kind; the caller tries again in
 * retry_in_ms. `call` NULL: a loop's pass failed, with an error that an
 * ENGINE_RETRY may have described already (then it is not described again). */
static void failed(sp_engine *e, bool write, const char *call, const sp_error *err,
                   uint64_t retry_in_ms)
{
    engine_fault *f = &e->fault;
    pthread_mutex_lock(&f->mu);
    uint64_t now = sp_mono_ms();
    if (call || !f->failing)
        describe(f, call, err);
    if (!f->failing) {
        f->failing = true;
        f->writes = f->reported = false;
        f->since_ms = now;
    }
    f->writes |= write;
    bool due = now - f->since_ms >= FAULT_QUIET_MS &&
               (!f->reported || now - f->reported_ms >= FAULT_REPEAT_MS);
    if (due && e->cfg.store_fault) {
        f->reported = true;
        f->reported_ms = now;
        tell(e, SP_FAULT_FAILING, retry_in_ms, now);
    }
    pthread_mutex_unlock(&f->mu);
}

/* A store call worked: a write ends a fault, a read only a fault of reads. */
static void worked(sp_engine *e, bool write)
{
    engine_fault *f = &e->fault;
    pthread_mutex_lock(&f->mu);
    if (f->failing && (write || !f->writes)) {
        if (f->reported && e->cfg.store_fault)
            tell(e, SP_FAULT_RECOVERED, 0, sp_mono_ms());
        f->failing = false;
    }
    pthread_mutex_unlock(&f->mu);
}

/* Under fault.mu: the time until the fault outlasts the bound (UINT64_MAX:
 * no fault, or no bound). */
static uint64_t time_left(const sp_engine *e, uint64_t now)
{
    const engine_fault *f = &e->fault;
    uint64_t bound = bound_ms(e);
    if (!f->failing || !bound)
        return UINT64_MAX;
    uint64_t lasted = now - f->since_ms;
    return lasted >= bound ? 0 : bound - lasted;
}

/* The fault has outlasted the bound or - once shutdown began, when the
 * process is going away - the quiet period (contention still gets its
 * retries then). */
static bool past_bound(sp_engine *e)
{
    bool interrupted = engine_interrupted(e);
    pthread_mutex_lock(&e->fault.mu);
    uint64_t now = sp_mono_ms();
    bool past = time_left(e, now) == 0 ||
                (interrupted && e->fault.failing && now - e->fault.since_ms >= FAULT_QUIET_MS);
    pthread_mutex_unlock(&e->fault.mu);
    return past;
}

/* Stop retrying a failing store: the fault outlasted its bound, or
 * attempts are being abandoned. */
static bool retry_stopped(sp_engine *e)
{
    return engine_abandoning(e) || past_bound(e);
}

/* Sleep ms in slices; false when a stop came first. */
static bool retry_sleep(sp_engine *e, uint64_t ms)
{
    while (ms > 0) {
        uint64_t slice = ms < RETRY_SLICE_MS ? ms : RETRY_SLICE_MS;
        sp_sleep_ms(slice);
        ms -= slice;
        if (retry_stopped(e))
            return false;
    }
    return true;
}

int engine_fault_give_up(sp_engine *e, uint64_t *left_ms, sp_error *err)
{
    engine_fault *f = &e->fault;
    pthread_mutex_lock(&f->mu);
    uint64_t now = sp_mono_ms(), left = time_left(e, now);
    if (left_ms)
        *left_ms = left;
    if (left == 0) {
        char lasted[24], bound[24];
        snprintf(lasted, sizeof lasted, "%llu", (unsigned long long)(now - f->since_ms));
        snprintf(bound, sizeof bound, "%llu", (unsigned long long)bound_ms(e));
        sp_fail_details(err, f->code,
                        json_pack("{s:s,s:s}", "failingForMs", lasted, "allowedMs", bound),
                        "the store kept failing for %s ms (allowed: %s ms): %s", lasted, bound,
                        f->message);
    }
    pthread_mutex_unlock(&f->mu);
    return left == 0 ? -1 : 0;
}

void engine_fault_noted(sp_engine *e, bool write, const char *call, sp_store_rc rc,
                        const sp_error *err)
{
    if (rc == SP_STORE_OK)
        worked(e, write);
    else if (sp_store_rc_transient(rc))
        failed(e, write, call, err, 0);
}

bool engine_retry_again(sp_engine *e, bool write, const char *call, sp_store_rc rc,
                        unsigned try_number, sp_error *err)
{
    if (ledger_in_batch(e)) {
        /* In the tick's batch nothing is durable yet and a retry cannot
         * help: the batch is abandoned and the next pass tries it all (at
         * once when the store's prediction missed: that is no fault). */
        if (ledger_prediction_missed(err)) {
            e->batch_failed = e->batch_missed = true;
        } else if (sp_store_rc_transient(rc)) {
            failed(e, write, call, err, 0);
            e->batch_failed = true;
        }
        return false;
    }
    if (!sp_store_rc_transient(rc)) {
        if (rc == SP_STORE_OK)
            worked(e, write);
        return false;
    }
    uint64_t delay = retry_delay_ms(try_number);
    failed(e, write, call, err, delay);
    if (retry_stopped(e) || !retry_sleep(e, delay)) {
        engine_fault_give_up(e, NULL, err); /* past the bound: say so, with the fault's code */
        return false;
    }
    sp_error_clear(err);
    return true;
}

uint64_t engine_fault_pass(sp_engine *e, bool pass_failed, unsigned *streak, sp_error *err)
{
    if (!pass_failed) {
        *streak = 0;
        worked(e, false);
        return 0;
    }
    uint64_t delay = backoff_ms(++*streak);
    failed(e, false, NULL, err, delay);
    sp_error_clear(err);
    return delay;
}

bool engine_fault_failing(sp_engine *e)
{
    pthread_mutex_lock(&e->fault.mu);
    bool failing = e->fault.failing;
    pthread_mutex_unlock(&e->fault.mu);
    return failing;
}

void engine_fault_serving(sp_engine *e, bool serving)
{
    pthread_mutex_lock(&e->fault.mu);
    e->fault.serving = serving;
    pthread_mutex_unlock(&e->fault.mu);
}
