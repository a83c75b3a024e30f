/*
 * test_api.c - the public C API (include/spore/spore.h) end to end, through
 * that header only: native functions registered on a handle, a run with a
 * retried idempotent step (same effect key on both attempts), a signal wait
 * resumed by spore_signal, an unknown outcome answered by spore_resolve,
 * status read back (also from a second handle), many runs started in one
 * call, interrupts, and the error codes of bad input.
 *
 * Must never include an internal header: what this test can do, an
 * embedder can do. (jansson is used only to read the status JSON back.)
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "spore/spore.h"

static char g_dir[256];

static void db_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", g_dir, name);
}

/* ---- native functions ---- */

typedef struct charge_log {
    pthread_mutex_t mu;
    int calls;
    uint32_t attempts[8];
    char keys[8][160];
    char invocations[8][160];
    char runs[8][160];
    char nodes[8][64];
} charge_log;

static charge_log g_charge = {.mu = PTHREAD_MUTEX_INITIALIZER};
static atomic_int g_ship_calls;

/* Idempotent charge: the first attempt meets an outage (retryable), the
 * second succeeds with a receipt named after the effect key. */
static int fn_charge(void *user, const char *input, size_t len, spore_call *call)
{
    charge_log *log = user;
    CHECK(input != NULL && strlen(input) == len);
    pthread_mutex_lock(&log->mu);
    int i = log->calls < 8 ? log->calls : 7;
    log->calls++;
    log->attempts[i] = spore_call_attempt(call);
    snprintf(log->keys[i], sizeof log->keys[i], "%s", spore_call_effect_key(call));
    snprintf(log->invocations[i], sizeof log->invocations[i], "%s",
             spore_call_invocation_id(call));
    snprintf(log->runs[i], sizeof log->runs[i], "%s", spore_call_run_id(call));
    snprintf(log->nodes[i], sizeof log->nodes[i], "%s", spore_call_node_id(call));
    pthread_mutex_unlock(&log->mu);
    CHECK(!spore_call_stop_requested(call));
    if (spore_call_attempt(call) == 1)
        return spore_call_fail(call, "pay.unavailable", "the payment service is down", true);
    char out[300];
    snprintf(out, sizeof out, "{ \"receipt\": \"%s\", \"input\": %s }",
             spore_call_effect_key(call), input);
    return spore_call_succeed(call, "charged", out, strlen(out));
}

/* Echo the input as the output. */
static int fn_ship(void *user, const char *input, size_t len, spore_call *call)
{
    (void)user;
    atomic_fetch_add(&g_ship_calls, 1);
    return spore_call_succeed(call, NULL, input, len);
}

/* The effect may or may not have happened. */
static int fn_lost(void *user, const char *input, size_t len, spore_call *call)
{
    (void)user, (void)input, (void)len;
    return spore_call_unknown(call, "wire.lost", "the connection dropped mid-transfer");
}

/* ---- workflows ---- */

static const char ORDER[] =
    "{\"format\":\"runspore.workflow/0.1\",\"name\":\"order\",\"start\":\"charge\","
    " \"actions\":{"
    "  \"charge\":{\"kind\":\"native\",\"function\":\"charge\",\"effect\":\"idempotent\","
    "              \"outcomes\":[\"charged\"],\"retry\":{\"maxAttempts\":3}},"
    "  \"ship\":{\"kind\":\"native\",\"function\":\"ship\",\"effect\":\"idempotent\"}},"
    " \"nodes\":{"
    "  \"charge\":{\"kind\":\"activity\",\"action\":\"charge\",\"input\":{\"$get\":[\"input\"]},"
    "              \"outcomes\":{\"charged\":\"approval\"}},"
    "  \"approval\":{\"kind\":\"await-signal\",\"signal\":\"approval\","
    "                \"outcomes\":{\"approved\":\"ship\",\"rejected\":\"rejected\"}},"
    "  \"ship\":{\"kind\":\"activity\",\"action\":\"ship\","
    "            \"input\":{\"charge\":{\"$get\":[\"nodes\",\"charge\",\"output\"]},"
    "                       \"approval\":{\"$get\":[\"nodes\",\"approval\",\"output\"]}},"
    "            \"outcomes\":{\"ok\":\"done\"}},"
    "  \"done\":{\"kind\":\"complete\",\"output\":{\"$get\":[\"nodes\",\"ship\",\"output\"]}},"
    "  \"rejected\":{\"kind\":\"fail\",\"error\":{\"code\":\"order.rejected\",\"message\":\"no\"}}}}";

