/*
 * server.c - the HTTP server of `spore ui` over libmicrohttpd: the daemon
 * and its bounds (connections, per-connection memory, idle timeout), one
 * request's life (route, Host and token checks, query bounds, the POST
 * body through form.c), the reply with
 * its security headers, and the one lock that serializes the spore_db.
 *
 * Threads: one per connection (MHD_USE_THREAD_PER_CONNECTION, at most
 * UI_CONNECTIONS_MAX), so a live stream may wait; every use of the
 * spore_db (and of Graphviz) holds ctx->db_mu.
 *
 * Must never answer an action before its body is whole and checked, send a
 * page without its Content-Security-Policy, or keep a request's memory
 * after MHD says it completed.
 */
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/random.h"
#include "ui/form.h"
#include "ui/internal.h"
#include "ui/sse.h"

struct ui_server {
    ui_ctx ctx;
    struct MHD_Daemon *daemon;
};

/* One connection's request, from MHD's first call to its completion. */
typedef struct conn_state {
    ui_request req;
    ui_body body; /* an action's form (form.c) */
} conn_state;

/* ---- the spore_db ---- */

spore_db *ui_db_lock(ui_ctx *ctx)
{
    pthread_mutex_lock(&ctx->db_mu);
    return ctx->cfg.db;
}

void ui_db_unlock(ui_ctx *ctx) { pthread_mutex_unlock(&ctx->db_mu); }

/* ---- request values ---- */

const char *ui_query(const ui_request *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *ui_header(const ui_request *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *ui_cookie(const ui_request *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_COOKIE_KIND, name);
}

const char *ui_field_value(const ui_request *r, const char *name)
{
    for (int i = 0; i < r->form.n; i++)
        if (strcmp(r->form.fields[i].name, name) == 0)
            return r->form.fields[i].value.data ? r->form.fields[i].value.data : "";
    return NULL;
}

/* ---- sending ---- */

static void security_headers(struct MHD_Response *resp)
{
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'none'; script-src 'self'; style-src 'self'; "
                            "img-src 'self' data:; connect-src 'self'; form-action 'self'; "
                            "base-uri 'none'; frame-ancestors 'none'");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "same-origin"); /* no-referrer would make a form's Origin "null" */
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, ui_reply *out)
{
    struct MHD_Response *resp;
    if (out->static_body)
        resp = MHD_create_response_from_buffer(out->static_len, (void *)out->static_body,
                                               MHD_RESPMEM_PERSISTENT);
    else if (!sp_buf_ok(&out->body))
        resp = NULL;
    else
        resp = MHD_create_response_from_buffer(out->body.len, out->body.data ? out->body.data : "",
                                               MHD_RESPMEM_MUST_COPY);
    sp_buf_free(&out->body);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type",
                            out->content_type ? out->content_type : "text/html; charset=utf-8");
    MHD_add_response_header(resp, "Cache-Control",
                            out->static_body ? "max-age=300" : "no-store");
    security_headers(resp);
    for (int i = 0; i < 2; i++)
        if (out->cookies[i][0])
            MHD_add_response_header(resp, "Set-Cookie", out->cookies[i]);
    if (out->location[0])
        MHD_add_response_header(resp, "Location", out->location);
    enum MHD_Result rc = MHD_queue_response(conn, out->status ? out->status : 200, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result send_error(conn_state *st, unsigned status, const sp_error *err)
{
    ui_reply out = {0};
    ui_error_reply(&st->req, status, err, &out);
    ui_auth_cookies(&st->req, false, &out);
    return send_reply(st->req.conn, &out);
}

/* ---- checks of the first call ---- */

typedef struct query_tally {
    int n;
    bool too_large;
} query_tally;

static enum MHD_Result tally_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    query_tally *t = cls;
    t->n++;
    if (strlen(key) + (value ? strlen(value) : 0) > UI_QUERY_VALUE_MAX)
        t->too_large = true;
    return MHD_YES;
}

static unsigned check_query(struct MHD_Connection *conn, sp_error *err)
{
    query_tally t = {0};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, tally_arg, &t);
    if (t.n > UI_QUERY_ARGS_MAX)
        return sp_fail(err, "ui.query-too-large", "at most %d query parameters",
                       UI_QUERY_ARGS_MAX), 414;
    if (t.too_large)
        return sp_fail(err, "ui.query-too-large", "a query parameter is longer than %d bytes",
                       UI_QUERY_VALUE_MAX), 414;
    return 0;
}

