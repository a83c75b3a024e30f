/*
 * action.c - parsing and validating an `agent` action (see action.h).
 * Never keeps a plain MCP header value, never accepts an unknown member.
 */
#include "agent/action.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/decimal.h"
#include "sandbox/sandbox.h"

static const char *const MEMBERS[] = {
    "kind",       "stepCli",    "systemPrompt", "outputSchema", "timeoutMs",
    "provider",   "sandbox",    "mcpServers",   "secrets",      "allowedTools",
    "deniedTools", "env",       "description",  "effect",       "outcomes",
    "retry",      "model",      "baseUrl",      "maxTurns",     "maxOutputTokens",
    "temperature", "tools",     "runPrograms",  NULL};
static const char *const TOOLS[] = {"read_file",  "list_files", "search_files", "write_file",
                                    "edit_file",  "run",        NULL};
static const char *const SANDBOX_MEMBERS[] = {
    "transport", "network",        "reuse",    "readable",     "writable", "maxMessageBytes",
    "command",   "lostStreamExit", "workRoot", "hostWorkRoot", NULL};

__attribute__((format(printf, 3, 4))) static int invalid(sp_error *err, const char *id,
                                                        const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return sp_fail(err, "action.invalid", "action %s: %s", id, what);
}

static bool plain(const json_t *v, size_t max)
{
    return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v) &&
           json_string_length(v) <= max;
}

static int closed(const char *id, const json_t *obj, const char *const *known, const char *what,
                  sp_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        bool ok = false;
        for (const char *const *k = known; *k && !ok; k++)
            ok = strcmp(*k, key) == 0;
        if (!ok)
            return invalid(err, id, "unknown member \"%s\" in %s", key, what);
    }
    return 0;
}

static char **strv_new(size_t n)
{
    return calloc(n + 1, sizeof(char *));
}

static void strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

/* An array of plain strings (1..max entries, each non-empty unless allowed). */
static int string_array(const char *id, const json_t *a, const char *what, size_t max,
                        bool nonempty, char ***out, sp_error *err)
{
    if (!json_is_array(a) || (nonempty && json_array_size(a) == 0) || json_array_size(a) > max)
        return invalid(err, id, "%s must be an array of at most %zu strings%s", what, max,
                       nonempty ? " (not empty)" : "");
    *out = strv_new(json_array_size(a));
    if (!*out)
        return sp_oom(err);
    for (size_t i = 0; i < json_array_size(a); i++) {
        const json_t *s = json_array_get(a, i);
        if (!plain(s, 4096) || json_string_length(s) == 0)
            return invalid(err, id, "%s entries must be non-empty strings without NUL bytes "
                           "(at most 4096 bytes)", what);
        if (!((*out)[i] = strdup(json_string_value(s))))
            return sp_oom(err);
    }
    return 0;
}

/* No "." or ".." component, no empty component in the middle. */
static bool path_clean(const char *p)
{
    const char *s = p;
    while (*s) {
        const char *slash = strchr(s, '/');
        size_t n = slash ? (size_t)(slash - s) : strlen(s);
        if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
            return false;
        if (n == 0 && s != p && slash)
            return false; /* "//" */
        if (!slash)
            break;
        s = slash + 1;
    }
    return true;
}

static int paths(const char *id, const json_t *a, const char *what, char ***out, sp_error *err)
{
    if (!a) {
        *out = strv_new(0);
        return *out ? 0 : sp_oom(err);
    }
    if (string_array(id, a, what, SP_AGENT_PATHS_MAX, false, out, err))
        return -1;
    for (char **p = *out; *p; p++) {
        if (!path_clean(*p))
            return invalid(err, id, "%s entry \"%s\" has a \".\" or \"..\" component", what, *p);
        if ((*p)[0] == '/' && sp_sandbox_path_reserved(*p))
            return invalid(err, id, "%s entry \"%s\" would %s", what, *p,
                           strcmp(*p, "/") == 0 ? "grant the whole file system"
                                                : "cover a directory the sandbox provides itself");
    }
    return 0;
}

