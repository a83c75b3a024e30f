/*
 * command.c - the `command` runner (engine.md §5): runs the action's argv
 * through process.c and turns how it ended into an sp_activity_output,
 * following the result table in its order; and its whole contract
 * (runner.h): the spec parsed once at prepare, hold terms from `async`, and
 * the hooks of a held attempt - command-form hooks (which component actions
 * use too), component-form hooks through component.c, and the reference
 * handle's built-in probe and stop (pid_handle.h) when no hook is given.
 *
 * Decisions the table leaves open, made here:
 * - `output: "result"`: exit 0 always means "read the result from stdout"
 *   (an exitOutcomes entry for 0 does not apply); a non-zero exit listed in
 *   exitOutcomes gives Success with that outcome and a null output. One
 *   trailing LF after the canonical bytes is accepted (a line).
 * - The 64 KiB stdout bound applies on the success path of every mode,
 *   `none` included, as the table says.
 *
 * argv[0] "spore" is the running spore binary (/proc/self/exe): workflows
 * call `spore step ...` without depending on PATH or another version.
 *
 * What it must never do: run a shell, look at the action's `effect`, report
 * Success for an outcome the action does not declare, turn an unclear
 * hook answer into `dead`, or build an error message or detail that is not
 * valid UTF-8 (every outside byte goes through utf8.c first).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/action.h"
#include "base/utf8.h"
#include "json/json.h"
#include "runners/async_spec.h"
#include "runners/command_spec.h"
#include "runners/component.h"
#include "runners/component_seal.h"
#include "runners/pid_handle.h"
#include "runners/process.h"
#include "runners/registry.h"
#include "runners/steplog.h"

#define MESSAGE_MAX 1000 /* under output.c's 1024-byte message buffer */
#define SP_HANDLE_MAX 4096 /* an async start's holder handle (engine.md §9) */

typedef struct cmd_run {
    const sp_runner_ctx *ctx;
    const char *action_id;
    const json_t *action;
    const sp_command_spec *spec;
    sp_proc_result res;
    sp_redactor *redactor;  /* the values of the action's secrets */
    sp_attempt_logs *logs;  /* what the attempt keeps of stdout and stderr */
} cmd_run;

/* Every message goes through here: formatted, made valid UTF-8, bounded. */
static void vreport(sp_activity_output *out, sp_output_kind kind, const char *code,
                    bool retryable, json_t *details, const char *fmt, va_list ap)
{
    char raw[2048], clean[MESSAGE_MAX + 1];
    vsnprintf(raw, sizeof raw, fmt, ap);
    sp_utf8_clean(clean, sizeof clean, raw);
    if (kind == SP_OUTPUT_UNKNOWN)
        sp_output_unknown(out, code, details, "%s", clean);
    else
        sp_output_failure(out, code, retryable, details, "%s", clean);
}

__attribute__((format(printf, 5, 6))) static void fail(sp_activity_output *out, const char *code,
                                                        bool retryable, json_t *details,
                                                        const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(out, SP_OUTPUT_FAILURE, code, retryable, details, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 4, 5))) static void unknown(sp_activity_output *out,
                                                           const char *code, json_t *details,
                                                           const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(out, SP_OUTPUT_UNKNOWN, code, true, details, fmt, ap);
    va_end(ap);
}

/* The last 4 KiB of the kept stderr: redacted and valid UTF-8 already. */
static json_t *stderr_tail(const cmd_run *r)
{
    if (!r->logs)
        return json_string("");
    const sp_log_stream *e = &r->logs->err;
    size_t from = sp_utf8_tail_start(e->text, e->len, SP_PROC_STDERR_TAIL);
    return json_stringn(e->text + from, e->len - from);
}

/* ---- setting up: cwd, environment, input ---- */

static char *join_cwd(const char *base, const char *cwd)
{
    char *path;
    if (!cwd)
        cwd = ".";
    if (cwd[0] == '/' || !base || !base[0])
        return strdup(cwd);
    return asprintf(&path, "%s/%s", base, cwd) < 0 ? NULL : path;
}

