/*
 * gateway.c - the model gateway (see gateway.h): one thread per attempt,
 * one connection at a time (spore-step's calls are sequential), each
 * request read with a time bound and size bounds, checked, forwarded with
 * libcurl to baseUrl with the credential added, and answered with the
 * upstream's status and body (buffered, bounded). Metadata only is logged.
 *
 * Must never log or echo a body, a header value or the key, forward a
 * path other than the provider's, or let a request carry its own
 * credential through.
 */
#define _GNU_SOURCE
#include "agent/gateway.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"

#define READ_TIMEOUT_MS 30000
#define REPLY_MAX (SP_GATEWAY_BODY_MAX)

struct sp_gateway {
    sp_gateway_cfg cfg;
    char *socket_path, *base_url, *key;
    int listen_fd;
    int stop_pipe[2];
    pthread_t thread;
    unsigned served;
    long long deadline;
    atomic_bool stopping; /* a forward in flight gives up */
};

/* One parsed client request. */
typedef struct request {
    char method[16];
    char target[1024];
    char content_type[128], accept[128], version[64], beta[256];
    bool credential, chunked, has_length;
    size_t length;
    sp_buf body;
} request;

typedef enum verdict {
    V_FORWARD,
    V_BAD_REQUEST,
    V_METHOD,
    V_PATH,
    V_CREDENTIAL,
    V_CHUNKED,
    V_TOO_LARGE,
    V_LIMIT
} verdict;

static long long now_ms(void) { return (long long)sp_mono_ms(); }

const char *sp_gateway_path(sp_gateway_api api)
{
    return api == SP_GATEWAY_ANTHROPIC ? "/v1/messages" : "/chat/completions";
}

/* ---- reading the request ---- */