static bool absolute_clean(const json_t *v)
{
    return plain(v, 4096) && json_string_value(v)[0] == '/' && path_clean(json_string_value(v));
}

static int parse_sandbox(const char *id, const json_t *sb, sp_agent_sandbox *s, sp_error *err)
{
    s->max_message_bytes = SP_AGENT_MESSAGE_DEFAULT;
    s->lost_stream_exit = 255;
    if (!sb) {
        s->readable = strv_new(0);
        s->writable = strv_new(0);
        return s->readable && s->writable ? 0 : sp_oom(err);
    }
    if (!json_is_object(sb))
        return invalid(err, id, "sandbox must be an object");
    if (closed(id, sb, SANDBOX_MEMBERS, "sandbox", err))
        return -1;
    const json_t *t = json_object_get(sb, "transport"), *net = json_object_get(sb, "network");
    const json_t *reuse = json_object_get(sb, "reuse");
    if (t && !(json_is_string(t) && (strcmp(json_string_value(t), "local") == 0 ||
                                     strcmp(json_string_value(t), "exec") == 0)))
        return invalid(err, id, "sandbox.transport must be \"local\" or \"exec\"");
    s->transport = t && strcmp(json_string_value(t), "exec") == 0 ? SP_AGENT_EXEC : SP_AGENT_LOCAL;
    if (net && !(json_is_string(net) && (strcmp(json_string_value(net), "none") == 0 ||
                                         strcmp(json_string_value(net), "host") == 0)))
        return invalid(err, id, "sandbox.network must be \"none\" or \"host\"");
    s->network_host = net && strcmp(json_string_value(net), "host") == 0;
    if (reuse && !(json_is_string(reuse) && (strcmp(json_string_value(reuse), "none") == 0 ||
                                             strcmp(json_string_value(reuse), "run") == 0)))
        return invalid(err, id, "sandbox.reuse must be \"none\" or \"run\"");
    s->reuse_run = reuse && strcmp(json_string_value(reuse), "run") == 0;
    if (paths(id, json_object_get(sb, "readable"), "sandbox.readable", &s->readable, err) ||
        paths(id, json_object_get(sb, "writable"), "sandbox.writable", &s->writable, err))
        return -1;
    const json_t *max = json_object_get(sb, "maxMessageBytes");
    if (max && (!sp_decimal_from_json(max, &s->max_message_bytes) || s->max_message_bytes == 0))
        return invalid(err, id, "sandbox.maxMessageBytes must be a positive decimal string");
    const json_t *cmd = json_object_get(sb, "command"), *lost = json_object_get(sb, "lostStreamExit");
    const json_t *work = json_object_get(sb, "workRoot"), *host = json_object_get(sb, "hostWorkRoot");
    if (s->transport == SP_AGENT_LOCAL) {
        if (cmd || lost || work || host)
            return invalid(err, id, "sandbox.command, lostStreamExit, workRoot and hostWorkRoot "
                           "belong to the \"exec\" transport");
        return 0;
    }
    if (!cmd)
        return invalid(err, id, "the exec transport needs sandbox.command (the prefix that "
                       "forwards stdin, stdout, stderr and the exit status)");
    if (string_array(id, cmd, "sandbox.command", SP_AGENT_ARGV_MAX, true, &s->exec_command, err))
        return -1;
    if (lost) {
        if (!json_is_integer(lost) || json_integer_value(lost) < 1 ||
            json_integer_value(lost) > 255)
            return invalid(err, id, "sandbox.lostStreamExit must be an integer 1..255");
        s->lost_stream_exit = (int)json_integer_value(lost);
    }
    if (work && !absolute_clean(work))
        return invalid(err, id, "sandbox.workRoot must be an absolute path without \"..\"");
    if (host && !absolute_clean(host))
        return invalid(err, id, "sandbox.hostWorkRoot must be an absolute path without \"..\"");
    s->work_root = strdup(work ? json_string_value(work) : "/tmp");
    s->host_work_root = host ? strdup(json_string_value(host)) : NULL;
    return s->work_root && (!host || s->host_work_root) ? 0 : sp_oom(err);
}

