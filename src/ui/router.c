/*
 * router.c - which page, stream, asset or action a method and path name:
 *   GET  /, /runs                 the runs list
 *   GET  /runs/<runId>            a run's page
 *   GET  /runs/<runId>/stream     the run's server-sent events
 *   GET  /assets/<name>           compiled-in CSS and JavaScript
 *   POST /runs/<runId>/signal|resolve|cancel|release   the actions
 *
 * Must never accept a run ID outside [A-Za-z0-9_.:-]{1,128} (the API's
 * run IDs), a path longer than UI_URL_MAX, or a method a route does not
 * take (405, nothing done).
 */
#include <string.h>

#include "ui/internal.h"

static const char *const ACTIONS[] = {"signal", "resolve", "cancel", "release"};

static bool id_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == ':' || c == '-';
}

/* Copy the segment at `p` (up to '/' or the end) as a run ID; the rest. */
static const char *run_id_segment(ui_request *r, const char *p, sp_error *err)
{
    size_t n = 0;
    while (p[n] && p[n] != '/')
        n++;
    bool ok = n >= 1 && n <= UI_RUN_ID_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = id_char(p[i]);
    if (!ok) {
        sp_fail(err, "usage.invalid-value", "not a run ID ([A-Za-z0-9_.:-]{1,128})");
        return NULL;
    }
    memcpy(r->run_id, p, n);
    r->run_id[n] = '\0';
    return p + n;
}

static bool action_named(const char *name, ui_action *out)
{
    for (size_t i = 0; i < sizeof ACTIONS / sizeof ACTIONS[0]; i++)
        if (strcmp(name, ACTIONS[i]) == 0)
            return *out = (ui_action)i, true;
    return false;
}

/* The route of a path, whatever the method. */
static unsigned route_path(ui_request *r, const char *path, sp_error *err)
{
    if (strcmp(path, "/") == 0 || strcmp(path, "/runs") == 0 || strcmp(path, "/runs/") == 0)
        return r->route = UI_ROUTE_RUNS, 0;
    if (strncmp(path, "/assets/", 8) == 0)
        return r->asset = path + 8, r->route = UI_ROUTE_ASSET, 0;
    if (strncmp(path, "/runs/", 6) != 0)
        return sp_fail(err, "ui.not-found", "no page %s", path), 404;
    const char *rest = run_id_segment(r, path + 6, err);
    if (!rest)
        return 400;
    if (!*rest)
        return r->route = UI_ROUTE_RUN, 0;
    if (strcmp(rest, "/stream") == 0)
        return r->route = UI_ROUTE_STREAM, 0;
    if (*rest == '/' && action_named(rest + 1, &r->action))
        return r->route = UI_ROUTE_ACTION, 0;
    return sp_fail(err, "ui.not-found", "no page %s", path), 404;
}

unsigned ui_route_request(ui_request *r, const char *method, const char *path, sp_error *err)
{
    if (strlen(path) > UI_URL_MAX)
        return sp_fail(err, "ui.url-too-long", "the path is longer than %d bytes", UI_URL_MAX),
               414;
    unsigned status = route_path(r, path, err);
    if (status)
        return r->route = UI_ROUTE_NONE, status;
    bool post = strcmp(method, "POST") == 0;
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    if ((r->route == UI_ROUTE_ACTION) ? post : get)
        return 0;
    sp_fail(err, "ui.method-not-allowed", "%s is not allowed on %s (actions are POSTs, pages GETs)",
            method, path);
    r->route = UI_ROUTE_NONE;
    return 405;
}
