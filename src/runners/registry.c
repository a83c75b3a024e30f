/*
 * registry.c - the built-in runner table (see registry.h). Never resolves a
 * kind it does not list.
 */
#include "runners/registry.h"

#include <string.h>

#include "runners/command_spec.h"

static int validate_command(const char *id, const json_t *action, sp_error *err)
{
    sp_command_spec spec;
    if (sp_command_spec_parse(id, action, &spec, err))
        return -1;
    sp_command_spec_free(&spec);
    return 0;
}

static int validate_native(const char *id, const json_t *action, sp_error *err)
{
    static const char *const known[] = {"kind", "effect", "outcomes", "retry", "function",
                                        "description", NULL};
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)action, key, v)
    {
        bool ok = false;
        for (const char *const *k = known; *k && !ok; k++)
            ok = strcmp(*k, key) == 0;
        if (!ok)
            return sp_fail(err, "action.invalid", "action %s: unknown member \"%s\" for a "
                           "native action", id, key);
    }
    const json_t *fn = json_object_get(action, "function");
    if (!json_is_string(fn) || json_string_length(fn) == 0 ||
        strlen(json_string_value(fn)) != json_string_length(fn))
        return sp_fail(err, "action.invalid",
                       "action %s: a native action names its registered \"function\"", id);
    return 0;
}

static const sp_runner RUNNERS[] = {
    {"command", validate_command, sp_command_run},
    {"native", validate_native, sp_native_run},
};

static const char *const KINDS[] = {"command", "native", NULL};

const sp_runner *sp_runner_find(const char *kind)
{
    for (size_t i = 0; i < sizeof RUNNERS / sizeof RUNNERS[0]; i++)
        if (strcmp(RUNNERS[i].kind, kind) == 0)
            return &RUNNERS[i];
    return NULL;
}

const char *const *sp_runner_kinds(void) { return KINDS; }