static const char *or_empty(const char *s) { return s ? s : ""; }

/* The running spore binary (/proc/self/exe), resolved once; NULL if unknown. */
static char SELF_EXE[4096];
static pthread_once_t SELF_ONCE = PTHREAD_ONCE_INIT;

static void resolve_self_exe(void)
{
    ssize_t len = readlink("/proc/self/exe", SELF_EXE, sizeof SELF_EXE - 1);
    SELF_EXE[len > 0 ? len : 0] = '\0';
}

static const char *self_exe(void)
{
    pthread_once(&SELF_ONCE, resolve_self_exe);
    return SELF_EXE[0] ? SELF_EXE : NULL;
}

/* Each secret's "<NAME>_FILE", "<its file, relative to the base directory>"
 * (a NULL-terminated list of owned strings). NULL when out of memory. */
static char **secret_vars(const sp_runner_ctx *ctx, const sp_command_spec *spec)
{
    char **v = calloc(2 * spec->nsecrets + 1, sizeof *v);
    for (size_t i = 0; v && i < spec->nsecrets; i++) {
        char *name = NULL;
        if (asprintf(&name, "%s_FILE", spec->secrets[i].name) < 0)
            name = NULL;
        v[2 * i] = name;
        v[2 * i + 1] = name ? join_cwd(ctx->base_dir, spec->secrets[i].file) : NULL;
        if (!v[2 * i + 1]) {
            sp_proc_strv_free(v);
            return NULL;
        }
    }
    return v;
}

/* engine environment + the action's env + the attempt's identity + the
 * secrets' files. */
static char **build_env(const sp_runner_ctx *ctx, const sp_command_spec *spec)
{
    char attempt[16];
    snprintf(attempt, sizeof attempt, "%u", (unsigned)ctx->attempt);
    const char *ids[5][2] = {{"RUN_ID", or_empty(ctx->run_id)},
                             {"NODE_ID", or_empty(ctx->node_id)},
                             {"INVOCATION_ID", or_empty(ctx->invocation_id)},
                             {"ATTEMPT", attempt},
                             {"EFFECT_KEY", or_empty(ctx->effect_key)}};
    size_t n = 2 * spec->nenv, max = n + 2 * 14 + 2 * spec->nsecrets;
    const char **pairs = malloc(max * sizeof *pairs);
    char **secrets = secret_vars(ctx, spec);
    char names[10][32];
    if (!pairs || !secrets) {
        free(pairs);
        sp_proc_strv_free(secrets);
        return NULL;
    }
    if (n)
        memcpy(pairs, spec->env, n * sizeof *pairs);
    for (int i = 0; i < 10; i++) {
        snprintf(names[i], sizeof names[i], "%s_%s", i < 5 ? "SPORE" : "RUNSPORE", ids[i % 5][0]);
        pairs[n++] = names[i];
        pairs[n++] = ids[i % 5][1];
    }
    if (ctx->traceparent) {
        pairs[n++] = "TRACEPARENT";
        pairs[n++] = ctx->traceparent;
    }
    if (ctx->token && spec->async) {
        pairs[n++] = "SPORE_TOKEN";
        pairs[n++] = ctx->token;
        if (self_exe()) {
            pairs[n++] = "SPORE_BIN";
            pairs[n++] = self_exe();
        }
        if (ctx->store_location) {
            pairs[n++] = "SPORE_DB";
            pairs[n++] = ctx->store_location;
        }
    }
    for (size_t i = 0; i < 2 * spec->nsecrets; i++)
        pairs[n++] = secrets[i];
    char **env = sp_proc_env(pairs, n / 2);
    free(pairs);
    sp_proc_strv_free(secrets);
    return env;
}

/* ---- the success path ---- */

static json_t *text_output(const sp_proc_result *p)
{
    json_t *s = sp_utf8_lossy_json(p->out, p->out_len);
    return s ? json_pack("{s:i,s:o}", "exitCode", p->exit_code, "stdout", s) : NULL;
}