/* One pure step echoing the run's input. */
static const char ECHO[] =
    "{\"format\":\"runspore.workflow/0.1\",\"name\":\"echo\",\"start\":\"s\","
    " \"actions\":{\"s\":{\"kind\":\"native\",\"function\":\"ship\",\"effect\":\"pure\"}},"
    " \"nodes\":{\"s\":{\"kind\":\"activity\",\"action\":\"s\",\"input\":{\"$get\":[\"input\"]},"
    "                  \"outcomes\":{\"ok\":\"d\"}},\"d\":{\"kind\":\"complete\","
    "                  \"output\":{\"$get\":[\"nodes\",\"s\",\"output\"]}}}}";

static const char TRANSFER[] =
    "{\"format\":\"runspore.workflow/0.1\",\"name\":\"transfer\",\"start\":\"send\","
    " \"actions\":{\"send\":{\"kind\":\"native\",\"function\":\"lost\",\"effect\":\"unsafe\"}},"
    " \"nodes\":{"
    "  \"send\":{\"kind\":\"activity\",\"action\":\"send\",\"outcomes\":{\"ok\":\"done\"}},"
    "  \"done\":{\"kind\":\"complete\",\"output\":{\"$get\":[\"nodes\",\"send\",\"output\"]}}}}";

static const char UNREGISTERED[] =
    "{\"format\":\"runspore.workflow/0.1\",\"name\":\"ghost\",\"start\":\"a\","
    " \"actions\":{\"a\":{\"kind\":\"native\",\"function\":\"nobody\",\"effect\":\"pure\"}},"
    " \"nodes\":{\"a\":{\"kind\":\"activity\",\"action\":\"a\",\"outcomes\":{\"ok\":\"done\"}},"
    "            \"done\":{\"kind\":\"complete\"}}}";

/* No nodes: the package builds, the kernel refuses it (workflow.invalid). */
static const char NO_NODES[] = "{\"format\":\"runspore.workflow/0.1\",\"name\":\"x\",\"start\":\"a\"}";

/* An action without a kind: refused by the validation (action.kind-missing). */
static const char NO_KIND[] =
    "{\"format\":\"runspore.workflow/0.1\",\"name\":\"x\",\"start\":\"a\","
    "\"actions\":{\"a\":{\"effect\":\"pure\"}},\"nodes\":{\"a\":{\"kind\":"
    "\"activity\",\"action\":\"a\",\"outcomes\":{\"ok\":\"b\"}},\"b\":{\"kind\":"
    "\"complete\"}}}";

/* ---- helpers ---- */

static json_t *status_of(spore_db *db, const char *run_id)
{
    spore_error err = {0};
    char *text = NULL;
    int rc = spore_status(db, run_id, &text, &err);
    CHECK_INT(rc, 0);
    if (rc) {
        fprintf(stderr, "status: %s: %s\n", err.code, err.message);
        spore_error_clear(&err);
        return json_object();
    }
    json_error_t jerr;
    json_t *v = json_loads(text, 0, &jerr);
    CHECK(v != NULL);
    spore_free(text);
    return v ? v : json_object();
}

static const char *str_at(json_t *v, const char *a, const char *b, const char *c)
{
    json_t *x = json_object_get(v, a);
    if (b)
        x = json_object_get(x, b);
    if (c)
        x = json_object_get(x, c);
    return json_string_value(x);
}

static spore_park run(spore_db *db, const char *run_id)
{
    spore_error err = {0};
    spore_park park = (spore_park)-1;
    int rc = spore_run_until_parked(db, run_id, &park, &err);
    CHECK_INT(rc, 0);
    if (rc)
        fprintf(stderr, "run_until_parked: %s: %s\n", err.code, err.message);
    spore_error_clear(&err);
    return park;
}