static ssize_t read_some(int fd, char *buf, size_t len, long long until)
{
    for (;;) {
        long long left = until - now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        ssize_t n = read(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        return n;
    }
}

static void copy_value(char *dst, size_t cap, const char *v)
{
    snprintf(dst, cap, "%s", v);
}

static void header(request *rq, char *line)
{
    char *colon = strchr(line, ':');
    if (!colon)
        return;
    *colon = '\0';
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    static const char *const credentials[] = {"authorization", "proxy-authorization", "x-api-key",
                                              "api-key", "cookie", NULL};
    for (const char *const *c = credentials; *c; c++)
        if (strcasecmp(line, *c) == 0)
            rq->credential = true;
    if (strcasecmp(line, "content-length") == 0) {
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        rq->has_length = *v >= '0' && *v <= '9' && *end == '\0';
        rq->length = !rq->has_length ? 0 : n > SP_GATEWAY_BODY_MAX ? SP_GATEWAY_BODY_MAX + 1 : (size_t)n;
    } else if (strcasecmp(line, "transfer-encoding") == 0) {
        rq->chunked = true;
    } else if (strcasecmp(line, "content-type") == 0) {
        copy_value(rq->content_type, sizeof rq->content_type, v);
    } else if (strcasecmp(line, "accept") == 0) {
        copy_value(rq->accept, sizeof rq->accept, v);
    } else if (strcasecmp(line, "anthropic-version") == 0) {
        copy_value(rq->version, sizeof rq->version, v);
    } else if (strcasecmp(line, "anthropic-beta") == 0) {
        copy_value(rq->beta, sizeof rq->beta, v);
    }
}

/* The head (request line and headers); what followed it is the body's start. */
static bool parse_head(request *rq, char *head)
{
    char *save = NULL, *line = strtok_r(head, "\r\n", &save);
    char version[16];
    if (!line || sscanf(line, "%15s %1023s %15s", rq->method, rq->target, version) != 3 ||
        strncmp(version, "HTTP/1.", 7) != 0)
        return false;
    while ((line = strtok_r(NULL, "\r\n", &save)))
        header(rq, line);
    return true;
}

static bool read_request(int fd, request *rq, long long until)
{
    char *head = malloc(SP_GATEWAY_HEAD_MAX + 1);
    size_t n = 0;
    char *end = NULL;
    while (head && !end && n < SP_GATEWAY_HEAD_MAX) {
        ssize_t r = read_some(fd, head + n, SP_GATEWAY_HEAD_MAX - n, until);
        if (r <= 0)
            break;
        n += (size_t)r;
        head[n] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    bool ok = end != NULL;
    if (ok) {
        size_t head_len = (size_t)(end - head), extra = n - head_len - 4;
        *end = '\0';
        ok = parse_head(rq, head);
        if (ok && rq->has_length && rq->length <= SP_GATEWAY_BODY_MAX && extra <= rq->length) {
            sp_buf_append(&rq->body, end + 4, extra);
            char chunk[65536];
            while (ok && rq->body.len < rq->length) {
                size_t want = rq->length - rq->body.len;
                ssize_t r = read_some(fd, chunk, want < sizeof chunk ? want : sizeof chunk, until);
                if (r <= 0)
                    ok = false;
                else
                    sp_buf_append(&rq->body, chunk, (size_t)r);
            }
            ok = ok && sp_buf_ok(&rq->body);
        }
    }
    free(head);
    return ok;
}

static verdict judge(const sp_gateway *g, const request *rq)
{
    if (strcmp(rq->method, "POST") != 0)
        return V_METHOD;
    if (strcmp(rq->target, sp_gateway_path(g->cfg.api)) != 0)
        return V_PATH;
    if (rq->credential)
        return V_CREDENTIAL;
    if (rq->chunked)
        return V_CHUNKED;
    if (!rq->has_length)
        return V_BAD_REQUEST;
    if (rq->length > SP_GATEWAY_BODY_MAX)
        return V_TOO_LARGE;
    if (g->served >= g->cfg.max_requests)
        return V_LIMIT;
    return V_FORWARD;
}

/* ---- answering ---- */

static bool write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

static void answer(int fd, long status, const char *type, const char *body, size_t len)
{
    char head[512];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %ld %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     status, status < 300 ? "OK" : "Error", type[0] ? type : "application/json",
                     len);
    if (write_all(fd, head, (size_t)n))
        write_all(fd, body, len);
}

/* The gateway's own refusal, in a shape both wires read: error.code. */
static void refuse(int fd, long status, const char *code, const char *message)
{
    char body[512];
    int n = snprintf(body, sizeof body,
                     "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"code\":\"%s\","
                     "\"message\":\"%s\"}}",
                     code, code, message);
    answer(fd, status, "application/json", body, (size_t)n);
}

static const char *const REFUSALS[][3] = {
    [V_BAD_REQUEST] = {"400", "gateway.bad-request", "a POST with a Content-Length is required"},
    [V_METHOD] = {"405", "gateway.method-refused", "only POST is forwarded"},
    [V_PATH] = {"404", "gateway.path-refused", "only the provider's API path is forwarded"},
    [V_CREDENTIAL] = {"403", "gateway.credential-refused",
                      "a request carrying a credential is refused: the gateway adds it"},
    [V_CHUNKED] = {"411", "gateway.length-required", "chunked bodies are refused"},
    [V_TOO_LARGE] = {"413", "gateway.request-too-large", "the body is over 8 MiB"},
    [V_LIMIT] = {"400", "gateway.request-limit", "the attempt's request count is used up"},
};

/* ---- forwarding ---- */

typedef struct upstream {
    sp_buf body;
    char type[128];
    bool too_large;
} upstream;

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
    upstream *u = ctx;
    if (u->body.len + size * n > REPLY_MAX) {
        u->too_large = true;
        return 0;
    }
    sp_buf_append(&u->body, data, size * n);
    return sp_buf_ok(&u->body) ? size * n : 0;
}