static void malformed(sp_activity_output *out, const char *id, sp_error *err, const char *what)
{
    json_t *details = json_pack("{s:s}", "problem", err->code[0] ? err->code : "shape");
    fail(out, "command.malformed-output", false, details, "action %s: %s: %s", id, what,
         err->message[0] ? err->message : "unexpected shape");
    sp_error_clear(err);
}

static bool plain_string(const json_t *v, size_t max)
{
    return json_is_string(v) && json_string_length(v) > 0 && json_string_length(v) <= max &&
           strlen(json_string_value(v)) == json_string_length(v);
}

/* {"error":{"code","message"},"retryable":b} -> Failure; false if not that shape. */
static bool result_failure(const json_t *doc, sp_activity_output *out)
{
    const json_t *e = json_object_get(doc, "error"), *r = json_object_get(doc, "retryable");
    if (json_object_size(doc) != 2 || !json_is_object(e) || json_object_size(e) != 2 ||
        !json_is_boolean(r) || !plain_string(json_object_get(e, "code"), SP_CODE_MAX - 1) ||
        !json_is_string(json_object_get(e, "message")))
        return false;
    fail(out, json_string_value(json_object_get(e, "code")), json_is_true(r), NULL, "%s",
         json_string_value(json_object_get(e, "message")));
    return true;
}

/* {"outcome","output"} -> Success; false if not that shape. */
static bool result_success(const json_t *doc, sp_activity_output *out)
{
    const json_t *o = json_object_get(doc, "outcome"), *v = json_object_get(doc, "output");
    if (json_object_size(doc) != 2 || !plain_string(o, 256) || !v)
        return false;
    sp_output_success(out, json_string_value(o), json_incref((json_t *)v));
    return true;
}

bool sp_command_result_value(const json_t *doc, sp_activity_output *out)
{
    return json_is_object(doc) && (result_success(doc, out) || result_failure(doc, out));
}

static void result_output(cmd_run *r, sp_activity_output *out)
{
    sp_error err = {0};
    size_t len = r->res.out_len;
    if (len && r->res.out[len - 1] == '\n')
        len--;
    json_t *doc = sp_json_parse_canonical(r->res.out, len, &err);
    if (!doc) {
        malformed(out, r->action_id, &err, "stdout is not a canonical result");
        return;
    }
    bool ok = sp_command_result_value(doc, out);
    json_decref(doc);
    if (!ok)
        malformed(out, r->action_id, &err,
                  "a result is {\"outcome\",\"output\"} or "
                  "{\"error\":{\"code\",\"message\"},\"retryable\":bool}");
}

static void success(cmd_run *r, const char *outcome, bool read_result, sp_activity_output *out)
{
    json_t *value = NULL;
    sp_error err = {0};
    if (r->res.out_over)
        fail(out, "command.output-too-large", false,
             json_pack("{s:i}", "limit", SP_PROC_STDOUT_MAX), "action %s: stdout exceeded %d bytes",
             r->action_id, SP_PROC_STDOUT_MAX);
    else if (read_result)
        result_output(r, out);
    else if (r->spec->output == SP_OUTPUT_JSON &&
             !(value = sp_json_parse(r->res.out, r->res.out_len, &err)))
        malformed(out, r->action_id, &err, "stdout is not canonical-domain JSON");
    else if (r->spec->output == SP_OUTPUT_TEXT)
        sp_output_success(out, outcome, text_output(&r->res));
    else
        sp_output_success(out, outcome, value);
}

/* An async start that exited 0: stdout is the holder handle, canonical-domain
 * JSON of at most 4 KiB (whitespace around it is fine). The job may be
 * running whatever stdout says, so a bad handle is Unknown, not Failure. */
static void held(cmd_run *r, sp_activity_output *out)
{
    sp_error err = {0};
    json_t *handle = r->res.out_len <= SP_HANDLE_MAX && !r->res.out_over
                         ? sp_json_parse(r->res.out, r->res.out_len, &err)
                         : NULL;
    size_t len = 0;
    char *canonical = handle ? sp_json_encode_alloc(handle, &len, &err) : NULL;
    free(canonical);
    if (handle && canonical && len <= SP_HANDLE_MAX) {
        sp_output_held(out, handle);
        return;
    }
    json_decref(handle);
    unknown(out, "command.malformed-handle", json_pack("{s:i}", "limit", SP_HANDLE_MAX),
            "action %s: the async start command exited 0 but its stdout is not a handle "
            "(canonical-domain JSON of at most %d bytes)%s%s", r->action_id, SP_HANDLE_MAX,
            err.message[0] ? ": " : "", err.message);
    sp_error_clear(&err);
}

