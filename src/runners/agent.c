/*
 * agent.c - the `agent` runner (see agent.h): pre-exec checks in the order
 * of the outcome table (input, plain MCP headers, breaker, secrets, request
 * and exec-message sizes, sandbox), the exec through process.c in streaming
 * mode (stdout into the protocol reader, stderr into the stderr log, the
 * engine's stop signal and our hard deadline watched), then the shared
 * classification (src/agent/session.c), the breaker, and the sandbox's
 * fate (destroyed when tainted or not reused).
 *
 * Decisions the spec leaves open, made here (docs/agents.md):
 * - Hard deadline: timeoutMs plus a grace of timeoutMs/10, at least 2 s and
 *   at most 30 s, so a step CLI can answer its own timeout (502) first.
 * - A secret file that cannot be read fails the step before anything runs
 *   (agent.secret-unavailable, naming the secret, never its value).
 * - A step CLI that cannot be found on this machine fails with
 *   agent.step-cli-missing before anything runs.
 * - Local transport: the sandbox counts as built once the wrapper's
 *   `step-pid=` line arrives on stderr; bwrap ending without it is
 *   agent.sandbox-unavailable with bwrap's own first line.
 * - Local transport: readable / writable are resolved, checked and pinned
 *   before the sandbox is acquired, and bwrap mounts the pinned descriptors
 *   (handed over at SP_PROC_PASS_FD...); a refusal is agent.grant-refused
 *   (sandbox.h has the rules).
 * - Real providers (action.api set): spore-step's configuration travels as
 *   $SPORE_AGENT_CONFIG (the request is closed). Locally the model gateway
 *   (src/agent/gateway.c) is started per attempt on a socket bound into the
 *   sandbox at SP_SANDBOX_GATEWAY, and the secret PROVIDER_API_KEY is read
 *   here (for the gateway and the redactor) but neither mounted nor named
 *   in the sandbox; over the exec transport the key is mounted as a secret
 *   file as before (the gateway protects local steps only).
 * - Exec transport: the lost-stream exit code before any byte is
 *   agent.exec-unavailable (the exec never started); after a byte it is a
 *   lost stream.
 *
 * What it must never do: run without a sandbox (local), put a secret value
 * into argv, the environment, a message or a detail, or report success
 * other than through sp_agent_classify.
 */
#define _GNU_SOURCE
#include "runners/agent.h"
#include "runners/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/action.h"
#include "agent/gateway.h"
#include "agent/redact.h"
#include "agent/request.h"
#include "agent/session.h"
#include "base/clock.h"
#include "base/failpoint.h"
#include "json/json.h"
#include "runners/process.h"
#include "runners/steplog.h"
#include "sandbox/sandbox.h"

#define WRAPPER "printf 'step-pid=%s\\n' \"$$\" >&2 && exec \"$@\""
#define WRAPPER_NAME "spore-step-wrapper"
#define INSIDE_PATH "/usr/local/bin:/usr/bin:/bin"

extern char **environ;

typedef struct strv {
    char **v;
    size_t n, cap;
    bool oom;
} strv;

static void sv_add(strv *s, const char *x)
{
    if (s->oom)
        return;
    if (s->n + 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 32;
        char **v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            s->oom = true;
            return;
        }
        s->v = v;
        s->cap = cap;
    }
    if (!(s->v[s->n] = strdup(x)))
        s->oom = true;
    else
        s->v[++s->n] = NULL;
}

__attribute__((format(printf, 2, 3))) static void sv_addf(strv *s, const char *fmt, ...)
{
    char *x = NULL;
    va_list ap;
    va_start(ap, fmt);
    int rc = vasprintf(&x, fmt, ap);
    va_end(ap);
    if (rc < 0) {
        s->oom = true;
        return;
    }
    sv_add(s, x);
    free(x);
}

static void sv_free(strv *s)
{
    sp_sandbox_strv_free(s->v);
    memset(s, 0, sizeof *s);
}

typedef struct plan {
    const sp_agent_exec_in *in;
    sp_agent_action action;
    bool action_ok;
    sp_redactor *redactor;
    sp_agent_request req;
    sp_sandbox *sandbox;
    char *step_host;   /* stepCli[0] on this machine (local) */
    char *step_inside; /* ... and inside the sandbox */
    strv argv, envp, inside_env, files_host, files_inside;
    sp_sandbox_grants grants; /* readable / writable, resolved and pinned (local) */
    int *grant_fds;           /* their descriptors, in order: handed to bwrap */
    char *run_dir_host;
    char *result_path;
    bool result_reachable;
    sp_agent_session session;
    bool session_ready;
    bool gateway_on;    /* local step of a real provider: the key stays outside */
    char *gateway_host; /* the gateway's socket on the host */
    char *api_key;      /* PROVIDER_API_KEY's value, for the gateway (NULL: none) */
} plan;

