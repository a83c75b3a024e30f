/*
 * test_agent_gateway.c - the model gateway (agent-providers.md §3) one rule
 * at a time, over its real Unix socket, forwarding to the real local model
 * server: only POST of the provider's path is forwarded (other methods,
 * paths, absolute targets refused), a request carrying a credential is
 * refused, chunked and oversize bodies are refused, the count is capped, a
 * forwarded request carries the key the gateway adds and only the headers
 * it allows, an upstream slower than the attempt's time is a 504, and the
 * log holds metadata only (never a body, a header value or the key).
 *
 * usage: test_agent_gateway <model_server>
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/gateway.h"
#include "check.h"

#define KEY "sk-gateway-canary-0f1e2d3c4b5a69788796a5b4c3d2e1f0"

static char dir[256], logbuf[16384];

static void on_log(void *ctx, const char *line)
{
    (void)ctx;
    strncat(logbuf, line, sizeof logbuf - strlen(logbuf) - 2);
    strcat(logbuf, "\n");
}

static pid_t start_server(const char *bin, const char *script_text, int *port)
{
    char script[300], rec[300], portfile[300];
    snprintf(script, sizeof script, "%s/script.json", dir);
    snprintf(rec, sizeof rec, "%s/record.jsonl", dir);
    snprintf(portfile, sizeof portfile, "%s/port", dir);
    FILE *f = fopen(script, "w");
    fputs(script_text, f);
    fclose(f);
    unlink(portfile);
    pid_t pid = fork();
    if (pid == 0) {
        execl(bin, bin, "--script", script, "--record", rec, "--port-file", portfile, "--key", KEY,
              (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 100; i++) {
        f = fopen(portfile, "r");
        if (f && fscanf(f, "%d", port) == 1) {
            fclose(f);
            return pid;
        }
        if (f)
            fclose(f);
        usleep(50000);
    }
    return pid;
}

/* One raw request over the socket; the status of the answer (0: none),
 * the whole answer in `reply`. */
static int ask(const char *sock, const char *request, size_t len, char *reply, size_t cap)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    if (write(fd, request, len) != (ssize_t)len) {
        close(fd);
        return 0;
    }
    shutdown(fd, SHUT_WR);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fd, reply + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    reply[n] = '\0';
    close(fd);
    int status = 0;
    sscanf(reply, "HTTP/1.1 %d", &status);
    return status;
}

static int post(const char *sock, const char *path, const char *extra_headers, const char *body,
                char *reply, size_t cap)
{
    char req[8192];
    int n = snprintf(req, sizeof req,
                     "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s"
                     "Content-Length: %zu\r\n\r\n%s",
                     path, extra_headers, strlen(body), body);
    return ask(sock, req, (size_t)n, reply, cap);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    static char buf[65536];
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    return buf;
}

static const char OK_SCRIPT[] =
    "{\"exchanges\": [{\"times\": 10, \"body\": {\"id\": \"chatcmpl-1\", \"object\": "
    "\"chat.completion\", \"choices\": [{\"index\": 0, \"message\": {\"role\": \"assistant\", "
    "\"content\": \"fine\"}, \"finish_reason\": \"stop\"}]}}]}";

