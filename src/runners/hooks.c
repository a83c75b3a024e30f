/*
 * hooks.c - running probe / watch / stop hooks of held async steps (see
 * hooks.h). Never reports `dead` without an explicit answer saying so.
 */
#include "runners/hooks.h"

#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "runners/component.h"
#include "runners/process.h"

#define HOOK_STDOUT_MAX (64 * 1024)
#define STOP_GRACE_MS 5000

/* The runner serving an operation in component form, or NULL: a
 * {"component": ...} hook, else (no command hook) the component action. */
static const json_t *runner_for(const sp_async_spec *spec, const sp_hook *hook, bool *is_hook)
{
    *is_hook = hook->form == SP_HOOK_COMPONENT;
    if (hook->form == SP_HOOK_COMPONENT)
        return hook->component;
    return hook->form == SP_HOOK_NONE ? spec->runner : NULL;
}

bool sp_hook_can_probe(const sp_async_spec *spec, const json_t *handle)
{
    bool is_hook;
    return spec->probe.form == SP_HOOK_COMMAND || runner_for(spec, &spec->probe, &is_hook) ||
           sp_pid_handle_is(handle);
}

bool sp_hook_can_watch(const sp_async_spec *spec) { return spec->watch.form == SP_HOOK_COMMAND; }

bool sp_hook_can_stop(const sp_async_spec *spec, const json_t *handle)
{
    bool is_hook;
    return spec->stop.form == SP_HOOK_COMMAND || runner_for(spec, &spec->stop, &is_hook) ||
           sp_pid_handle_is(handle);
}

/* Run `hook` with the handle on stdin; the parsed stdout on exit 0, else NULL. */
static json_t *run_hook(const sp_runner_ctx *ctx, const sp_hook *hook, const json_t *handle,
                        uint64_t default_timeout_ms)
{
    char *input = sp_json_encode_alloc(handle, NULL, NULL);
    if (!input)
        return NULL;
    sp_command_limits limits = {default_timeout_ms, HOOK_STDOUT_MAX};
    sp_proc_result res;
    json_t *doc = NULL;
    if (sp_command_exec(ctx, &hook->command, input, strlen(input), &limits, &res) == 0) {
        if (res.end == SP_PROC_EXITED && res.exit_code == 0 && !res.out_over)
            doc = sp_json_parse(res.out, res.out_len, NULL);
        sp_proc_result_free(&res);
    }
    free(input);
    return doc;
}

sp_holder_state sp_hook_probe_result(const sp_runner_ctx *ctx, const sp_async_spec *spec,
                                     const char *action_id, const json_t *action,
                                     const json_t *handle, sp_activity_output *out,
                                     bool *finished)
{
    *finished = false;
    memset(out, 0, sizeof *out);
    bool is_hook;
    const json_t *runner = runner_for(spec, &spec->probe, &is_hook);
    if (runner)
        return sp_component_probe(ctx, action_id, action, runner, is_hook, handle, out, finished);
    if (spec->probe.form != SP_HOOK_COMMAND)
        return sp_pid_handle_is(handle) ? sp_pid_handle_probe(handle) : SP_HOLDER_UNKNOWN;
    json_t *doc = run_hook(ctx, &spec->probe, handle, SP_HOOK_TIMEOUT_DEFAULT_MS);
    const json_t *h = json_object_get(doc, "holder");
    sp_holder_state s = SP_HOLDER_UNKNOWN;
    if (json_object_size(doc) == 1 && json_is_string(h)) {
        if (strcmp(json_string_value(h), "alive") == 0)
            s = SP_HOLDER_ALIVE;
        else if (strcmp(json_string_value(h), "dead") == 0)
            s = SP_HOLDER_DEAD;
    }
    json_decref(doc);
    return s;
}

/* A finished result is left to the periodic probe (sp_hook_probe_result):
 * here it reads as unknown, so no caller decides on it. */
sp_holder_state sp_hook_probe(const sp_runner_ctx *ctx, const sp_async_spec *spec,
                              const json_t *handle)
{
    sp_activity_output out;
    bool finished = false;
    sp_holder_state s = sp_hook_probe_result(ctx, spec, ctx->action_id ? ctx->action_id : "",
                                             spec->runner, handle, &out, &finished);
    if (finished) {
        sp_activity_output_free(&out);
        return SP_HOLDER_UNKNOWN;
    }
    return s;
}

bool sp_hook_watch(const sp_runner_ctx *ctx, const sp_async_spec *spec, const char *action_id,
                   const json_t *action, const json_t *handle, sp_activity_output *out)
{
    memset(out, 0, sizeof *out);
    if (spec->watch.form != SP_HOOK_COMMAND)
        return false;
    json_t *doc = run_hook(ctx, &spec->watch, handle, 0);
    bool got = doc && sp_command_result_value(doc, out);
    json_decref(doc);
    if (!got) {
        sp_activity_output_free(out);
        return false;
    }
    sp_command_check_declared(action_id, action, out);
    return true;
}

bool sp_hook_stop(const sp_runner_ctx *ctx, const sp_async_spec *spec, const json_t *handle)
{
    bool is_hook;
    const json_t *runner = runner_for(spec, &spec->stop, &is_hook);
    if (runner)
        return sp_component_stop(ctx, ctx->action_id ? ctx->action_id : "", runner, is_hook,
                                 handle);
    if (spec->stop.form != SP_HOOK_COMMAND)
        return sp_pid_handle_is(handle) && sp_pid_handle_stop(handle, STOP_GRACE_MS);
    char *input = sp_json_encode_alloc(handle, NULL, NULL);
    if (!input)
        return false;
    sp_command_limits limits = {SP_HOOK_TIMEOUT_DEFAULT_MS, HOOK_STDOUT_MAX};
    sp_proc_result res;
    bool stopped = false;
    if (sp_command_exec(ctx, &spec->stop.command, input, strlen(input), &limits, &res) == 0) {
        stopped = res.end == SP_PROC_EXITED && res.exit_code == 0;
        sp_proc_result_free(&res);
    }
    free(input);
    return stopped;
}
