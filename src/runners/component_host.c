/*
 * component_host.c - the host imports of runner calls (see
 * component_host.h): process_start, process_alive, process_signal,
 * socket_request, sleep_ms, file_read, dir_list and log, each checking its
 * grant before it does anything.
 */
#define _GNU_SOURCE
#include "runners/component_host.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/redact.h"
#include "base/base64.h"
#include "base/clock.h"
#include "base/failpoint.h"
#include "base/utf8.h"
#include "json/json.h"
#include "runners/runner.h" /* sp_artifacts */
#include "runners/component_cache.h"
#include "runners/component_handle.h"
#include "runners/component_io.h"
#include "runners/component_spawn.h"
#include "runners/pid_handle.h"
#include "wasm/protocol.h"
#include "wasm/world.h"

#define ARGS_MAX 256
#define ENV_MAX 256

typedef enum verdict { V_OK, V_MALFORMED, V_FAILED, V_END } verdict;

void sp_host_init(sp_host *h, const sp_runner_ctx *ctx, const sp_component_spec *spec)
{
    memset(h, 0, sizeof *h);
    h->ctx = ctx;
    h->spec = spec;
    h->log_fd = -1;
    h->kept_import = -1;
}

void sp_host_free(sp_host *h)
{
    free(h->value);
    free(h->kept_request);
    free(h->kept_reply);
    if (h->log_fd >= 0)
        close(h->log_fd);
    explicit_bzero(h->key, sizeof h->key);
    h->log_fd = -1;
}

/* ---- helpers ---- */

static verdict failed(json_t **reply, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static verdict failed(json_t **reply, const char *code, const char *fmt, ...)
{
    char raw[512], clean[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    sp_utf8_clean(clean, sizeof clean, raw);
    *reply = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", clean);
    return V_FAILED;
}

static verdict not_granted(sp_host *h, sp_grant_kind grant, const json_t *value)
{
    h->not_granted = true;
    h->grant = grant;
    free(h->value);
    h->value = strndup(json_string_value(value), json_string_length(value));
    return V_END;
}

static verdict artifact_failed(sp_host *h, sp_error *err)
{
    h->artifact_failed = true;
    snprintf(h->artifact_message, sizeof h->artifact_message, "%s", err->message);
    sp_error_clear(err);
    return V_END;
}

static bool only_members(const json_t *doc, const char *const *names)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)doc, key, v)
    {
        bool ok = false;
        for (const char *const *n = names; *n && !ok; n++)
            ok = strcmp(*n, key) == 0;
        if (!ok)
            return false;
    }
    return true;
}

static bool plain_string(const json_t *v)
{
    return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v);
}

/* Bytes of a "<name>" string or "<name>Base64" member (at most one of the
 * two). false: malformed. *present false when neither is there. */
static bool bytes_member(const json_t *doc, const char *name, char **out, size_t *len,
                         bool *present)
{
    char b64name[64];
    snprintf(b64name, sizeof b64name, "%sBase64", name);
    const json_t *s = json_object_get(doc, name), *b = json_object_get(doc, b64name);
    *out = NULL;
    *len = 0;
    *present = s || b;
    if (s && b)
        return false;
    if (s) {
        if (!json_is_string(s))
            return false;
        *len = json_string_length(s);
        *out = malloc(*len + 1);
        if (*out)
            memcpy(*out, json_string_value(s), *len + 1);
        return *out != NULL;
    }
    if (b) {
        if (!json_is_string(b))
            return false;
        size_t n = json_string_length(b);
        *out = malloc(n / 4 * 3 + 4);
        if (!*out || !sp_base64_decode(json_string_value(b), n, false, (unsigned char *)*out, len)) {
            free(*out);
            *out = NULL;
            return false;
        }
    }
    return true;
}

/* {"<name>": text} when the bytes are UTF-8, else {"<name>Base64": ...}. */
static int set_bytes(json_t *obj, const char *name, const char *data, size_t len)
{
    if (sp_utf8_valid(data, len) && !memchr(data, '\0', len))
        return json_object_set_new(obj, name, json_stringn(data, len));
    char b64name[64];
    snprintf(b64name, sizeof b64name, "%sBase64", name);
    char *text = malloc(sp_base64_len(len, false) + 1);
    if (!text)
        return -1;
    sp_base64_encode(data, len, false, text);
    int rc = json_object_set_new(obj, b64name, json_string(text));
    free(text);
    return rc;
}