/* ---- the steps before the exec ---- */

/* The gateway's credential, from the secret PROVIDER_API_KEY as read:
 * trimmed of the trailing newline a key file usually has, one line. */
static bool keep_key(plan *p, const sp_agent_secret *s, const char *buf, size_t n,
                     sp_agent_outcome *o)
{
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        n--;
    if (n == 0 || memchr(buf, '\n', n) || memchr(buf, '\r', n) || memchr(buf, '\0', n)) {
        sp_agent_outcome_fail(o, "agent.secret-unavailable", false, false, SP_BREAKER_NONE,
                              json_pack("{s:s}", "secret", s->name),
                              "secret \"%s\" must hold one line (the provider key)", s->name);
        return false;
    }
    if (!(p->api_key = strndup(buf, n))) {
        sp_agent_outcome_fail(o, "runtime.out-of-memory", true, false, SP_BREAKER_NONE, NULL,
                              "out of memory");
        return false;
    }
    return true;
}

static bool read_secret(plan *p, const sp_agent_secret *s, sp_agent_outcome *o)
{
    char buf[SP_REDACT_SECRET_MAX + 1];
    size_t len = 0;
    sp_error err = {0};
    bool read = sp_secret_file_read(s->file, buf, &len, &err) == 0;
    bool ok = read && sp_redactor_add(p->redactor, buf, len, &err) == 0;
    bool key = ok && p->gateway_on && strcmp(s->name, SP_AGENT_KEY_SECRET) == 0;
    if (key && !keep_key(p, s, buf, len, o)) {
        explicit_bzero(buf, sizeof buf);
        return false;
    }
    explicit_bzero(buf, sizeof buf);
    if (!ok) {
        const char *code = read                                         ? err.code
                           : strcmp(err.code, "secret.too-large") == 0 ? "agent.secret-too-large"
                                                                        : "agent.secret-unavailable";
        sp_agent_outcome_fail(o, code, false, false, SP_BREAKER_NONE,
                              json_pack("{s:s}", "secret", s->name), "secret \"%s\"%s %s",
                              s->name, read ? ":" : "", err.message);
        sp_error_clear(&err);
    }
    return ok;
}

static char *self_dir(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    return strdup(exe[0] ? exe : "/");
}

static bool regular_exec(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static char *path_lookup(const char *name)
{
    const char *path = getenv("PATH");
    char *copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
    char *found = NULL;
    for (char *save = NULL, *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !found;
         dir = strtok_r(NULL, ":", &save)) {
        char *candidate;
        if (dir[0] != '/' || asprintf(&candidate, "%s/%s", dir, name) < 0)
            continue;
        if (regular_exec(candidate))
            found = candidate;
        else
            free(candidate);
    }
    free(copy);
    return found;
}

/* stepCli[0] on this machine (see agent.h for the rule). */
static char *resolve_step_cli(const char *name, const char *base_dir)
{
    char *path = NULL;
    if (strchr(name, '/')) {
        if (name[0] == '/' || !base_dir)
            path = strdup(name);
        else if (asprintf(&path, "%s/%s", base_dir, name) < 0)
            path = NULL;
    } else if (strcmp(name, "spore-step") == 0) {
        char *dir = self_dir();
        if (dir && asprintf(&path, "%s/spore-step", dir) < 0)
            path = NULL;
        free(dir);
        if (path && !regular_exec(path)) {
            free(path);
            path = NULL;
        }
        if (!path)
            path = path_lookup(name);
    } else {
        path = path_lookup(name);
    }
    if (path && !regular_exec(path)) {
        free(path);
        return NULL;
    }
    char *real = path ? realpath(path, NULL) : NULL;
    free(path);
    return real;
}

static const char *base_dir(const plan *p)
{
    static __thread char cwd[PATH_MAX];
    if (p->in->base_dir && p->in->base_dir[0])
        return p->in->base_dir;
    return getcwd(cwd, sizeof cwd) ? cwd : "/";
}

static bool env_name(const char *n)
{
    if (!*n || (*n >= '0' && *n <= '9'))
        return false;
    for (const char *c = n; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
              *c == '_'))
            return false;
    return true;
}

/* The provider key never enters a sandbox the gateway serves. */
static bool hidden_secret(const plan *p, const sp_agent_secret *s)
{
    return p->gateway_on && strcmp(s->name, SP_AGENT_KEY_SECRET) == 0;
}

static void add_strings(json_t *obj, const char *key, char **v)
{
    json_t *a = json_array();
    for (; v && *v; v++)
        json_array_append_new(a, json_string(*v));
    json_object_set_new(obj, key, a);
}