#define CHECK_CODE(call_, code_)                                                         \
    do {                                                                                 \
        spore_error e_ = {0};                                                            \
        CHECK_INT((call_ (&e_)), -1);                                                    \
        CHECK_STR(e_.code, code_);                                                       \
        CHECK(e_.message[0] != '\0');                                                    \
        spore_error_clear(&e_);                                                          \
    } while (0)

/* ---- tests ---- */

static void test_version(void)
{
    CHECK_STR(spore_version(), SPORE_VERSION);
    CHECK_STR(spore_park_name(SPORE_PARK_COMPLETED), "completed");
    CHECK_STR(spore_park_name(SPORE_PARK_INTERVENTION), "needs-intervention");
    CHECK_STR(spore_park_name((spore_park)42), "unknown");
    spore_error_clear(NULL);
    spore_free(NULL);
    spore_close(NULL);
    spore_interrupt(NULL);
}

static void test_registration(spore_db *db)
{
    spore_error err = {0};
    CHECK_INT(spore_register_native(db, "charge", fn_charge, &g_charge, &err), 0);
    CHECK_INT(spore_register_native(db, "ship", fn_ship, NULL, &err), 0);
    CHECK_INT(spore_register_native(db, "lost", fn_lost, NULL, &err), 0);
    CHECK_STR(err.code, ""); /* success leaves the error untouched */
    spore_error e1 = {0};
    CHECK_INT(spore_register_native(db, "ship", fn_ship, NULL, &e1), -1);
    CHECK_STR(e1.code, "native.duplicate");
    spore_error_clear(&e1);
    CHECK_INT(spore_register_native(db, "", fn_ship, NULL, &e1), -1);
    CHECK_STR(e1.code, "native.invalid-name");
    spore_error_clear(&e1);
    CHECK_INT(spore_register_native(db, "x", NULL, NULL, &e1), -1);
    CHECK_STR(e1.code, "native.invalid-name");
    spore_error_clear(&e1);
    CHECK_INT(spore_register_native(NULL, "x", fn_ship, NULL, &e1), -1);
    CHECK_STR(e1.code, "usage");
    spore_error_clear(&e1);
    CHECK_INT(spore_register_native(db, "y", fn_ship, NULL, NULL), 0); /* err may be NULL */
}

