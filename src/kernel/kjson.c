/*
 * kjson.c - typed reading helpers and failure filling for the kernel's
 * decoders, and the names of the invocation states and run statuses. Must
 * never accept a member the caller did not name.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kernel/internal.h"

int kfail_set(kfail *f, const char *kind, const char *code, const char *fmt, ...)
{
    f->out->kind = kind;
    snprintf(f->out->code, sizeof f->out->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->out->details, sizeof f->out->details, fmt, ap);
    va_end(ap);
    return -1;
}

int kfail_oom(kfail *f)
{
    f->oom = true;
    return -1;
}

bool kjson_str_is(const json_t *s, const char *lit)
{
    size_t n = strlen(lit);
    return json_is_string(s) && json_string_length(s) == n &&
           memcmp(json_string_value(s), lit, n) == 0;
}

static bool named(const char *key, size_t len, const char *const *names)
{
    for (; *names; names++)
        if (strlen(*names) == len && memcmp(*names, key, len) == 0)
            return true;
    return false;
}

bool kjson_members_within(const json_t *obj, const char *const *names)
{
    if (!json_is_object(obj))
        return false;
    const char *key;
    size_t len;
    json_t *v;
    json_object_keylen_foreach((json_t *)obj, key, len, v)
    {
        if (!named(key, len, names))
            return false;
    }
    return true;
}

bool kjson_members_exactly(const json_t *obj, const char *const *names)
{
    if (!kjson_members_within(obj, names))
        return false;
    for (; *names; names++)
        if (!json_object_get(obj, *names))
            return false;
    return true;
}

bool kjson_u32(const json_t *v, uint32_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > (json_int_t)UINT32_MAX)
        return false;
    *out = (uint32_t)json_integer_value(v);
    return true;
}

json_t *kjson_error_info(const json_t *v, bool *oom)
{
    static const char *const names[] = {"code", "message", "nodeId", "details", NULL};
    *oom = false;
    if (!kjson_members_within(v, names))
        return NULL;
    json_t *code = json_object_get(v, "code"), *message = json_object_get(v, "message");
    json_t *node_id = json_object_get(v, "nodeId"), *details = json_object_get(v, "details");
    if (!json_is_string(code) || !json_is_string(message))
        return NULL;
    if (node_id && !json_is_null(node_id) && !json_is_string(node_id))
        return NULL;
    json_t *e = json_pack("{sOsOsOsO}", "code", code, "message", message, "nodeId",
                          node_id ? node_id : json_null(), "details",
                          details ? details : json_null());
    if (!e)
        *oom = true;
    return e;
}

kinv_state k_inv_state(const json_t *inv)
{
    static const char *const names[] = {"scheduled", "unknown", "stuck"};
    const json_t *state = json_object_get(inv, "state");
    for (int i = 0; i < 3; i++)
        if (kjson_str_is(state, names[i]))
            return (kinv_state)i;
    return INV_INVALID;
}

static const char *const run_status_names[] = {"running",   "waiting", "needs-intervention",
                                               "completed", "failed",  "cancelled"};

krun_status k_run_status(const json_t *status)
{
    for (int i = 0; i < RUN_INVALID; i++)
        if (kjson_str_is(status, run_status_names[i]))
            return (krun_status)i;
    return RUN_INVALID;
}

const char *k_run_status_name(krun_status s) { return s < RUN_INVALID ? run_status_names[s] : ""; }

bool k_run_terminal(krun_status s)
{
    return s == RUN_COMPLETED || s == RUN_FAILED || s == RUN_CANCELLED;
}
