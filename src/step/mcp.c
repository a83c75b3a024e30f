/*
 * mcp.c - MCP servers over stdio for spore-step's real providers
 * (agent-providers.md §2): each `mcpServers` entry with a `command` is
 * started inside the sandbox (the step's own rights: the same environment,
 * the working directory, stderr shared with spore-step's), spoken to in
 * JSON-RPC 2.0 over newline-delimited stdin/stdout (initialize, then
 * notifications/initialized, tools/list, tools/call), and its tools are
 * offered to the model. Their names: `<server>.<tool>` in events and
 * messages to people; on the wire `<server>__<tool>` (the APIs allow only
 * [A-Za-z0-9_-] in tool names), characters outside that set become '_'.
 *
 * Bounds: 8 stdio servers, 64 tools each, a message line at most 4 MiB,
 * 10 s to start (never past the step's deadline), each call the step's
 * deadline; arguments are checked against the tool's inputSchema first
 * (src/schema; a schema outside spore's subset leaves that to the server);
 * results go through the bounded tool output. A server that cannot start
 * or initialize is a precondition failure (exit 3). HTTP servers (`url`)
 * are not spoken to by spore-step (a line on stderr says so).
 *
 * Must never read an unbounded line, wait past a deadline, or leave a
 * server process behind (each is killed with its process group at the end).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "step/step.h"

#define SERVERS_MAX 8
#define TOOLS_MAX 64
#define LINE_MAX_BYTES (4u * 1024 * 1024)
#define CONFIG_MAX (256u * 1024)
#define START_MS 10000
#define PROTOCOL_VERSION "2024-11-05"

extern char **environ;

typedef struct mcp_tool {
    char wire[65];     /* <server>__<tool>, sanitized, at most 64 bytes */
    char display[200]; /* <server>.<tool> */
    char *name;        /* as the server calls it */
    json_t *schema;    /* offered to the model as given */
    sp_schema *check;  /* ... and compiled, NULL when outside spore's subset */
    json_t *description;
} mcp_tool;

typedef struct mcp_server {
    char name[40];
    pid_t pid;
    int in, out; /* its stdin (we write), its stdout (we read) */
    sp_buf pending;
    long long next_id;
    mcp_tool tools[TOOLS_MAX];
    size_t ntools;
} mcp_server;

struct step_mcp {
    mcp_server servers[SERVERS_MAX];
    size_t n;
};

/* ---- the wire: one JSON line each way ---- */

static bool send_message(mcp_server *s, json_t *msg)
{
    char *text = step_dump(msg);
    json_decref(msg);
    if (!text)
        return false;
    size_t len = strlen(text);
    text[len] = '\n';
    bool ok = step_write_all(s->in, text, len + 1);
    free(text);
    return ok;
}

/* The next line the server wrote, parsed; NULL on EOF, timeout, a line
 * over the bound or one that is not a JSON object. */
static json_t *next_message(mcp_server *s, long long deadline)
{
    for (;;) {
        char *nl = s->pending.len ? memchr(s->pending.data, '\n', s->pending.len) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - s->pending.data);
            char why[120];
            json_t *v = step_parse_json(s->pending.data, n, why, sizeof why);
            memmove(s->pending.data, nl + 1, s->pending.len - n - 1);
            s->pending.len -= n + 1;
            if (json_is_object(v))
                return v;
            json_decref(v);
            return NULL;
        }
        if (s->pending.len > LINE_MAX_BYTES)
            return NULL;
        long long left = deadline - step_now_ms();
        struct pollfd p = {s->out, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, (int)(left > 1000 ? 1000 : left)) < 0) {
            if (errno == EINTR && left > 0)
                continue;
            return NULL;
        }
        if (!(p.revents & (POLLIN | POLLHUP)))
            continue;
        char *room = sp_buf_extend(&s->pending, 65536);
        if (!room)
            return NULL;
        ssize_t r = read(s->out, room, 65536);
        s->pending.len -= 65536 - (r > 0 ? (size_t)r : 0);
        if (r <= 0 && !(r < 0 && errno == EINTR))
            return NULL;
    }
}

/* A request and its response (other messages in between are skipped). */
static json_t *request(mcp_server *s, const char *method, json_t *params, long long deadline)
{
    long long id = ++s->next_id;
    if (!send_message(s, json_pack("{s:s,s:I,s:s,s:o}", "jsonrpc", "2.0", "id", (json_int_t)id,
                                   "method", method, "params", params ? params : json_object())))
        return NULL;
    for (;;) {
        json_t *m = next_message(s, deadline);
        if (!m)
            return NULL;
        const json_t *mid = json_object_get(m, "id");
        if (json_is_integer(mid) && json_integer_value(mid) == id && !json_object_get(m, "method"))
            return m;
        json_decref(m); /* a notification, or a request of the server's: not answered */
    }
}

/* ---- starting a server ---- */