/* A GET that carried ?token=: set the cookie and go to the same page
 * without the token in its address (nor in the history or a Referer). */
static enum MHD_Result token_redirect(conn_state *st, const char *url)
{
    ui_reply out = {.status = 303};
    snprintf(out.location, sizeof out.location, "%s", url);
    ui_auth_cookies(&st->req, true, &out);
    sp_buf_append_str(&out.body, "the token is set; going on without it in the address\n");
    out.content_type = "text/plain; charset=utf-8";
    return send_reply(st->req.conn, &out);
}

/* ---- dispatch ---- */

static enum MHD_Result serve_get(conn_state *st)
{
    ui_request *r = &st->req;
    ui_reply out = {0};
    if (r->route == UI_ROUTE_STREAM) {
        unsigned status = 0;
        sp_error err = {0};
        struct MHD_Response *resp = ui_sse_open(r, &status, &err);
        if (!resp)
            return send_error(st, status, &err);
        security_headers(resp);
        enum MHD_Result rc = MHD_queue_response(r->conn, 200, resp);
        MHD_destroy_response(resp);
        return rc;
    }
    if (r->route == UI_ROUTE_ASSET) {
        sp_error err = {0};
        if (!ui_asset(r->asset, &out))
            return sp_fail(&err, "ui.not-found", "no asset %s", r->asset), send_error(st, 404, &err);
        return send_reply(r->conn, &out);
    }
    if (r->route == UI_ROUTE_RUNS)
        ui_page_runs(r, &out);
    else
        ui_page_run(r, &out);
    ui_auth_cookies(r, false, &out);
    return send_reply(r->conn, &out);
}

static enum MHD_Result serve_action(conn_state *st)
{
    sp_error err = {0};
    unsigned status = ui_body_bounds(&st->body, &st->req.form, &err);
    if (!status)
        status = ui_auth_action(&st->req, &err);
    if (status)
        return send_error(st, status, &err);
    ui_reply out = {0};
    ui_do_action(&st->req, &out);
    return send_reply(st->req.conn, &out);
}

/* The first call: everything that needs no body. 0 to go on. */
static unsigned first_checks(conn_state *st, const char *method, const char *url, bool *redirect,
                             sp_error *err)
{
    ui_request *r = &st->req;
    r->wants_json = ui_header(r, "Accept") && strstr(ui_header(r, "Accept"), "application/json");
    unsigned status = ui_route_request(r, method, url, err);
    if (!status)
        status = ui_auth_host(r, err);
    if (!status)
        status = check_query(r->conn, err);
    if (!status)
        status = ui_auth_token(r, redirect, err);
    ui_auth_session(r);
    if (!status && r->route == UI_ROUTE_ACTION)
        status = ui_body_start(&st->body, &st->req, err);
    return status;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    conn_state *st = *con_cls;
    if (!st) {
        if (!(st = calloc(1, sizeof *st)))
            return MHD_NO;
        *con_cls = st;
        st->req.ctx = cls;
        st->req.conn = conn;
        sp_error err = {0};
        bool redirect = false;
        unsigned status = first_checks(st, method, url, &redirect, &err);
        if (status)
            return send_error(st, status, &err);
        if (redirect && st->req.route != UI_ROUTE_ACTION)
            return token_redirect(st, url);
        if (st->req.route != UI_ROUTE_ACTION)
            return serve_get(st);
        return MHD_YES; /* the body comes next */
    }
    if (*upload_data_size) {
        ui_body_take(&st->body, upload_data, upload_data_size);
        return MHD_YES;
    }
    return serve_action(st);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    conn_state *st = *con_cls;
    if (!st)
        return;
    ui_body_end(&st->body, &st->req.form);
    free(st);
    *con_cls = NULL;
}

/* ---- start and stop ---- */

static int check_token(const char *token, sp_error *err)
{
    size_t n = strlen(token);
    bool ok = n >= UI_TOKEN_MIN && n <= UI_TOKEN_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = (token[i] >= 'A' && token[i] <= 'Z') || (token[i] >= 'a' && token[i] <= 'z') ||
             (token[i] >= '0' && token[i] <= '9') || strchr("-._~+/=", token[i]);
    if (!ok)
        return sp_fail(err, "ui.token-invalid",
                       "a token is %d to %d characters of [A-Za-z0-9-._~+/=]", UI_TOKEN_MIN,
                       UI_TOKEN_MAX);
    return 0;
}