/* charge (fails once, retried) -> approval signal -> ship -> done. */
static void test_order(spore_db *db, char **order_id)
{
    spore_error err = {0};
    char *run_id = NULL, *again = NULL;
    bool created = false;
    CHECK_INT(spore_start(db, ORDER, "{\"amount\": 5}", "order-1", &run_id, &created, &err), 0);
    CHECK(created);
    CHECK(run_id != NULL && strncmp(run_id, "run_", 4) == 0);
    CHECK_INT(spore_start(db, ORDER, "{\"amount\": 5}", "order-1", &again, &created, &err), 0);
    CHECK(!created);
    CHECK_STR(again, run_id);
    spore_free(again);
    if (!run_id)
        return;
    *order_id = run_id;

    json_t *st = status_of(db, run_id);
    CHECK_STR(str_at(st, "status", NULL, NULL), "created");
    CHECK_STR(str_at(st, "startKey", NULL, NULL), "order-1");
    CHECK_STR(str_at(st, "runId", NULL, NULL), run_id);
    json_decref(st);

    CHECK_INT(run(db, run_id), SPORE_PARK_WAITING);
    CHECK_INT(g_charge.calls, 2);
    CHECK_INT(g_charge.attempts[0], 1);
    CHECK_INT(g_charge.attempts[1], 2);
    CHECK(g_charge.keys[0][0] != '\0');
    CHECK_STR(g_charge.keys[1], g_charge.keys[0]); /* identical across attempts */
    CHECK_STR(g_charge.invocations[0], g_charge.keys[0]);
    CHECK_STR(g_charge.runs[0], run_id);
    CHECK_STR(g_charge.nodes[1], "charge");
    CHECK_INT(atomic_load(&g_ship_calls), 0);

    st = status_of(db, run_id);
    CHECK_STR(str_at(st, "status", NULL, NULL), "waiting");
    CHECK_STR(str_at(st, "position", "nodeId", NULL), "approval");
    CHECK_STR(str_at(st, "nodes", "charge", "outcome"), "charged");
    CHECK(json_is_null(json_object_get(st, "result")));
    CHECK(json_is_null(json_object_get(st, "quarantine")));
    json_decref(st);

    /* signals: idempotent by message ID */
    bool dup = true;
    CHECK_INT(spore_signal(db, run_id, "approval", "approved", "{\"by\": \"ops\"}", "m-1", &dup,
                           &err),
              0);
    CHECK(!dup);
    CHECK_INT(spore_signal(db, run_id, "approval", "approved", "{\"by\":\"ops\"}", "m-1", &dup,
                           &err),
              0);
    CHECK(dup);
    spore_error e = {0};
    CHECK_INT(spore_signal(db, run_id, "approval", "rejected", NULL, "m-1", &dup, &e), -1);
    CHECK_STR(e.code, "request.digest-mismatch");
    spore_error_clear(&e);
    CHECK_INT(spore_signal(db, run_id, "approval", NULL, "{\"x\": 1.5}", NULL, &dup, &e), -1);
    CHECK(strncmp(e.code, "canonical.", 10) == 0);
    spore_error_clear(&e);

    CHECK_INT(run(db, run_id), SPORE_PARK_COMPLETED);
    CHECK_INT(atomic_load(&g_ship_calls), 1);
    CHECK_INT(g_charge.calls, 2); /* a completed step never runs again */

    st = status_of(db, run_id);
    CHECK_STR(str_at(st, "status", NULL, NULL), "completed");
    json_t *output = json_object_get(json_object_get(st, "result"), "output");
    CHECK_STR(str_at(output, "approval", "by", NULL), "ops");
    CHECK_STR(str_at(output, "charge", "receipt", NULL), g_charge.keys[0]);
    CHECK_INT(json_integer_value(json_object_get(
                  json_object_get(json_object_get(output, "charge"), "input"), "amount")),
              5);
    CHECK(json_is_string(json_object_get(st, "revision")));
    CHECK(json_is_null(json_object_get(st, "position")));
    json_decref(st);

    CHECK_INT(run(db, run_id), SPORE_PARK_COMPLETED); /* parked already: nothing runs */
    CHECK_INT(atomic_load(&g_ship_calls), 1);
    bool released_dup = false;
    CHECK_INT(spore_release(db, run_id, &released_dup, &err), 0);
    CHECK_STR(err.code, "");
}

/* An unsafe step whose outcome is unknown parks the run; a person answers. */
static void test_resolve(spore_db *db)
{
    spore_error err = {0};
    char *run_id = NULL;
    CHECK_INT(spore_start(db, TRANSFER, NULL, NULL, &run_id, NULL, &err), 0);
    if (!run_id)
        return;
    CHECK_INT(run(db, run_id), SPORE_PARK_INTERVENTION);
    json_t *st = status_of(db, run_id);
    CHECK_STR(str_at(st, "status", NULL, NULL), "needs-intervention");
    CHECK_STR(str_at(st, "invocation", "state", NULL), "unknown");
    const char *inv = str_at(st, "invocation", "invocationId", NULL);
    CHECK(inv != NULL);
    char invocation[160] = "";
    snprintf(invocation, sizeof invocation, "%s", inv ? inv : "");
    json_decref(st);

    spore_error e = {0};
    CHECK_INT(spore_resolve(db, run_id, invocation, SPORE_RESOLVE_COMPLETE, NULL, NULL, NULL,
                            NULL, NULL, &e),
              -1);
    CHECK_STR(e.code, "usage"); /* complete needs an outcome */
    spore_error_clear(&e);
    CHECK_INT(spore_resolve(db, run_id, invocation, (spore_resolution)9, NULL, NULL, NULL, NULL,
                            NULL, &e),
              -1);
    CHECK_STR(e.code, "usage.invalid-value");
    spore_error_clear(&e);

    bool dup = true;
    CHECK_INT(spore_resolve(db, run_id, invocation, SPORE_RESOLVE_COMPLETE, "ok",
                            "{\"sent\": true}", NULL, "r-1", &dup, &err),
              0);
    CHECK(!dup);
    CHECK_INT(spore_resolve(db, run_id, invocation, SPORE_RESOLVE_COMPLETE, "ok",
                            "{\"sent\":true}", NULL, "r-1", &dup, &err),
              0);
    CHECK(dup);
    CHECK_INT(run(db, run_id), SPORE_PARK_COMPLETED);
    st = status_of(db, run_id);
    CHECK_STR(str_at(st, "status", NULL, NULL), "completed");
    CHECK(json_is_true(json_object_get(
        json_object_get(json_object_get(st, "result"), "output"), "sent")));
    json_decref(st);
    spore_free(run_id);
}

