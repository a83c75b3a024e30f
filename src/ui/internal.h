/*
 * internal.h - what the files of the web view share: the server's context,
 * one request as the router hands it to a page or an action, and the reply
 * a page or action builds for server.c to send.
 *
 * What it must never do: hold a libmicrohttpd type outside server.c and
 * sse.c (pages and actions see requests and replies only), or let a page
 * touch the spore_db without ui_db_lock().
 */
#ifndef SPORE_UI_INTERNAL_H
#define SPORE_UI_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "ui/limits.h"
#include "ui/ui.h"

#define UI_SECRET_LEN 64 /* bytes of the key: 256 random bits in hex */
#define UI_SESSION_HEX 32 /* 128 bits, hex */
#define UI_CSRF_HEX 64
#define UI_RUN_ID_MAX 128

typedef struct ui_ctx {
    ui_config cfg;          /* token and db_label owned copies */
    char origin[128];       /* "http://127.0.0.1:8233": this server's origin */
    char url[160];          /* origin + "/" */
    unsigned char secret[UI_SECRET_LEN]; /* keys the CSRF tokens; never shown */
    pthread_mutex_t db_mu;  /* the spore_db and Graphviz: one request at a time */
    atomic_int sse_open;
    atomic_bool stopping;
} ui_ctx;

/* The routes (router.c). */
typedef enum ui_route {
    UI_ROUTE_NONE = 0,
    UI_ROUTE_RUNS,     /* GET / and /runs */
    UI_ROUTE_RUN,      /* GET /runs/<id> */
    UI_ROUTE_STREAM,   /* GET /runs/<id>/stream (server-sent events) */
    UI_ROUTE_ASSET,    /* GET /assets/<name> */
    UI_ROUTE_ACTION,   /* POST /runs/<id>/<action> */
} ui_route;

typedef enum ui_action {
    UI_ACTION_SIGNAL = 0,
    UI_ACTION_RESOLVE,
    UI_ACTION_CANCEL,
    UI_ACTION_RELEASE,
} ui_action;

/* One field of a POSTed form, bounded by UI_FIELD_MAX. */
typedef struct ui_field {
    char name[32];
    sp_buf value;
} ui_field;

typedef struct ui_form {
    ui_field fields[UI_FIELDS_MAX];
    int n;
    bool too_many, too_large, bad_name;
} ui_form;

/* A request as pages and actions see it. Query and header values come
 * through the getters below (server.c). */
typedef struct ui_request {
    ui_ctx *ctx;
    void *conn;           /* struct MHD_Connection *, for server.c's getters */
    ui_route route;
    ui_action action;
    char run_id[UI_RUN_ID_MAX + 1];
    const char *asset;    /* UI_ROUTE_ASSET: the name after /assets/ */
    char session[UI_SESSION_HEX + 1]; /* the session cookie's value ("" none) */
    bool new_session;     /* session made for this request: set the cookie */
    bool wants_json;      /* Accept: application/json */
    ui_form form;         /* POST fields */
} ui_request;

/* What a page or an action answers. */
typedef struct ui_reply {
    unsigned status;          /* HTTP status */
    const char *content_type; /* static */
    sp_buf body;
    char location[UI_URL_MAX + 64]; /* a redirect's target, "" none */
    char cookies[2][UI_TOKEN_MAX + 96]; /* Set-Cookie values, "" none */
    const unsigned char *static_body; /* compiled-in asset (not copied) */
    size_t static_len;
} ui_reply;

/* ---- server.c: request values ---- */
const char *ui_query(const ui_request *r, const char *name);  /* NULL when absent */
const char *ui_header(const ui_request *r, const char *name); /* NULL when absent */
const char *ui_cookie(const ui_request *r, const char *name); /* NULL when absent */
const char *ui_field_value(const ui_request *r, const char *name); /* POST field or NULL */

/* ---- the spore_db, one user at a time ---- */
spore_db *ui_db_lock(ui_ctx *ctx);
void ui_db_unlock(ui_ctx *ctx);

/* ---- router.c ---- */
/* Fill r->route, r->action, r->run_id, r->asset from the method and path;
 * `code` gets ui.not-found, ui.method-not-allowed or usage.invalid-value
 * and the HTTP status when the request has no route. */
unsigned ui_route_request(ui_request *r, const char *method, const char *path, sp_error *err);

/* ---- auth.c ---- */
/* The token check of every request (when a token is set): 0, or an HTTP
 * status with err (ui.unauthorized); *set_cookie when ?token= was used and
 * the reply should set the token cookie and redirect without it. */
unsigned ui_auth_token(ui_request *r, bool *from_query, sp_error *err);
/* The Host header names this server (loopback), or a token guards it:
 * 0, or 421 with err (ui.host-refused). */
unsigned ui_auth_host(const ui_request *r, sp_error *err);
/* The session cookie (made when missing). */
void ui_auth_session(ui_request *r);
/* This session's CSRF token (hex, UI_CSRF_HEX + 1 bytes). */
void ui_auth_csrf(const ui_request *r, char out[UI_CSRF_HEX + 1]);
/* The checks of every action: Origin (or Sec-Fetch-Site) and the CSRF
 * token; 0, or 403 with err (ui.origin-refused, ui.csrf-missing,
 * ui.csrf-invalid). */
unsigned ui_auth_action(const ui_request *r, sp_error *err);
/* The cookies the reply sets: the session's when new, the token's when
 * given. */
void ui_auth_cookies(const ui_request *r, bool token_cookie, ui_reply *out);

/* ---- pages, actions, assets, errors ---- */
void ui_page_runs(ui_request *r, ui_reply *out);
void ui_page_run(ui_request *r, ui_reply *out);
void ui_do_action(ui_request *r, ui_reply *out);
/* forms.c: the run page's action forms, each with the session's CSRF
 * token; `status` and `picture` are the API's answers for the run. */
void ui_action_forms(const ui_request *r, sp_buf *html, const json_t *status,
                     const json_t *picture);
bool ui_asset(const char *name, ui_reply *out);
/* A coded error answer (HTML, or JSON when the client asked for it). */
void ui_error_reply(const ui_request *r, unsigned status, const sp_error *err, ui_reply *out);

/* ---- picture.c: the run's graph as inline SVG (Graphviz, serialized) ---- */
/* Append the run's picture (an <svg> element) to `html`, or a coded note
 * when it cannot be drawn; `picture` is spore_run_picture()'s answer.
 * Takes the db lock itself (the run's events, Graphviz). */
void ui_picture(ui_ctx *ctx, const char *run_id, const json_t *picture, sp_buf *html);
/* Free Graphviz's context at the process's end. */
void ui_picture_end(void);

#endif