/* Where the tools may reach, as paths inside: the grants' mount points. */
static void add_grants(const plan *p, json_t *obj)
{
    json_t *r = json_array(), *w = json_array();
    for (size_t i = 0; i < p->grants.n; i++)
        json_array_append_new(p->grants.v[i].writable ? w : r, json_string(p->grants.v[i].inside));
    for (char **e = p->action.sandbox.transport == SP_AGENT_EXEC ? p->action.sandbox.readable
                                                                 : NULL; e && *e; e++)
        if ((*e)[0] == '/')
            json_array_append_new(r, json_string(*e));
    for (char **e = p->action.sandbox.transport == SP_AGENT_EXEC ? p->action.sandbox.writable
                                                                 : NULL; e && *e; e++)
        if ((*e)[0] == '/')
            json_array_append_new(w, json_string(*e));
    json_object_set_new(obj, "readable", r);
    json_object_set_new(obj, "writable", w);
}

/* $SPORE_AGENT_CONFIG for spore-step (step.h, config.c), or NULL when the
 * action asks for nothing of it. */
static char *agent_config(const plan *p)
{
    const sp_agent_action *a = &p->action;
    if (a->api == SP_AGENT_API_NONE && !a->tools)
        return NULL;
    json_t *c = json_object();
    if (a->api != SP_AGENT_API_NONE)
        json_object_set_new(c, "provider", json_string(a->provider));
    if (a->model)
        json_object_set_new(c, "model", json_string(a->model));
    if (p->gateway_on)
        json_object_set_new(c, "gateway", json_string(SP_SANDBOX_GATEWAY));
    else if (a->base_url)
        json_object_set_new(c, "baseUrl", json_string(a->base_url));
    if (a->max_turns)
        json_object_set_new(c, "maxTurns", json_integer(a->max_turns));
    if (a->max_output_tokens)
        json_object_set_new(c, "maxOutputTokens", json_integer(a->max_output_tokens));
    if (a->temperature[0])
        json_object_set_new(c, "temperature", json_string(a->temperature));
    if (a->tools)
        add_strings(c, "tools", a->tools);
    add_strings(c, "programs", a->run_programs);
    add_grants(p, c);
    char *text = sp_json_encode_alloc(c, NULL, NULL);
    json_decref(c);
    return text;
}

/* The environment inside the sandbox (or on the remote side). */
static void inside_env(plan *p, const char *mcp_inside)
{
    strv *e = &p->inside_env;
    sv_add(e, "PATH=" INSIDE_PATH);
    sv_add(e, "HOME=/tmp");
    sv_add(e, "TMPDIR=/tmp");
    sv_add(e, "LANG=C.UTF-8");
    sv_addf(e, "SPORE_STEP_ID=%s", p->req.step_id);
    sv_addf(e, "SPORE_RUN_DIR=%s", p->req.run_dir);
    for (size_t i = 0; i < p->action.nsecrets; i++)
        if (env_name(p->action.secrets[i].name) && !hidden_secret(p, &p->action.secrets[i]))
            sv_addf(e, "%s_FILE=" SP_SANDBOX_SECRETS "/%s", p->action.secrets[i].name,
                    p->action.secrets[i].name);
    char *config = agent_config(p);
    if (config)
        sv_addf(e, "SPORE_AGENT_CONFIG=%s", config);
    free(config);
    if (mcp_inside)
        sv_addf(e, "SPORE_MCP_SERVERS=%s", mcp_inside);
    for (char **kv = p->action.env; kv && kv[0] && kv[1]; kv += 2)
        sv_addf(e, "%s=%s", kv[0], kv[1]);
}

static void bind_file(plan *p, const char *host, const char *inside)
{
    sv_add(&p->files_host, host);
    sv_add(&p->files_inside, inside);
}

static bool write_file(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    bool ok = write(fd, data, len) == (ssize_t)len;
    return close(fd) == 0 && ok;
}

static void unavailable(sp_agent_outcome *o, sp_error *err)
{
    json_t *details = err->details;
    err->details = NULL;
    sp_agent_outcome_fail(o, err->code[0] ? err->code : "agent.sandbox-unavailable", false, false,
                          SP_BREAKER_NONE, details, "%s", err->message);
    sp_error_clear(err);
}

/* readable / writable: resolved, checked and pinned (sandbox.h, grants). */
static bool resolve_grants(plan *p, sp_agent_outcome *o)
{
    sp_error err = {0};
    if (sp_sandbox_grants_resolve((const char *const *)p->action.sandbox.readable,
                                  (const char *const *)p->action.sandbox.writable, base_dir(p),
                                  &p->grants, &err)) {
        unavailable(o, &err);
        return false;
    }
    p->grant_fds = calloc(p->grants.n ? p->grants.n : 1, sizeof *p->grant_fds);
    if (!p->grant_fds) {
        sp_agent_outcome_fail(o, "runtime.out-of-memory", true, false, SP_BREAKER_NONE, NULL,
                              "out of memory");
        return false;
    }
    for (size_t i = 0; i < p->grants.n; i++)
        p->grant_fds[i] = p->grants.v[i].fd;
    return true;
}