/* Many runs in one call (spore_start_many): each started as spore_start
 * would, a malformed input or start key refused alone, a start key given
 * twice naming one run, every run then completing with its own input. */
static void test_start_many(spore_db *db)
{
    enum { N = 6 };
    const char *inputs[N] = {"{\"n\":0}", NULL, "{\"n\":2", "{\"n\":3}", "{\"n\":4}", "{\"n\":4}"};
    const char *keys[N] = {"many-0", NULL, "many-2", "bad key", "many-4", "many-4"};
    char *run_ids[N];
    bool created[N];
    spore_error errors[N], err = {0};
    memset(errors, 0, sizeof errors);
    int before = atomic_load(&g_ship_calls);
    CHECK_INT(spore_start_many(db, ECHO, N, inputs, keys, run_ids, created, errors, &err), 2);
    CHECK(run_ids[0] && run_ids[1] && run_ids[4] && run_ids[5]);
    CHECK(!run_ids[2] && !run_ids[3]);
    CHECK_STR(errors[2].code, "canonical.syntax");
    CHECK_STR(errors[3].code, "usage.invalid-value");
    CHECK(created[0] && created[1] && created[4] && !created[5]);
    CHECK(run_ids[4] && run_ids[5] && strcmp(run_ids[4], run_ids[5]) == 0);
    for (int i = 0; i < N; i++) {
        spore_park park;
        if (run_ids[i] && i != 5) {
            CHECK_INT(spore_run_until_parked(db, run_ids[i], &park, &err), 0);
            CHECK_INT(park, SPORE_PARK_COMPLETED);
            json_t *st = status_of(db, run_ids[i]);
            json_t *n = json_object_get(json_object_get(json_object_get(st, "result"), "output"),
                                        "n");
            CHECK(i == 1 ? n == NULL : json_integer_value(n) == i); /* run 1: input {} */
            json_decref(st);
        }
        spore_free(run_ids[i]);
        spore_error_clear(&errors[i]);
    }
    CHECK_INT(atomic_load(&g_ship_calls) - before, 3);
    /* none tried: more than the bound, a NULL workflow */
    CHECK_INT(spore_start_many(db, ECHO, 1001, NULL, NULL, NULL, NULL, NULL, &err), -1);
    CHECK_STR(err.code, "usage");
    spore_error_clear(&err);
    CHECK_INT(spore_start_many(db, NULL, 1, NULL, NULL, NULL, NULL, NULL, &err), -1);
    CHECK_STR(err.code, "usage");
    spore_error_clear(&err);
    /* a package that fails its validation (validated once for all the
     * starts) is each start's answer; a bad key still answers first */
    const char *bad_keys[3] = {"nk-0", "bad key", "nk-2"};
    memset(errors, 0, sizeof errors);
    CHECK_INT(spore_start_many(db, NO_KIND, 3, NULL, bad_keys, run_ids, created, errors, &err),
              3);
    CHECK_STR(errors[0].code, "action.kind-missing");
    CHECK_STR(errors[1].code, "usage.invalid-value");
    CHECK_STR(errors[2].code, "action.kind-missing");
    for (int i = 0; i < 3; i++) {
        CHECK(run_ids[i] == NULL && !created[i]);
        spore_error_clear(&errors[i]);
    }
    /* a package the kernel cannot load: each start's dry run says so */
    CHECK_INT(spore_start_many(db, NO_NODES, 2, NULL, NULL, run_ids, created, errors, &err), 2);
    for (int i = 0; i < 2; i++) {
        CHECK_STR(errors[i].code, "workflow.invalid");
        CHECK(run_ids[i] == NULL && !created[i]);
        spore_error_clear(&errors[i]);
    }
}