/* ---- how it ended ---- */

static void exited(cmd_run *r, sp_activity_output *out)
{
    int code = r->res.exit_code;
    if (r->spec->async && code == 0) {
        held(r, out);
        return;
    }
    bool result_mode = r->spec->output == SP_OUTPUT_RESULT;
    const char *mapped = result_mode && code == 0 ? NULL : sp_command_exit_outcome(r->spec, code);
    if (mapped)
        success(r, mapped, false, out);
    else if (code == 0)
        success(r, "ok", result_mode, out);
    else
        fail(out, "command.exit", true,
         json_pack("{s:i,s:o*}", "exitCode", code, "stderrTail", stderr_tail(r)),
         "action %s: %s exited with code %d", r->action_id, r->spec->argv[0], code);
}

static void spawn_failure(cmd_run *r, sp_activity_output *out)
{
    int e = r->res.spawn_errno;
    const char *name = strerrorname_np(e), *desc = strerrordesc_np(e);
    json_t *details = json_pack("{s:s,s:s}", "step", r->res.spawn_step, "errno",
                                name ? name : "unknown");
    /* the first-hour mistake: `examples/bin/x.sh` resolves against the
     * directory spore runs in, not the workflow file's */
    const char *argv0 = r->spec->argv[0];
    bool relative = e == ENOENT && argv0[0] != '/' && strchr(argv0, '/');
    char where[PATH_MAX] = "";
    char *cwd = relative ? join_cwd(r->ctx->base_dir, r->spec->cwd) : NULL;
    char *abs = cwd ? realpath(cwd, NULL) : NULL;
    if (relative)
        snprintf(where, sizeof where,
                 " (a relative path resolves against %s, not the workflow file's folder: run "
                 "spore from the directory the workflow expects)",
                 abs ? abs : cwd ? cwd : ".");
    free(abs);
    free(cwd);
    fail(out, "command.spawn", true, details, "action %s: cannot start %s: %s: %s%s",
         r->action_id, argv0, r->res.spawn_step, desc ? desc : "unknown error", where);
}

static void signaled(cmd_run *r, sp_activity_output *out)
{
    int sig = r->res.signal;
    const char *abbrev = sigabbrev_np(sig);
    char name[32];
    snprintf(name, sizeof name, "SIG%s", abbrev ? abbrev : "UNKNOWN");
    json_t *details = json_pack("{s:i,s:s,s:o*}", "signal", sig, "signalName", name,
                                "stderrTail", stderr_tail(r));
    unknown(out, "command.signaled", details, "action %s: %s was killed by %s, not by the engine",
            r->action_id, r->spec->argv[0], name);
}

static void timed_out(cmd_run *r, sp_activity_output *out)
{
    json_t *d = r->spec->timeout_ms <= (uint64_t)SP_JSON_MAX_SAFE
                    ? json_pack("{s:I}", "timeoutMs", (json_int_t)r->spec->timeout_ms)
                    : NULL;
    unknown(out, "command.timeout", d,
            "action %s: timed out after %llu ms; its process group was killed", r->action_id,
            (unsigned long long)r->spec->timeout_ms);
}

static void map_end(cmd_run *r, sp_activity_output *out)
{
    switch (r->res.end) {
    case SP_PROC_SPAWN_FAILED:
        spawn_failure(r, out);
        break;
    case SP_PROC_TIMED_OUT:
        timed_out(r, out);
        break;
    case SP_PROC_STOPPED:
        unknown(out, "command.stopped", NULL,
                "action %s: stopped by the engine; its process group was killed", r->action_id);
        break;
    case SP_PROC_SIGNALED:
        signaled(r, out);
        break;
    case SP_PROC_EXITED:
        exited(r, out);
        break;
    }
}

