/*
 * model_server.c - the local model server of the agent provider tests
 * (agent-providers.md §4): a real HTTP/1.1 server on loopback that answers
 * from a script of recorded exchanges in the real wire shapes of OpenAI's
 * Chat Completions and Anthropic's Messages, and records every request it
 * received so the tests can assert what was sent (method, path, headers,
 * tools, schema, the conversation).
 *
 * usage: model_server --script <file.json> --record <file.jsonl>
 *                     --port-file <file> [--key <api key>]
 *
 * The script: {"exchanges": [exchange, ...]}; request n (from 1) is answered
 * by the n-th exchange, an exchange with "times": k counting k times. An
 * exchange: "status" (default 200), "body" (a JSON value, sent as is),
 * "raw" (a string sent as the body instead: malformed replies),
 * "oversizeBytes" (a valid JSON reply padded past that many bytes),
 * "delayMs" (before the answer: slow replies), "headers" (extra response
 * headers). Past the script every request gets a 500 saying so.
 *
 * With --key, a request without "Authorization: Bearer <key>" or
 * "x-api-key: <key>" is answered 401 in the API's own error shape before
 * the script is consulted. The record never holds a credential: such a
 * header is recorded as "<key>" when it matches and "<other>" otherwise.
 *
 * What it must never do: listen beyond 127.0.0.1, read an unbounded request
 * (headers at most 64 KiB, a body at most 16 MiB), or write a credential to
 * its record.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX (64 * 1024)
#define BODY_MAX (16 * 1024 * 1024)

typedef struct request {
    char method[16];
    char path[2048];
    json_t *headers; /* lowercased name -> value */
    char *body;
    size_t body_len;
} request;

static const char *key;

static bool write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Read until the blank line; what came after it stays in *extra. */
static char *read_head(int fd, size_t *head_len, char **extra, size_t *extra_len)
{
    char *buf = malloc(HEAD_MAX + 1);
    size_t n = 0;
    while (buf && n < HEAD_MAX) {
        ssize_t r = read(fd, buf + n, HEAD_MAX - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        if (end) {
            *head_len = (size_t)(end - buf);
            *extra = end + 4;
            *extra_len = n - *head_len - 4;
            return buf;
        }
    }
    free(buf);
    return NULL;
}

static bool parse_request(int fd, request *rq)
{
    size_t head_len, extra_len;
    char *extra;
    char *head = read_head(fd, &head_len, &extra, &extra_len);
    if (!head)
        return false;
    head[head_len] = '\0';
    rq->headers = json_object();
    char *save = NULL, *line = strtok_r(head, "\r\n", &save);
    bool ok = line && sscanf(line, "%15s %2047s", rq->method, rq->path) == 2;
    long long length = 0;
    for (line = strtok_r(NULL, "\r\n", &save); ok && line; line = strtok_r(NULL, "\r\n", &save)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = '\0';
        for (char *c = line; *c; c++)
            *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
        const char *v = colon + 1;
        while (*v == ' ')
            v++;
        json_object_set_new(rq->headers, line, json_string(v));
        if (strcmp(line, "content-length") == 0)
            length = atoll(v);
    }
    ok = ok && length >= 0 && length <= BODY_MAX && (size_t)length >= extra_len;
    rq->body = ok ? malloc((size_t)length + 1) : NULL;
    if (rq->body) {
        memcpy(rq->body, extra, extra_len);
        size_t got = extra_len;
        while (got < (size_t)length) {
            ssize_t r = read(fd, rq->body + got, (size_t)length - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        rq->body[got] = '\0';
        rq->body_len = got;
        ok = got == (size_t)length;
    }
    free(head);
    return ok;
}

static bool anthropic_path(const request *rq) { return strstr(rq->path, "/messages") != NULL; }

/* "<key>" / "<other>" / NULL: what a credential header looks like. */
static const char *credential_seen(const request *rq, const char *name, const char *prefix)
{
    const char *v = json_string_value(json_object_get(rq->headers, name));
    if (!v)
        return NULL;
    size_t n = strlen(prefix);
    return key && strncmp(v, prefix, n) == 0 && strcmp(v + n, key) == 0 ? "<key>" : "<other>";
}

static bool authorized(const request *rq)
{
    const char *a = credential_seen(rq, "authorization", "Bearer ");
    const char *x = credential_seen(rq, "x-api-key", "");
    return !key || (a && strcmp(a, "<key>") == 0) || (x && strcmp(x, "<key>") == 0);
}

static void record(FILE *rec, long n, const request *rq)
{
    json_t *h = json_deep_copy(rq->headers);
    const char *a = credential_seen(rq, "authorization", "Bearer ");
    const char *x = credential_seen(rq, "x-api-key", "");
    if (a)
        json_object_set_new(h, "authorization", json_string(a));
    if (x)
        json_object_set_new(h, "x-api-key", json_string(x));
    json_error_t e;
    json_t *body = json_loadb(rq->body ? rq->body : "", rq->body_len, 0, &e);
    json_t *r = json_pack("{s:I,s:s,s:s,s:o}", "n", (json_int_t)n, "method", rq->method, "path",
                          rq->path, "headers", h);
    json_object_set_new(r, body ? "body" : "bodyText",
                        body ? body : json_stringn(rq->body ? rq->body : "", rq->body_len));
    char *text = json_dumps(r, JSON_COMPACT);
    fprintf(rec, "%s\n", text ? text : "{}");
    fflush(rec);
    free(text);
    json_decref(r);
}

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 529: return "Overloaded";
    default: return "Status";
    }
}

static void respond(int fd, int status, const json_t *headers, const char *body, size_t len)
{
    char head[4096];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n", status, reason(status), len);
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)headers, name, v)
    {
        if (n < (int)sizeof head - 1)
            n += snprintf(head + n, sizeof head - (size_t)n, "%s: %s\r\n", name,
                          json_string_value(v) ? json_string_value(v) : "");
    }
    if (n < (int)sizeof head - 2)
        n += snprintf(head + n, sizeof head - (size_t)n, "\r\n");
    if (write_all(fd, head, (size_t)n))
        write_all(fd, body, len);
}

