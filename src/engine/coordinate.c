/*
 * coordinate.c - step 2 of a tick (engine.md §3): for each run with a
 * pending event, up to turns_per_run times: load the turn, run the kernel,
 * commit the decision (ledger_commit_turn), or
 * quarantine the run when the kernel fails.
 *
 * Must never act on a decision's commands (only committed work, read back
 * through scan_due, is dispatched), and never let one run's missing package
 * or kernel failure stop the others.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/failpoint.h"
#include "engine/internal.h"
#include "engine/ledger.h"

#define KERNEL_DIGEST "native:spore-kernel@" SP_SEMANTICS_VERSION

/* The package's format chooses the semantics (docs/format-0.2.md). */
static const char *semantics_of(const sp_workflow *wf)
{
    return wf->semantics == SP_SEM_02 ? SP_SEMANTICS_VERSION_02 : SP_SEMANTICS_VERSION;
}

/* The budget of a turn: the configured one for 0.1; for 0.2 its own default
 * (a map's results live in the snapshot, kernel.md §8.9) unless the host
 * configured a larger state budget. */
static sp_kernel_limits limits_of(const sp_engine *e, const sp_workflow *wf)
{
    if (wf->semantics != SP_SEM_02)
        return e->cfg.limits;
    sp_kernel_limits l = sp_kernel_default_limits(SP_SEMANTICS_VERSION_02);
    if (e->cfg.limits.max_state_bytes > l.max_state_bytes)
        l.max_state_bytes = e->cfg.limits.max_state_bytes;
    return l;
}

static int quarantine(sp_engine *e, const sp_run_key *key, uint64_t revision, const char *code,
                      const char *details, sp_tick_stats *stats, sp_error *err)
{
    sp_quarantine_req req = {*key, NULL, revision, code, details};
    sp_flag_res res;
    sp_store_rc rc = ledger_quarantine(e, &req, &res, err);
    if (rc == SP_STORE_OK) {
        stats->quarantined++;
        return 0;
    }
    if (rc == SP_STORE_STALE) { /* someone moved the run on: fine */
        sp_error_clear(err);
        return 0;
    }
    stats->store_unavailable = sp_store_rc_transient(rc);
    return -1;
}

static void fill_records(const sp_kernel_decision *d, sp_command_rec *cmds,
                         sp_diagnostic_rec *diags)
{
    for (size_t i = 0; i < d->ncommands; i++)
        cmds[i] = (sp_command_rec){d->commands[i].command_id, d->commands[i].activation_id,
                                   d->commands[i].kind, d->commands[i].payload,
                                   d->commands[i].payload_len};
    for (size_t i = 0; i < d->ndiagnostics; i++)
        diags[i] = (sp_diagnostic_rec){d->diagnostics[i].code, d->diagnostics[i].node_id,
                                       d->diagnostics[i].details, d->diagnostics[i].details_len};
}

typedef enum turn_result { TURN_NEXT, TURN_STOP, TURN_ERROR } turn_result;

/* The decision cancels invocations (format 0.2): stop what runs of them
 * here once the commit is durable; other workers learn it from the lease
 * the commit took. */
static void cancel_local(sp_engine *e, const sp_kernel_decision *d)
{
    for (size_t i = 0; i < d->ncommands; i++) {
        if (strcmp(d->commands[i].kind, "activity.cancel") != 0)
            continue;
        json_t *p = json_loadb(d->commands[i].payload, d->commands[i].payload_len, 0, NULL);
        const char *id = json_string_value(json_object_get(p, "invocationId"));
        if (id)
            engine_cancel_durable(e, id);
        json_decref(p);
    }
}

static turn_result commit(sp_engine *e, const sp_turn *t, const sp_kernel_decision *d,
                          sp_tick_stats *stats, sp_error *err)
{
    char decision_digest[SP_DIGEST_TEXT_LEN + 1];
    sp_kernel_decision_digest(d, decision_digest);
    sp_command_rec *cmds = calloc(d->ncommands + 1, sizeof *cmds);
    sp_diagnostic_rec *diags = calloc(d->ndiagnostics + 1, sizeof *diags);
    if (!cmds || !diags) {
        free(cmds);
        free(diags);
        sp_oom(err);
        return TURN_ERROR;
    }
    fill_records(d, cmds, diags);
    sp_commit_turn_req req = {t->key, NULL, t->revision, t->event.event_id,
                              t->event.sequence, decision_digest, d->snapshot, d->snapshot_len,
                              d->snapshot_digest, d->status, cmds, d->ncommands, diags,
                              d->ndiagnostics};
    sp_commit_turn_res res;
    sp_store_rc rc = ledger_commit_turn(e, &req, &res, err);
    free(cmds);
    free(diags);
    if (rc == SP_STORE_OK) {
        engine_failpoint_durable(e, "host.turn.after-commit");
        cancel_local(e, d);
        if (res.disposition == SP_APPLIED)
            stats->applied++;
        else
            stats->duplicate++;
        return TURN_NEXT;
    }
    if (rc == SP_STORE_STALE) { /* another coordinator won: drop the decision */
        sp_error_clear(err);
        return TURN_STOP;
    }
    if (rc == SP_STORE_CONFLICT) { /* a different decision for the same event */
        stats->diverged++;
        fprintf(stderr, "spore: run %s diverged: %s: %s\n", t->key.run_id, err->code,
                err->message);
        sp_error_clear(err);
        return TURN_STOP;
    }
    stats->store_unavailable = sp_store_rc_transient(rc);
    return TURN_ERROR;
}

