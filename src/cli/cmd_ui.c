/*
 * cmd_ui.c - `spore ui [--listen 127.0.0.1:8233] [--token T]` (authoring.md
 * §4, docs/ui.md): serve the local web view (src/ui/) over an existing
 * store until SIGINT/SIGTERM, then stop it (exit 130, like `spore worker`).
 *
 * Must never listen beyond loopback without a token (ui.token-required,
 * before the store is opened), print the token or a postgres:// password,
 * or create a store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/session.h"
#include "ui/ui.h"

static const char HELP[] =
    "usage: spore ui [--listen <address>:<port>] [--token <token>] [--db <path>] [--json]\n"
    "\n"
    "Serves the web view of a database: the runs (newest first, filters by status\n"
    "and workflow, search over run IDs and start keys, pages), each run's page\n"
    "(its graph coloured live, events, attempts with output and logs, input and\n"
    "result) and the actions signal, resolve, cancel and release, answered with\n"
    "the codes of the commands of the same names. Runs until Ctrl-C (exit 130).\n"
    "\n"
    "Options:\n"
    "  --listen <addr:port>  where to listen (default " UI_DEFAULT_LISTEN "; port 0: any free\n"
    "                        port; IPv6 as [::1]:8233). A non-loopback address needs a token.\n"
    "  --token <token>       require it on every request (16-256 characters of\n"
    "                        [A-Za-z0-9-._~+/=]; default $SPORE_UI_TOKEN): open the page once\n"
    "                        with ?token=<token> (an HttpOnly cookie keeps it) or send\n"
    "                        Authorization: Bearer <token>\n"
    "  --json                print {url, listen, db, token} as one JSON line when serving\n"
    "\n"
    "Every action is a POST with the page's CSRF token from this server's own origin.\n"
    "Exit 2 for a bad option or ui.token-required, 10 when the address cannot be\n"
    "used (ui.listen-failed) or for a store error.\n";

static int ui_error(cli *c, sp_error *err)
{
    return cli_error(c, cli_exit_for(err->code), err);
}

static const char *token_of(const char *given)
{
    const char *t = given ? given : getenv("SPORE_UI_TOKEN");
    return t && *t ? t : NULL;
}

/* The store must exist (the view never creates one): checked the way
 * every command that answers runs opens it; its location for people. */
static int store_location(cli *c, char *db, size_t n, char *label, size_t label_n)
{
    session s;
    int rc = session_open(&s, c);
    if (rc)
        return rc;
    snprintf(db, n, "%s", s.db);
    snprintf(label, label_n, "%s", sp_store_location(s.store));
    session_close(&s);
    return 0;
}

static void announce(const cli *c, const ui_server *srv, const char *label, bool token)
{
    if (c->json) {
        char listen[160]; /* the address really bound: "127.0.0.1:8233" */
        snprintf(listen, sizeof listen, "%s", ui_url(srv) + strlen("http://"));
        listen[strcspn(listen, "/")] = '\0';
        cli_print_json(json_pack("{s:s,s:s,s:s,s:b}", "url", ui_url(srv), "listen", listen, "db",
                                 label, "token", token));
        return;
    }
    printf("spore ui: serving %s at %s\n", label, ui_url(srv));
    if (token)
        printf("open %s?token=<the token> once (a cookie keeps it), or send "
               "Authorization: Bearer <the token>\n", ui_url(srv));
    printf("stop it with Ctrl-C\n");
    fflush(stdout);
}

static void wait_for_signal(void)
{
    while (!cli_interrupted) {
        struct timespec t = {0, 100 * 1000000L};
        nanosleep(&t, NULL);
    }
}

static int serve(cli *c, ui_config *cfg, const char *db)
{
    sp_error err = {0};
    spore_error e = {0};
    spore_open_options opts = {.existing_only = true, .allow_shared = c->allow_shared_store};
    cfg->db = spore_open_with(db, &opts, &e);
    if (!cfg->db) {
        sp_fail(&err, e.code, "%s", e.message);
        spore_error_clear(&e);
        return ui_error(c, &err);
    }
    cli_catch_signals();
    ui_server *srv = ui_start(cfg, &err);
    int rc = EXIT_INTERRUPTED;
    if (!srv)
        rc = ui_error(c, &err);
    else {
        announce(c, srv, cfg->db_label, cfg->token != NULL);
        wait_for_signal();
        ui_stop(srv);
        if (c->json)
            cli_print_json(json_pack("{s:b}", "interrupted", 1));
    }
    spore_close(cfg->db);
    return rc;
}

int cmd_ui(int argc, char **argv)
{
    cli c = {.command = "ui", .store_use = CLI_STORE_ANSWERS};
    const char *listen = NULL, *token = NULL;
    const cli_option opts[] = {{"--listen", true, &listen, NULL},
                               {"--token", true, &token, NULL},
                               {NULL, false, NULL, NULL}};
    int rc = cli_begin(&c, argc, argv, opts, HELP, 0, "no arguments");
    if (rc)
        return rc == CLI_HELP_SHOWN ? EXIT_OK : rc;
    sp_error err = {0};
    ui_config cfg = {.token = token_of(token), .exit_for = cli_exit_for};
    listen = listen ? listen : UI_DEFAULT_LISTEN;
    if (ui_parse_listen(listen, &cfg.listen, &err))
        return cli_error(&c, EXIT_USAGE, &err);
    if (!cfg.listen.loopback && !cfg.token) {
        sp_fail(&err, "ui.token-required",
                "%s is not a loopback address: give --token (or SPORE_UI_TOKEN) to serve it",
                cfg.listen.host);
        return cli_error(&c, EXIT_USAGE, &err);
    }
    char db[4096], label[4096];
    if ((rc = store_location(&c, db, sizeof db, label, sizeof label)))
        return rc;
    cfg.db_label = label;
    return serve(&c, &cfg, db);
}