static bool get_key(sp_host *h, sp_error *err)
{
    if (h->have_key)
        return true;
    const sp_artifacts *a = h->ctx->artifacts;
    if (!a || !a->secret) {
        sp_fail(err, "component.artifact", "no store secret to seal process handles with");
        return false;
    }
    if (a->secret(a->ctx, h->key, err))
        return false;
    h->have_key = true;
    return true;
}

static const char *or_empty(const char *s) { return s ? s : ""; }

bool sp_host_log_path(const sp_runner_ctx *ctx, char *out, size_t n)
{
    char dir[PATH_MAX], sub[PATH_MAX];
    sp_error err = {0};
    snprintf(sub, sizeof sub, "logs/%s", or_empty(ctx->run_id)[0] ? ctx->run_id : "none");
    bool ok = sp_cache_dir(sub, dir, sizeof dir, &err) == 0 &&
              (size_t)snprintf(out, n, "%s/%s-%u.log", dir,
                               or_empty(ctx->invocation_id)[0] ? ctx->invocation_id : "none",
                               (unsigned)ctx->attempt) < n;
    sp_error_clear(&err);
    return ok;
}

/* The attempt's log file, opened (appending) on first use. */
static int log_fd(sp_host *h)
{
    if (h->log_fd >= 0)
        return h->log_fd;
    if (sp_host_log_path(h->ctx, h->log_path, sizeof h->log_path))
        h->log_fd = open(h->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
    return h->log_fd;
}

static void audit(sp_host *h, const char *kind, json_t *body)
{
    const sp_artifacts *a = h->ctx->artifacts;
    char *text = body ? sp_json_encode_alloc(body, NULL, NULL) : NULL;
    if (a && a->audit && text)
        a->audit(a->ctx, kind, text, strlen(text));
    free(text);
    json_decref(body);
}

/* ---- process_start ---- */

static char **string_list(const json_t *argv0, const json_t *args)
{
    size_t n = json_array_size(args);
    char **v = calloc(n + 2, sizeof *v);
    if (!v)
        return NULL;
    v[0] = strdup(json_string_value(argv0));
    for (size_t i = 0; i < n && v[0]; i++)
        if (!(v[i + 1] = strdup(json_string_value(json_array_get(args, i))))) {
            for (size_t k = 0; k <= i; k++)
                free(v[k]);
            free(v);
            return NULL;
        }
    return v;
}

static void strv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

static bool valid_args(const json_t *args)
{
    if (!json_is_array(args) || json_array_size(args) > ARGS_MAX)
        return false;
    for (size_t i = 0; i < json_array_size(args); i++)
        if (!plain_string(json_array_get(args, i)))
            return false;
    return true;
}

static bool valid_env(const json_t *env)
{
    if (!json_is_object(env) || json_object_size(env) > ENV_MAX)
        return false;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)env, key, v)
    {
        if (!key[0] || strchr(key, '=') || !plain_string(v))
            return false;
    }
    return true;
}

static char **job_env(const sp_host *h, const json_t *env)
{
    const sp_runner_ctx *c = h->ctx;
    const char *fixed[4][2] = {{"SPORE_RUN_ID", or_empty(c->run_id)},
                               {"SPORE_INVOCATION_ID", or_empty(c->invocation_id)},
                               {"SPORE_EFFECT_KEY", or_empty(c->effect_key)},
                               {"TRACEPARENT", or_empty(c->traceparent)}};
    char **v = calloc(json_object_size(env) + 5, sizeof *v);
    size_t n = 0;
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)env, key, val)
    {
        bool overridden = false;
        for (int i = 0; i < 4; i++)
            overridden |= strcmp(key, fixed[i][0]) == 0;
        if (v && !overridden && asprintf(&v[n++], "%s=%s", key, json_string_value(val)) < 0) {
            v[--n] = NULL;
            strv_free(v);
            return NULL;
        }
    }
    for (int i = 0; v && i < 4; i++)
        if (asprintf(&v[n++], "%s=%s", fixed[i][0], fixed[i][1]) < 0) {
            v[--n] = NULL;
            strv_free(v);
            return NULL;
        }
    return v;
}