/* ---- declared outcomes ---- */

static bool declared(const json_t *action, const char *outcome)
{
    const json_t *outcomes = json_object_get(action, "outcomes");
    if (!outcomes)
        return strcmp(outcome, "ok") == 0;
    for (size_t i = 0; i < json_array_size(outcomes); i++) {
        const json_t *o = json_array_get(outcomes, i);
        if (json_is_string(o) && strcmp(json_string_value(o), outcome) == 0)
            return true;
    }
    return false;
}

void sp_command_check_declared(const char *action_id, const json_t *action,
                               sp_activity_output *out)
{
    if (out->kind != SP_OUTPUT_SUCCESS)
        return;
    const char *outcome = out->outcome ? out->outcome : "ok";
    if (declared(action, outcome))
        return;
    json_t *details = json_pack("{s:s}", "outcome", outcome);
    char shown[257];
    sp_utf8_clean(shown, sizeof shown, outcome);
    sp_activity_output undeclared;
    fail(&undeclared, "command.undeclared-outcome", false, details,
         "action %s: the command reported outcome \"%s\", which the action does not declare",
         action_id, shown);
    sp_activity_output_free(out);
    *out = undeclared;
}

static void check_declared(cmd_run *r, sp_activity_output *out)
{
    sp_command_check_declared(r->action_id, r->action, out);
}

/* ---- the runner ---- */

/* argv[0] "spore" names the running spore binary itself, so workflows can
 * use `spore step ...` without PATH and always with the same version. */
static const char *const *resolve_self(const sp_command_spec *spec, const char **argv_copy)
{
    if (strcmp(spec->argv[0], "spore") != 0 || !self_exe())
        return spec->argv;
    argv_copy[0] = self_exe();
    return argv_copy;
}

int sp_command_exec(const sp_runner_ctx *ctx, const sp_command_spec *spec, const char *input,
                    size_t input_len, const sp_command_limits *limits, sp_proc_result *res)
{
    char **env = build_env(ctx, spec);
    char *cwd = join_cwd(ctx->base_dir, spec->cwd);
    const char **argv_copy = calloc(spec->argc + 1, sizeof *argv_copy);
    if (!env || !cwd || !argv_copy) {
        sp_proc_strv_free(env);
        free(cwd);
        free(argv_copy);
        memset(res, 0, sizeof *res);
        return -1;
    }
    memcpy(argv_copy, spec->argv, (spec->argc + 1) * sizeof *argv_copy);
    sp_proc_spec ps = {
        .argv = resolve_self(spec, argv_copy),
        .envp = (const char *const *)env,
        .cwd = cwd,
        .stdin_data = input,
        .stdin_len = input_len,
        .has_timeout = spec->has_timeout || (limits && limits->default_timeout_ms),
        .timeout_ms = spec->has_timeout ? spec->timeout_ms : limits ? limits->default_timeout_ms : 0,
        .stop = ctx->stop,
        .stdout_max = limits ? limits->stdout_max : 0,
        .stderr_tail = limits ? limits->log_ring : 0,
        .stdout_tail = limits ? limits->log_ring : 0,
    };
    sp_proc_run(&ps, res);
    sp_proc_strv_free(env);
    free(cwd);
    free(argv_copy);
    return 0;
}

/* ---- secrets and logs (docs/authoring.md "Step logs") ---- */

/* Read every secret of the action into r->redactor; false with `out`
 * failed (command.secret-unavailable / -too-large, naming the secret). */