/* A function nobody registered fails its step (not retryable). */
static void test_unregistered(spore_db *db)
{
    spore_error err = {0};
    char *run_id = NULL;
    CHECK_INT(spore_start(db, UNREGISTERED, "{}", "ghost-1", &run_id, NULL, &err), 0);
    if (!run_id)
        return;
    CHECK_INT(run(db, run_id), SPORE_PARK_FAILED);
    json_t *st = status_of(db, run_id);
    CHECK_STR(str_at(st, "status", NULL, NULL), "failed");
    CHECK_STR(str_at(st, "result", "error", "code"), "native.unknown-function");
    json_decref(st);
    spore_free(run_id);
}

static spore_db *g_db;
static int start_text(spore_error *e, const char *workflow, const char *input, const char *key)
{
    char *id = (char *)"untouched";
    int rc = spore_start(g_db, workflow, input, key, &id, NULL, e);
    CHECK(id == NULL);
    return rc;
}
static int start_bad_json(spore_error *e) { return start_text(e, "{\"format\":", NULL, NULL); }
static int start_float(spore_error *e) { return start_text(e, ORDER, "{\"a\": 0.5}", NULL); }
static int start_invalid(spore_error *e) { return start_text(e, NO_NODES, NULL, NULL); }
static int start_no_kind(spore_error *e) { return start_text(e, NO_KIND, NULL, NULL); }
static int start_bad_key(spore_error *e) { return start_text(e, ORDER, NULL, "a key"); }
static int start_null(spore_error *e) { return start_text(e, NULL, NULL, NULL); }
static int start_other_workflow(spore_error *e)
{
    return start_text(e, TRANSFER, NULL, "order-1"); /* the key names an order run */
}
static int status_missing(spore_error *e)
{
    char *text = (char *)"untouched";
    int rc = spore_status(g_db, "run_00000000000000000000000000000000", &text, e);
    CHECK(text == NULL);
    return rc;
}
static int run_missing(spore_error *e)
{
    spore_park p;
    return spore_run_until_parked(g_db, "run_nobody", &p, e);
}
static int signal_missing(spore_error *e)
{
    return spore_signal(g_db, "run_nobody", "approval", NULL, NULL, NULL, NULL, e);
}
static int release_missing(spore_error *e) { return spore_release(g_db, "run_nobody", NULL, e); }
static int resolve_missing(spore_error *e)
{
    return spore_resolve(g_db, "run_nobody", "inv", SPORE_RESOLVE_RETRY, NULL, NULL, NULL, NULL,
                         NULL, e);
}
static int status_null_db(spore_error *e)
{
    char *text;
    return spore_status(NULL, "run_x", &text, e);
}
static int run_null_id(spore_error *e) { return spore_run_until_parked(g_db, NULL, NULL, e); }
static int open_empty(spore_error *e) { return spore_open("", e) ? 0 : -1; }
static int open_garbage(spore_error *e)
{
    char path[512];
    db_path(path, sizeof path, "garbage.db");
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        for (int i = 0; i < 512; i++)
            fputs("this is not a database ", f);
        fclose(f);
    }
    spore_db *db = spore_open(path, e);
    spore_close(db);
    return db ? 0 : -1;
}