static verdict process_start(sp_host *h, const json_t *doc, json_t **reply)
{
    static const char *const members[] = {"program", "args", "env", "stdin", "stdinBase64", NULL};
    const json_t *program = json_object_get(doc, "program");
    const json_t *args = json_object_get(doc, "args"), *env = json_object_get(doc, "env");
    if (!only_members(doc, members) || !plain_string(program) || (args && !valid_args(args)) ||
        (env && !valid_env(env)))
        return V_MALFORMED;
    char *in = NULL;
    size_t in_len = 0;
    bool has_in = false;
    if (!bytes_member(doc, "stdin", &in, &in_len, &has_in))
        return V_MALFORMED;
    const char *entry = sp_component_granted(h->spec, SP_GRANT_PROGRAMS, json_string_value(program),
                                             json_string_length(program));
    if (!entry) {
        free(in);
        return not_granted(h, SP_GRANT_PROGRAMS, program);
    }
    sp_error err = {0};
    char path[PATH_MAX];
    if (entry[0] == '/') {
        snprintf(path, sizeof path, "%s", entry);
    } else {
        const char *digest = json_string_value(json_object_get(h->spec->sealed, entry));
        if (!digest) {
            sp_fail(&err, "component.artifact", "program %s is not sealed", entry);
            free(in);
            return artifact_failed(h, &err);
        }
        if (sp_cache_program(h->ctx->artifacts, digest, path, sizeof path, &err)) {
            free(in);
            return artifact_failed(h, &err);
        }
    }
    if (!get_key(h, &err)) {
        free(in);
        verdict v = failed(reply, "no-secret", "%s", err.message);
        sp_error_clear(&err);
        return v;
    }
    json_t *entry_json = json_string(entry);
    char **argv = entry_json ? string_list(entry_json, args) : NULL;
    char **envp = job_env(h, env);
    json_decref(entry_json);
    int fd = log_fd(h);
    pid_t pid = 0;
    uint64_t started = 0;
    char why[300] = "";
    int rc = argv && envp && fd >= 0
                 ? sp_spawn_detached(path, argv, envp, in, in_len, has_in, fd, &pid, &started, why,
                                     sizeof why)
                 : (snprintf(why, sizeof why, "%s", fd < 0 ? "no log file" : "out of memory"), -1);
    strv_free(argv);
    strv_free(envp);
    free(in);
    if (rc)
        return failed(reply, "spawn", "%s", why);
    sp_failpoint("host.component.after-spawn");
    sp_process_handle p = {.pid = pid, .started = started};
    snprintf(p.boot, sizeof p.boot, "%s", sp_boot_id());
    *reply = sp_handle_seal(h->key, &p, entry, or_empty(h->ctx->run_id),
                            or_empty(h->ctx->invocation_id));
    return *reply ? V_OK : failed(reply, "spawn", "out of memory");
}

/* ---- process_alive / process_signal ---- */

/* The handle of the request, opened; V_FAILED (handle-forged, audited) when
 * it is not this step's. */
static verdict open_handle(sp_host *h, const char *import, const json_t *doc, json_t **reply,
                           sp_process_handle *p)
{
    const json_t *handle = json_object_get(doc, "handle");
    if (!handle)
        return V_MALFORMED;
    sp_error err = {0};
    if (!get_key(h, &err)) {
        verdict v = failed(reply, "no-secret", "%s", err.message);
        sp_error_clear(&err);
        return v;
    }
    if (sp_handle_open(h->key, handle, or_empty(h->ctx->run_id), or_empty(h->ctx->invocation_id),
                       p))
        return V_OK;
    audit(h, "handle-forged",
          json_pack("{s:s,s:O,s:s,s:s}", "import", import, "handle", handle, "run",
                    or_empty(h->ctx->run_id), "invocation", or_empty(h->ctx->invocation_id)));
    return failed(reply, "handle-forged",
                  "the handle was not sealed by this store's engine for this step");
}

static sp_holder_state state_of(const sp_process_handle *p)
{
    if (strcmp(p->boot, sp_boot_id()) != 0 || p->started == 0)
        return SP_HOLDER_DEAD; /* another boot, or already gone at the start */
    char started[32], session[32];
    snprintf(started, sizeof started, "%llu", (unsigned long long)p->started);
    snprintf(session, sizeof session, "%lld", (long long)p->pid);
    json_t *ref = json_pack("{s:I,s:s,s:s}", "pid", (json_int_t)p->pid, "started", started,
                            "session", session);
    sp_holder_state s = ref ? sp_pid_handle_probe(ref) : SP_HOLDER_UNKNOWN;
    json_decref(ref);
    return s;
}

