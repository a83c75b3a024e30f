/*
 * external.c - the `external` action kind (engine.md §9): work a person or
 * another program claims with `spore step claim` and ends with `step
 * complete` / `step fail`. A worker never runs it: this file only validates
 * the action (actor, async.timeoutMs/leaseMs).
 *
 * Must never execute anything: its run exists only so a stray call reports
 * a clear, non-retryable failure instead of crashing. Not observable: only
 * its holder (through the store) ends a claimed external step.
 */
#include <stdlib.h>
#include <string.h>

#include "runners/async_spec.h"
#include "runners/registry.h"

static bool actor_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 64 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
              s[i] == '-'))
            return false;
    return true;
}

static int external_validate(const char *id, const json_t *action, sp_error *err)
{
    static const char *const known[] = {"kind",  "actor", "async",       "effect",
                                        "outcomes", "retry", "description", NULL};
    if (sp_action_check_members(id, action, known, "an external action", err))
        return -1;
    const json_t *actor = json_object_get(action, "actor");
    if (actor && (!json_is_string(actor) || !actor_ok(json_string_value(actor))))
        return sp_fail(err, "action.invalid",
                       "action %s: actor must match [a-z0-9][a-z0-9.-]{0,63}", id);
    const json_t *d = json_object_get(action, "description");
    if (d && !json_is_string(d))
        return sp_fail(err, "action.invalid", "action %s: description must be a string", id);
    sp_async_spec spec;
    if (sp_async_spec_parse(id, action, SP_ASYNC_EXTERNAL, &spec, err))
        return -1;
    sp_async_spec_free(&spec);
    return 0;
}

/* The prepared form is the async member: timeoutMs and leaseMs. */
static int external_prepare(const char *id, const json_t *action, void **out, sp_error *err)
{
    sp_async_spec *spec = calloc(1, sizeof *spec);
    if (!spec)
        return sp_oom(err);
    if (sp_async_spec_parse(id, action, SP_ASYNC_EXTERNAL, spec, err)) {
        free(spec);
        return -1;
    }
    *out = spec;
    return 0;
}

static void external_release(void *spec)
{
    sp_async_spec_free(spec);
    free(spec);
}

static int external_run(const sp_runner_ctx *ctx, const sp_runner_action *a, const json_t *input,
                        sp_activity_output *out)
{
    (void)ctx, (void)input;
    sp_output_failure(out, "host.not-runnable", false, NULL,
                      "action %s is external: an actor claims it with `spore step claim`", a->id);
    return 0;
}

/* The lease and deadline an actor's claim gets (step claim, step renew). */
static bool external_hold_terms(const sp_runner_action *a, sp_hold_terms *out)
{
    sp_async_spec defaults = {.timeout_ms = SP_ASYNC_TIMEOUT_DEFAULT_MS,
                              .probe_every_ms = SP_ASYNC_PROBE_EVERY_DEFAULT_MS};
    sp_async_hold_terms(a->spec ? a->spec : &defaults, out);
    return true;
}

const sp_runner sp_external_runner = {
    .kind = "external",
    .external = true,
    .async = true,
    .validate = external_validate,
    .prepare = external_prepare,
    .release = external_release,
    .run = external_run,
    .hold_terms = external_hold_terms,
};
