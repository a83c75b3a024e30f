/*
 * native.c - the registry of embedder functions and the `native` runner
 * (see native.h for the contract).
 *
 * What it must never do: call a function that was not registered under the
 * exact name, hold the registry lock while a function runs, or pass on an
 * outcome, code or output that is not valid (canonical-domain) JSON text.
 */
#include "runners/native.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "json/json.h"
#include "runners/registry.h"

#define MESSAGE_MAX 1000
#define OUTCOME_MAX 256

/* ---- the registry ---- */

typedef struct native_entry {
    char *name;
    sp_native_fn fn;
    void *user;
    unsigned flags; /* SP_NATIVE_* */
} native_entry;

struct sp_native_registry {
    pthread_rwlock_t lock;
    native_entry *entries;
    size_t n, cap;
};

sp_native_registry *sp_native_registry_new(void)
{
    sp_native_registry *r = calloc(1, sizeof *r);
    if (r && pthread_rwlock_init(&r->lock, NULL)) {
        free(r);
        return NULL;
    }
    return r;
}

void sp_native_registry_free(sp_native_registry *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->entries[i].name);
    free(r->entries);
    pthread_rwlock_destroy(&r->lock);
    free(r);
}

static native_entry *find(const sp_native_registry *r, const char *name)
{
    for (size_t i = 0; i < r->n; i++)
        if (strcmp(r->entries[i].name, name) == 0)
            return &r->entries[i];
    return NULL;
}

static int add_entry(sp_native_registry *r, const char *name, sp_native_fn fn, void *user,
                     unsigned flags, sp_error *err)
{
    if (find(r, name))
        return sp_fail(err, "native.duplicate", "native function \"%s\" is already registered",
                       name);
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        native_entry *e = realloc(r->entries, cap * sizeof *e);
        if (!e)
            return sp_oom(err);
        r->entries = e;
        r->cap = cap;
    }
    char *copy = strdup(name);
    if (!copy)
        return sp_oom(err);
    r->entries[r->n++] = (native_entry){copy, fn, user, flags};
    return 0;
}

int sp_native_register(sp_native_registry *r, const char *name, sp_native_fn fn, void *user,
                       sp_error *err)
{
    return sp_native_register_with(r, name, fn, user, 0, err);
}

int sp_native_register_with(sp_native_registry *r, const char *name, sp_native_fn fn, void *user,
                            unsigned flags, sp_error *err)
{
    size_t len = name ? strnlen(name, SP_NATIVE_NAME_MAX + 1) : 0;
    if (!fn || len == 0 || len > SP_NATIVE_NAME_MAX || !sp_utf8_valid(name, len))
        return sp_fail(err, "native.invalid-name",
                       "a native function needs a name of 1 to %d bytes of UTF-8 and a function",
                       SP_NATIVE_NAME_MAX);
    pthread_rwlock_wrlock(&r->lock);
    int rc = add_entry(r, name, fn, user, flags, err);
    pthread_rwlock_unlock(&r->lock);
    return rc;
}

bool sp_native_lookup(const sp_native_registry *registry, const char *name, sp_native_fn *fn,
                      void **user)
{
    sp_native_registry *r = (sp_native_registry *)registry; /* the lock is not the value */
    pthread_rwlock_rdlock(&r->lock);
    native_entry *e = find(r, name);
    if (e) {
        *fn = e->fn;
        *user = e->user;
    }
    pthread_rwlock_unlock(&r->lock);
    return e != NULL;
}

static bool is_inline(const sp_native_registry *registry, const char *name)
{
    sp_native_registry *r = (sp_native_registry *)registry; /* the lock is not the value */
    pthread_rwlock_rdlock(&r->lock);
    native_entry *e = find(r, name);
    bool quick = e && (e->flags & SP_NATIVE_INLINE);
    pthread_rwlock_unlock(&r->lock);
    return quick;
}

/* ---- one call ---- */

struct sp_native_call {
    const sp_runner_ctx *ctx;
    bool reported, oom;
    sp_output_kind kind;
    char *outcome, *output, *code, *message;
    size_t output_len;
    bool retryable;
};