static uint64_t hard_deadline(uint64_t timeout_ms);

/* The model gateway's socket: made by the gateway when the exec starts,
 * bound into the sandbox (a placeholder file holds its place until then). */
static bool plan_gateway(plan *p, sp_agent_outcome *o)
{
    if (asprintf(&p->gateway_host, "%s/gateway.sock", sp_sandbox_dir(p->sandbox)) < 0) {
        p->gateway_host = NULL;
        sp_agent_outcome_fail(o, "runtime.out-of-memory", true, false, SP_BREAKER_NONE, NULL,
                              "out of memory");
        return false;
    }
    bind_file(p, p->gateway_host, SP_SANDBOX_GATEWAY);
    return true;
}

static void gateway_log(void *ctx, const char *line)
{
    const plan *p = ctx;
    fprintf(stderr, "spore: agent gateway %s: %s\n", p->req.step_id, line);
}

/* Start the gateway before the exec; false (and the outcome) when it cannot. */
static bool start_gateway(plan *p, sp_agent_outcome *o, sp_gateway **g)
{
    *g = NULL;
    if (!p->gateway_on)
        return true;
    unsigned turns = p->action.max_turns ? p->action.max_turns : 20;
    sp_gateway_cfg cfg = {
        .socket_path = p->gateway_host,
        .base_url = p->action.base_url,
        .api = p->action.api == SP_AGENT_API_ANTHROPIC ? SP_GATEWAY_ANTHROPIC : SP_GATEWAY_OPENAI,
        .key = p->api_key,
        .max_requests = turns * 6 + 6, /* a turn's retries, bad replies and the repair turn */
        .timeout_ms = hard_deadline(p->action.timeout_ms),
        .log = gateway_log,
        .log_ctx = p,
    };
    sp_error err = {0};
    if (!(*g = sp_gateway_start(&cfg, &err))) {
        sp_agent_outcome_fail(o, err.code, false, true, SP_BREAKER_NONE, NULL, "%s", err.message);
        sp_error_clear(&err);
        return false;
    }
    return true;
}

