/*
 * component.c - the component runner: one runner call through the jail and
 * the host, the mapping of how it ended (see component.h), and its whole
 * contract (runner.h): the seal at build, the spec parsed once at prepare,
 * start, and the held attempt's probe and stop through its own exports or
 * a component-form hook (command-form hooks through command.c).
 * Never reads a module but by its sealed digest through sp_artifacts, and
 * never decides on an unclear probe.
 */
#include "runners/component.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/failpoint.h"
#include "base/utf8.h"
#include "json/json.h"
#include "runners/async_spec.h"
#include "runners/command_spec.h"
#include "runners/component_cache.h"
#include "runners/component_host.h"
#include "runners/component_seal.h"
#include "runners/component_spec.h"
#include "runners/registry.h"
#include "runners/steplog.h"
#include "wasm/jail.h"
#include "wasm/protocol.h"
#include "wasm/world.h"

#define MESSAGE_MAX 1000

/* ---- the trial instantiation ---- */

static int no_import(void *ctx, int import, const char *request, size_t len, uint32_t cap,
                     uint64_t deadline_ms, int32_t *status, char **reply, size_t *reply_len)
{
    *status = -3;
    *reply = NULL;
    *reply_len = 0;
    return 0;
}

/* ---- one call ---- */

typedef enum call_end {
    END_RESPONSE,    /* doc */
    END_NOT_GRANTED, /* grant, value */
    END_ARTIFACT,    /* message */
    END_TRAP,
    END_TIMEOUT,
    END_STOPPED,
    END_BAD,
    END_SPAWN,
} call_end;

typedef struct call {
    call_end end;
    json_t *doc;
    char grant[16];
    char *value;
    char message[600];
    uint64_t timeout_ms;
} call;

static void call_free(call *c)
{
    json_decref(c->doc);
    free(c->value);
}