static bool secret_name_ok(const char *n)
{
    size_t len = strlen(n);
    if (len == 0 || len > 64 || strcmp(n, "mcp") == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = n[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (i == 0 || (c != '_' && c != '.' && c != '-')))
            return false;
    }
    return strcmp(n, ".") != 0;
}

int sp_secrets_parse(const char *id, const json_t *sec, bool (*name_ok)(const char *),
                     const char *name_rule, sp_secret_ref **out, size_t *n, sp_error *err)
{
    *out = NULL;
    *n = 0;
    if (!sec)
        return 0;
    if (!json_is_object(sec) || json_object_size(sec) > SP_SECRETS_MAX)
        return invalid(err, id, "secrets must be an object of at most 64 {\"file\": path} entries");
    if (json_object_size(sec) && !(*out = calloc(json_object_size(sec), sizeof **out)))
        return sp_oom(err);
    const char *key;
    size_t klen;
    json_t *v;
    json_object_keylen_foreach((json_t *)sec, key, klen, v)
    {
        const json_t *file = json_object_get(v, "file");
        if (strlen(key) != klen || !name_ok(key))
            return invalid(err, id, "%s", name_rule);
        if (!json_is_object(v) || json_object_size(v) != 1 || !plain(file, 4096) ||
            json_string_length(file) == 0)
            return invalid(err, id, "secret \"%s\" must be {\"file\": \"<path>\"}", key);
        (*out)[(*n)++] = (sp_secret_ref){key, json_string_value(file)};
    }
    return 0;
}

static int parse_secrets(const char *id, const json_t *sec, sp_agent_action *a, sp_error *err)
{
    sp_secret_ref *refs = NULL;
    size_t n = 0;
    int rc = sp_secrets_parse(id, sec, secret_name_ok,
                              "secret names are letters, digits, '_', '.', '-' (at most 64, "
                              "starting with a letter or digit; \"mcp\" is reserved)",
                              &refs, &n, err);
    if (!rc && n && !(a->secrets = calloc(n, sizeof *a->secrets)))
        rc = sp_oom(err);
    for (size_t i = 0; !rc && i < n; i++) {
        sp_agent_secret *s = &a->secrets[a->nsecrets++];
        if (!(s->name = strdup(refs[i].name)) || !(s->file = strdup(refs[i].file)))
            rc = sp_oom(err);
    }
    free(refs);
    return rc;
}

static sp_agent_secret *find_secret(sp_agent_action *a, const char *name)
{
    for (size_t i = 0; i < a->nsecrets; i++)
        if (strcmp(a->secrets[i].name, name) == 0)
            return &a->secrets[i];
    return NULL;
}

/* One header: {name, source: "Secret", secretName} or a plain {name, value}. */
static int parse_header(const char *id, const char *server, const json_t *h, sp_agent_action *a,
                        json_t *out_headers, sp_error *err)
{
    const json_t *name = json_object_get(h, "name");
    if (!json_is_object(h) || !plain(name, 256) || json_string_length(name) == 0)
        return invalid(err, id, "MCP server \"%s\": every header has a \"name\"", server);
    if (json_object_get(h, "value")) {
        if (!a->plain_header_server[0])
            snprintf(a->plain_header_server, sizeof a->plain_header_server, "%s", server);
        return 0; /* the value itself is never kept */
    }
    static const char *const known[] = {"name", "source", "secretName", NULL};
    if (closed(id, h, known, "an MCP header", err))
        return -1;
    const json_t *source = json_object_get(h, "source"), *secret = json_object_get(h, "secretName");
    if (!json_is_string(source) || strcmp(json_string_value(source), "Secret") != 0 ||
        !plain(secret, 64))
        return invalid(err, id, "MCP server \"%s\": a header is {\"name\", \"source\": \"Secret\", "
                       "\"secretName\"}", server);
    sp_agent_secret *s = find_secret(a, json_string_value(secret));
    if (!s)
        return invalid(err, id, "MCP server \"%s\": secretName \"%s\" is not in \"secrets\"",
                       server, json_string_value(secret));
    s->mcp = true;
    return json_array_append_new(out_headers, json_pack("{s:O,s:s,s:O}", "name", name, "source",
                                                        "Secret", "secretName", secret))
               ? sp_oom(err)
               : 0;
}