/* The local transport: sandbox, binds, the bwrap command line. */
static bool plan_local(plan *p, sp_agent_outcome *o)
{
    sp_error err = {0};
    if (sp_sandbox_check(&err)) {
        unavailable(o, &err);
        return false;
    }
    if (!resolve_grants(p, o))
        return false;
    p->sandbox = sp_sandbox_acquire(p->in->run_id, p->action.sandbox.reuse_run, &err);
    if (!p->sandbox) {
        unavailable(o, &err);
        return false;
    }
    if (asprintf(&p->run_dir_host, "%s/%s", sp_sandbox_work_host(p->sandbox), p->req.step_id) < 0 ||
        asprintf(&p->result_path, "%s/result.json", p->run_dir_host) < 0) {
        sp_agent_outcome_fail(o, "runtime.out-of-memory", true, false, SP_BREAKER_NONE, NULL,
                              "out of memory");
        return false;
    }
    p->result_reachable = true;
    struct stat st;
    if (mkdir(p->run_dir_host, 0700) && !(errno == EEXIST && lstat(p->run_dir_host, &st) == 0 &&
                                           S_ISDIR(st.st_mode))) {
        sp_agent_outcome_fail(o, "agent.sandbox-unavailable", false, true, SP_BREAKER_NONE, NULL,
                              "cannot create the run directory %s", p->run_dir_host);
        return false;
    }
    /* the step program */
    if (strncmp(p->step_host, "/usr/", 5) == 0) {
        p->step_inside = strdup(p->step_host);
    } else {
        const char *name = strrchr(p->step_host, '/') + 1;
        if (asprintf(&p->step_inside, SP_SANDBOX_BIN_DIR "/%s", name) < 0)
            p->step_inside = NULL;
        else
            bind_file(p, p->step_host, p->step_inside);
    }
    /* secrets, MCP configuration */
    for (size_t i = 0; i < p->action.nsecrets; i++) {
        const sp_agent_secret *s = &p->action.secrets[i];
        char *inside;
        if (hidden_secret(p, s))
            continue;
        if (asprintf(&inside, SP_SANDBOX_SECRETS "/%s", s->name) >= 0) {
            bind_file(p, s->file, inside);
            free(inside);
        }
        if (s->mcp && asprintf(&inside, SP_SANDBOX_SECRETS "/mcp/%s/value", s->name) >= 0) {
            bind_file(p, s->file, inside);
            free(inside);
        }
    }
    const char *mcp_inside = NULL;
    if (json_array_size(p->action.mcp_servers)) {
        char *host, *text = sp_json_encode_alloc(p->action.mcp_servers, NULL, NULL);
        if (text && asprintf(&host, "%s/mcp-servers.json", sp_sandbox_dir(p->sandbox)) >= 0) {
            if (write_file(host, text, strlen(text))) {
                bind_file(p, host, SP_SANDBOX_MCP_CONFIG);
                mcp_inside = SP_SANDBOX_MCP_CONFIG;
            }
            free(host);
        }
        free(text);
    }
    if (p->gateway_on && !plan_gateway(p, o))
        return false;
    inside_env(p, mcp_inside);
    strv cmd = {0};
    sv_add(&cmd, "/bin/sh");
    sv_add(&cmd, "-c");
    sv_add(&cmd, WRAPPER);
    sv_add(&cmd, WRAPPER_NAME);
    sv_add(&cmd, p->step_inside ? p->step_inside : "");
    for (size_t i = 1; i < p->action.nstep_cli; i++)
        sv_add(&cmd, p->action.step_cli[i]);
    size_t nfiles = p->files_host.n;
    sp_sandbox_file *files = calloc(nfiles ? nfiles : 1, sizeof *files);
    for (size_t i = 0; files && i < nfiles; i++)
        files[i] = (sp_sandbox_file){p->files_host.v[i], p->files_inside.v[i]};
    sp_sandbox_spec spec = {
        .network_host = p->action.sandbox.network_host,
        .grants = &p->grants,
        .grant_fd = SP_PROC_PASS_FD,
        .files = files,
        .nfiles = nfiles,
        .run_dir_host = p->action.sandbox.reuse_run ? NULL : p->run_dir_host,
        .run_dir = p->action.sandbox.reuse_run ? NULL : p->req.run_dir,
        .cwd = base_dir(p),
        .env = (const char *const *)p->inside_env.v,
        .argv = (const char *const *)cmd.v,
    };
    bool oom = cmd.oom || !files || p->inside_env.oom || p->files_host.oom ||
               p->files_inside.oom || !p->step_inside;
    p->argv.v = oom ? NULL : sp_sandbox_bwrap_argv(p->sandbox, &spec, &err);
    free(files);
    sv_free(&cmd);
    if (!p->argv.v) {
        if (oom)
            sp_oom(&err);
        unavailable(o, &err);
        return false;
    }
    sv_add(&p->envp, "PATH=/usr/sbin:/usr/bin:/sbin:/bin");
    uint64_t size = sp_agent_message_size_local((const char *const *)p->argv.v,
                                                (const char *const *)p->envp.v, p->req.len);
    if (size > p->action.sandbox.max_message_bytes) {
        sp_agent_outcome_fail(o, "agent.exec-message-too-large", false, false, SP_BREAKER_NONE,
                              json_pack("{s:I,s:I}", "bytes", (json_int_t)size, "max",
                                        (json_int_t)p->action.sandbox.max_message_bytes),
                              "the exec message (stdin, argv, environment) would be %llu bytes, "
                              "over the transport's %llu", (unsigned long long)size,
                              (unsigned long long)p->action.sandbox.max_message_bytes);
        return false;
    }
    return true;
}

