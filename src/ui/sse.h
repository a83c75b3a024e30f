/*
 * sse.h - the live run page's server-sent events (sse.c): one stream per
 * open run page that says when the run moved (its revision, status or
 * quarantine changed), so the page fetches itself again.
 *
 * What it must never do: keep more than UI_SSE_MAX streams or one longer
 * than UI_SSE_LIFETIME_S, hold the db lock while it waits, or send anything
 * but the run's revision and status.
 */
#ifndef SPORE_UI_SSE_H
#define SPORE_UI_SSE_H

#include <microhttpd.h>

#include "ui/internal.h"

/* The stream's response for r->run_id, or NULL with *status and err
 * (ui.too-many-streams 503, run.not-found 404, ...). */
struct MHD_Response *ui_sse_open(ui_request *r, unsigned *status, sp_error *err);

#endif