/* A stdio server's name becomes part of its tools' names: [A-Za-z0-9_-]{1,32}. */
static bool stdio_name_ok(const char *n)
{
    size_t len = strlen(n);
    return len >= 1 && len <= 32 && strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-") == len;
}

/* {name, command: [argv]}: a server spore-step starts inside the sandbox. */
static int parse_stdio_server(const char *id, const json_t *s, sp_agent_action *a, sp_error *err)
{
    const char *name = json_string_value(json_object_get(s, "name"));
    const json_t *cmd = json_object_get(s, "command");
    if (json_object_get(s, "url") || json_object_get(s, "headers"))
        return invalid(err, id, "MCP server \"%s\": a server has either a \"url\" (HTTP) or a "
                       "\"command\" (stdio)", name);
    if (!stdio_name_ok(name))
        return invalid(err, id, "MCP server \"%s\": a stdio server's name is 1 to 32 letters, "
                       "digits, '_' or '-' (its tools are named <server>.<tool>)", name);
    char **argv = NULL;
    if (string_array(id, cmd, "an MCP server's command", SP_AGENT_ARGV_MAX, true, &argv, err)) {
        strv_free(argv);
        return -1;
    }
    bool absolute_ok = argv[0][0] == '/' ? path_clean(argv[0]) : !strchr(argv[0], '/');
    strv_free(argv);
    if (!absolute_ok)
        return invalid(err, id, "MCP server \"%s\": command[0] is a program name or an absolute "
                       "path without \"..\"", name);
    json_t *server = json_pack("{s:s,s:O}", "name", name, "command", cmd);
    return !server || json_array_append_new(a->mcp_servers, server) ? sp_oom(err) : 0;
}

static int parse_servers(const char *id, const json_t *servers, sp_agent_action *a, sp_error *err)
{
    if (!servers)
        return 0;
    if (!json_is_array(servers) || json_array_size(servers) > SP_AGENT_SERVERS_MAX)
        return invalid(err, id, "mcpServers must be an array of at most %d servers",
                       SP_AGENT_SERVERS_MAX);
    if (!(a->mcp_servers = json_array()))
        return sp_oom(err);
    static const char *const known[] = {"name", "url", "headers", "command", NULL};
    for (size_t i = 0; i < json_array_size(servers); i++) {
        const json_t *s = json_array_get(servers, i);
        const json_t *name = json_object_get(s, "name"), *url = json_object_get(s, "url");
        const json_t *headers = json_object_get(s, "headers");
        if (!json_is_object(s) || !plain(name, 128) || json_string_length(name) == 0 ||
            (!plain(url, 4096) && !json_object_get(s, "command")))
            return invalid(err, id, "mcpServers[%zu] needs a \"name\" and a \"url\" or a "
                           "\"command\"", i);
        const char *sname = json_string_value(name);
        if (closed(id, s, known, "an MCP server", err))
            return -1;
        for (size_t k = 0; k < i; k++)
            if (strcmp(json_string_value(json_object_get(json_array_get(servers, k), "name")),
                       sname) == 0)
                return invalid(err, id, "two MCP servers are named \"%s\"", sname);
        if (json_object_get(s, "command")) {
            if (parse_stdio_server(id, s, a, err))
                return -1;
            continue;
        }
        if (headers && (!json_is_array(headers) || json_array_size(headers) > SP_AGENT_HEADERS_MAX))
            return invalid(err, id, "MCP server \"%s\": headers must be an array", sname);
        json_t *out_headers = json_array();
        json_t *server = json_pack("{s:O,s:O,s:o}", "name", name, "url", url, "headers",
                                   out_headers);
        if (!server || json_array_append_new(a->mcp_servers, server))
            return sp_oom(err);
        for (size_t h = 0; h < json_array_size(headers); h++)
            if (parse_header(id, sname, json_array_get(headers, h), a, out_headers, err))
                return -1;
    }
    return 0;
}

