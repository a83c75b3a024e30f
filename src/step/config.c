/*
 * config.c - spore-step's agent configuration (see step.h): the JSON object
 * of $SPORE_AGENT_CONFIG, written by the runner from the action's provider,
 * model, baseUrl, maxTurns, maxOutputTokens, temperature, tools and
 * runPrograms, plus the sandbox's readable / writable paths and the model
 * gateway's socket. Closed member set, every value bounded. For direct
 * access (no gateway: the exec transport) the key is read from
 * $PROVIDER_API_KEY_FILE.
 *
 * Must never print a configuration value that could be a secret (the key
 * is only ever read, never echoed), or accept an unknown member.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "step/step.h"

#define CONFIG_MAX (64u * 1024)
#define KEY_MAX (60u * 1024)

static int bad(const char *why)
{
    return step_fail(STEP_EXIT_PRECONDITION, "step.config-invalid", "SPORE_AGENT_CONFIG: %s", why);
}

static bool copy_string(const json_t *v, char *out, size_t cap)
{
    if (!v)
        return true;
    if (!json_is_string(v) || json_string_length(v) >= cap ||
        strlen(json_string_value(v)) != json_string_length(v))
        return false;
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return true;
}

static bool uint_member(const json_t *v, unsigned lo, unsigned hi, unsigned *out)
{
    if (!v)
        return true;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return false;
    *out = (unsigned)json_integer_value(v);
    return true;
}

/* An array of absolute (or, for programs, any non-empty) strings. */
static bool strings(const json_t *v, bool absolute, char ***out)
{
    size_t n = json_array_size(v);
    if ((v && !json_is_array(v)) || n > STEP_PATHS_MAX)
        return false;
    *out = calloc(n + 1, sizeof **out);
    for (size_t i = 0; *out && i < n; i++) {
        const json_t *s = json_array_get(v, i);
        if (!json_is_string(s) || json_string_length(s) == 0 || json_string_length(s) > 4096 ||
            strlen(json_string_value(s)) != json_string_length(s) ||
            (absolute && json_string_value(s)[0] != '/'))
            return false;
        if (!((*out)[i] = strdup(json_string_value(s))))
            return false;
    }
    return *out != NULL;
}

static bool tools(const json_t *v, bool *on)
{
    if (!v) {
        on[STEP_TOOL_READ_FILE] = on[STEP_TOOL_LIST_FILES] = on[STEP_TOOL_SEARCH_FILES] = true;
        return true;
    }
    if (!json_is_array(v) || json_array_size(v) > STEP_TOOL_COUNT * 2)
        return false;
    for (size_t i = 0; i < json_array_size(v); i++) {
        step_tool_id id;
        const char *name = json_string_value(json_array_get(v, i));
        if (!name || !step_tool_name(name, &id))
            return false;
        on[id] = true;
    }
    return true;
}

static int members(step_config *c, const json_t *doc)
{
    static const char *const known[] = {"provider", "model",     "baseUrl",  "gateway",
                                        "maxTurns", "maxOutputTokens", "temperature", "tools",
                                        "programs", "readable",  "writable", NULL};
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)doc, key, v)
    {
        bool ok = false;
        for (const char *const *k = known; *k && !ok; k++)
            ok = strcmp(*k, key) == 0;
        if (!ok)
            return bad("unknown member");
    }
    if (!copy_string(json_object_get(doc, "provider"), c->provider, sizeof c->provider) ||
        !copy_string(json_object_get(doc, "model"), c->model, sizeof c->model) ||
        !copy_string(json_object_get(doc, "baseUrl"), c->base_url, sizeof c->base_url) ||
        !copy_string(json_object_get(doc, "gateway"), c->gateway, sizeof c->gateway) ||
        !copy_string(json_object_get(doc, "temperature"), c->temperature, sizeof c->temperature))
        return bad("provider, model, baseUrl, gateway and temperature are bounded strings");
    if (!uint_member(json_object_get(doc, "maxTurns"), 1, STEP_MAX_TURNS_MAX, &c->max_turns) ||
        !uint_member(json_object_get(doc, "maxOutputTokens"), 1, 1000000, &c->max_output_tokens))
        return bad("maxTurns is 1..200, maxOutputTokens 1..1000000");
    if (!tools(json_object_get(doc, "tools"), c->tools))
        return bad("tools names built-in tools only");
    if (!strings(json_object_get(doc, "programs"), false, &c->programs) ||
        !strings(json_object_get(doc, "readable"), true, &c->readable) ||
        !strings(json_object_get(doc, "writable"), true, &c->writable))
        return bad("programs, readable and writable are arrays of at most 64 paths");
    return 0;
}

/* Direct access only: the key file the runner mounted (optional: a local
 * server needs none). */
static int read_key(step_config *c)
{
    const char *file = getenv("PROVIDER_API_KEY_FILE");
    if (c->gateway[0] || !file)
        return 0;
    size_t len;
    char *key = step_read_bounded(file, KEY_MAX, &len);
    if (!key)
        return step_fail(STEP_EXIT_PRECONDITION, "provider.credentials-missing",
                         "PROVIDER_API_KEY_FILE is set but cannot be read");
    while (len > 0 && (key[len - 1] == '\n' || key[len - 1] == '\r' || key[len - 1] == ' '))
        key[--len] = '\0';
    if (len == 0 || memchr(key, '\n', len) || memchr(key, '\r', len)) {
        free(key);
        return step_fail(STEP_EXIT_PRECONDITION, "provider.credentials-missing",
                         "the key file is empty or holds more than one line");
    }
    c->api_key = key;
    return 0;
}

int step_config_load(step_config *c, const char *provider)
{
    memset(c, 0, sizeof *c);
    c->max_turns = STEP_MAX_TURNS_DEFAULT;
    if (!getcwd(c->cwd, sizeof c->cwd))
        snprintf(c->cwd, sizeof c->cwd, "/");
    const char *text = getenv("SPORE_AGENT_CONFIG");
    char why[160];
    if (text) {
        size_t len = strlen(text);
        if (len > CONFIG_MAX)
            return bad("longer than 64 KiB");
        c->doc = step_parse_json(text, len, why, sizeof why);
        if (!json_is_object(c->doc))
            return bad("not a JSON object");
    }
    int rc = members(c, c->doc);
    if (rc)
        return rc;
    if (provider && strlen(provider) >= sizeof c->provider)
        return bad("the provider name is too long");
    if (provider)
        snprintf(c->provider, sizeof c->provider, "%s", provider);
    return read_key(c);
}

static void strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

void step_config_free(step_config *c)
{
    strv_free(c->programs);
    strv_free(c->readable);
    strv_free(c->writable);
    if (c->api_key) {
        explicit_bzero(c->api_key, strlen(c->api_key));
        free(c->api_key);
    }
    json_decref(c->doc);
    memset(c, 0, sizeof *c);
}
