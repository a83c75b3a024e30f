/*
 * registry.c - the built-in runner table and the kind-agnostic helpers of
 * runner.h. Never resolves a kind it does not list, and never serves a kind
 * this host declines.
 */
#include "runners/registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runners/async_spec.h"

int sp_action_check_members(const char *id, const json_t *obj, const char *const *known,
                            const char *what, sp_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        bool ok = false;
        for (const char *const *k = known; *k && !ok; k++)
            ok = strcmp(*k, key) == 0;
        if (!ok)
            return sp_fail(err, "action.invalid", "action %s: unknown member \"%s\" for %s", id,
                           key, what);
    }
    return 0;
}

static const sp_runner *const RUNNERS[] = {
    &sp_command_runner, &sp_native_runner, &sp_external_runner, &sp_agent_runner,
    &sp_component_runner, /* runners/component.c */
};
#define NRUNNERS (sizeof RUNNERS / sizeof RUNNERS[0])

/* SPORE_DISABLED_KINDS=kind,kind: this host declines those kinds, exactly
 * as if it had no runner for them (a host without a GPU, say, or tests of
 * capability-missing). */
static bool disabled(const char *kind)
{
    const char *list = getenv("SPORE_DISABLED_KINDS");
    size_t n = strlen(kind);
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, kind, n) == 0)
            return true;
        p += len + (comma ? 1 : 0);
    }
    return false;
}

const sp_runner *sp_runner_find(const char *kind)
{
    for (size_t i = 0; kind && i < NRUNNERS; i++)
        if (strcmp(RUNNERS[i]->kind, kind) == 0)
            return disabled(kind) ? NULL : RUNNERS[i];
    return NULL;
}

const sp_runner *sp_runner_of(const char *action_id, const json_t *action, sp_error *err)
{
    const json_t *kind = json_object_get(action, "kind");
    if (!json_is_string(kind)) {
        sp_fail(err, "action.kind-missing", "action %s has no \"kind\" (command, native, ...)",
                action_id);
        return NULL;
    }
    const sp_runner *runner = sp_runner_find(json_string_value(kind));
    if (!runner)
        sp_fail(err, "action.kind-unregistered",
                "action %s: this spore has no runner for kind \"%s\" (see spore capabilities)",
                action_id, json_string_value(kind));
    return runner;
}

static const char *ENABLED[NRUNNERS + 1];
static pthread_once_t ENABLED_ONCE = PTHREAD_ONCE_INIT;

static void fill_enabled(void)
{
    size_t n = 0;
    for (size_t i = 0; i < NRUNNERS; i++)
        if (!disabled(RUNNERS[i]->kind))
            ENABLED[n++] = RUNNERS[i]->kind;
    ENABLED[n] = NULL;
}

const char *const *sp_runner_kinds(void)
{
    pthread_once(&ENABLED_ONCE, fill_enabled);
    return ENABLED;
}

/* Whether the action is unservable, without a reason. */
static const char *unservable_verdict(const json_t *action)
{
    char why[256];
    return sp_action_unservable(action, why, sizeof why) ? "the action cannot be served here"
                                                         : NULL;
}

/* A {"component": ...} hook needs the component runner on this host. */
static const char *hook_unservable(const json_t *hook, const char *name, char *why, size_t n)
{
    if (!json_is_object(hook) || !json_object_get(hook, "component") ||
        sp_runner_find(sp_component_runner.kind))
        return NULL;
    snprintf(why, n, "async.%s in component form needs the component runner, which this spore "
             "does not offer (see spore capabilities)", name);
    return why;
}

const char *sp_action_unservable(const json_t *action, char *why, size_t n)
{
    if (!why || n == 0) /* no room for the reason (never so in spore): the verdict alone */
        return unservable_verdict(action);
    const json_t *kind = json_object_get(action, "kind");
    if (!json_is_string(kind))
        return "the action has no kind";
    if (!sp_runner_find(json_string_value(kind))) {
        snprintf(why, n, "no runner for kind \"%s\" in this spore (see spore capabilities)",
                 json_string_value(kind));
        return why;
    }
    const json_t *async = json_object_get(action, "async");
    static const char *const hooks[] = {"probe", "watch", "stop", NULL};
    for (const char *const *h = hooks; async && *h; h++) {
        const char *missing = hook_unservable(json_object_get(async, *h), *h, why, n);
        if (missing)
            return missing;
    }
    return NULL;
}

int sp_runner_prepare(const sp_runner *runner, const char *action_id, const json_t *action,
                      sp_runner_action *out, sp_error *err)
{
    *out = (sp_runner_action){action_id, action, NULL};
    return runner->prepare ? runner->prepare(action_id, action, &out->spec, err) : 0;
}

void sp_runner_release(const sp_runner *runner, sp_runner_action *a)
{
    if (runner && runner->release && a->spec)
        runner->release(a->spec);
    a->spec = NULL;
}

bool sp_runner_hold_terms(const sp_runner *runner, const sp_runner_action *a, sp_hold_terms *out)
{
    if (runner && runner->hold_terms)
        return runner->hold_terms(a, out);
    *out = (sp_hold_terms){SP_ASYNC_TIMEOUT_DEFAULT_MS, SP_ASYNC_TIMEOUT_DEFAULT_MS,
                           SP_ASYNC_PROBE_EVERY_DEFAULT_MS};
    return false;
}

const char *sp_holder_state_name(sp_holder_state s)
{
    return s == SP_HOLDER_ALIVE ? "alive" : s == SP_HOLDER_DEAD ? "dead" : "unknown";
}

sp_holder_state sp_holder_state_parse(const char *name)
{
    if (name && strcmp(name, "alive") == 0)
        return SP_HOLDER_ALIVE;
    if (name && strcmp(name, "dead") == 0)
        return SP_HOLDER_DEAD;
    return SP_HOLDER_UNKNOWN;
}