static void test_errors(spore_db *db)
{
    g_db = db;
    CHECK_CODE(start_bad_json, "canonical.syntax");
    CHECK_CODE(start_float, "canonical.non-integer");
    CHECK_CODE(start_invalid, "workflow.invalid");
    CHECK_CODE(start_no_kind, "action.kind-missing");
    CHECK_CODE(start_bad_key, "usage.invalid-value");
    CHECK_CODE(start_null, "usage");
    CHECK_CODE(start_other_workflow, "run.exists");
    CHECK_CODE(status_missing, "run.not-found");
    CHECK_CODE(run_missing, "run.not-found");
    CHECK_CODE(signal_missing, "run.not-found");
    CHECK_CODE(release_missing, "run.not-found");
    CHECK_CODE(resolve_missing, "run.not-found");
    CHECK_CODE(status_null_db, "usage");
    CHECK_CODE(run_null_id, "usage");
    CHECK_CODE(open_empty, "usage");
    CHECK_CODE(open_garbage, "store.corrupt");

    /* an error with details carries them as canonical JSON */
    spore_error e = {0};
    CHECK_INT(spore_start(db, "{\"a\":1,\"a\":2}", NULL, NULL, NULL, NULL, &e), -1);
    CHECK(strncmp(e.code, "canonical.", 10) == 0);
    if (e.details) {
        json_t *d = json_loads(e.details, 0, NULL);
        CHECK(d != NULL);
        json_decref(d);
    }
    spore_error_clear(&e);
    CHECK(e.details == NULL && e.code[0] == '\0');
}

/* A second handle sees what the first did; an interrupted handle parks at
 * once and another one finishes the run. */
static void test_second_handle(const char *path, const char *order_id)
{
    spore_error err = {0};
    spore_db *db = spore_open(path, &err);
    CHECK(db != NULL);
    if (!db)
        return;
    json_t *st = status_of(db, order_id);
    CHECK_STR(str_at(st, "status", NULL, NULL), "completed");
    json_decref(st);
    CHECK_INT(spore_register_native(db, "ship", fn_ship, NULL, &err), 0);

    char *run_id = NULL;
    static const char SHIP_ONLY[] =
        "{\"format\":\"runspore.workflow/0.1\",\"name\":\"ship\",\"start\":\"s\","
        " \"actions\":{\"s\":{\"kind\":\"native\",\"function\":\"ship\",\"effect\":\"pure\"}},"
        " \"nodes\":{\"s\":{\"kind\":\"activity\",\"action\":\"s\",\"input\":7,"
        "                  \"outcomes\":{\"ok\":\"d\"}},\"d\":{\"kind\":\"complete\","
        "                  \"output\":{\"$get\":[\"nodes\",\"s\",\"output\"]}}}}";
    CHECK_INT(spore_start(db, SHIP_ONLY, NULL, "ship-1", &run_id, NULL, &err), 0);
    int before = atomic_load(&g_ship_calls);
    spore_interrupt(db);
    CHECK_INT(run(db, run_id), SPORE_PARK_INTERRUPTED);
    CHECK_INT(run(db, run_id), SPORE_PARK_INTERRUPTED); /* permanent for the handle */
    CHECK_INT(atomic_load(&g_ship_calls), before);
    spore_close(db);

    db = spore_open(path, &err);
    CHECK(db != NULL);
    if (db && run_id) {
        CHECK_INT(spore_register_native(db, "ship", fn_ship, NULL, &err), 0);
        CHECK_INT(run(db, run_id), SPORE_PARK_COMPLETED);
        CHECK_INT(atomic_load(&g_ship_calls), before + 1);
        st = status_of(db, run_id);
        CHECK_INT(json_integer_value(json_object_get(json_object_get(st, "result"), "output")), 7);
        json_decref(st);
    }
    spore_free(run_id);
    spore_close(db);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/spore-api-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g_dir)) {
        perror("mkdtemp");
        return 2;
    }
    char path[512];
    db_path(path, sizeof path, "api.db");

    test_version();
    spore_error err = {0};
    spore_db *db = spore_open(path, &err);
    CHECK(db != NULL);
    if (!db) {
        fprintf(stderr, "spore_open: %s: %s\n", err.code, err.message);
        return check_done("test_api");
    }
    char *order_id = NULL;
    test_registration(db);
    test_order(db, &order_id);
    test_resolve(db);
    test_unregistered(db);
    test_start_many(db);
    test_errors(db);
    spore_close(db);
    if (order_id)
        test_second_handle(path, order_id);
    spore_free(order_id);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_api: could not remove %s\n", g_dir);
    return check_done("test_api");
}