static turn_result one_turn(sp_engine *e, const sp_turn *t, sp_tick_stats *stats, sp_error *err)
{
    sp_error load_err = {0};
    const sp_workflow *wf = engine_workflow(e, t->package_digest, &load_err);
    if (!wf) {
        if (strncmp(load_err.code, "store.", 6) == 0) {
            sp_error_move(err, &load_err);
            stats->store_unavailable = true;
            return TURN_ERROR;
        }
        int rc = quarantine(e, &t->key, t->revision, load_err.code, load_err.message, stats, err);
        sp_error_clear(&load_err);
        return rc ? TURN_ERROR : TURN_STOP;
    }
    sp_kernel_request req = {
        .identity = {t->package_digest, KERNEL_DIGEST, semantics_of(wf), SP_CODEC_VERSION},
        .graph = wf->canonical,
        .graph_len = wf->canonical_len,
        .loaded_graph = wf,
        .snapshot = t->snapshot,
        .snapshot_len = t->snapshot_len,
        /* taken by the call, whatever it returns; back in d.state */
        .state = t->snapshot ? engine_runstate_take(e, &t->key, t->snapshot_digest) : NULL,
        .want_state = true,
        .event = {t->event.event_id, t->event.sequence, t->event.accepted_at_ms, t->event.kind,
                  t->event.body, t->event.body_len},
        .limits = limits_of(e, wf),
    };
    sp_kernel_decision d;
    sp_kernel_failure f;
    int krc = sp_kernel_transition(&req, &d, &f);
    if (krc == SP_KERNEL_OOM) {
        sp_oom(err);
        return TURN_ERROR;
    }
    if (krc == SP_KERNEL_FAILURE)
        return quarantine(e, &t->key, t->revision, f.code, f.details, stats, err) ? TURN_ERROR
                                                                                  : TURN_STOP;
    sp_failpoint("host.turn.after-reduce");
    sp_kernel_state *next = d.state;
    d.state = NULL;
    turn_result r = commit(e, t, &d, stats, err);
    if (r == TURN_NEXT) /* committed (applied or a duplicate of the same decision) */
        engine_runstate_keep(e, &t->key, next);
    else
        sp_kernel_state_free(next);
    sp_kernel_decision_free(&d);
    return r;
}

static int coordinate_run(sp_engine *e, const sp_run_key *key, sp_tick_stats *stats,
                          sp_error *err)
{
    for (uint32_t i = 0; i < e->cfg.turns_per_run; i++) {
        sp_turn t;
        bool found = false;
        sp_store_rc rc = ledger_load_turn(e, key, &t, &found, err);
        if (rc != SP_STORE_OK) {
            stats->store_unavailable = sp_store_rc_transient(rc);
            return -1;
        }
        if (!found)
            return 0;
        turn_result r = one_turn(e, &t, stats, err);
        /* no later event was pending when the turn was read: none to load
         * (one accepted since is the next pass's, as it would be anyway) */
        bool last = t.event.sequence + 1 >= t.next_sequence;
        sp_turn_free(&t);
        if (r == TURN_ERROR)
            return -1;
        if (r == TURN_STOP || last)
            return 0;
    }
    stats->more = true; /* turns_per_run reached: the run may have more */
    return 0;
}

/* One page of ready runs per pass: the next pass sees the rest (a run
 * coordinated here is no longer ready), so one batch stays bounded. */
int engine_coordinate(sp_engine *e, sp_tick_stats *stats, const sp_run_key *only, sp_error *err)
{
    if (only)
        return coordinate_run(e, only, stats, err);
    sp_key_page page;
    sp_store_rc rc = ledger_scan_ready(e, NULL, ENGINE_PAGE, &page, err);
    if (rc != SP_STORE_OK) {
        stats->store_unavailable = sp_store_rc_transient(rc);
        return -1;
    }
    int result = 0;
    for (size_t i = 0; i < page.n && result == 0; i++)
        result = coordinate_run(e, &page.keys[i], stats, err);
    stats->more |= page.next_cursor != NULL;
    sp_key_page_free(&page);
    return result;
}