static bool env_name_ok(const char *n)
{
    if (!*n || strncmp(n, "SPORE_", 6) == 0 || (*n >= '0' && *n <= '9'))
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return false;
    return strlen(n) <= 128;
}

static int parse_env(const char *id, const json_t *env, sp_agent_action *a, sp_error *err)
{
    size_t n = json_object_size(env);
    if (env && (!json_is_object(env) || n > SP_AGENT_ENV_MAX))
        return invalid(err, id, "env must be an object of at most %d strings", SP_AGENT_ENV_MAX);
    a->env = strv_new(2 * n);
    if (!a->env)
        return sp_oom(err);
    size_t i = 0;
    const char *key;
    size_t klen;
    json_t *v;
    json_object_keylen_foreach((json_t *)env, key, klen, v)
    {
        if (strlen(key) != klen || !env_name_ok(key) || !plain(v, 65536))
            return invalid(err, id, "env names are letters, digits and '_' (not SPORE_*), values "
                           "strings without NUL");
        if (!(a->env[i++] = strdup(key)) || !(a->env[i++] = strdup(json_string_value(v))))
            return sp_oom(err);
    }
    return 0;
}

static int parse_tools(const char *id, const json_t *tools, const char *what, bool *has,
                       sp_error *err)
{
    if (!tools)
        return 0;
    if (!json_is_array(tools))
        return invalid(err, id, "%s must be an array of strings", what);
    for (size_t i = 0; i < json_array_size(tools); i++)
        if (!json_is_string(json_array_get(tools, i)))
            return invalid(err, id, "%s must be an array of strings", what);
    *has = true;
    return 0;
}

static int parse_outcomes(const char *id, const json_t *outcomes, sp_error *err)
{
    if (!outcomes)
        return 0;
    for (size_t i = 0; i < json_array_size(outcomes); i++) {
        const json_t *o = json_array_get(outcomes, i);
        if (json_is_string(o) && strcmp(json_string_value(o), "ok") == 0)
            return 0;
    }
    return invalid(err, id, "an agent step succeeds with the outcome \"ok\": \"outcomes\" must "
                   "include it");
}

/* baseUrl: http(s), no credentials, query, fragment, space or control. */
static bool url_ok(const char *u)
{
    const char *rest = strncmp(u, "https://", 8) == 0  ? u + 8
                       : strncmp(u, "http://", 7) == 0 ? u + 7
                                                       : NULL;
    if (!rest || !*rest || *rest == '/')
        return false;
    size_t host = strcspn(rest, "/");
    if (memchr(rest, '@', host))
        return false;
    for (const char *c = u; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7f || *c == '?' || *c == '#' || *c == '\\')
            return false;
    return true;
}

static bool temperature_ok(const char *t)
{
    size_t n = strlen(t), digits = strspn(t, "0123456789");
    if (n == 0 || n >= 32 || digits == 0)
        return false;
    if (t[digits] == '.' && (strspn(t + digits + 1, "0123456789") != n - digits - 1 || n == digits + 1))
        return false;
    if (t[digits] && t[digits] != '.')
        return false;
    return strtod(t, NULL) <= 2.0;
}

static int count_member(const char *id, const json_t *v, const char *what, unsigned max,
                        unsigned *out, sp_error *err)
{
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max)
        return invalid(err, id, "%s must be an integer 1..%u", what, max);
    *out = (unsigned)json_integer_value(v);
    return 0;
}