static size_t on_header(char *data, size_t size, size_t n, void *ctx)
{
    upstream *u = ctx;
    size_t len = size * n;
    if (len > 13 && strncasecmp(data, "content-type:", 13) == 0) {
        const char *v = data + 13;
        while (*v == ' ' && v < data + len)
            v++;
        size_t vlen = (size_t)(data + len - v);
        while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n'))
            vlen--;
        snprintf(u->type, sizeof u->type, "%.*s", (int)vlen, v);
    }
    return len;
}

static int on_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    const sp_gateway *g = ctx;
    return atomic_load(&g->stopping) ? 1 : 0;
}

static struct curl_slist *headers_of(const sp_gateway *g, const request *rq)
{
    struct curl_slist *l = NULL;
    char line[512];
    snprintf(line, sizeof line, "Content-Type: %s",
             rq->content_type[0] ? rq->content_type : "application/json");
    l = curl_slist_append(l, line);
    snprintf(line, sizeof line, "Accept: %s", rq->accept[0] ? rq->accept : "application/json");
    l = curl_slist_append(l, line);
    l = curl_slist_append(l, "Expect:");
    if (g->cfg.api == SP_GATEWAY_ANTHROPIC) {
        snprintf(line, sizeof line, "anthropic-version: %s",
                 rq->version[0] ? rq->version : "2023-06-01");
        l = curl_slist_append(l, line);
        if (rq->beta[0]) {
            snprintf(line, sizeof line, "anthropic-beta: %s", rq->beta);
            l = curl_slist_append(l, line);
        }
    }
    if (g->key && g->key[0]) {
        char *cred = NULL;
        if (asprintf(&cred, g->cfg.api == SP_GATEWAY_ANTHROPIC ? "x-api-key: %s"
                                                               : "Authorization: Bearer %s",
                     g->key) >= 0) {
            l = curl_slist_append(l, cred);
            explicit_bzero(cred, strlen(cred));
            free(cred);
        }
    }
    return l;
}

/* Forward; the status to answer with (upstream's, or 502 / 504). */
static long forward(sp_gateway *g, const request *rq, upstream *u, const char **code)
{
    long long left = g->deadline - now_ms();
    if (left <= 0) {
        *code = "gateway.deadline";
        return 504;
    }
    CURL *h = curl_easy_init();
    char *url = NULL;
    struct curl_slist *list = headers_of(g, rq);
    long status = 502;
    *code = "gateway.upstream-unreachable";
    if (h && list && asprintf(&url, "%s%s", g->base_url, rq->target) >= 0) {
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, rq->body.data ? rq->body.data : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body.len);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, list);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, u);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, u);
        curl_easy_setopt(h, CURLOPT_USERAGENT, "spore-gateway");
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, g);
        CURLcode rc = curl_easy_perform(h);
        if (rc == CURLE_OK) {
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
            *code = NULL;
        } else if (u->too_large) {
            *code = "gateway.reply-too-large";
        } else if (rc == CURLE_OPERATION_TIMEDOUT) {
            status = 504;
            *code = "gateway.deadline";
        }
    }
    free(url);
    curl_slist_free_all(list);
    if (h)
        curl_easy_cleanup(h);
    return status;
}

/* Only what the gateway itself vouches for: a text from the sandbox (an
 * unknown method, another path) could carry a secret, so it is not logged. */
static void log_line(const sp_gateway *g, const request *rq, long status, const char *code,
                     size_t down, long long ms)
{
    if (!g->cfg.log)
        return;
    static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD",
                                          "OPTIONS", NULL};
    const char *method = "(other method)";
    for (const char *const *m = methods; *m; m++)
        if (strcmp(rq->method, *m) == 0)
            method = *m;
    const char *path = sp_gateway_path(g->cfg.api);
    char line[512];
    snprintf(line, sizeof line, "%s %s -> %ld%s%s, %zu bytes up, %zu down, %lld ms", method,
             strcmp(rq->target, path) == 0 ? path : "(other path)", status, code ? " " : "",
             code ? code : "", rq->body.len, down, ms);
    g->cfg.log(g->cfg.log_ctx, line);
}

