/*
 * picture.c - the run's graph on its page: `spore graph --run`'s picture
 * (src/graph/, Graphviz's library in this process) as an inline <svg>,
 * every node coloured by its state, edges with the times the run took them
 * (its consumed events replayed, at most UI_REPLAY_EVENTS_MAX), a legend.
 *
 * Graphviz's context is one per process and not thread-safe: every
 * drawing holds the db lock, which serializes it with everything else.
 *
 * Must never draw after ui_picture_end(), or put anything of Graphviz's
 * output before its <svg> element (no XML prolog, no DOCTYPE) in a page.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "json/json.h"
#include "ui/answer.h"
#include "ui/html.h"
#include "ui/internal.h"

static sp_workflow *load_workflow(const json_t *package, sp_error *err)
{
    size_t len = 0;
    char *bytes = sp_json_encode_alloc(package, &len, err);
    if (!bytes)
        return NULL;
    sp_kernel_failure f;
    bool oom = false;
    sp_workflow *wf = sp_workflow_load(bytes, len, &f, &oom);
    free(bytes);
    if (!wf && oom)
        sp_oom(err);
    else if (!wf)
        sp_fail(err, f.code, "the run's package does not load: %s", f.details);
    return wf;
}

/* One event of spore_events()'s answer into the replay. */
static int feed(gr_history *h, const json_t *e, sp_error *err)
{
    size_t len = 0;
    char *payload = sp_json_encode_alloc(json_object_get(e, "payload"), &len, err);
    if (!payload)
        return -1;
    sp_kernel_event ke = {json_string_value(json_object_get(e, "id")), ui_decimal(e, "sequence"),
                          ui_decimal(e, "acceptedAtMs"),
                          json_string_value(json_object_get(e, "kind")), payload, len, NULL};
    gr_history_feed(h, &ke);
    free(payload);
    return 0;
}

/* Replay the consumed events (up to the snapshot's), page by page. */
static void replay(spore_db *db, const char *run_id, uint64_t applied, gr_history *h)
{
    uint64_t after = 0, fed = 0;
    while (after < applied && fed < UI_REPLAY_EVENTS_MAX && !gr_history_stopped(h)) {
        sp_error err = {0};
        spore_error e = {0};
        char *text = NULL;
        int rc = spore_events(db, run_id, after, 0, &text, &e);
        json_t *page = ui_api_answer(rc, text, &e, &err);
        const json_t *list = json_object_get(page, "events");
        size_t i = 0;
        for (; i < json_array_size(list); i++) {
            const json_t *ev = json_array_get(list, i);
            uint64_t seq = ui_decimal(ev, "sequence");
            if (seq > applied || feed(h, ev, &err))
                break;
            after = seq, fed++;
        }
        bool more = i > 0 && i == json_array_size(list) && !json_is_null(json_object_get(page, "next"));
        json_decref(page);
        if (!more)
            break;
    }
}

static int colour(spore_db *db, const char *run_id, const json_t *picture, gr_model *m,
                  sp_error *err)
{
    gr_history *h = gr_history_new(m);
    if (!h)
        return sp_oom(err);
    replay(db, run_id, ui_decimal(picture, "appliedSequence"), h);
    const json_t *snapshot = json_object_get(picture, "snapshot");
    size_t snap_len = 0;
    char *snap = json_is_null(snapshot) ? NULL : sp_json_encode_alloc(snapshot, &snap_len, err);
    int rc = -1;
    if (snap || json_is_null(snapshot)) {
        gr_run run = {run_id,
                      json_string_value(json_object_get(picture, "status")),
                      json_is_true(json_object_get(picture, "quarantined")),
                      snap,
                      snap_len,
                      json_string_value(json_object_get(picture, "snapshotDigest"))};
        rc = gr_model_set_run(m, &run, h, err);
    }
    free(snap);
    gr_history_free(h);
    return rc;
}

static void svg_into(sp_buf *html, const char *bytes, size_t len)
{
    const char *svg = len ? strstr(bytes, "<svg") : NULL;
    if (svg)
        sp_buf_append(html, svg, len - (size_t)(svg - bytes));
}

static int draw(spore_db *db, const char *run_id, const json_t *picture, sp_buf *html,
                sp_error *err)
{
    sp_workflow *wf = load_workflow(json_object_get(picture, "package"), err);
    if (!wf)
        return -1;
    gr_model m;
    int rc = gr_model_build(wf, &m, err);
    char *bytes = NULL;
    size_t len = 0;
    if (rc == 0) {
        rc = colour(db, run_id, picture, &m, err);
        if (rc == 0)
            rc = gr_render(&m, GR_SVG, &bytes, &len, err);
        gr_model_free(&m);
    }
    sp_workflow_free(wf);
    if (rc == 0)
        svg_into(html, bytes, len);
    free(bytes);
    return rc;
}

void ui_picture(ui_ctx *ctx, const char *run_id, const json_t *picture, sp_buf *html)
{
    sp_error err = {0};
    spore_db *db = ui_db_lock(ctx);
    int rc = draw(db, run_id, picture, html, &err);
    ui_db_unlock(ctx);
    if (rc == 0)
        return;
    ui_raw(html, "<p class=\"note\">no picture: <code>");
    ui_esc(html, err.code);
    ui_raw(html, "</code> ");
    ui_esc(html, err.message);
    ui_raw(html, "</p>");
}

void ui_picture_end(void) { gr_render_end(); }