/* The exec transport: prefix + env -i ... + the wrapper + the step CLI. */
static bool plan_exec(plan *p, sp_agent_outcome *o)
{
    const sp_agent_sandbox *sb = &p->action.sandbox;
    inside_env(p, json_array_size(p->action.mcp_servers) ? SP_SANDBOX_MCP_CONFIG : NULL);
    strv remote = {0};
    for (char **c = sb->exec_command; c && *c; c++)
        sv_add(&p->argv, *c);
    sv_add(&remote, "/usr/bin/env");
    sv_add(&remote, "-i");
    size_t env_at = remote.n;
    for (size_t i = 0; i < p->inside_env.n; i++)
        sv_add(&remote, p->inside_env.v[i]);
    size_t env_end = remote.n;
    sv_add(&remote, "/bin/sh");
    sv_add(&remote, "-c");
    sv_add(&remote, WRAPPER);
    sv_add(&remote, WRAPPER_NAME);
    for (size_t i = 0; i < p->action.nstep_cli; i++)
        sv_add(&remote, p->action.step_cli[i]);
    for (size_t i = 0; i < remote.n; i++)
        sv_add(&p->argv, remote.v[i]);
    /* protobuf sizing: argv entries (without the environment) + pairs + stdin */
    strv args = {0}, pairs = {0};
    for (size_t i = 0; i < remote.n; i++)
        sv_add(i >= env_at && i < env_end ? &pairs : &args, remote.v[i]);
    bool oom = remote.oom || args.oom || pairs.oom || p->argv.oom;
    uint64_t size = sp_agent_message_size_protobuf((const char *const *)args.v,
                                                   (const char *const *)pairs.v, p->req.len);
    sv_free(&remote);
    sv_free(&args);
    sv_free(&pairs);
    if (oom) {
        sp_agent_outcome_fail(o, "runtime.out-of-memory", true, false, SP_BREAKER_NONE, NULL,
                              "out of memory");
        return false;
    }
    if (size > sb->max_message_bytes) {
        sp_agent_outcome_fail(o, "agent.exec-message-too-large", false, false, SP_BREAKER_NONE,
                              json_pack("{s:I,s:I}", "bytes", (json_int_t)size, "max",
                                        (json_int_t)sb->max_message_bytes),
                              "the exec request (argv, environment, stdin) would be %llu bytes "
                              "as a protobuf message, over the transport's %llu",
                              (unsigned long long)size, (unsigned long long)sb->max_message_bytes);
        return false;
    }
    for (char **e = environ; e && *e; e++)
        sv_add(&p->envp, *e); /* the prefix (ssh, kubectl) needs the worker's environment */
    if (sb->host_work_root) {
        p->result_reachable = true;
        if (asprintf(&p->result_path, "%s/%s/result.json", sb->host_work_root, p->req.step_id) < 0)
            p->result_path = NULL;
    }
    return true;
}

/* ---- the exec ---- */

static bool on_stdout(void *ctx, const char *data, size_t len)
{
    plan *p = ctx;
    return sp_agent_session_stdout(&p->session, data, len);
}

static void on_stderr(void *ctx, const char *data, size_t len)
{
    plan *p = ctx;
    sp_agent_session_stderr(&p->session, data, len);
}

static void on_started(void *ctx)
{
    (void)ctx;
    sp_failpoint("host.agent.after-exec");
}

static void on_event(void *ctx, const char *json, size_t len)
{
    plan *p = ctx;
    if (p->in->progress)
        p->in->progress(p->in->progress_ctx, json, len);
}

static uint64_t hard_deadline(uint64_t timeout_ms)
{
    uint64_t grace = timeout_ms / 10;
    grace = grace < 2000 ? 2000 : grace > 30000 ? 30000 : grace;
    return timeout_ms + grace;
}

static void end_of(plan *p, const sp_proc_result *res, sp_agent_end *end)
{
    memset(end, 0, sizeof *end);
    bool local = p->action.sandbox.transport == SP_AGENT_LOCAL;
    long long pid;
    bool started = sp_agent_stderr_pid(&p->session.err, &pid);
    if (res->aborted) {
        end->kind = SP_AGENT_VIOLATION_KILL;
        return;
    }
    switch (res->end) {
    case SP_PROC_SPAWN_FAILED:
        end->kind = local ? SP_AGENT_SANDBOX_FAILED : SP_AGENT_SPAWN_FAILED;
        snprintf(end->message, sizeof end->message, "%s failed at %s: %s",
                 p->argv.v ? p->argv.v[0] : "?", res->spawn_step ? res->spawn_step : "?",
                 strerror(res->spawn_errno));
        return;
    case SP_PROC_STOPPED:
        end->kind = SP_AGENT_STOPPED;
        return;
    case SP_PROC_TIMED_OUT:
        end->kind = SP_AGENT_TIMED_OUT;
        return;
    case SP_PROC_SIGNALED:
        end->kind = SP_AGENT_SIGNALED;
        end->signal = res->signal;
        break;
    case SP_PROC_EXITED:
        end->kind = SP_AGENT_EXITED;
        end->exit_code = res->exit_code;
        break;
    }
    if (local && !started) {
        end->kind = SP_AGENT_SANDBOX_FAILED;
        snprintf(end->message, sizeof end->message, "bwrap ended (%s %d) before the step started",
                 res->end == SP_PROC_EXITED ? "exit" : "signal",
                 res->end == SP_PROC_EXITED ? res->exit_code : res->signal);
        return;
    }
    if (!local && end->kind == SP_AGENT_EXITED &&
        end->exit_code == p->action.sandbox.lost_stream_exit) {
        bool any = p->session.reader.total > 0 || sp_agent_stderr_total(&p->session.err) > 0;
        end->kind = any ? SP_AGENT_LOST : SP_AGENT_SPAWN_FAILED;
        snprintf(end->message, sizeof end->message,
                 "the exec transport exited %d (its lost-stream code) before any byte",
                 end->exit_code);
    }
}