static void serve(sp_gateway *g, int fd)
{
    long long begin = now_ms();
    request rq;
    memset(&rq, 0, sizeof rq);
    rq.body.limit = SP_GATEWAY_BODY_MAX;
    verdict v = read_request(fd, &rq, begin + READ_TIMEOUT_MS) ? judge(g, &rq) : V_BAD_REQUEST;
    if (v != V_FORWARD) {
        long status = strtol(REFUSALS[v][0], NULL, 10);
        refuse(fd, status, REFUSALS[v][1], REFUSALS[v][2]);
        log_line(g, &rq, status, REFUSALS[v][1], 0, now_ms() - begin);
    } else {
        g->served++;
        upstream u;
        memset(&u, 0, sizeof u);
        const char *code;
        long status = forward(g, &rq, &u, &code);
        if (code)
            refuse(fd, status, code, "the upstream did not answer usably");
        else
            answer(fd, status, u.type, u.body.data ? u.body.data : "", u.body.len);
        log_line(g, &rq, status, code, u.body.len, now_ms() - begin);
        sp_buf_free(&u.body);
    }
    sp_buf_free(&rq.body);
}

static void *run(void *arg)
{
    sp_gateway *g = arg;
    for (;;) {
        struct pollfd p[2] = {{g->listen_fd, POLLIN, 0}, {g->stop_pipe[0], POLLIN, 0}};
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 || p[1].revents)
            break;
        int c = accept4(g->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        serve(g, c);
        close(c);
    }
    return NULL;
}

/* ---- lifecycle ---- */

static int listen_on(const char *path, sp_error *err)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        return sp_fail(err, "agent.gateway-unavailable",
                       "the model gateway's socket path is longer than %zu bytes (%s): set "
                       "SPORE_AGENT_DIR to a shorter directory",
                       sizeof a.sun_path - 1, path);
    memcpy(a.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unlink(path);
    mode_t old = umask(077);
    int rc = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&a, sizeof a);
    umask(old);
    if (rc || listen(fd, 8)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return sp_fail(err, "agent.gateway-unavailable", "the model gateway cannot listen on %s: %s",
                       path, strerror(e));
    }
    return fd;
}

static void release(sp_gateway *g)
{
    if (g->key) {
        explicit_bzero(g->key, strlen(g->key));
        free(g->key);
    }
    free(g->socket_path);
    free(g->base_url);
    free(g);
}

sp_gateway *sp_gateway_start(const sp_gateway_cfg *cfg, sp_error *err)
{
    sp_gateway *g = calloc(1, sizeof *g);
    if (!g || !(g->socket_path = strdup(cfg->socket_path)) ||
        !(g->base_url = strdup(cfg->base_url)) ||
        (cfg->key && !(g->key = strdup(cfg->key)))) {
        if (g)
            release(g);
        sp_oom(err);
        return NULL;
    }
    g->cfg = *cfg;
    g->deadline = now_ms() + (long long)cfg->timeout_ms;
    g->listen_fd = listen_on(g->socket_path, err);
    if (g->listen_fd < 0) {
        release(g);
        return NULL;
    }
    if (pipe2(g->stop_pipe, O_CLOEXEC) || pthread_create(&g->thread, NULL, run, g)) {
        close(g->listen_fd);
        unlink(g->socket_path);
        release(g);
        sp_fail(err, "agent.gateway-unavailable", "the model gateway cannot start");
        return NULL;
    }
    return g;
}

unsigned sp_gateway_stop(sp_gateway *g)
{
    if (!g)
        return 0;
    atomic_store(&g->stopping, true);
    if (write(g->stop_pipe[1], "x", 1) != 1) {
        /* the thread also ends when the pipe closes */
    }
    close(g->stop_pipe[1]);
    pthread_join(g->thread, NULL);
    close(g->stop_pipe[0]);
    close(g->listen_fd);
    unlink(g->socket_path);
    unsigned served = g->served;
    release(g);
    return served;
}
