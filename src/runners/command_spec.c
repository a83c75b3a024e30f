/*
 * command_spec.c - parsing a `command` action (see command_spec.h). Never
 * accepts an argument that exec cannot receive as written.
 */
#include "runners/command_spec.h"

#include <stdlib.h>
#include <string.h>

#include "agent/action.h"
#include "json/decimal.h"
#include "runners/async_spec.h"
#include "runners/registry.h"

static const char *const KNOWN_MEMBERS[] = {"kind",   "effect", "outcomes",     "retry",
                                            "argv",   "cwd",    "env",          "timeoutMs",
                                            "output", "exitOutcomes", "description", "async",
                                            "secrets", NULL};
/* A hook in command form: {"command": {argv, cwd?, env?, timeoutMs?}}. */
static const char *const HOOK_MEMBERS[] = {"argv", "cwd", "env", "timeoutMs", NULL};

static int invalid(sp_error *err, const char *action_id, const char *what)
{
    return sp_fail(err, "action.invalid", "action %s: %s", action_id, what);
}

static bool plain_string(const json_t *v)
{
    return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v);
}

static int parse_argv(const char *id, const json_t *argv, sp_command_spec *s, sp_error *err)
{
    size_t n = json_array_size(argv);
    if (!json_is_array(argv) || n == 0)
        return invalid(err, id, "argv must be a non-empty array of strings (no shell is used)");
    if (n > SP_COMMAND_ARGV_MAX)
        return invalid(err, id, "argv has more than 4096 entries");
    s->argv = calloc(n + 1, sizeof *s->argv);
    if (!s->argv)
        return sp_oom(err);
    for (size_t i = 0; i < n; i++) {
        const json_t *a = json_array_get(argv, i);
        if (!plain_string(a))
            return invalid(err, id, "argv entries must be strings without NUL bytes");
        s->argv[i] = json_string_value(a);
    }
    if (s->argv[0][0] == '\0')
        return invalid(err, id, "argv[0] must not be empty");
    s->argc = n;
    return 0;
}

static bool env_name_ok(const char *name)
{
    return *name && !strchr(name, '=');
}

static int parse_env(const char *id, const json_t *env, sp_command_spec *s, sp_error *err)
{
    if (!env)
        return 0;
    size_t n = json_object_size(env);
    if (!json_is_object(env))
        return invalid(err, id, "env must be an object of strings");
    if (n > SP_COMMAND_ENV_MAX)
        return invalid(err, id, "env has more than 1024 variables");
    s->env = calloc(2 * n + 1, sizeof *s->env);
    if (!s->env)
        return sp_oom(err);
    const char *key;
    size_t klen;
    json_t *v;
    json_object_keylen_foreach((json_t *)env, key, klen, v)
    {
        if (strlen(key) != klen || !env_name_ok(key) || !plain_string(v))
            return invalid(err, id, "env names must be non-empty without '=' or NUL, values "
                                    "strings without NUL");
        s->env[2 * s->nenv] = key;
        s->env[2 * s->nenv + 1] = json_string_value(v);
        s->nenv++;
    }
    return 0;
}

static int parse_timeout(const char *id, const json_t *t, sp_command_spec *s, sp_error *err)
{
    if (!t)
        return 0;
    s->has_timeout = true;
    if (json_is_integer(t) && json_integer_value(t) >= 0) {
        s->timeout_ms = (uint64_t)json_integer_value(t);
        return 0;
    }
    if (sp_decimal_from_json(t, &s->timeout_ms))
        return 0;
    return invalid(err, id, "timeoutMs must be a non-negative integer or decimal string");
}

static int parse_output(const char *id, const json_t *o, sp_command_spec *s, sp_error *err)
{
    s->output = SP_OUTPUT_TEXT;
    if (!o)
        return 0;
    static const char *const names[] = {"text", "json", "none", "result"};
    for (int i = 0; i < 4; i++)
        if (json_is_string(o) && strcmp(json_string_value(o), names[i]) == 0) {
            s->output = (sp_command_output)i;
            return 0;
        }
    return invalid(err, id, "output must be \"text\", \"json\", \"none\" or \"result\"");
}

static bool parse_exit_code(const char *key, int *code)
{
    size_t n = strlen(key);
    if (n == 0 || n > 3 || (n > 1 && key[0] == '0'))
        return false;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (key[i] < '0' || key[i] > '9')
            return false;
        v = v * 10 + (key[i] - '0');
    }
    *code = v;
    return v <= 255;
}

static bool declared(const json_t *outcomes, const char *name)
{
    for (size_t i = 0; i < json_array_size(outcomes); i++)
        if (json_is_string(json_array_get(outcomes, i)) &&
            strcmp(json_string_value(json_array_get(outcomes, i)), name) == 0)
            return true;
    return false;
}