static void run_exec(plan *p, sp_agent_outcome *o)
{
    sp_proc_spec spec = {
        .argv = (const char *const *)p->argv.v,
        .envp = (const char *const *)p->envp.v,
        .cwd = p->action.sandbox.transport == SP_AGENT_EXEC ? base_dir(p) : NULL,
        .stdin_data = p->req.json,
        .stdin_len = p->req.len,
        .has_timeout = true,
        .timeout_ms = hard_deadline(p->action.timeout_ms),
        .stop = p->in->stop,
        .pass_fds = p->grant_fds,
        .npass_fds = p->grant_fds ? p->grants.n : 0,
        .on_stdout = on_stdout,
        .on_stderr = on_stderr,
        .on_started = on_started,
        .stream_ctx = p,
    };
    sp_gateway *gateway;
    if (!start_gateway(p, o, &gateway))
        return;
    sp_proc_result res;
    sp_proc_run(&spec, &res);
    sp_gateway_stop(gateway);
    sp_agent_end end;
    end_of(p, &res, &end);
    sp_proc_result_free(&res);
    sp_agent_session_finish(&p->session, &end, p->result_path, p->result_reachable, o);
    sp_failpoint("host.agent.after-result");
}

static void add_warning(sp_agent_outcome *o, const plan *p)
{
    if (!p->req.warning[0] || !o->details)
        return;
    json_t *w = json_array();
    if (w && !json_array_append_new(w, json_string(p->req.warning)))
        json_object_set_new(o->details, "warnings", w);
    else
        json_decref(w);
}

static void plan_free(plan *p)
{
    if (p->session_ready)
        sp_agent_session_free(&p->session);
    sp_agent_request_free(&p->req);
    sp_redactor_free(p->redactor);
    if (p->action_ok)
        sp_agent_action_free(&p->action);
    free(p->step_host);
    free(p->step_inside);
    free(p->run_dir_host);
    free(p->result_path);
    sv_free(&p->argv);
    sv_free(&p->envp);
    sv_free(&p->inside_env);
    sv_free(&p->files_host);
    sv_free(&p->files_inside);
    sp_sandbox_grants_free(&p->grants);
    free(p->grant_fds);
    free(p->gateway_host);
    if (p->api_key)
        explicit_bzero(p->api_key, strlen(p->api_key));
    free(p->api_key);
}

static bool prepare(plan *p, sp_agent_outcome *o)
{
    const sp_agent_exec_in *in = p->in;
    sp_error err = {0};
    if (sp_agent_action_parse(in->action_id, in->action, &p->action, &err)) {
        sp_agent_outcome_fail(o, "agent.invalid", false, false, SP_BREAKER_NONE, NULL, "%s",
                              err.message);
        sp_error_clear(&err);
        return false;
    }
    p->action_ok = true;
    sp_agent_request_in rin = {&p->action, in->input, in->run_id, in->node_id, in->attempt,
                               p->action.sandbox.transport == SP_AGENT_LOCAL
                                   ? SP_SANDBOX_WORK_ROOT
                                   : p->action.sandbox.work_root,
                               in->traceparent, NULL, in->step_id};
    if (sp_agent_request_build(&rin, &p->req, &err)) {
        sp_agent_outcome_fail(o, err.code, false, false, SP_BREAKER_NONE, NULL, "%s",
                              err.message);
        sp_error_clear(&err);
        return false;
    }
    if (p->action.plain_header_server[0]) {
        sp_agent_outcome_fail(o, "agent.mcp-plain-headers", false, false, SP_BREAKER_NONE,
                              json_pack("{s:s}", "server", p->action.plain_header_server),
                              "MCP server \"%s\" carries a plain header value: headers must be "
                              "{\"source\": \"Secret\", \"secretName\"}",
                              p->action.plain_header_server);
        return false;
    }
    if (sp_breaker_is_open(sp_breaker_global(), p->action.provider, sp_mono_ms())) {
        sp_agent_outcome_fail(o, "agent.breaker-open", false, false, SP_BREAKER_NONE,
                              json_pack("{s:s}", "provider", p->action.provider),
                              "the circuit breaker of provider \"%s\" is open (%d failures in a "
                              "row; it closes 60 s after the last one)", p->action.provider,
                              SP_BREAKER_THRESHOLD);
        return false;
    }
    if (!(p->redactor = sp_redactor_new())) {
        sp_agent_outcome_fail(o, "runtime.out-of-memory", true, false, SP_BREAKER_NONE, NULL,
                              "out of memory");
        return false;
    }
    p->gateway_on = p->action.api != SP_AGENT_API_NONE &&
                    p->action.sandbox.transport == SP_AGENT_LOCAL;
    for (size_t i = 0; i < p->action.nsecrets; i++)
        if (!read_secret(p, &p->action.secrets[i], o))
            return false;
    if (p->action.sandbox.transport == SP_AGENT_LOCAL) {
        p->step_host = resolve_step_cli(p->action.step_cli[0], base_dir(p));
        if (!p->step_host) {
            sp_agent_outcome_fail(o, "agent.step-cli-missing", false, false, SP_BREAKER_NONE,
                                  NULL, "the step CLI \"%s\" was not found on this machine "
                                  "(a path, spore-step beside spore, or a name in PATH)",
                                  p->action.step_cli[0]);
            return false;
        }
    }
    if (!(p->action.sandbox.transport == SP_AGENT_LOCAL ? plan_local(p, o) : plan_exec(p, o)))
        return false;
    sp_agent_session_cfg cfg = {p->req.step_id, p->redactor, in->node_id, in->attempt, on_event,
                                p};
    if (sp_agent_session_init(&p->session, &cfg)) {
        sp_agent_outcome_fail(o, "runtime.out-of-memory", true, false, SP_BREAKER_NONE, NULL,
                              "cannot set up the protocol reader");
        return false;
    }
    p->session_ready = true;
    return true;
}