static verdict process_alive(sp_host *h, const json_t *doc, json_t **reply)
{
    static const char *const members[] = {"handle", NULL};
    if (!only_members(doc, members))
        return V_MALFORMED;
    sp_process_handle p;
    verdict v = open_handle(h, "process_alive", doc, reply, &p);
    if (v != V_OK)
        return v;
    sp_holder_state s = state_of(&p);
    *reply = json_pack("{s:o}", "alive",
                       s == SP_HOLDER_ALIVE ? json_true()
                       : s == SP_HOLDER_DEAD ? json_false()
                                             : json_null());
    return V_OK;
}

static verdict process_signal(sp_host *h, const json_t *doc, json_t **reply)
{
    static const char *const members[] = {"handle", "signal", NULL};
    static const struct { const char *name; int sig; } signals[] = {
        {"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT}, {"HUP", SIGHUP}};
    const char *name = json_string_value(json_object_get(doc, "signal"));
    int sig = 0;
    for (size_t i = 0; name && i < sizeof signals / sizeof signals[0]; i++)
        if (strcmp(name, signals[i].name) == 0)
            sig = signals[i].sig;
    if (!only_members(doc, members) || !sig)
        return V_MALFORMED;
    sp_process_handle p;
    verdict v = open_handle(h, "process_signal", doc, reply, &p);
    if (v != V_OK)
        return v;
    /* only while the start time still matches: a reused PID is never signalled */
    bool sent = state_of(&p) == SP_HOLDER_ALIVE && kill(-(pid_t)p.pid, sig) == 0;
    *reply = json_pack("{s:b}", "sent", sent);
    return V_OK;
}

/* ---- socket_request ---- */

static verdict socket_request(sp_host *h, const json_t *doc, uint64_t deadline, json_t **reply)
{
    static const char *const members[] = {"path", "data", "dataBase64", "timeoutMs", NULL};
    const json_t *path = json_object_get(doc, "path"), *t = json_object_get(doc, "timeoutMs");
    if (!only_members(doc, members) || !plain_string(path) ||
        (t && (!json_is_integer(t) || json_integer_value(t) < 0)))
        return V_MALFORMED;
    char *data = NULL;
    size_t len = 0;
    bool present = false;
    if (!bytes_member(doc, "data", &data, &len, &present))
        return V_MALFORMED;
    const char *entry = sp_component_granted(h->spec, SP_GRANT_SOCKETS, json_string_value(path),
                                             json_string_length(path));
    if (!entry) {
        free(data);
        return not_granted(h, SP_GRANT_SOCKETS, path);
    }
    if (t && sp_mono_ms() + (uint64_t)json_integer_value(t) < deadline)
        deadline = sp_mono_ms() + (uint64_t)json_integer_value(t);
    char *out = NULL, why[300] = "";
    size_t out_len = 0;
    sp_io_status st = sp_socket_request(entry, data ? data : "", len, deadline, &out, &out_len,
                                        why, sizeof why);
    free(data);
    if (st != SP_IO_OK)
        return failed(reply,
                      st == SP_IO_TOO_LARGE ? "reply-too-large"
                      : st == SP_IO_TIMEOUT ? "timeout"
                                            : "socket",
                      "%s", why);
    *reply = json_object();
    if (!*reply || set_bytes(*reply, "reply", out, out_len)) {
        free(out);
        return failed(reply, "socket", "out of memory");
    }
    free(out);
    return V_OK;
}

/* ---- sleep_ms ---- */

static bool call_stopped(const sp_host *h)
{
    return h->ctx->stop && sp_stop_fired(h->ctx->stop);
}

static verdict sleep_ms(sp_host *h, const json_t *doc, uint64_t deadline, json_t **reply)
{
    static const char *const members[] = {"ms", NULL};
    const json_t *ms = json_object_get(doc, "ms");
    if (!only_members(doc, members) || !json_is_integer(ms) || json_integer_value(ms) < 0)
        return V_MALFORMED;
    uint64_t until = sp_mono_ms() + (uint64_t)json_integer_value(ms);
    if (until > deadline)
        until = deadline; /* never past the call's deadline */
    for (uint64_t now = sp_mono_ms(); now < until && !call_stopped(h); now = sp_mono_ms()) {
        uint64_t step = until - now > 50 ? 50 : until - now;
        struct timespec ts = {0, (long)step * 1000000L};
        nanosleep(&ts, NULL);
    }
    *reply = json_object();
    return V_OK;
}

/* ---- file_read / dir_list ---- */

/* The root directory and the part below it for a requested path. */
static verdict folder_of(sp_host *h, const json_t *path, char *root, size_t n, const char **rest,
                         char *norm, size_t nn)
{
    const char *entry = sp_component_folder_of(h->spec, json_string_value(path),
                                               json_string_length(path), norm, nn, rest);
    if (!entry)
        return not_granted(h, SP_GRANT_FOLDERS, path);
    if (entry[0] == '/') {
        snprintf(root, n, "%s", entry);
        return V_OK;
    }
    sp_error err = {0};
    if (sp_cache_tree(h->ctx->artifacts, h->spec->sealed, entry, root, n, &err))
        return artifact_failed(h, &err);
    return V_OK;
}

static verdict file_read(sp_host *h, const json_t *doc, json_t **reply)
{
    static const char *const members[] = {"path", "offset", "length", NULL};
    const json_t *path = json_object_get(doc, "path");
    const json_t *off = json_object_get(doc, "offset"), *len = json_object_get(doc, "length");
    if (!only_members(doc, members) || !plain_string(path) ||
        (off && (!json_is_integer(off) || json_integer_value(off) < 0)) ||
        (len && (!json_is_integer(len) || json_integer_value(len) < 0)))
        return V_MALFORMED;
    char root[PATH_MAX], norm[SP_PATH_MAX];
    const char *rest = NULL;
    verdict v = folder_of(h, path, root, sizeof root, &rest, norm, sizeof norm);
    if (v != V_OK)
        return v;
    size_t want = len && (uint64_t)json_integer_value(len) < SP_FILE_READ_MAX
                      ? (size_t)json_integer_value(len)
                      : SP_FILE_READ_MAX;
    char *data = NULL, why[300];
    size_t got = 0;
    bool eof = false;
    if (sp_file_read_beneath(root, rest, off ? (uint64_t)json_integer_value(off) : 0, want, &data,
                             &got, &eof, why, sizeof why)) {
        char code[32];
        snprintf(code, sizeof code, "%.*s", (int)strcspn(why, ":"), why);
        return failed(reply, code, "%s", why);
    }
    *reply = json_pack("{s:b}", "eof", eof);
    if (!*reply || set_bytes(*reply, "data", data, got)) {
        free(data);
        return failed(reply, "unreadable", "out of memory");
    }
    free(data);
    return V_OK;
}

static verdict dir_list(sp_host *h, const json_t *doc, json_t **reply)
{
    static const char *const members[] = {"path", NULL};
    const json_t *path = json_object_get(doc, "path");
    if (!only_members(doc, members) || !plain_string(path))
        return V_MALFORMED;
    char root[PATH_MAX], norm[SP_PATH_MAX], why[300];
    const char *rest = NULL;
    verdict v = folder_of(h, path, root, sizeof root, &rest, norm, sizeof norm);
    if (v != V_OK)
        return v;
    json_t *entries = sp_dir_list_beneath(root, rest, why, sizeof why);
    if (!entries) {
        char code[32];
        snprintf(code, sizeof code, "%.*s", (int)strcspn(why, ":"), why);
        return failed(reply, code, "%s", why);
    }
    *reply = json_pack("{s:o}", "entries", entries);
    return V_OK;
}

/* ---- log ---- */

static void host_log(void *vh, int32_t level, const char *text, size_t len)
{
    sp_host *h = vh;
    if (h->log_bytes >= SP_LOG_CALL_MAX)
        return;
    size_t cut = len > SP_LOG_LINE_MAX ? SP_LOG_LINE_MAX : len;
    char *clean = sp_utf8_lossy(text, cut, &cut);
    size_t rlen = 0;
    char *red = clean ? sp_redact(NULL, clean, cut, SP_REDACT_PATTERNS, &rlen) : NULL;
    free(clean);
    int fd = red ? log_fd(h) : -1;
    if (fd >= 0) {
        for (size_t i = 0; i < rlen; i++)
            if (red[i] == '\n' || red[i] == '\r')
                red[i] = ' ';
        char head[64];
        int hl = snprintf(head, sizeof head, "runner[%d]: ", (int)level);
        size_t room = SP_LOG_CALL_MAX - h->log_bytes;
        size_t body = rlen + (size_t)hl + 1 > room ? (room > (size_t)hl + 1 ? room - (size_t)hl - 1 : 0)
                                                   : rlen;
        if (write(fd, head, (size_t)hl) > 0 && write(fd, red, body) >= 0 && write(fd, "\n", 1) > 0)
            h->log_bytes += (size_t)hl + body + 1;
    }
    free(red);
}

/* ---- dispatch ---- */

static bool is_kept(const sp_host *h, int import, const char *request, size_t len)
{
    return h->kept_reply && h->kept_import == import && h->kept_request_len == len &&
           memcmp(h->kept_request, request, len) == 0;
}

int sp_host_import(void *vh, int import, const char *request, size_t len, uint32_t cap,
                   uint64_t deadline_ms, int32_t *status, char **reply, size_t *reply_len)
{
    sp_host *h = vh;
    *reply = NULL;
    *reply_len = 0;
    if (is_kept(h, import, request, len)) {
        if (h->kept_reply_len > cap) {
            *status = -1;
            return 0;
        }
        *status = (int32_t)h->kept_reply_len;
        *reply = h->kept_reply;
        *reply_len = h->kept_reply_len;
        h->kept_reply = NULL;
        h->kept_import = -1;
        return 0;
    }
    json_t *doc = sp_json_parse(request, len, NULL);
    json_t *out = NULL;
    verdict v = V_MALFORMED;
    if (json_is_object(doc)) {
        switch (import) {
        case SP_IMPORT_PROCESS_START: v = process_start(h, doc, &out); break;
        case SP_IMPORT_PROCESS_ALIVE: v = process_alive(h, doc, &out); break;
        case SP_IMPORT_PROCESS_SIGNAL: v = process_signal(h, doc, &out); break;
        case SP_IMPORT_SOCKET_REQUEST: v = socket_request(h, doc, deadline_ms, &out); break;
        case SP_IMPORT_SLEEP_MS: v = sleep_ms(h, doc, deadline_ms, &out); break;
        case SP_IMPORT_FILE_READ: v = file_read(h, doc, &out); break;
        case SP_IMPORT_DIR_LIST: v = dir_list(h, doc, &out); break;
        default: v = V_MALFORMED; break;
        }
    }
    json_decref(doc);
    if (v == V_END) {
        json_decref(out);
        return 1;
    }
    if (v == V_MALFORMED) {
        json_decref(out);
        *status = -2;
        return 0;
    }
    size_t n = 0;
    char *bytes = out ? sp_json_encode_alloc(out, &n, NULL) : NULL;
    json_decref(out);
    if (!bytes) {
        *status = -3;
        return 0;
    }
    if (v == V_FAILED) {
        *status = -3;
        *reply = bytes;
        *reply_len = n;
        return 0;
    }
    if (n > cap) { /* keep it: the identical retry gets it without a second effect */
        free(h->kept_request);
        free(h->kept_reply);
        h->kept_request = malloc(len ? len : 1);
        if (h->kept_request)
            memcpy(h->kept_request, request, len);
        h->kept_request_len = len;
        h->kept_reply = h->kept_request ? bytes : NULL;
        h->kept_reply_len = n;
        h->kept_import = import;
        if (!h->kept_request)
            free(bytes);
        *status = -1;
        return 0;
    }
    *status = (int32_t)n;
    *reply = bytes;
    *reply_len = n;
    return 0;
}

static bool host_stopped(void *vh)
{
    return call_stopped(vh);
}

sp_jail_host sp_host_jail(sp_host *h)
{
    return (sp_jail_host){.ctx = h,
                          .import = sp_host_import,
                          .log = host_log,
                          .stopped = host_stopped,
                          .stop_fd = h->ctx->stop ? sp_stop_fd(h->ctx->stop) : -1};
}