static int parse_exits(const char *id, const json_t *action, sp_command_spec *s, sp_error *err)
{
    const json_t *exits = json_object_get(action, "exitOutcomes");
    if (!exits)
        return 0;
    if (!json_is_object(exits))
        return invalid(err, id, "exitOutcomes must be an object: exit code -> outcome");
    const json_t *outcomes = json_object_get(action, "outcomes");
    s->exits = calloc(json_object_size(exits) + 1, sizeof *s->exits);
    if (!s->exits)
        return sp_oom(err);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)exits, key, v)
    {
        sp_exit_outcome *e = &s->exits[s->nexits];
        if (!parse_exit_code(key, &e->code))
            return invalid(err, id, "exitOutcomes keys must be exit codes 0..255 written in decimal");
        if (!json_is_string(v) || !json_is_array(outcomes) || !declared(outcomes, json_string_value(v)))
            return sp_fail(err, "action.invalid",
                           "action %s: exitOutcomes[%s] must name an outcome listed in the "
                           "action's explicit \"outcomes\"", id, key);
        e->outcome = json_string_value(v);
        s->nexits++;
    }
    return 0;
}

/* A secret's name becomes the variable <NAME>_FILE: [A-Za-z_][A-Za-z0-9_]*,
 * at most 64 bytes. */
static bool secret_name_ok(const char *n)
{
    size_t len = strlen(n);
    bool ok = len > 0 && len <= SP_COMMAND_SECRET_NAME_MAX;
    for (size_t i = 0; ok && i < len; i++) {
        char c = n[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
             (i > 0 && c >= '0' && c <= '9');
    }
    return ok;
}

/* argv, cwd, env and timeoutMs: what an action and a hook share. */
static int parse_process(const char *action_id, const json_t *obj, sp_command_spec *out,
                         sp_error *err)
{
    const json_t *cwd = json_object_get(obj, "cwd");
    int rc = parse_argv(action_id, json_object_get(obj, "argv"), out, err);
    if (!rc && cwd && !plain_string(cwd))
        rc = invalid(err, action_id, "cwd must be a string without NUL bytes");
    if (!rc)
        rc = parse_env(action_id, json_object_get(obj, "env"), out, err);
    if (!rc)
        rc = parse_timeout(action_id, json_object_get(obj, "timeoutMs"), out, err);
    out->cwd = cwd && !rc ? json_string_value(cwd) : NULL;
    return rc;
}

int sp_command_spec_parse(const char *action_id, const json_t *action, sp_command_spec *out,
                          sp_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = sp_action_check_members(action_id, action, KNOWN_MEMBERS, "a command action", err);
    if (!rc)
        rc = parse_process(action_id, action, out, err);
    if (!rc)
        rc = parse_output(action_id, json_object_get(action, "output"), out, err);
    if (!rc)
        rc = parse_exits(action_id, action, out, err);
    if (!rc)
        rc = sp_secrets_parse(action_id, json_object_get(action, "secrets"), secret_name_ok,
                              "secret names are letters, digits and '_' (at most 64, not starting "
                              "with a digit): each becomes <NAME>_FILE",
                              &out->secrets, &out->nsecrets, err);
    if (!rc && json_object_get(action, "async")) {
        out->async = calloc(1, sizeof *out->async);
        rc = out->async ? sp_async_spec_parse(action_id, action, SP_ASYNC_COMMAND, out->async, err)
                        : sp_oom(err);
    }
    if (rc) {
        sp_command_spec_free(out);
        return -1;
    }
    return 0;
}

int sp_command_hook_parse(const char *action_id, const json_t *hook, sp_command_spec *out,
                          sp_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = json_is_object(hook)
                 ? sp_action_check_members(action_id, hook, HOOK_MEMBERS, "a command hook", err)
                 : invalid(err, action_id, "a command hook is {argv, cwd?, env?, timeoutMs?}");
    if (!rc)
        rc = parse_process(action_id, hook, out, err);
    if (rc) {
        sp_command_spec_free(out);
        return -1;
    }
    return 0;
}

void sp_command_spec_free(sp_command_spec *spec)
{
    free(spec->argv);
    free(spec->env);
    free(spec->exits);
    free(spec->secrets);
    if (spec->async) {
        sp_async_spec_free(spec->async);
        free(spec->async);
    }
    memset(spec, 0, sizeof *spec);
}

const char *sp_command_exit_outcome(const sp_command_spec *spec, int code)
{
    for (size_t i = 0; i < spec->nexits; i++)
        if (spec->exits[i].code == code)
            return spec->exits[i].outcome;
    return NULL;
}