static void call_clear(sp_native_call *c)
{
    free(c->outcome);
    free(c->output);
    free(c->code);
    free(c->message);
    c->outcome = c->output = c->code = c->message = NULL;
    c->output_len = 0;
    c->reported = false;
}

static char *copy_or_null(const char *s, size_t len, bool *oom)
{
    if (!s)
        return NULL;
    char *c = malloc(len + 1);
    if (!c) {
        *oom = true;
        return NULL;
    }
    memcpy(c, s, len);
    c[len] = '\0';
    return c;
}

int sp_native_succeed(sp_native_call *c, const char *outcome, const char *output_json,
                      size_t output_len)
{
    call_clear(c);
    c->oom = false;
    c->kind = SP_OUTPUT_SUCCESS;
    c->outcome = copy_or_null(outcome ? outcome : "ok", strlen(outcome ? outcome : "ok"), &c->oom);
    c->output = copy_or_null(output_json, output_len, &c->oom);
    c->output_len = output_json ? output_len : 0;
    c->reported = true;
    return c->oom ? -1 : 0;
}

static int report_error(sp_native_call *c, sp_output_kind kind, const char *code,
                        const char *message, bool retryable)
{
    call_clear(c);
    c->oom = false;
    c->kind = kind;
    c->retryable = retryable;
    c->code = copy_or_null(code ? code : "", code ? strlen(code) : 0, &c->oom);
    c->message = copy_or_null(message ? message : "", message ? strlen(message) : 0, &c->oom);
    c->reported = true;
    return c->oom ? -1 : 0;
}

int sp_native_fail(sp_native_call *c, const char *code, const char *message, bool retryable)
{
    return report_error(c, SP_OUTPUT_FAILURE, code, message, retryable);
}

int sp_native_unknown(sp_native_call *c, const char *code, const char *message)
{
    return report_error(c, SP_OUTPUT_UNKNOWN, code, message, true);
}

static const char *or_empty(const char *s) { return s ? s : ""; }

const char *sp_native_run_id(const sp_native_call *c) { return or_empty(c->ctx->run_id); }
const char *sp_native_node_id(const sp_native_call *c) { return or_empty(c->ctx->node_id); }
const char *sp_native_invocation_id(const sp_native_call *c)
{
    return or_empty(c->ctx->invocation_id);
}
const char *sp_native_effect_key(const sp_native_call *c) { return or_empty(c->ctx->effect_key); }
uint32_t sp_native_attempt(const sp_native_call *c) { return c->ctx->attempt; }

bool sp_native_stop_requested(const sp_native_call *c)
{
    return c->ctx->stop && sp_stop_fired(c->ctx->stop);
}

int sp_native_stop_fd(const sp_native_call *c) { return c->ctx->stop ? sp_stop_fd(c->ctx->stop) : -1; }

/* ---- the runner ---- */