static void set_message(call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_message(call *c, const char *fmt, ...)
{
    char raw[sizeof c->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    sp_utf8_clean(c->message, sizeof c->message, raw);
}

static void map_jail(call *c, sp_host *h, sp_jail_result *r)
{
    switch (r->end) {
    case SP_JAIL_DONE: {
        sp_error err = {0};
        c->doc = sp_json_parse(r->response, r->response_len, &err);
        if (!json_is_object(c->doc)) {
            c->end = END_BAD;
            set_message(c, "the response is not a JSON object%s%s", err.message[0] ? ": " : "",
                        err.message);
        } else {
            c->end = END_RESPONSE;
        }
        sp_error_clear(&err);
        break;
    }
    case SP_JAIL_HOST_ENDED:
        if (h->not_granted) {
            c->end = END_NOT_GRANTED;
            snprintf(c->grant, sizeof c->grant, "%s", sp_grant_kind_name(h->grant));
            c->value = h->value;
            h->value = NULL;
        } else {
            c->end = END_ARTIFACT;
            set_message(c, "%s", h->artifact_message);
        }
        break;
    case SP_JAIL_TIMEOUT: c->end = END_TIMEOUT; set_message(c, "%s", r->message); break;
    case SP_JAIL_STOPPED: c->end = END_STOPPED; set_message(c, "%s", r->message); break;
    case SP_JAIL_BAD_RESPONSE: c->end = END_BAD; set_message(c, "%s", r->message); break;
    case SP_JAIL_LOAD_ERROR:
        c->end = END_ARTIFACT;
        set_message(c, "the sealed module does not load: %s", r->message);
        break;
    case SP_JAIL_SPAWN_FAILED: c->end = END_SPAWN; set_message(c, "%s", r->message); break;
    case SP_JAIL_READY:
    case SP_JAIL_TRAP:
    case SP_JAIL_CRASHED:
    default: c->end = END_TRAP; set_message(c, "%s", r->message); break;
    }
}

/* Run `export` of the runner `spec` with `request` (taken). */
static void run_call(const sp_runner_ctx *ctx, const char *where, const sp_component_spec *spec,
                     const char *export, json_t *request, call *c)
{
    memset(c, 0, sizeof *c);
    sp_error err = {0};
    c->timeout_ms = spec->call_timeout_ms;
    const char *digest = json_string_value(json_object_get(spec->sealed, spec->module));
    void *module = NULL;
    size_t module_len = 0;
    char *bytes = NULL;
    size_t len = 0;
    if (!digest) {
        c->end = END_ARTIFACT;
        set_message(c, "%s: module %s is not sealed in the package", where, spec->module);
    } else if (sp_cache_fetch(ctx->artifacts, digest, &module, &module_len, &err)) {
        c->end = END_ARTIFACT;
        set_message(c, "%s: %s", where, err.message);
    } else if (!(bytes = sp_json_encode_alloc(request, &len, &err))) {
        c->end = END_BAD;
        set_message(c, "%s: the request cannot be encoded: %s", where, err.message);
    } else {
        sp_host h;
        sp_host_init(&h, ctx, spec);
        sp_jail_host jh = sp_host_jail(&h);
        sp_jail_call jc = {module, module_len, false, export, bytes, len, spec->call_timeout_ms};
        sp_jail_result r;
        sp_jail_run(&jc, &jh, &r);
        map_jail(c, &h, &r);
        sp_jail_result_free(&r);
        sp_host_free(&h);
    }
    sp_error_clear(&err);
    free(bytes);
    free(module);
    json_decref(request);
}

/* ---- mapping (runners.md §4) ---- */

static void fail_out(sp_activity_output *out, const char *code, bool retryable, json_t *details,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void fail_out(sp_activity_output *out, const char *code, bool retryable, json_t *details,
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

static void unknown_out(sp_activity_output *out, const char *code, json_t *details,
                        const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void unknown_out(sp_activity_output *out, const char *code, json_t *details,
                        const char *fmt, ...)
{
    char raw[2048], clean[MESSAGE_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    sp_utf8_clean(clean, sizeof clean, raw);
    sp_output_unknown(out, code, details, "%s", clean);
}

/* The outcomes that are the same for start, probe and stop: true when `c`
 * ended the step (not-granted, artifact). */
static bool step_failure(const call *c, const char *action_id, sp_activity_output *out)
{
    if (c->end == END_NOT_GRANTED) {
        fail_out(out, "component.not-granted", false,
                 json_pack("{s:s,s:s}", "grant", c->grant, "value", c->value ? c->value : ""),
                 "action %s: the runner asked for %s \"%.300s\", which its grants do not allow",
                 action_id, c->grant, c->value ? c->value : "");
        return true;
    }
    if (c->end == END_ARTIFACT) {
        fail_out(out, "component.artifact", false, NULL, "action %s: %s", action_id, c->message);
        return true;
    }
    return false;
}

static bool declared(const json_t *action, const char *outcome)
{
    const json_t *outcomes = json_object_get(action, "outcomes");
    if (!outcomes)
        return strcmp(outcome, "ok") == 0;
    for (size_t i = 0; i < json_array_size(outcomes); i++)
        if (json_is_string(json_array_get(outcomes, i)) &&
            strcmp(json_string_value(json_array_get(outcomes, i)), outcome) == 0)
            return true;
    return false;
}

/* {"outcome","output"} or {"error","retryable"}: the activity's result. */
static bool result_of(const char *action_id, const json_t *action, const json_t *doc,
                      sp_activity_output *out)
{
    if (!sp_command_result_value(doc, out))
        return false;
    if (out->kind == SP_OUTPUT_SUCCESS && !declared(action, out->outcome ? out->outcome : "ok")) {
        char shown[257];
        sp_utf8_clean(shown, sizeof shown, out->outcome ? out->outcome : "ok");
        sp_activity_output_free(out);
        fail_out(out, "component.undeclared-outcome", false, json_pack("{s:s}", "outcome", shown),
                 "action %s: the runner reported outcome \"%s\", which the action does not "
                 "declare", action_id, shown);
    }
    return true;
}

static json_t *run_member(const sp_runner_ctx *ctx)
{
    return json_pack("{s:s,s:s,s:s,s:I,s:s,s:s?}", "runId", ctx->run_id ? ctx->run_id : "",
                     "nodeId", ctx->node_id ? ctx->node_id : "", "invocationId",
                     ctx->invocation_id ? ctx->invocation_id : "", "attempt",
                     (json_int_t)ctx->attempt, "effectKey", ctx->effect_key ? ctx->effect_key : "",
                     "traceparent", ctx->traceparent);
}

static const json_t *config_of(const sp_component_spec *runner)
{
    return runner->config ? runner->config : json_null();
}

static json_t *start_handle(const json_t *doc)
{
    const json_t *h = json_object_get(doc, "handle");
    if (json_object_size(doc) != 1 || !h)
        return NULL;
    size_t len = 0;
    char *text = sp_json_encode_alloc(h, &len, NULL);
    free(text);
    return text && len <= SP_COMPONENT_HANDLE_MAX ? json_incref((json_t *)h) : NULL;
}

void sp_component_start_response(const char *action_id, const json_t *action, const json_t *doc,
                                 sp_activity_output *out)
{
    memset(out, 0, sizeof *out);
    json_t *handle = json_is_object(doc) ? start_handle(doc) : NULL;
    if (handle)
        sp_output_held(out, handle);
    else if (!json_is_object(doc) || !result_of(action_id, action, doc, out))
        fail_out(out, "component.bad-response", false, NULL,
                 "action %s: spore_start answered neither {\"handle\"} (at most %d bytes), "
                 "{\"outcome\",\"output\"} nor {\"error\",\"retryable\"}", action_id,
                 SP_COMPONENT_HANDLE_MAX);
}

sp_holder_state sp_component_probe_response(const char *action_id, const json_t *action,
                                            const json_t *doc, sp_activity_output *out,
                                            bool *finished)
{
    memset(out, 0, sizeof *out);
    *finished = false;
    const char *holder = json_string_value(json_object_get(doc, "holder"));
    if (json_object_size(doc) == 1 && holder)
        return sp_holder_state_parse(holder);
    if (json_is_object(doc) && result_of(action_id, action, doc, out))
        *finished = true;
    return SP_HOLDER_UNKNOWN;
}

/* A prepared component action: its runner and its async member. */
typedef struct component_prepared {
    sp_component_spec spec;
    sp_async_spec async;
} component_prepared;

static int prepare_into(const char *action_id, const json_t *action, component_prepared *p,
                        sp_error *err)
{
    char where[300];
    snprintf(where, sizeof where, "action %s", action_id);
    if (sp_component_spec_parse(where, action, false, &p->spec, err))
        return -1;
    if (sp_async_spec_parse(action_id, action, SP_ASYNC_COMPONENT, &p->async, err)) {
        sp_component_spec_free(&p->spec);
        return -1;
    }
    return 0;
}

static void prepared_free(component_prepared *p)
{
    sp_component_spec_free(&p->spec);
    sp_async_spec_free(&p->async);
}

static int component_validate(const char *action_id, const json_t *action, sp_error *err)
{
    component_prepared p;
    if (prepare_into(action_id, action, &p, err))
        return -1;
    prepared_free(&p);
    return 0;
}

static int component_prepare(const char *action_id, const json_t *action, void **out,
                             sp_error *err)
{
    component_prepared *p = calloc(1, sizeof *p);
    if (!p)
        return sp_oom(err);
    if (prepare_into(action_id, action, p, err)) {
        free(p);
        return -1;
    }
    *out = p;
    return 0;
}

static void component_release(void *spec)
{
    prepared_free(spec);
    free(spec);
}

static int component_seal(const char *action_id, json_t *action, sp_seal_ctx *sc, sp_error *err)
{
    char where[300];
    snprintf(where, sizeof where, "action %s", action_id);
    return sp_component_seal(sc, where, action_id, action, false, err);
}

/* What the attempt keeps for `spore logs`: its log file (the runner's `log`
 * lines and the output of the processes it started, interleaved) as its
 * stderr, pattern-redacted (a component action names no secrets). */
static sp_attempt_logs *attempt_logs(const sp_runner_ctx *ctx)
{
    char path[PATH_MAX];
    sp_log_stream out = {0}, err = {0};
    if (sp_host_log_path(ctx, path, sizeof path))
        sp_steplog_file(path, NULL, &err); /* none when out of memory */
    return sp_steplog_pair(&out, &err);
}

static int component_run(const sp_runner_ctx *ctx, const sp_runner_action *a,
                         const json_t *input, sp_activity_output *out)
{
    memset(out, 0, sizeof *out);
    const char *action_id = a->id;
    char where[300];
    snprintf(where, sizeof where, "action %s", action_id);
    sp_component_spec local;
    const sp_component_spec *spec = a->spec ? &((const component_prepared *)a->spec)->spec : NULL;
    sp_error err = {0};
    if (!spec && sp_component_spec_parse(where, a->raw, false, &local, &err) == 0)
        spec = &local;
    if (!spec) {
        fail_out(out, "component.artifact", false, NULL, "action %s: %s", action_id, err.message);
        sp_error_clear(&err);
        return out->error ? 0 : -1;
    }
    json_t *request = json_pack("{s:O,s:O,s:o}", "input", input ? input : json_null(), "config",
                                config_of(spec), "run", run_member(ctx));
    call c;
    run_call(ctx, where, spec, "spore_start", request, &c);
    if (step_failure(&c, action_id, out)) {
        /* done */
    } else if (c.end == END_RESPONSE) {
        sp_component_start_response(action_id, a->raw, c.doc, out);
        if (out->kind == SP_OUTPUT_HELD)
            sp_failpoint("host.component.after-start");
    } else if (c.end == END_BAD) {
        fail_out(out, "component.bad-response", false, NULL, "action %s: %s", action_id,
                 c.message);
    } else if (c.end == END_TIMEOUT) {
        unknown_out(out, "component.timeout",
                    json_pack("{s:I}", "callTimeoutMs", (json_int_t)c.timeout_ms),
                    "action %s: spore_start: %s", action_id, c.message);
    } else if (c.end == END_STOPPED) {
        unknown_out(out, "component.stopped", NULL, "action %s: %s", action_id, c.message);
    } else if (c.end == END_SPAWN) {
        fail_out(out, "component.spawn", true, NULL, "action %s: %s", action_id, c.message);
    } else {
        unknown_out(out, "component.trap", json_pack("{s:s}", "trap", c.message),
                    "action %s: spore_start trapped: %s", action_id, c.message);
    }
    call_free(&c);
    out->logs = attempt_logs(ctx); /* last: the output helpers reset `out` */
    if (spec == &local)
        sp_component_spec_free(&local);
    return out->error || out->kind != SP_OUTPUT_FAILURE ? 0 : -1;
}

sp_holder_state sp_component_probe(const sp_runner_ctx *ctx, const char *action_id,
                                   const json_t *action, const sp_component_spec *runner,
                                   bool hook, const json_t *handle, sp_activity_output *out,
                                   bool *finished)
{
    *finished = false;
    memset(out, 0, sizeof *out);
    char where[300];
    snprintf(where, sizeof where, hook ? "action %s: async.probe" : "action %s", action_id);
    json_t *request = json_pack("{s:O,s:O}", "handle", handle, "config", config_of(runner));
    call c;
    run_call(ctx, where, runner, "spore_probe", request, &c);
    sp_holder_state s = SP_HOLDER_UNKNOWN;
    if (step_failure(&c, action_id, out)) {
        *finished = true;
    } else if (c.end == END_RESPONSE) {
        s = sp_component_probe_response(action_id, action, c.doc, out, finished);
    }
    call_free(&c);
    if (*finished) /* the held attempt ends: its log file has grown since its start */
        out->logs = attempt_logs(ctx);
    return s;
}

bool sp_component_stop(const sp_runner_ctx *ctx, const char *action_id,
                       const sp_component_spec *runner, bool hook, const json_t *handle)
{
    char where[300];
    snprintf(where, sizeof where, hook ? "action %s: async.stop" : "action %s", action_id);
    json_t *request = json_pack("{s:O,s:O}", "handle", handle, "config", config_of(runner));
    call c;
    run_call(ctx, where, runner, "spore_stop", request, &c);
    bool stopped = c.end == END_RESPONSE && json_object_size(c.doc) == 1 &&
                   json_is_true(json_object_get(c.doc, "stopped"));
    call_free(&c);
    return stopped;
}

/* ---- held attempts of a component action: its own probe and stop
 * exports, unless the async member gives a hook for that operation ---- */

static const component_prepared *prepared_of(const sp_runner_action *a) { return a->spec; }

static bool component_hold_terms(const sp_runner_action *a, sp_hold_terms *out)
{
    const component_prepared *p = prepared_of(a);
    sp_async_spec defaults = {.timeout_ms = SP_ASYNC_TIMEOUT_DEFAULT_MS,
                              .probe_every_ms = SP_COMPONENT_PROBE_EVERY_DEFAULT_MS};
    sp_async_hold_terms(p ? &p->async : &defaults, out);
    return true; /* a component action is always async */
}

/* Probe and stop always have a way: a hook, or the runner's own export. */
static bool component_can(const sp_runner_action *a, sp_hook_op op, const json_t *handle)
{
    const component_prepared *p = prepared_of(a);
    if (!p)
        return false;
    return op != SP_HOOK_WATCH || p->async.watch.form == SP_HOOK_COMMAND;
}

static sp_holder_state component_hook_probe(const sp_runner_ctx *ctx, const sp_runner_action *a,
                                            const json_t *handle, sp_activity_output *out,
                                            bool *finished)
{
    *finished = false;
    memset(out, 0, sizeof *out);
    const component_prepared *p = prepared_of(a);
    if (!p)
        return SP_HOLDER_UNKNOWN;
    const sp_hook *hook = &p->async.probe;
    if (hook->form == SP_HOOK_COMMAND)
        return sp_command_hook_probe(ctx, &hook->command, handle);
    bool is_hook = hook->form == SP_HOOK_COMPONENT;
    return sp_component_probe(ctx, a->id, a->raw, is_hook ? hook->component : &p->spec, is_hook,
                              handle, out, finished);
}

static bool component_watch(const sp_runner_ctx *ctx, const sp_runner_action *a,
                            const json_t *handle, sp_activity_output *out)
{
    memset(out, 0, sizeof *out);
    const component_prepared *p = prepared_of(a);
    return p && p->async.watch.form == SP_HOOK_COMMAND &&
           sp_command_hook_watch(ctx, &p->async.watch.command, a->id, a->raw, handle, out);
}

static bool component_hook_stop(const sp_runner_ctx *ctx, const sp_runner_action *a,
                                const json_t *handle)
{
    const component_prepared *p = prepared_of(a);
    if (!p)
        return false;
    const sp_hook *hook = &p->async.stop;
    if (hook->form == SP_HOOK_COMMAND)
        return sp_command_hook_stop(ctx, &hook->command, handle);
    bool is_hook = hook->form == SP_HOOK_COMPONENT;
    return sp_component_stop(ctx, a->id, is_hook ? hook->component : &p->spec, is_hook, handle);
}

const sp_runner sp_component_runner = {
    .kind = "component",
    .async = true,
    .observable = true,
    .validate = component_validate,
    .seal = component_seal,
    .prepare = component_prepare,
    .release = component_release,
    .run = component_run,
    .hold_terms = component_hold_terms,
    .can = component_can,
    .probe = component_hook_probe,
    .watch = component_watch,
    .stop = component_hook_stop,
};

int sp_component_describe(const char *where, const char *module_name, const void *module,
                          size_t len, sp_world_module *out, sp_error *err)
{
    sp_jail_host jh = {.import = no_import, .stop_fd = -1};
    sp_jail_call jc = {module, len, true, NULL, NULL, 0, SP_COMPONENT_CALL_TIMEOUT_DEFAULT_MS};
    sp_jail_result r;
    sp_jail_run(&jc, &jh, &r);
    int rc = 0;
    if (r.end == SP_JAIL_DESCRIBED) {
        if (sp_world_module_parse(r.response, r.response_len, out))
            rc = sp_fail(err, "component.jail", "%s: the jail described the module badly", where);
    } else if (r.end == SP_JAIL_SPAWN_FAILED) {
        rc = sp_fail(err, "component.jail", "%s: %s", where, r.message);
    } else {
        rc = sp_fail_details(err, "component.invalid-module",
                             json_pack("{s:s,s:s}", "module", module_name, "problem", r.message),
                             "%s: module \"%.200s\" is not a valid WebAssembly module of the "
                             "runner world: %s", where, module_name, r.message);
    }
    sp_jail_result_free(&r);
    return rc;
}

int sp_component_trial(const char *where, const void *module, size_t len, uint64_t timeout_ms,
                       sp_error *err)
{
    sp_jail_host jh = {.import = no_import, .stop_fd = -1};
    sp_jail_call jc = {module, len, false, NULL, NULL, 0, timeout_ms};
    sp_jail_result r;
    sp_jail_run(&jc, &jh, &r);
    int rc = 0;
    if (r.end != SP_JAIL_READY)
        rc = sp_fail_details(err, "component.instantiate",
                             json_pack("{s:s,s:s}", "end", sp_jail_end_name(r.end), "message",
                                       r.message),
                             "%s: the runner cannot be instantiated in the jail (%s): %s", where,
                             sp_jail_end_name(r.end), r.message);
    sp_jail_result_free(&r);
    return rc;
}
