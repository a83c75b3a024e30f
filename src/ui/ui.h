/*
 * ui.h - `spore ui`, the local web view (authoring.md §4, docs/ui.md): what
 * the command line starts and stops.
 *
 * What it is for: serving the runs list, a run's page (live graph, events,
 * attempts with their logs, input and result) and the actions (signal,
 * resolve, cancel, release) over libmicrohttpd, on top of the public C API
 * (include/spore/spore.h) and `spore graph`'s pictures (src/graph/).
 *
 * What it must never do: listen beyond loopback without a token, change a
 * run on anything but a POST that passed the token, CSRF and Origin checks,
 * read the store any other way than through the public API, or show a
 * secret (the token, the session key, a postgres:// password).
 */
#ifndef SPORE_UI_UI_H
#define SPORE_UI_UI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "spore/spore.h"

#define UI_DEFAULT_LISTEN "127.0.0.1:8233"
#define UI_HOST_MAX 64

typedef struct ui_listen {
    char host[UI_HOST_MAX]; /* a numeric IPv4 or IPv6 address */
    uint16_t port;          /* 0: any free port */
    bool ipv6;
    bool loopback;
} ui_listen;

typedef struct ui_config {
    ui_listen listen;
    const char *token;                  /* NULL: none (loopback only); copied */
    spore_db *db;                       /* borrowed; used by one thread at a time */
    const char *db_label;               /* shown on pages (never a password); copied */
    int (*exit_for)(const char *code);  /* the CLI's exit code for an error code */
} ui_config;

typedef struct ui_server ui_server;

/* "host:port" or "[v6]:port" into `out` (usage.invalid-value). */
int ui_parse_listen(const char *text, ui_listen *out, sp_error *err);

/* Start serving (threads of libmicrohttpd). ui.token-required for a
 * non-loopback address without a token, ui.token-invalid for a token
 * shorter than 16 or longer than 256 bytes, ui.listen-failed when the
 * address cannot be bound. */
ui_server *ui_start(const ui_config *cfg, sp_error *err);

/* The address served, e.g. "http://127.0.0.1:8233/". */
const char *ui_url(const ui_server *s);

/* Stop: live streams end, in-flight requests finish, threads are joined. */
void ui_stop(ui_server *s);

#endif