/* The step CLI's stderr as the attempt keeps it (its stdout: nothing). */
static sp_attempt_logs *stderr_logs(const plan *p)
{
    sp_log_stream out = {0}, err;
    sp_steplog_tail(&p->session.err.tail, p->redactor, &err); /* none when out of memory */
    return sp_steplog_pair(&out, &err);
}

void sp_agent_execute(const sp_agent_exec_in *in, sp_agent_outcome *o)
{
    sp_agent_execute_logged(in, o, NULL);
}

void sp_agent_execute_logged(const sp_agent_exec_in *in, sp_agent_outcome *o,
                             sp_attempt_logs **logs)
{
    if (logs)
        *logs = NULL;
    plan p;
    memset(&p, 0, sizeof p);
    p.in = in;
    memset(o, 0, sizeof *o);
    if (prepare(&p, o)) {
        if (p.req.warning[0])
            fprintf(stderr, "spore: warning: agent step %s: %s\n", in->node_id ? in->node_id : "?",
                    p.req.warning);
        run_exec(&p, o);
        sp_breaker_record(sp_breaker_global(), p.action.provider, o->breaker,
                          sp_mono_ms());
        if (logs)
            *logs = stderr_logs(&p);
    } else if (!o->details) {
        sp_agent_outcome_fail(o, "agent.invalid", false, false, SP_BREAKER_NONE, NULL,
                              "the agent step could not be prepared");
    }
    add_warning(o, &p);
    if (p.sandbox)
        sp_sandbox_release(p.sandbox, o->taint || o->status == SP_AGENT_UNKNOWN);
    plan_free(&p);
}

void sp_agent_outcome_to_output(const sp_agent_outcome *o, sp_activity_output *out)
{
    json_t *details = o->details ? json_incref(o->details) : NULL;
    const char *msg = o->error ? o->error : "";
    switch (o->status) {
    case SP_AGENT_SUCCESS:
        json_decref(details);
        sp_output_success(out, "ok", o->output ? json_incref(o->output) : NULL);
        return;
    case SP_AGENT_FAILURE:
        sp_output_failure(out, o->code, o->retryable, details, "%s", msg);
        return;
    case SP_AGENT_UNKNOWN:
        sp_output_unknown(out, o->code, details, "%s", msg);
        return;
    }
}

static int agent_validate(const char *action_id, const json_t *action, sp_error *err)
{
    return sp_agent_action_validate(action_id, action, err);
}

static int agent_run(const sp_runner_ctx *ctx, const sp_runner_action *a, const json_t *input,
                     sp_activity_output *out)
{
    sp_agent_exec_in in = {
        .action_id = a->id,
        .action = a->raw,
        .input = input,
        .run_id = ctx->run_id,
        .node_id = ctx->node_id,
        .attempt = ctx->attempt,
        .base_dir = ctx->base_dir,
        .traceparent = ctx->traceparent,
        .stop = ctx->stop,
        .progress = ctx->progress,
        .progress_ctx = ctx->progress_ctx,
    };
    sp_attempt_logs *logs = NULL;
    sp_agent_outcome o;
    sp_agent_execute_logged(&in, &o, &logs);
    sp_agent_outcome_to_output(&o, out);
    out->logs = logs; /* after the output helper, which resets `out` */
    sp_agent_outcome_free(&o);
    return out->error || out->kind == SP_OUTPUT_SUCCESS ? 0 : -1;
}

/* No prepare: sp_agent_execute reads the action itself (tests drive it with
 * raw actions), once per attempt. */
const sp_runner sp_agent_runner = {
    .kind = "agent",
    .validate = agent_validate,
    .run = agent_run,
};