static void refusals_and_forwarding(const char *bin)
{
    int port = 0;
    pid_t server = start_server(bin, OK_SCRIPT, &port);
    CHECK(port > 0);
    char base[64], sock[300], reply[65536];
    snprintf(base, sizeof base, "http://127.0.0.1:%d/v1", port);
    snprintf(sock, sizeof sock, "%s/gw.sock", dir);
    sp_gateway_cfg cfg = {sock, base, SP_GATEWAY_OPENAI, KEY, 2, 20000, on_log, NULL};
    sp_error err = {0};
    sp_gateway *g = sp_gateway_start(&cfg, &err);
    CHECK(g != NULL);
    const char *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"BODY-MARKER\"}]}";

    const char get[] = "GET /chat/completions HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK_INT(ask(sock, get, strlen(get), reply, sizeof reply), 405);
    CHECK(strstr(reply, "gateway.method-refused") != NULL);
    CHECK_INT(post(sock, "/v1/models", "", body, reply, sizeof reply), 404);
    CHECK_INT(post(sock, "http://evil.example/chat/completions", "", body, reply, sizeof reply), 404);
    CHECK_INT(post(sock, "/chat/completions?x=1", "", body, reply, sizeof reply), 404);
    CHECK_INT(post(sock, "/chat/completions", "Authorization: Bearer sk-other\r\n", body, reply,
                   sizeof reply), 403);
    CHECK(strstr(reply, "gateway.credential-refused") != NULL);
    CHECK_INT(post(sock, "/chat/completions", "x-api-key: sk-other\r\n", body, reply, sizeof reply),
              403);
    const char chunked[] = "POST /chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: "
                           "chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    CHECK_INT(ask(sock, chunked, strlen(chunked), reply, sizeof reply), 411);
    const char huge[] = "POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 9000000\r\n\r\n";
    CHECK_INT(ask(sock, huge, strlen(huge), reply, sizeof reply), 413);

    /* forwarded: twice, then the count is used up */
    CHECK_INT(post(sock, "/chat/completions", "X-Leak: header-value-marker\r\n", body, reply,
                   sizeof reply), 200);
    CHECK(strstr(reply, "\"fine\"") != NULL);
    CHECK_INT(post(sock, "/chat/completions", "", body, reply, sizeof reply), 200);
    CHECK_INT(post(sock, "/chat/completions", "", body, reply, sizeof reply), 400);
    CHECK(strstr(reply, "gateway.request-limit") != NULL);
    CHECK_INT(sp_gateway_stop(g), 2);
    CHECK(access(sock, F_OK) != 0); /* the socket is gone */

    char rec[300];
    snprintf(rec, sizeof rec, "%s/record.jsonl", dir);
    const char *r = slurp(rec);
    CHECK(strstr(r, "\"path\": \"/v1/chat/completions\"") || strstr(r, "\"path\":\"/v1/chat/completions\""));
    CHECK(strstr(r, "\"authorization\":\"<key>\"") != NULL); /* the gateway added the key */
    CHECK(strstr(r, "header-value-marker") == NULL);          /* other headers stay behind */
    CHECK(strstr(r, "sk-other") == NULL);
    CHECK(strstr(r, "BODY-MARKER") != NULL); /* the body itself was forwarded */
    /* the log: metadata only */
    CHECK(strstr(logbuf, "POST /chat/completions -> 200") != NULL);
    CHECK(strstr(logbuf, "-> 403 gateway.credential-refused") != NULL);
    CHECK(strstr(logbuf, "(other path)") != NULL);
    CHECK(strstr(logbuf, "BODY-MARKER") == NULL);
    CHECK(strstr(logbuf, "evil.example") == NULL);
    CHECK(strstr(logbuf, "sk-other") == NULL);
    CHECK(strstr(logbuf, KEY) == NULL);
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
}

static void slow_upstream(const char *bin)
{
    int port = 0;
    pid_t server = start_server(
        bin, "{\"exchanges\": [{\"delayMs\": 3000, \"body\": {\"content\": []}}]}", &port);
    char base[64], sock[300], reply[4096];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", port);
    snprintf(sock, sizeof sock, "%s/gw2.sock", dir);
    sp_gateway_cfg cfg = {sock, base, SP_GATEWAY_ANTHROPIC, KEY, 5, 500, on_log, NULL};
    sp_error err = {0};
    sp_gateway *g = sp_gateway_start(&cfg, &err);
    CHECK(g != NULL);
    CHECK_INT(post(sock, "/v1/messages", "anthropic-version: 2023-06-01\r\n", "{}", reply,
                   sizeof reply), 504);
    CHECK(strstr(reply, "gateway.deadline") != NULL);
    sp_gateway_stop(g);
    kill(server, SIGTERM);
    waitpid(server, NULL, 0);
    /* a socket path that does not fit sun_path is a clear error */
    char longpath[300];
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = '\0';
    cfg.socket_path = longpath;
    CHECK(sp_gateway_start(&cfg, &err) == NULL);
    CHECK_STR(err.code, "agent.gateway-unavailable");
    sp_error_clear(&err);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_agent_gateway <model_server>\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof dir, "%s/spore-gw-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    refusals_and_forwarding(argv[1]);
    slow_upstream(argv[1]);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return check_done("agent.gateway");
}
