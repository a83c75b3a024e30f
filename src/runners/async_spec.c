/*
 * async_spec.c - parsing `async` (see async_spec.h). Never accepts an
 * unknown member, a lease not shorter than the deadline, or a hook form
 * this build cannot serve.
 */
#include "runners/async_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/decimal.h"
#include "runners/component_spec.h"
#include "runners/registry.h"

static int invalid(sp_error *err, const char *id, const char *what)
{
    return sp_fail(err, "action.invalid", "action %s: async: %s", id, what);
}

static bool known(const char *key, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(*names, key) == 0)
            return true;
    return false;
}

static int parse_ms(const char *id, const json_t *v, const char *name, uint64_t *out,
                    sp_error *err)
{
    if (!v)
        return 0;
    if (!sp_decimal_from_json(v, out) || *out == 0)
        return sp_fail(err, "action.invalid",
                       "action %s: async.%s must be a positive decimal string of milliseconds", id,
                       name);
    return 0;
}

static int parse_hook(const char *id, const json_t *v, const char *name, sp_hook *hook,
                      sp_error *err)
{
    if (!v)
        return 0;
    const json_t *command = json_object_get(v, "command"), *component = json_object_get(v, "component");
    if (!json_is_object(v) || json_object_size(v) != 1 || (!command && !component))
        return sp_fail(err, "action.invalid",
                       "action %s: async.%s is {\"command\": {...}} or {\"component\": {...}}", id,
                       name);
    if (component) {
        char where[300];
        snprintf(where, sizeof where, "action %s: async.%s", id, name);
        if (strcmp(name, "watch") == 0)
            return sp_fail(err, "action.invalid",
                           "%s: a watch cannot be a component (runners have no watch export)",
                           where);
        if (!sp_runner_find(sp_component_runner.kind))
            return sp_fail(err, "action.capability-missing",
                           "%s in component form needs the component runner, which this spore "
                           "does not offer (see spore capabilities)", where);
        hook->component = calloc(1, sizeof *hook->component);
        if (!hook->component)
            return sp_oom(err);
        if (sp_component_spec_parse(where, component, true, hook->component, err)) {
            free(hook->component);
            hook->component = NULL;
            return -1;
        }
        hook->form = SP_HOOK_COMPONENT;
        return 0;
    }
    hook->form = SP_HOOK_COMMAND;
    return sp_command_hook_parse(id, command, &hook->command, err);
}

int sp_async_spec_parse(const char *id, const json_t *action, sp_async_owner owner,
                        sp_async_spec *out, sp_error *err)
{
    static const char *const command_members[] = {"timeoutMs", "leaseMs", "probeEveryMs", "probe",
                                                  "watch",     "stop",    NULL};
    static const char *const external_members[] = {"timeoutMs", "leaseMs", NULL};
    static const char *const component_members[] = {"timeoutMs", "probeEveryMs", "probe",
                                                     "watch",     "stop",         NULL};
    memset(out, 0, sizeof *out);
    out->timeout_ms = SP_ASYNC_TIMEOUT_DEFAULT_MS;
    out->probe_every_ms = owner == SP_ASYNC_COMPONENT ? SP_COMPONENT_PROBE_EVERY_DEFAULT_MS
                                                      : SP_ASYNC_PROBE_EVERY_DEFAULT_MS;
    const json_t *a = json_object_get(action, "async");
    if (!a)
        return 0;
    if (!json_is_object(a))
        return invalid(err, id, "must be an object");
    const char *const *members = owner == SP_ASYNC_EXTERNAL    ? external_members
                                 : owner == SP_ASYNC_COMPONENT ? component_members
                                                               : command_members;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)a, key, v)
    {
        if (!known(key, members))
            return sp_fail(err, "action.invalid", "action %s: async: unknown member \"%s\"", id,
                           key);
    }
    int rc = parse_ms(id, json_object_get(a, "timeoutMs"), "timeoutMs", &out->timeout_ms, err);
    if (!rc)
        rc = parse_ms(id, json_object_get(a, "leaseMs"), "leaseMs", &out->lease_ms, err);
    out->has_lease = out->lease_ms != 0;
    if (!rc && out->has_lease && out->lease_ms >= out->timeout_ms)
        rc = invalid(err, id, "leaseMs must be shorter than timeoutMs");
    if (!rc)
        rc = parse_ms(id, json_object_get(a, "probeEveryMs"), "probeEveryMs",
                      &out->probe_every_ms, err);
    if (!rc)
        rc = parse_hook(id, json_object_get(a, "probe"), "probe", &out->probe, err);
    if (!rc)
        rc = parse_hook(id, json_object_get(a, "watch"), "watch", &out->watch, err);
    if (!rc)
        rc = parse_hook(id, json_object_get(a, "stop"), "stop", &out->stop, err);
    if (rc)
        sp_async_spec_free(out);
    return rc;
}

static void hook_free(sp_hook *hook)
{
    sp_command_spec_free(&hook->command);
    if (hook->component) {
        sp_component_spec_free(hook->component);
        free(hook->component);
    }
}

void sp_async_spec_free(sp_async_spec *spec)
{
    hook_free(&spec->probe);
    hook_free(&spec->watch);
    hook_free(&spec->stop);
    memset(spec, 0, sizeof *spec);
}

void sp_async_hold_terms(const sp_async_spec *spec, sp_hold_terms *out)
{
    *out = (sp_hold_terms){.lease_in_ms = spec->has_lease ? spec->lease_ms : spec->timeout_ms,
                           .deadline_in_ms = spec->timeout_ms,
                           .probe_every_ms = spec->probe_every_ms};
}
