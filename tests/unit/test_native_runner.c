/*
 * test_native_runner.c - the native function registry and the `native`
 * runner (engine.md §5): every way a function can report, every check on
 * what it returns, the attempt context, stop, and concurrent registration
 * and lookup.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "json/json.h"
#include "runners/native.h"
#include "runners/registry.h"

/* ---- functions under test ---- */

static int fn_echo(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user;
    return sp_native_succeed(call, NULL, input, len);
}

static int fn_charge(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)input, (void)len;
    int *calls = user;
    __atomic_add_fetch(calls, 1, __ATOMIC_SEQ_CST);
    char out[512];
    snprintf(out, sizeof out, "{ \"key\": \"%s\", \"attempt\": %u, \"run\": \"%s\", \"node\": \"%s\" }",
             sp_native_effect_key(call), sp_native_attempt(call), sp_native_run_id(call),
             sp_native_node_id(call));
    return sp_native_succeed(call, "charged", out, strlen(out));
}

static int fn_null(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    return sp_native_succeed(call, "ok", NULL, 0);
}

static int fn_fail_retry(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    sp_native_succeed(call, "ok", "1", 1); /* replaced by the later report */
    return sp_native_fail(call, "pay.unavailable", "try later", true);
}

static int fn_fail_final(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    return sp_native_fail(call, "pay.declined", "bad \xFF card", false);
}

static int fn_unknown(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    return sp_native_unknown(call, "pay.lost", "connection dropped mid-call");
}

static int fn_float(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    return sp_native_succeed(call, "ok", "{\"x\": 1.5}", 10);
}

static int fn_garbage(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    return sp_native_succeed(call, "ok", "{nope", 5);
}

static int fn_bad_outcome(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    return sp_native_succeed(call, "\xC0\xAF", "1", 1);
}

static int fn_long_code(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    char code[100];
    memset(code, 'c', sizeof code - 1);
    code[sizeof code - 1] = '\0';
    return sp_native_fail(call, code, "m", false);
}

static int fn_silent(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len, (void)call;
    return 0;
}

static int fn_broken(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    sp_native_succeed(call, "ok", "1", 1);
    return -1;
}