static bool spawn(mcp_server *s, const json_t *command, const char *cwd)
{
    size_t n = json_array_size(command);
    char **argv = calloc(n + 1, sizeof *argv);
    char path[4200];
    for (size_t i = 0; argv && i < n; i++)
        argv[i] = (char *)json_string_value(json_array_get(command, i));
    int to[2] = {-1, -1}, from[2] = {-1, -1};
    bool ok = argv && argv[0] && step_program_resolve(argv[0], path, sizeof path) &&
              pipe2(to, O_CLOEXEC) == 0 && pipe2(from, O_CLOEXEC) == 0;
    s->pid = ok ? fork() : -1;
    if (s->pid == 0) {
        setpgid(0, 0);
        if (dup2(to[0], 0) < 0 || dup2(from[1], 1) < 0 || chdir(cwd) != 0)
            _exit(127);
        signal(SIGPIPE, SIG_DFL);
        execve(path, argv, environ);
        _exit(127);
    }
    free(argv);
    if (to[0] >= 0)
        close(to[0]);
    if (from[1] >= 0)
        close(from[1]);
    s->in = to[1];
    s->out = from[0];
    return s->pid > 0;
}

/* Wire names allow [A-Za-z0-9_-] only, 64 bytes at most. */
static void wire_name(const char *server, const char *tool, char out[65])
{
    sp_buf b = SP_BUF_INIT;
    sp_buf_printf(&b, "%s__%s", server, tool);
    size_t n = sp_buf_ok(&b) ? (b.len < 64 ? b.len : 64) : 0;
    for (size_t i = 0; i < n; i++) {
        char c = b.data[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-';
        out[i] = ok ? c : '_';
    }
    out[n] = '\0';
    sp_buf_free(&b);
}

static void add_tool(mcp_server *s, const json_t *t)
{
    const char *name = json_string_value(json_object_get(t, "name"));
    const json_t *schema = json_object_get(t, "inputSchema");
    if (!name || !*name || strlen(name) > 120 || s->ntools == TOOLS_MAX)
        return;
    char wire[65], display[200];
    wire_name(s->name, name, wire);
    snprintf(display, sizeof display, "%.40s.%.120s", s->name, name);
    for (size_t i = 0; i < s->ntools; i++)
        if (strcmp(s->tools[i].wire, wire) == 0)
            return; /* two names that sanitize alike: the first one stays */
    mcp_tool *m = &s->tools[s->ntools];
    memcpy(m->wire, wire, sizeof wire);
    memcpy(m->display, display, sizeof display);
    m->name = strdup(name);
    m->schema = json_is_object(schema) ? json_deep_copy(schema) : json_pack("{s:s}", "type", "object");
    const json_t *d = json_object_get(t, "description");
    m->description = json_is_string(d) ? json_incref((json_t *)d) : json_string("");
    char why[300];
    if (m->schema && !(m->check = step_schema_compile(m->schema, why, sizeof why)))
        fprintf(stderr, "spore-step: MCP tool %s: its inputSchema is outside spore's schema subset "
                        "(%s): its arguments go to the server unchecked\n", m->display, why);
    if (m->name && m->schema && m->description) {
        s->ntools++;
        return;
    }
    free(m->name);
    json_decref(m->schema);
    json_decref(m->description);
    sp_schema_free(m->check);
    memset(m, 0, sizeof *m);
}

static bool handshake(mcp_server *s, long long deadline)
{
    json_t *init = request(s, "initialize",
                           json_pack("{s:s,s:{},s:{s:s,s:s}}", "protocolVersion", PROTOCOL_VERSION,
                                     "capabilities", "clientInfo", "name", "spore-step",
                                     "version", "0.1"),
                           deadline);
    bool ok = init && json_is_object(json_object_get(init, "result"));
    json_decref(init);
    ok = ok && send_message(s, json_pack("{s:s,s:s}", "jsonrpc", "2.0", "method",
                                         "notifications/initialized"));
    json_t *list = ok ? request(s, "tools/list", NULL, deadline) : NULL;
    const json_t *tools = json_object_get(json_object_get(list, "result"), "tools");
    ok = ok && json_is_array(tools);
    for (size_t i = 0; ok && i < json_array_size(tools); i++)
        add_tool(s, json_array_get(tools, i));
    json_decref(list);
    return ok;
}

static json_t *load_servers(void)
{
    const char *path = getenv("SPORE_MCP_SERVERS");
    size_t len;
    char why[120];
    char *text = path ? step_read_bounded(path, CONFIG_MAX, &len) : NULL;
    json_t *v = text ? step_parse_json(text, len, why, sizeof why) : NULL;
    free(text);
    if (path && !json_is_array(v)) {
        json_decref(v);
        return json_null(); /* unreadable: refused by the caller */
    }
    return v;
}

int step_mcp_start(const step_config *c, long long deadline_ms, step_mcp **out)
{
    *out = NULL;
    json_t *servers = load_servers();
    if (json_is_null(servers))
        return step_fail(STEP_EXIT_PRECONDITION, "mcp.config-invalid",
                         "SPORE_MCP_SERVERS does not name a readable JSON array");
    step_mcp *m = calloc(1, sizeof *m);
    int rc = m ? 0 : step_fail(STEP_EXIT_INTERNAL, "step.out-of-memory", "out of memory");
    long long deadline = step_now_ms() + START_MS;
    deadline = deadline < deadline_ms ? deadline : deadline_ms;
    for (size_t i = 0; !rc && i < json_array_size(servers); i++) {
        const json_t *sv = json_array_get(servers, i);
        const char *name = json_string_value(json_object_get(sv, "name"));
        const json_t *cmd = json_object_get(sv, "command");
        if (!json_is_array(cmd)) {
            fprintf(stderr, "spore-step: MCP server \"%s\" is an HTTP server: spore-step's "
                            "providers do not use HTTP MCP servers yet\n", name ? name : "?");
            continue;
        }
        if (m->n == SERVERS_MAX) {
            rc = step_fail(STEP_EXIT_PRECONDITION, "mcp.too-many", "more than %d stdio MCP servers",
                           SERVERS_MAX);
            break;
        }
        mcp_server *s = &m->servers[m->n++];
        snprintf(s->name, sizeof s->name, "%s", name ? name : "mcp");
        if (!spawn(s, cmd, c->cwd) || !handshake(s, deadline))
            rc = step_fail(STEP_EXIT_PRECONDITION, "mcp.server-unavailable",
                           "MCP server \"%s\" did not start and answer initialize and tools/list "
                           "within %d ms", s->name, START_MS);
    }
    json_decref(servers);
    if (rc) {
        step_mcp_stop(m);
        return rc;
    }
    *out = m;
    return 0;
}

/* ---- offering and calling ---- */

void step_mcp_offer(const step_mcp *m, json_t *tools)
{
    for (size_t i = 0; m && i < m->n; i++)
        for (size_t k = 0; k < m->servers[i].ntools; k++) {
            const mcp_tool *t = &m->servers[i].tools[k];
            json_array_append_new(tools, json_pack("{s:s,s:O,s:O}", "name", t->wire, "description",
                                                   t->description, "input_schema", t->schema));
        }
}

static mcp_tool *find(step_mcp *m, const char *wire, mcp_server **server)
{
    for (size_t i = 0; m && i < m->n; i++)
        for (size_t k = 0; k < m->servers[i].ntools; k++)
            if (strcmp(m->servers[i].tools[k].wire, wire) == 0) {
                *server = &m->servers[i];
                return &m->servers[i].tools[k];
            }
    return NULL;
}

const char *step_mcp_display(step_mcp *m, const char *wire)
{
    mcp_server *s;
    mcp_tool *t = find(m, wire, &s);
    return t ? t->display : wire;
}

static void content_text(const json_t *result, step_tool_out *o)
{
    const json_t *content = json_object_get(result, "content");
    for (size_t i = 0; i < json_array_size(content); i++) {
        const json_t *b = json_array_get(content, i);
        const char *type = json_string_value(json_object_get(b, "type"));
        const json_t *text = json_object_get(b, "text");
        if (i)
            step_tool_append(o, "\n", 1);
        if (type && strcmp(type, "text") == 0 && json_is_string(text))
            step_tool_append(o, json_string_value(text), json_string_length(text));
        else
            step_tool_printf(o, "[%.40s content not shown]", type ? type : "unknown");
    }
    o->is_error = json_is_true(json_object_get(result, "isError"));
}

bool step_mcp_call(step_mcp *m, const char *wire, const json_t *args, long long deadline_ms,
                   step_tool_out *o)
{
    mcp_server *s;
    mcp_tool *t = find(m, wire, &s);
    char why[300];
    if (!t)
        return false;
    if (t->check && !step_schema_check(t->check, args, why, sizeof why)) {
        step_tool_error(o, "bad arguments for %s: %s", t->display, why);
        o->bad_arguments = true;
        return true;
    }
    json_t *reply = request(s, "tools/call",
                            json_pack("{s:s,s:O}", "name", t->name, "arguments", args), deadline_ms);
    const json_t *result = json_object_get(reply, "result");
    if (json_is_object(result))
        content_text(result, o);
    else if (reply)
        step_tool_error(o, "%s answered a JSON-RPC error (%lld)", t->display,
                        (long long)json_integer_value(json_object_get(json_object_get(reply, "error"),
                                                                      "code")));
    else
        step_tool_error(o, "%s did not answer (the server ended, or the step's time is up)",
                        t->display);
    json_decref(reply);
    step_tool_seal(o);
    return true;
}

void step_mcp_stop(step_mcp *m)
{
    for (size_t i = 0; m && i < m->n; i++) {
        mcp_server *s = &m->servers[i];
        if (s->in >= 0)
            close(s->in);
        if (s->out >= 0)
            close(s->out);
        if (s->pid > 0) {
            kill(-s->pid, SIGKILL);
            kill(s->pid, SIGKILL); /* in case it had not made its group yet */
            while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR) {
            }
        }
        sp_buf_free(&s->pending);
        for (size_t k = 0; k < s->ntools; k++) {
            free(s->tools[k].name);
            json_decref(s->tools[k].schema);
            json_decref(s->tools[k].description);
            sp_schema_free(s->tools[k].check);
        }
    }
    free(m);
}