static void respond_json(int fd, int status, json_t *body)
{
    char *text = json_dumps(body, JSON_INDENT(2));
    respond(fd, status, NULL, text ? text : "{}", text ? strlen(text) : 2);
    free(text);
    json_decref(body);
}

static json_t *api_error(const request *rq, const char *type, const char *message)
{
    if (anthropic_path(rq))
        return json_pack("{s:s,s:{s:s,s:s}}", "type", "error", "error", "type", type, "message",
                         message);
    return json_pack("{s:{s:s,s:s,s:n,s:s}}", "error", "message", message, "type", type, "param",
                     "code", type);
}

/* The n-th exchange of the script, counting "times". */
static const json_t *exchange_for(const json_t *script, long n)
{
    const json_t *list = json_object_get(script, "exchanges");
    long seen = 0;
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *x = json_array_get(list, i);
        json_int_t times = json_integer_value(json_object_get(x, "times"));
        seen += times > 0 ? times : 1;
        if (n <= seen)
            return x;
    }
    return NULL;
}

static void sleep_ms(long long ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

static void answer(int fd, const request *rq, const json_t *x)
{
    int status = json_object_get(x, "status") ? (int)json_integer_value(json_object_get(x, "status"))
                                              : 200;
    sleep_ms(json_integer_value(json_object_get(x, "delayMs")));
    const json_t *headers = json_object_get(x, "headers");
    const json_t *raw = json_object_get(x, "raw");
    json_int_t over = json_integer_value(json_object_get(x, "oversizeBytes"));
    if (json_is_string(raw)) {
        respond(fd, status, headers, json_string_value(raw), json_string_length(raw));
        return;
    }
    json_t *body = json_deep_copy(json_object_get(x, "body"));
    if (over > 0 && json_is_object(body)) {
        char *pad = malloc((size_t)over + 1);
        memset(pad, 'x', (size_t)over);
        pad[over] = '\0';
        json_object_set_new(body, "padding", json_string(pad));
        free(pad);
    }
    char *text = body ? json_dumps(body, JSON_INDENT(2)) : strdup("{}");
    respond(fd, status, headers, text, strlen(text));
    free(text);
    json_decref(body);
}

static void serve_one(int fd, const json_t *script, FILE *rec, long *count)
{
    request rq = {0};
    if (!parse_request(fd, &rq)) {
        respond(fd, 400, NULL, "{\"error\":\"bad request\"}", 23);
    } else {
        long n = ++*count;
        record(rec, n, &rq);
        const json_t *x = exchange_for(script, n);
        if (!authorized(&rq))
            respond_json(fd, 401, api_error(&rq, anthropic_path(&rq) ? "authentication_error"
                                                                      : "invalid_api_key",
                                            "invalid x-api-key / Authorization"));
        else if (!x)
            respond_json(fd, 500, api_error(&rq, "api_error", "the test script is exhausted"));
        else
            answer(fd, &rq, x);
    }
    json_decref(rq.headers);
    free(rq.body);
}

int main(int argc, char **argv)
{
    const char *script_path = NULL, *record_path = NULL, *port_file = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--script") == 0)
            script_path = argv[i + 1];
        else if (strcmp(argv[i], "--record") == 0)
            record_path = argv[i + 1];
        else if (strcmp(argv[i], "--port-file") == 0)
            port_file = argv[i + 1];
        else if (strcmp(argv[i], "--key") == 0)
            key = argv[i + 1];
    }
    if (!script_path || !record_path || !port_file) {
        fprintf(stderr, "usage: model_server --script F --record F --port-file F [--key K]\n");
        return 2;
    }
    json_error_t e;
    json_t *script = json_load_file(script_path, JSON_REJECT_DUPLICATES, &e);
    FILE *rec = fopen(record_path, "a");
    if (!script || !rec) {
        fprintf(stderr, "model_server: cannot read %s (%s) or open %s\n", script_path, e.text,
                record_path);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (bind(s, (struct sockaddr *)&a, sizeof a) || listen(s, 16) ||
        getsockname(s, (struct sockaddr *)&a, &alen)) {
        perror("model_server: listen");
        return 1;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
    FILE *pf = fopen(tmp, "w");
    if (!pf || fprintf(pf, "%d\n", ntohs(a.sin_port)) < 0 || fclose(pf) || rename(tmp, port_file)) {
        perror("model_server: port file");
        return 1;
    }
    long count = 0;
    for (;;) {
        int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        serve_one(c, script, rec, &count);
        shutdown(c, SHUT_WR);
        close(c);
    }
}
