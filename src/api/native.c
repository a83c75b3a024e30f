/*
 * native.c - native functions through the public API: registration of
 * spore_native_fn functions in the handle's registry, and the spore_call_*
 * re-export of the call contract of src/runners/native.h.
 *
 * What it is for: the public function type takes an opaque `spore_call *`;
 * the registry calls an `sp_native_fn` taking `sp_native_call *`. A small
 * binding (the public function and its user pointer) registered behind one
 * trampoline joins the two without calling through a mismatched function
 * pointer type. spore_call is never defined: a `spore_call *` is the
 * runner's `sp_native_call *` under its public name.
 *
 * What it must never do: re-implement a check of the native runner (output
 * validation, name rules and reporting stay in src/runners/native.c).
 */
#include <stdlib.h>

#include "api/internal.h"

static sp_native_call *inner(spore_call *call) { return (sp_native_call *)call; }
static const sp_native_call *inner_c(const spore_call *call)
{
    return (const sp_native_call *)call;
}

static int trampoline(void *user, const char *input, size_t len, sp_native_call *call)
{
    const api_binding *b = user;
    return b->fn(b->user, input, len, (spore_call *)call);
}

static int register_native(spore_db *db, const char *name, spore_native_fn fn, void *user,
                           unsigned flags, spore_error *err)
{
    if (api_need_db(db, err))
        return -1;
    sp_error e = {0};
    if (!fn) { /* the registry's own code and message for a missing function */
        sp_native_register(db->natives, name, NULL, NULL, &e);
        return api_error(err, &e);
    }
    api_binding *b = calloc(1, sizeof *b);
    if (!b) {
        sp_oom(&e);
        return api_error(err, &e);
    }
    b->fn = fn;
    b->user = user;
    if (sp_native_register_with(db->natives, name, trampoline, b, flags, &e)) {
        free(b);
        return api_error(err, &e);
    }
    pthread_mutex_lock(&db->bindings_mu);
    b->next = db->bindings;
    db->bindings = b;
    pthread_mutex_unlock(&db->bindings_mu);
    return 0;
}

int spore_register_native(spore_db *db, const char *name, spore_native_fn fn, void *user,
                          spore_error *err)
{
    return register_native(db, name, fn, user, 0, err);
}

int spore_register_native_inline(spore_db *db, const char *name, spore_native_fn fn, void *user,
                                 spore_error *err)
{
    return register_native(db, name, fn, user, SP_NATIVE_INLINE, err);
}

int spore_call_succeed(spore_call *call, const char *outcome, const char *output_json,
                       size_t output_len)
{
    return sp_native_succeed(inner(call), outcome, output_json, output_len);
}

int spore_call_fail(spore_call *call, const char *code, const char *message, bool retryable)
{
    return sp_native_fail(inner(call), code, message, retryable);
}

int spore_call_unknown(spore_call *call, const char *code, const char *message)
{
    return sp_native_unknown(inner(call), code, message);
}

const char *spore_call_run_id(const spore_call *call) { return sp_native_run_id(inner_c(call)); }

const char *spore_call_node_id(const spore_call *call)
{
    return sp_native_node_id(inner_c(call));
}

const char *spore_call_invocation_id(const spore_call *call)
{
    return sp_native_invocation_id(inner_c(call));
}

const char *spore_call_effect_key(const spore_call *call)
{
    return sp_native_effect_key(inner_c(call));
}

uint32_t spore_call_attempt(const spore_call *call) { return sp_native_attempt(inner_c(call)); }

bool spore_call_stop_requested(const spore_call *call)
{
    return sp_native_stop_requested(inner_c(call));
}

int spore_call_stop_fd(const spore_call *call) { return sp_native_stop_fd(inner_c(call)); }