static int fn_wait_stop(void *user, const char *input, size_t len, sp_native_call *call)
{
    (void)user, (void)input, (void)len;
    for (int i = 0; i < 500 && !sp_native_stop_requested(call); i++) {
        struct timespec ts = {0, 10 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (sp_native_stop_requested(call) && sp_native_stop_fd(call) >= 0)
        return sp_native_unknown(call, "work.stopped", "stopped");
    return sp_native_succeed(call, "ok", NULL, 0);
}

/* ---- helpers ---- */

static sp_native_registry *g_reg;
static int g_charges;

static sp_runner_ctx make_ctx(sp_stop_signal *stop)
{
    return (sp_runner_ctx){.run_id = "run_9", .node_id = "pay", .action_id = "pay",
                           .invocation_id = "inv_7", .effect_key = "inv_7", .attempt = 3,
                           .stop = stop, .natives = g_reg};
}

static void run_ctx(const sp_runner_ctx *ctx, const char *function, const json_t *input,
                    sp_activity_output *out)
{
    json_t *action = function ? json_pack("{s:s,s:s}", "kind", "native", "function", function)
                              : json_pack("{s:s}", "kind", "native");
    const sp_runner *runner = sp_runner_find("native");
    CHECK(runner && runner->run);
    CHECK_INT(runner->run(ctx, &(sp_runner_action){"pay", action, NULL}, input, out), 0);
    if (out->kind != SP_OUTPUT_SUCCESS) {
        char *bytes = sp_json_encode_alloc(out->error, NULL, NULL);
        CHECK(bytes != NULL);
        free(bytes);
    }
    json_decref(action);
}

static void run(const char *function, sp_activity_output *out)
{
    sp_runner_ctx ctx = make_ctx(NULL);
    run_ctx(&ctx, function, NULL, out);
}

static const char *code_of(const sp_activity_output *o)
{
    return json_string_value(json_object_get(o->error, "code"));
}

static void expect_failure(sp_activity_output *o, const char *code, bool retryable)
{
    CHECK_INT(o->kind, SP_OUTPUT_FAILURE);
    CHECK_STR(code_of(o), code);
    CHECK_INT(o->retryable, retryable);
    sp_activity_output_free(o);
}

static void expect_output(sp_activity_output *o, const char *outcome, const char *canonical)
{
    CHECK_INT(o->kind, SP_OUTPUT_SUCCESS);
    CHECK_STR(o->outcome ? o->outcome : "ok", outcome);
    char *bytes = o->output ? sp_json_encode_alloc(o->output, NULL, NULL) : strdup("null");
    CHECK_STR(bytes, canonical);
    free(bytes);
    sp_activity_output_free(o);
}

/* ---- tests ---- */

static void test_register(void)
{
    sp_error err = {0};
    struct { const char *name; sp_native_fn fn; } fns[] = {
        {"echo", fn_echo}, {"null", fn_null}, {"fail-retry", fn_fail_retry},
        {"fail-final", fn_fail_final}, {"unknown", fn_unknown}, {"float", fn_float},
        {"garbage", fn_garbage}, {"bad-outcome", fn_bad_outcome}, {"long-code", fn_long_code},
        {"silent", fn_silent}, {"broken", fn_broken}, {"wait-stop", fn_wait_stop},
    };
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
        CHECK_INT(sp_native_register(g_reg, fns[i].name, fns[i].fn, NULL, &err), 0);
    CHECK_INT(sp_native_register(g_reg, "charge", fn_charge, &g_charges, &err), 0);
    CHECK_INT(sp_native_register(g_reg, "echo", fn_null, NULL, &err), -1);
    CHECK_STR(err.code, "native.duplicate");
    CHECK_INT(sp_native_register(g_reg, "", fn_null, NULL, &err), -1);
    CHECK_STR(err.code, "native.invalid-name");
    CHECK_INT(sp_native_register(g_reg, "\xFF", fn_null, NULL, &err), -1);
    CHECK_STR(err.code, "native.invalid-name");
    CHECK_INT(sp_native_register(g_reg, "x", NULL, NULL, &err), -1);
    CHECK_STR(err.code, "native.invalid-name");
    char long_name[200];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    CHECK_INT(sp_native_register(g_reg, long_name, fn_null, NULL, &err), -1);
    sp_error_clear(&err);
    sp_native_fn fn;
    void *user;
    CHECK(sp_native_lookup(g_reg, "charge", &fn, &user) && fn == fn_charge && user == &g_charges);
    CHECK(!sp_native_lookup(g_reg, "Charge", &fn, &user));
}

static void test_success(void)
{
    sp_runner_ctx ctx = make_ctx(NULL);
    sp_activity_output o;
    json_t *input = json_pack("{s:i,s:s}", "b", 1, "a", "x");
    run_ctx(&ctx, "echo", input, &o); /* receives the canonical input */
    expect_output(&o, "ok", "{\"a\":\"x\",\"b\":1}");
    json_decref(input);
    run("echo", &o); /* no input: null */
    expect_output(&o, "ok", "null");
    run("charge", &o);
    expect_output(&o, "charged", "{\"attempt\":3,\"key\":\"inv_7\",\"node\":\"pay\",\"run\":\"run_9\"}");
    CHECK_INT(g_charges, 1);
    run("null", &o);
    expect_output(&o, "ok", "null");
}

static void test_errors(void)
{
    sp_activity_output o;
    run("fail-retry", &o);
    CHECK_STR(json_string_value(json_object_get(o.error, "message")), "try later");
    expect_failure(&o, "pay.unavailable", true);
    run("fail-final", &o);
    CHECK_STR(json_string_value(json_object_get(o.error, "message")), "bad \xEF\xBF\xBD card");
    expect_failure(&o, "pay.declined", false);
    run("unknown", &o);
    CHECK_INT(o.kind, SP_OUTPUT_UNKNOWN);
    CHECK_STR(code_of(&o), "pay.lost");
    sp_activity_output_free(&o);
}

static void test_rejections(void)
{
    sp_activity_output o;
    run("no-such-function", &o);
    CHECK_STR(json_string_value(json_object_get(json_object_get(o.error, "details"), "function")),
              "no-such-function");
    expect_failure(&o, "native.unknown-function", false);
    sp_runner_ctx bare = make_ctx(NULL);
    bare.natives = NULL;
    run_ctx(&bare, "echo", NULL, &o);
    expect_failure(&o, "native.unknown-function", false);
    run(NULL, &o);
    expect_failure(&o, "native.invalid", false);
    run("float", &o);
    expect_failure(&o, "native.malformed-output", false);
    run("garbage", &o);
    expect_failure(&o, "native.malformed-output", false);
    run("bad-outcome", &o);
    expect_failure(&o, "native.malformed-output", false);
    run("long-code", &o);
    expect_failure(&o, "native.malformed-output", false);
    run("silent", &o);
    expect_failure(&o, "native.no-result", false);
    run("broken", &o);
    expect_failure(&o, "native.failed", true);
}

static void *fire_later(void *arg)
{
    struct timespec ts = {0, 100 * 1000000};
    nanosleep(&ts, NULL);
    sp_stop_fire(arg);
    return NULL;
}

static void test_stop(void)
{
    sp_stop_signal stop;
    CHECK_INT(sp_stop_init(&stop, NULL), 0);
    sp_runner_ctx ctx = make_ctx(&stop);
    pthread_t t;
    pthread_create(&t, NULL, fire_later, &stop);
    sp_activity_output o;
    run_ctx(&ctx, "wait-stop", NULL, &o);
    pthread_join(t, NULL);
    CHECK_INT(o.kind, SP_OUTPUT_UNKNOWN);
    CHECK_STR(code_of(&o), "work.stopped");
    sp_activity_output_free(&o);
    sp_stop_destroy(&stop);
}

/* Registrations and lookups from many threads at once. The threads count
 * their own failures (check.h's counters are not thread-safe). */
enum { THREADS = 8, PER_THREAD = 200 };
static int g_thread_failures;

static void *register_many(void *arg)
{
    long id = (long)arg;
    int bad = 0;
    for (int i = 0; i < PER_THREAD; i++) {
        char name[64];
        snprintf(name, sizeof name, "t%ld-%d", id, i);
        sp_error err = {0};
        bad += sp_native_register(g_reg, name, fn_echo, (void *)id, &err) != 0;
        sp_native_fn fn = NULL;
        void *user = NULL;
        bad += !(sp_native_lookup(g_reg, name, &fn, &user) && fn == fn_echo && user == (void *)id);
        bad += !(sp_native_lookup(g_reg, "charge", &fn, &user) && fn == fn_charge);
    }
    __atomic_add_fetch(&g_thread_failures, bad, __ATOMIC_SEQ_CST);
    return NULL;
}

static void *call_many(void *arg)
{
    (void)arg;
    int bad = 0;
    sp_runner_ctx ctx = make_ctx(NULL);
    json_t *action = json_pack("{s:s,s:s}", "kind", "native", "function", "charge");
    for (int i = 0; i < 50; i++) {
        sp_activity_output o;
        bad += sp_native_run(&ctx, "pay", action, NULL, &o) != 0 || o.kind != SP_OUTPUT_SUCCESS;
        sp_activity_output_free(&o);
    }
    json_decref(action);
    __atomic_add_fetch(&g_thread_failures, bad, __ATOMIC_SEQ_CST);
    return NULL;
}

static void test_concurrency(void)
{
    pthread_t t[THREADS + 2];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, register_many, (void *)i);
    pthread_create(&t[THREADS], NULL, call_many, NULL);
    pthread_create(&t[THREADS + 1], NULL, call_many, NULL);
    for (int i = 0; i < THREADS + 2; i++)
        pthread_join(t[i], NULL);
    CHECK_INT(g_thread_failures, 0);
    sp_native_fn fn;
    void *user;
    CHECK(sp_native_lookup(g_reg, "t7-199", &fn, &user) && user == (void *)7L);
    CHECK_INT(g_charges, 101);
}

int main(void)
{
    g_reg = sp_native_registry_new();
    CHECK(g_reg != NULL);
    test_register();
    test_success();
    test_errors();
    test_rejections();
    test_stop();
    test_concurrency();
    sp_native_registry_free(g_reg);
    return check_done("test_native_runner");
}