static bool read_secrets(cmd_run *r, sp_activity_output *out)
{
    if (!(r->redactor = sp_redactor_new())) {
        fail(out, "command.spawn", true, NULL, "action %s: out of memory", r->action_id);
        return false;
    }
    char buf[SP_REDACT_SECRET_MAX + 1];
    for (size_t i = 0; i < r->spec->nsecrets; i++) {
        const sp_secret_ref *sec = &r->spec->secrets[i];
        char *path = join_cwd(r->ctx->base_dir, sec->file);
        sp_error err = {0};
        size_t len = 0;
        bool read = path && sp_secret_file_read(path, buf, &len, &err) == 0;
        bool ok = read && sp_redactor_add(r->redactor, buf, len, &err) == 0;
        explicit_bzero(buf, sizeof buf);
        free(path);
        if (!ok) {
            const char *code = strcmp(err.code, "secret.too-large") == 0 ? "command.secret-too-large"
                               : read ? "command.secret-invalid" : "command.secret-unavailable";
            fail(out, code, false, json_pack("{s:s}", "secret", sec->name),
                 "action %s: secret \"%s\" %s", r->action_id, sec->name,
                 err.message[0] ? err.message : "cannot be read (out of memory)");
            sp_error_clear(&err);
            return false;
        }
    }
    return true;
}

/* What the attempt keeps of its stdout and stderr (NULL when out of memory). */
static sp_attempt_logs *keep_logs(const cmd_run *r)
{
    const sp_proc_result *p = &r->res;
    sp_log_stream o, e; /* each empty when out of memory */
    sp_steplog_stream(p->out_tail ? p->out_tail : "", p->out_tail_len, p->out_total, r->redactor,
                      &o);
    sp_steplog_stream(p->err ? p->err : "", p->err_len, p->err_total, r->redactor, &e);
    return sp_steplog_pair(&o, &e);
}

/* A redacted copy of *v in place (NULL stays NULL); false when two member
 * names became equal or out of memory. */
static bool redact_value(const sp_redactor *r, json_t **v)
{
    if (!*v)
        return true;
    bool collision = false;
    json_t *copy = sp_redact_json(r, *v, &collision);
    if (!copy)
        return false;
    json_decref(*v);
    *v = copy;
    return true;
}

/* No value the step reports keeps a secret: its output (a text output is
 * its stdout) and its error are redacted like its logs. */
static void redact_output(const cmd_run *r, sp_activity_output *out)
{
    if (sp_redactor_count(r->redactor) == 0)
        return;
    if (redact_value(r->redactor, &out->output) && redact_value(r->redactor, &out->error))
        return;
    sp_activity_output_free(out);
    fail(out, "command.output-invalid", false, json_pack("{s:s}", "problem", "redaction"),
         "action %s: the step's output could not be redacted (two member names became equal "
         "after redaction, or out of memory)", r->action_id);
}

static void execute(cmd_run *r, const char *input, size_t input_len, sp_activity_output *out)
{
    if (!read_secrets(r, out))
        return;
    sp_command_limits limits = {.log_ring = sp_steplog_ring(r->redactor)};
    if (sp_command_exec(r->ctx, r->spec, input, input_len, &limits, &r->res)) {
        fail(out, "command.spawn", true, NULL, "action %s: out of memory", r->action_id);
        return;
    }
    r->logs = keep_logs(r);
    map_end(r, out);
    check_declared(r, out);
    redact_output(r, out);
    out->logs = r->logs; /* last: the output helpers above reset `out` */
    r->logs = NULL;
    sp_proc_result_free(&r->res);
}

/* The parsed action: the prepared spec, or `local` parsed now. */
static const sp_command_spec *spec_of(const sp_runner_action *a, sp_command_spec *local,
                                      sp_error *err)
{
    if (a->spec)
        return a->spec;
    return sp_command_spec_parse(a->id, a->raw, local, err) ? NULL : local;
}

static int command_run(const sp_runner_ctx *ctx, const sp_runner_action *a, const json_t *input,
                       sp_activity_output *out)
{
    cmd_run r = {.ctx = ctx, .action_id = a->id, .action = a->raw};
    sp_error err = {0};
    sp_command_spec local = {0};
    memset(out, 0, sizeof *out);
    if (!(r.spec = spec_of(a, &local, &err))) {
        fail(out, "command.invalid", false, NULL, "%s", err.message);
        sp_error_clear(&err);
        return out->error ? 0 : -1;
    }
    size_t len = 4;
    char *bytes = input ? sp_json_encode_alloc(input, &len, &err) : strdup("null");
    if (!bytes) {
        fail(out, "command.invalid", false, NULL, "action %s: the input cannot be encoded: %s",
             a->id, err.message);
        sp_error_clear(&err);
    } else {
        execute(&r, bytes, len, out);
    }
    free(bytes);
    sp_redactor_free(r.redactor);
    sp_command_spec_free(&local);
    return out->kind == SP_OUTPUT_SUCCESS || out->error ? 0 : -1;
}