__attribute__((format(printf, 5, 6))) static void fail(sp_activity_output *out, const char *code,
                                                        bool retryable, json_t *details,
                                                        const char *fmt, ...)
{
    char raw[2048], clean[MESSAGE_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    sp_utf8_clean(clean, sizeof clean, raw);
    sp_output_failure(out, code, retryable, details, "%s", clean);
}

static bool valid_name(const char *s, size_t max)
{
    size_t len = s ? strnlen(s, max + 1) : 0;
    return len > 0 && len <= max && sp_utf8_valid(s, len);
}

static void map_success(const sp_native_call *c, const char *id, sp_activity_output *out)
{
    sp_error err = {0};
    json_t *value = NULL;
    if (!valid_name(c->outcome, OUTCOME_MAX)) {
        fail(out, "native.malformed-output", false, NULL,
             "action %s: the outcome must be 1 to %d bytes of UTF-8", id, OUTCOME_MAX);
        return;
    }
    if (c->output && !(value = sp_json_parse(c->output, c->output_len, &err))) {
        fail(out, "native.malformed-output", false, json_pack("{s:s}", "problem", err.code),
             "action %s: the output is not canonical-domain JSON: %s", id, err.message);
        sp_error_clear(&err);
        return;
    }
    sp_output_success(out, c->outcome, value);
}

static void map_error(const sp_native_call *c, const char *id, sp_activity_output *out)
{
    char message[MESSAGE_MAX + 1];
    if (!valid_name(c->code, SP_CODE_MAX - 1)) {
        fail(out, "native.malformed-output", false, NULL,
             "action %s: an error code must be 1 to %d bytes of UTF-8", id, SP_CODE_MAX - 1);
        return;
    }
    sp_utf8_clean(message, sizeof message, c->message);
    if (c->kind == SP_OUTPUT_UNKNOWN)
        sp_output_unknown(out, c->code, NULL, "%s", message);
    else
        sp_output_failure(out, c->code, c->retryable, NULL, "%s", message);
}

static void map_call(const sp_native_call *c, int rc, const char *id, const char *fn,
                     sp_activity_output *out)
{
    if (rc != 0 || c->oom)
        fail(out, "native.failed", true, NULL, "action %s: native function \"%s\" could not run",
             id, fn);
    else if (!c->reported)
        fail(out, "native.no-result", false, NULL,
             "action %s: native function \"%s\" returned without reporting a result", id, fn);
    else if (c->kind == SP_OUTPUT_SUCCESS)
        map_success(c, id, out);
    else
        map_error(c, id, out);
}

static void call_function(const sp_runner_ctx *ctx, const char *id, const char *name,
                          sp_native_fn fn, void *user, const json_t *input,
                          sp_activity_output *out)
{
    sp_error err = {0};
    size_t len = 4;
    char *bytes = input ? sp_json_encode_alloc(input, &len, &err) : strdup("null");
    if (!bytes) {
        fail(out, "native.invalid", false, NULL, "action %s: the input cannot be encoded: %s", id,
             err.message);
        sp_error_clear(&err);
        return;
    }
    sp_native_call call = {.ctx = ctx};
    int rc = fn(user, bytes, len, &call);
    map_call(&call, rc, id, name, out);
    call_clear(&call);
    free(bytes);
}

static int native_validate(const char *id, const json_t *action, sp_error *err)
{
    static const char *const known[] = {"kind", "effect", "outcomes", "retry", "function",
                                        "description", NULL};
    if (sp_action_check_members(id, action, known, "a native action", err))
        return -1;
    const json_t *fn = json_object_get(action, "function");
    if (!json_is_string(fn) || json_string_length(fn) == 0 ||
        strlen(json_string_value(fn)) != json_string_length(fn))
        return sp_fail(err, "action.invalid",
                       "action %s: a native action names its registered \"function\"", id);
    return 0;
}

static int native_run(const sp_runner_ctx *ctx, const sp_runner_action *a, const json_t *input,
                      sp_activity_output *out)
{
    return sp_native_run(ctx, a->id, a->raw, input, out);
}

int sp_native_run(const sp_runner_ctx *ctx, const char *action_id, const json_t *action,
                  const json_t *input, sp_activity_output *out)
{
    sp_error err = {0};
    sp_native_fn fn;
    void *user;
    memset(out, 0, sizeof *out);
    if (native_validate(action_id, action, &err)) {
        fail(out, "native.invalid", false, NULL, "%s", err.message);
        sp_error_clear(&err);
    } else {
        const char *name = json_string_value(json_object_get(action, "function"));
        if (!ctx->natives || !sp_native_lookup(ctx->natives, name, &fn, &user))
            fail(out, "native.unknown-function", false, json_pack("{s:s}", "function", name),
                 "action %s: no native function \"%s\" is registered", action_id, name);
        else
            call_function(ctx, action_id, name, fn, user, input, out);
    }
    return out->kind == SP_OUTPUT_SUCCESS || out->error ? 0 : -1;
}

/* A function registered inline runs on the engine's loop thread. */
static bool native_quick(const sp_runner_action *a, const sp_native_registry *natives)
{
    const char *name = json_string_value(json_object_get(a->raw, "function"));
    return natives && name && is_inline(natives, name);
}

/* No prepare: the registered function is looked up at each call, in the
 * registry of the calling engine (ctx->natives). */
const sp_runner sp_native_runner = {
    .kind = "native",
    .validate = native_validate,
    .run = native_run,
    .quick = native_quick,
};
