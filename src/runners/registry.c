/*
 * registry.c - the built-in runner table (see registry.h). Never resolves a
 * kind it does not list.
 */
#include "runners/registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runners/agent.h" /* the agent kind (agent-step.md) */
#include "runners/command_spec.h"
#include "runners/component.h" /* the component kind (runners.md) */

static int validate_command(const char *id, const json_t *action, sp_error *err)
{
    sp_command_spec spec;
    if (sp_command_spec_parse(id, action, &spec, err))
        return -1;
    sp_command_spec_free(&spec);
    return 0;
}

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

static int validate_native(const char *id, const json_t *action, sp_error *err)
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

static const sp_runner RUNNERS[] = {
    {"command", validate_command, sp_command_run, false, true},
    {"native", validate_native, sp_native_run, false, false},
    {"external", sp_external_validate, sp_external_run, true, true},
    {"agent", sp_agent_validate, sp_agent_run, false, false}, /* runners/agent.c */
    {"component", sp_component_validate, sp_component_run, false, true}, /* runners/component.c */
};

static const char *const KINDS[] = {"command", "native", "external", "agent", "component", NULL};

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
    for (size_t i = 0; i < sizeof RUNNERS / sizeof RUNNERS[0]; i++)
        if (strcmp(RUNNERS[i].kind, kind) == 0)
            return disabled(kind) ? NULL : &RUNNERS[i];
    return NULL;
}

static const char *ENABLED[sizeof KINDS / sizeof KINDS[0]];
static pthread_once_t ENABLED_ONCE = PTHREAD_ONCE_INIT;

static void fill_enabled(void)
{
    size_t n = 0;
    for (const char *const *k = KINDS; *k; k++)
        if (!disabled(*k))
            ENABLED[n++] = *k;
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
        sp_runner_find("component"))
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