static int parse_tool_names(const char *id, const json_t *tools, sp_agent_action *a, sp_error *err)
{
    if (!tools)
        return 0;
    if (string_array(id, tools, "tools", 16, false, &a->tools, err))
        return -1;
    for (char **t = a->tools; *t; t++) {
        bool known = false;
        for (const char *const *k = TOOLS; *k && !known; k++)
            known = strcmp(*k, *t) == 0;
        if (!known)
            return invalid(err, id, "tools: \"%s\" is not a built-in tool (read_file, list_files, "
                           "search_files, write_file, edit_file, run)", *t);
    }
    return 0;
}

static int parse_programs(const char *id, const json_t *progs, sp_agent_action *a, sp_error *err)
{
    if (!progs) {
        a->run_programs = strv_new(0);
        return a->run_programs ? 0 : sp_oom(err);
    }
    if (string_array(id, progs, "runPrograms", SP_AGENT_PATHS_MAX, false, &a->run_programs, err))
        return -1;
    for (char **p = a->run_programs; *p; p++)
        if (strchr(*p, '/') && ((*p)[0] != '/' || !path_clean(*p)))
            return invalid(err, id, "runPrograms entries are program names or absolute paths "
                           "without \"..\"");
    return 0;
}

static int parse_provider(const char *id, const json_t *action, sp_agent_action *a, sp_error *err)
{
    const json_t *model = json_object_get(action, "model"), *url = json_object_get(action, "baseUrl");
    const json_t *temp = json_object_get(action, "temperature");
    if (model && (!plain(model, 255) || json_string_length(model) == 0))
        return invalid(err, id, "model must be a non-empty string (at most 255 bytes)");
    if (url && (!plain(url, 2048) || !url_ok(json_string_value(url))))
        return invalid(err, id, "baseUrl must be an http:// or https:// URL without credentials, "
                       "query or fragment (at most 2048 bytes)");
    if (temp && (!plain(temp, 31) || !temperature_ok(json_string_value(temp))))
        return invalid(err, id, "temperature must be a decimal string from 0 to 2");
    if (temp)
        snprintf(a->temperature, sizeof a->temperature, "%s", json_string_value(temp));
    if (count_member(id, json_object_get(action, "maxTurns"), "maxTurns", SP_AGENT_TURNS_MAX,
                     &a->max_turns, err) ||
        count_member(id, json_object_get(action, "maxOutputTokens"), "maxOutputTokens", 1000000,
                     &a->max_output_tokens, err) ||
        parse_tool_names(id, json_object_get(action, "tools"), a, err) ||
        parse_programs(id, json_object_get(action, "runPrograms"), a, err))
        return -1;
    bool openai = strcmp(a->provider, "openai") == 0, anthropic = strcmp(a->provider, "anthropic") == 0;
    if ((model || url) && !openai && !anthropic)
        return invalid(err, id, "model and baseUrl belong to provider \"openai\" or \"anthropic\"");
    if (!model && !url)
        return 0;
    a->api = openai ? SP_AGENT_API_OPENAI : SP_AGENT_API_ANTHROPIC;
    a->model = model ? strdup(json_string_value(model)) : NULL;
    const char *base = url ? json_string_value(url)
                       : openai ? "https://api.openai.com/v1"
                                : "https://api.anthropic.com";
    a->base_url = strdup(base);
    if (!a->base_url || (model && !a->model))
        return sp_oom(err);
    size_t n = strlen(a->base_url);
    while (n > 0 && a->base_url[n - 1] == '/')
        a->base_url[--n] = '\0';
    return 0;
}