static int copy_config(ui_ctx *ctx, const ui_config *cfg, sp_error *err)
{
    ctx->cfg = *cfg;
    ctx->cfg.token = cfg->token ? strdup(cfg->token) : NULL;
    ctx->cfg.db_label = strdup(cfg->db_label ? cfg->db_label : "");
    if ((cfg->token && !ctx->cfg.token) || !ctx->cfg.db_label)
        return sp_oom(err);
    return 0;
}

static void free_server(ui_server *s)
{
    free((char *)s->ctx.cfg.token);
    free((char *)s->ctx.cfg.db_label);
    pthread_mutex_destroy(&s->ctx.db_mu);
    free(s);
}

/* The listening socket, bound before the daemon starts: the port (and so
 * the origin every request is checked against) is known before any
 * request thread runs. -1 with err. */
static int bind_socket(ui_listen *l, sp_error *err)
{
    char port[8];
    snprintf(port, sizeof port, "%u", (unsigned)l->port);
    struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(l->host, port, &hints, &ai) != 0 || !ai)
        return sp_fail(err, "ui.listen-failed", "cannot use the address %s", l->host);
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    bool ok = fd >= 0 && bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 64) == 0;
    freeaddrinfo(ai);
    struct sockaddr_storage bound;
    socklen_t len = sizeof bound;
    ok = ok && getsockname(fd, (struct sockaddr *)&bound, &len) == 0;
    if (!ok) {
        if (fd >= 0)
            close(fd);
        return sp_fail(err, "ui.listen-failed", "cannot listen on %s port %u (in use, or not an "
                                                "address of this host)", l->host, (unsigned)l->port);
    }
    l->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                 : ((struct sockaddr_in *)&bound)->sin_port);
    return fd;
}

static struct MHD_Daemon *start_daemon(ui_server *s, int fd, sp_error *err)
{
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_ERROR_LOG | (s->ctx.cfg.listen.ipv6 ? MHD_USE_IPv6 : 0);
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, &s->ctx, MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)UI_CONNECTIONS_MAX,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)UI_CONNECTION_MEMORY,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)UI_CONNECTION_TIMEOUT_S,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
    if (!d) {
        close(fd);
        sp_fail(err, "ui.listen-failed", "the HTTP server did not start on %s", s->ctx.origin);
    }
    return d; /* it closes the socket when it stops */
}

static void set_origin(ui_ctx *ctx)
{
    const ui_listen *l = &ctx->cfg.listen;
    snprintf(ctx->origin, sizeof ctx->origin, l->ipv6 ? "http://[%s]:%u" : "http://%s:%u",
             l->host, (unsigned)l->port);
    snprintf(ctx->url, sizeof ctx->url, "%s/", ctx->origin);
}

ui_server *ui_start(const ui_config *cfg, sp_error *err)
{
    if (!cfg->listen.loopback && !cfg->token) {
        sp_fail(err, "ui.token-required",
                "%s is not a loopback address: give --token (or SPORE_UI_TOKEN) to serve it",
                cfg->listen.host);
        return NULL;
    }
    if (cfg->token && check_token(cfg->token, err))
        return NULL;
    ui_server *s = calloc(1, sizeof *s);
    if (!s || (pthread_mutex_init(&s->ctx.db_mu, NULL) != 0 && (free(s), s = NULL, true))) {
        sp_oom(err);
        return NULL;
    }
    char hex[UI_SECRET_LEN + 1]; /* 256 random bits as 64 hex digits: the key */
    sp_random_hex(hex, UI_SECRET_LEN / 2);
    memcpy(s->ctx.secret, hex, UI_SECRET_LEN);
    int fd = -1;
    if (copy_config(&s->ctx, cfg, err) || (fd = bind_socket(&s->ctx.cfg.listen, err)) < 0) {
        free_server(s);
        return NULL;
    }
    set_origin(&s->ctx);
    if (!(s->daemon = start_daemon(s, fd, err))) {
        free_server(s);
        return NULL;
    }
    return s;
}

const char *ui_url(const ui_server *s) { return s->ctx.url; }

void ui_stop(ui_server *s)
{
    if (!s)
        return;
    atomic_store(&s->ctx.stopping, true);
    MHD_stop_daemon(s->daemon);
    ui_picture_end();
    free_server(s);
}