/* ---- command-form hooks of held attempts (engine.md §9, hooks in
 * command_spec.h), and the reference handle's built-in probe and stop ---- */

#define HOOK_STDOUT_MAX (64 * 1024)
#define STOP_GRACE_MS 5000

/* Run `hook` with the handle on stdin; the parsed stdout on exit 0, else NULL. */
static json_t *run_hook(const sp_runner_ctx *ctx, const sp_command_spec *hook,
                        const json_t *handle, uint64_t default_timeout_ms)
{
    char *input = sp_json_encode_alloc(handle, NULL, NULL);
    if (!input)
        return NULL;
    sp_command_limits limits = {default_timeout_ms, HOOK_STDOUT_MAX, 0};
    sp_proc_result res;
    json_t *doc = NULL;
    if (sp_command_exec(ctx, hook, input, strlen(input), &limits, &res) == 0) {
        if (res.end == SP_PROC_EXITED && res.exit_code == 0 && !res.out_over)
            doc = sp_json_parse(res.out, res.out_len, NULL);
        sp_proc_result_free(&res);
    }
    free(input);
    return doc;
}

sp_holder_state sp_command_hook_probe(const sp_runner_ctx *ctx, const sp_command_spec *hook,
                                      const json_t *handle)
{
    json_t *doc = run_hook(ctx, hook, handle, SP_HOOK_TIMEOUT_DEFAULT_MS);
    const json_t *h = json_object_get(doc, "holder");
    sp_holder_state s = json_object_size(doc) == 1 && json_is_string(h)
                            ? sp_holder_state_parse(json_string_value(h))
                            : SP_HOLDER_UNKNOWN;
    json_decref(doc);
    return s;
}

bool sp_command_hook_watch(const sp_runner_ctx *ctx, const sp_command_spec *hook,
                           const char *action_id, const json_t *action, const json_t *handle,
                           sp_activity_output *out)
{
    memset(out, 0, sizeof *out);
    json_t *doc = run_hook(ctx, hook, handle, 0);
    bool got = doc && sp_command_result_value(doc, out);
    json_decref(doc);
    if (!got) {
        sp_activity_output_free(out);
        return false;
    }
    sp_command_check_declared(action_id, action, out);
    return true;
}

bool sp_command_hook_stop(const sp_runner_ctx *ctx, const sp_command_spec *hook,
                          const json_t *handle)
{
    char *input = sp_json_encode_alloc(handle, NULL, NULL);
    if (!input)
        return false;
    sp_command_limits limits = {SP_HOOK_TIMEOUT_DEFAULT_MS, HOOK_STDOUT_MAX, 0};
    sp_proc_result res;
    bool stopped = false;
    if (sp_command_exec(ctx, hook, input, strlen(input), &limits, &res) == 0) {
        stopped = res.end == SP_PROC_EXITED && res.exit_code == 0;
        sp_proc_result_free(&res);
    }
    free(input);
    return stopped;
}

/* ---- the command runner's contract (runner.h) ---- */

static int command_validate(const char *id, const json_t *action, sp_error *err)
{
    sp_command_spec spec;
    if (sp_command_spec_parse(id, action, &spec, err))
        return -1;
    sp_command_spec_free(&spec);
    return 0;
}

static int command_prepare(const char *id, const json_t *action, void **out, sp_error *err)
{
    sp_command_spec *spec = calloc(1, sizeof *spec);
    if (!spec)
        return sp_oom(err);
    if (sp_command_spec_parse(id, action, spec, err)) {
        free(spec);
        return -1;
    }
    *out = spec;
    return 0;
}

static void command_release(void *spec)
{
    sp_command_spec_free(spec);
    free(spec);
}