static int parse_all(const char *id, const json_t *action, sp_agent_action *a, sp_error *err)
{
    if (!json_is_object(action))
        return invalid(err, id, "an action is an object");
    if (closed(id, action, MEMBERS, "an agent action", err))
        return -1;
    const json_t *kind = json_object_get(action, "kind");
    if (!json_is_string(kind) || strcmp(json_string_value(kind), "agent") != 0)
        return invalid(err, id, "kind must be \"agent\"");
    const json_t *cli = json_object_get(action, "stepCli");
    if (!cli)
        return invalid(err, id, "an agent action needs \"stepCli\" (the step CLI's argv)");
    if (string_array(id, cli, "stepCli", SP_AGENT_ARGV_MAX, true, &a->step_cli, err))
        return -1;
    a->nstep_cli = json_array_size(cli);
    const json_t *prompt = json_object_get(action, "systemPrompt");
    if (prompt && !plain(prompt, 256 * 1024))
        return invalid(err, id, "systemPrompt must be a string without NUL bytes");
    if (!(a->system_prompt = strdup(prompt ? json_string_value(prompt) : "")))
        return sp_oom(err);
    const json_t *schema = json_object_get(action, "outputSchema");
    if (schema && !json_is_object(schema))
        return invalid(err, id, "outputSchema must be an object (a JSON Schema)");
    a->output_schema = schema ? json_incref((json_t *)schema) : json_object();
    a->timeout_ms = SP_AGENT_TIMEOUT_DEFAULT_MS;
    const json_t *timeout = json_object_get(action, "timeoutMs");
    if (timeout && (!sp_decimal_from_json(timeout, &a->timeout_ms) || a->timeout_ms == 0 ||
                    a->timeout_ms > UINT64_C(9007199254740991)))
        return invalid(err, id, "timeoutMs must be a positive decimal string (milliseconds)");
    const json_t *provider = json_object_get(action, "provider");
    if (provider && (!plain(provider, 128) || json_string_length(provider) == 0))
        return invalid(err, id, "provider must be a non-empty string (at most 128 bytes)");
    a->provider = strdup(provider ? json_string_value(provider) : a->step_cli[0]);
    if (!a->provider)
        return sp_oom(err);
    if (parse_sandbox(id, json_object_get(action, "sandbox"), &a->sandbox, err) ||
        parse_secrets(id, json_object_get(action, "secrets"), a, err) ||
        parse_servers(id, json_object_get(action, "mcpServers"), a, err) ||
        parse_env(id, json_object_get(action, "env"), a, err) ||
        parse_tools(id, json_object_get(action, "allowedTools"), "allowedTools",
                    &a->has_allowed_tools, err) ||
        parse_tools(id, json_object_get(action, "deniedTools"), "deniedTools",
                    &a->has_denied_tools, err) ||
        parse_outcomes(id, json_object_get(action, "outcomes"), err) ||
        parse_provider(id, action, a, err))
        return -1;
    return 0;
}

int sp_agent_action_parse(const char *action_id, const json_t *action, sp_agent_action *out,
                          sp_error *err)
{
    memset(out, 0, sizeof *out);
    if (parse_all(action_id, action, out, err)) {
        sp_agent_action_free(out);
        return -1;
    }
    return 0;
}

void sp_agent_action_free(sp_agent_action *a)
{
    strv_free(a->step_cli);
    free(a->system_prompt);
    json_decref(a->output_schema);
    free(a->provider);
    strv_free(a->sandbox.readable);
    strv_free(a->sandbox.writable);
    strv_free(a->sandbox.exec_command);
    free(a->sandbox.work_root);
    free(a->sandbox.host_work_root);
    for (size_t i = 0; i < a->nsecrets; i++) {
        free(a->secrets[i].name);
        free(a->secrets[i].file);
    }
    free(a->secrets);
    json_decref(a->mcp_servers);
    strv_free(a->env);
    free(a->model);
    free(a->base_url);
    strv_free(a->tools);
    strv_free(a->run_programs);
    memset(a, 0, sizeof *a);
}

int sp_agent_action_validate(const char *action_id, const json_t *action, sp_error *err)
{
    sp_agent_action a;
    if (sp_agent_action_parse(action_id, action, &a, err))
        return -1;
    int rc = 0;
    if (a.plain_header_server[0])
        rc = sp_fail(err, "action.invalid",
                     "action %s: MCP server \"%s\" carries a plain header value "
                     "(agent.mcp-plain-headers): use {\"source\": \"Secret\", \"secretName\"}",
                     action_id, a.plain_header_server);
    sp_agent_action_free(&a);
    return rc;
}
