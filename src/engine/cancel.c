/*
 * cancel.c - the client operations of format 0.2 (docs/format-0.2.md):
 * cancel a run (run.cancel) and retry its stuck invocations (one
 * invocation.resolved {retry} each).
 *
 * Must never record anything for a request it refuses, cancel a run whose
 * workflow cannot express it (format 0.1: the kernel would quarantine the
 * run on an event kind it does not know), or retry an invocation whose
 * outcome is unknown (its effect may have happened: that is `resolve`).
 */
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "engine/internal.h"
#include "engine/ledger.h"
#include "engine/stateview.h"
#include "json/json.h"

static bool terminal(const char *status)
{
    return strcmp(status, "completed") == 0 || strcmp(status, "failed") == 0 ||
           strcmp(status, "cancelled") == 0;
}

static bool format_02(const sp_workflow *wf) { return wf->semantics == SP_SEM_02; }

/* The run's workflow is 0.2 and the run has not ended. */
static int check_cancellable(sp_engine *e, const sp_run_key *key, sp_cancel_answer *a,
                             sp_error *err)
{
    sp_run_view view;
    if (engine_get_run(e, key, &view, err))
        return -1;
    const sp_workflow *wf = engine_workflow(e, view.package_digest, err);
    int rc = wf ? 0 : -1;
    if (wf && !format_02(wf))
        rc = sp_fail(err, "run.cancel-unsupported",
                     "run %s runs a runspore.workflow/0.1 package, which has no cancellation; "
                     "nothing recorded (cancel needs format spore.workflow/0.2)",
                     key->run_id);
    snprintf(a->status, sizeof a->status, "%s", view.status);
    a->already_terminal = rc == 0 && terminal(view.status);
    sp_run_view_free(&view);
    return rc;
}

static json_t *cancel_body(const char *reason, const char *requested_by, sp_error *err)
{
    if (strlen(reason) > SP_CANCEL_REASON_MAX || strlen(requested_by) > SP_CANCEL_BY_MAX)
        return sp_fail(err, "usage.invalid-value",
                       "a cancel reason is at most %d bytes, requestedBy at most %d",
                       SP_CANCEL_REASON_MAX, SP_CANCEL_BY_MAX),
               NULL;
    json_t *r = json_string(reason), *by = json_string(requested_by);
    if (!r || !by) {
        json_decref(r);
        json_decref(by);
        return sp_fail(err, "usage.invalid-value", "a cancel reason must be UTF-8 text"), NULL;
    }
    json_t *body = json_pack("{s:o,s:o}", "reason", r, "requestedBy", by);
    return body ? body : (sp_oom(err), NULL);
}

/* Whether the run's kernel has consumed every event up to `sequence`. */
static int consumed(sp_engine *e, const sp_run_key *key, uint64_t sequence, bool *done,
                    char status[24], sp_error *err)
{
    sp_run_view view;
    if (engine_get_run(e, key, &view, err))
        return -1;
    *done = view.applied_sequence >= sequence;
    snprintf(status, 24, "%s", view.status);
    sp_run_view_free(&view);
    return 0;
}

/* Give the worker serving the run `wait_ms` to take the cancel (it stops
 * the steps it runs at once); take it here otherwise. */
static int await_applied(sp_engine *e, const sp_run_key *key, uint64_t sequence,
                         uint64_t wait_ms, sp_cancel_answer *a, sp_error *err)
{
    uint64_t until = sp_mono_ms() + wait_ms;
    for (;;) {
        if (consumed(e, key, sequence, &a->applied, a->status, err))
            return -1;
        if (a->applied || sp_mono_ms() >= until)
            break;
        sp_sleep_ms(50);
    }
    if (a->applied)
        return 0;
    sp_tick_stats stats;
    memset(&stats, 0, sizeof stats);
    if (engine_coordinate(e, &stats, key, err))
        return -1;
    return consumed(e, key, sequence, &a->applied, a->status, err);
}

int sp_engine_cancel(sp_engine *e, const sp_run_key *key, const char *request_id,
                     const char *reason, const char *requested_by, uint64_t wait_ms,
                     sp_cancel_answer *answer, sp_error *err)
{
    memset(answer, 0, sizeof *answer);
    if (engine_check_token("a request ID", request_id, SP_STORE_ID_MAX - 8, err) ||
        check_cancellable(e, key, answer, err))
        return -1;
    if (answer->already_terminal)
        return 0;
    json_t *body = cancel_body(reason, requested_by, err);
    if (!body)
        return -1;
    char rid[SP_STORE_REQUEST_ID_MAX], event_id[SP_STORE_REQUEST_ID_MAX];
    snprintf(rid, sizeof rid, "cancel/%s", request_id);
    snprintf(event_id, sizeof event_id, "cancel:%s", request_id);
    sp_append_event_res res;
    int rc = engine_append_event(e, key, rid, event_id, "run.cancel", body, &res, err);
    json_decref(body);
    if (rc)
        return -1;
    answer->disposition = res.disposition;
    return await_applied(e, key, res.sequence, wait_ms, answer, err);
}

int sp_engine_retry(sp_engine *e, const sp_run_key *key, const char *request_id, size_t *count,
                    sp_error *err)
{
    *count = 0;
    sp_run_view view;
    if (engine_check_token("a request ID", request_id, 64, err) ||
        engine_get_run(e, key, &view, err))
        return -1;
    sv_state st;
    memset(&st, 0, sizeof st);
    int rc = view.snapshot ? sv_parse(view.snapshot, view.snapshot_len, &st, err) : 0;
    for (size_t i = 0; rc == 0 && i < st.ninvocations; i++) {
        const sv_invocation *inv = &st.invocations[i];
        if (inv->state != SV_STUCK)
            continue;
        char rid[SP_STORE_ID_MAX + 1];
        snprintf(rid, sizeof rid, "%s:%s", request_id, inv->invocation_id);
        sp_disposition d;
        rc = sp_engine_resolve(e, key, rid, inv->invocation_id, SP_RESOLVE_RETRY, NULL, NULL,
                               NULL, &d, err);
        *count += rc == 0;
    }
    if (rc == 0 && *count == 0)
        rc = sp_fail(err, "run.nothing-to-retry",
                     "run %s (%s) has no stuck step to retry; nothing recorded (spore status "
                     "shows what it waits for)",
                     key->run_id, view.status);
    sv_free(&st);
    sp_run_view_free(&view);
    return rc;
}