/* The component-form hooks of a command action (runners.md §2). */
static int command_seal(const char *id, json_t *action, sp_seal_ctx *sc, sp_error *err)
{
    json_t *async = json_object_get(action, "async");
    static const char *const hooks[] = {"probe", "watch", "stop", NULL};
    for (const char *const *h = hooks; json_is_object(async) && *h; h++) {
        json_t *c = json_object_get(json_object_get(async, *h), "component");
        if (!c)
            continue;
        char where[300];
        snprintf(where, sizeof where, "action %s: async.%s", id, *h);
        if (sp_component_seal(sc, where, id, c, true, err))
            return -1;
    }
    return 0;
}

/* The async spec of a prepared action; NULL for a synchronous command (or
 * an unprepared one: the engine looks after prepared actions only). */
static const sp_async_spec *async_of(const sp_runner_action *a)
{
    const sp_command_spec *spec = a->spec;
    return spec ? spec->async : NULL;
}

static bool command_hold_terms(const sp_runner_action *a, sp_hold_terms *out)
{
    const sp_async_spec *async = async_of(a);
    sp_async_spec defaults = {.timeout_ms = SP_ASYNC_TIMEOUT_DEFAULT_MS,
                              .probe_every_ms = SP_ASYNC_PROBE_EVERY_DEFAULT_MS};
    sp_async_hold_terms(async ? async : &defaults, out);
    return async != NULL;
}

static bool command_can(const sp_runner_action *a, sp_hook_op op, const json_t *handle)
{
    const sp_async_spec *async = async_of(a);
    if (!async)
        return false;
    if (op == SP_HOOK_WATCH)
        return async->watch.form == SP_HOOK_COMMAND;
    const sp_hook *hook = op == SP_HOOK_PROBE ? &async->probe : &async->stop;
    return hook->form != SP_HOOK_NONE || (handle && sp_pid_handle_is(handle));
}

static sp_holder_state command_probe(const sp_runner_ctx *ctx, const sp_runner_action *a,
                                     const json_t *handle, sp_activity_output *out,
                                     bool *finished)
{
    *finished = false;
    memset(out, 0, sizeof *out);
    const sp_async_spec *async = async_of(a);
    if (!async)
        return SP_HOLDER_UNKNOWN;
    if (async->probe.form == SP_HOOK_COMMAND)
        return sp_command_hook_probe(ctx, &async->probe.command, handle);
    if (async->probe.form == SP_HOOK_COMPONENT)
        return sp_component_probe(ctx, a->id, a->raw, async->probe.component, true, handle, out,
                                  finished);
    return sp_pid_handle_is(handle) ? sp_pid_handle_probe(handle) : SP_HOLDER_UNKNOWN;
}

static bool command_watch(const sp_runner_ctx *ctx, const sp_runner_action *a,
                          const json_t *handle, sp_activity_output *out)
{
    memset(out, 0, sizeof *out);
    const sp_async_spec *async = async_of(a);
    return async && async->watch.form == SP_HOOK_COMMAND &&
           sp_command_hook_watch(ctx, &async->watch.command, a->id, a->raw, handle, out);
}

static bool command_stop(const sp_runner_ctx *ctx, const sp_runner_action *a,
                         const json_t *handle)
{
    const sp_async_spec *async = async_of(a);
    if (!async)
        return false;
    if (async->stop.form == SP_HOOK_COMMAND)
        return sp_command_hook_stop(ctx, &async->stop.command, handle);
    if (async->stop.form == SP_HOOK_COMPONENT)
        return sp_component_stop(ctx, a->id, async->stop.component, true, handle);
    return sp_pid_handle_is(handle) && sp_pid_handle_stop(handle, STOP_GRACE_MS);
}

const sp_runner sp_command_runner = {
    .kind = "command",
    .async = true,
    .observable = true,
    .validate = command_validate,
    .seal = command_seal,
    .prepare = command_prepare,
    .release = command_release,
    .run = command_run,
    .hold_terms = command_hold_terms,
    .can = command_can,
    .probe = command_probe,
    .watch = command_watch,
    .stop = command_stop,
};
