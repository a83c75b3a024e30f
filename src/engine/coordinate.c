/*
 * coordinate.c - step 2 of a tick (engine.md §3): for each run with a
 * pending event, up to turns_per_run times: load the turn, run the kernel,
 * commit the decision (ledger_commit_turn), or
 * quarantine the run when the kernel fails.
 *
 * Must never act on a decision's commands (only committed work, read back
 * through scan_outbox, is dispatched), and never let one run's missing package
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

/* ---- a turn decided by the kernel (also settle.c's) ---- */

static int fill_records(engine_decided *dc, sp_error *err)
{
    const sp_kernel_decision *d = &dc->d;
    dc->cmds = calloc(d->ncommands + 1, sizeof *dc->cmds);
    dc->diags = calloc(d->ndiagnostics + 1, sizeof *dc->diags);
    if (!dc->cmds || !dc->diags)
        return sp_oom(err);
    for (size_t i = 0; i < d->ncommands; i++)
        dc->cmds[i] = (sp_command_rec){d->commands[i].command_id, d->commands[i].activation_id,
                                       d->commands[i].kind, d->commands[i].payload,
                                       d->commands[i].payload_len, d->commands[i].payload_value};
    for (size_t i = 0; i < d->ndiagnostics; i++)
        dc->diags[i] = (sp_diagnostic_rec){d->diagnostics[i].code, d->diagnostics[i].node_id,
                                           d->diagnostics[i].details,
                                           d->diagnostics[i].details_len};
    return 0;
}

void engine_decided_free(engine_decided *dc)
{
    sp_kernel_state_free(dc->next);
    free(dc->cmds);
    free(dc->diags);
    free(dc->seen);
    if (dc->has_decision)
        sp_kernel_decision_free(&dc->d);
    memset(dc, 0, sizeof *dc);
}

engine_decide_rc engine_decide(sp_engine *e, const sp_turn *t, engine_decided *out, sp_error *why,
                               sp_error *err)
{
    memset(out, 0, sizeof *out);
    const sp_workflow *wf = engine_workflow(e, t->package_digest, why);
    if (!wf) {
        if (strncmp(why->code, "store.", 6) != 0)
            return ENGINE_UNDECIDABLE;
        sp_error_move(err, why);
        return ENGINE_DECIDE_STORE;
    }
    sp_kernel_request req = {
        .identity = {t->package_digest, KERNEL_DIGEST, semantics_of(wf), SP_CODEC_VERSION},
        .graph = wf->canonical,
        .graph_len = wf->canonical_len,
        .loaded_graph = wf,
        .snapshot = t->snapshot,
        .snapshot_len = t->snapshot_len,
        /* taken by the call, whatever it returns; back in d.state */
        .state = t->revision ? engine_runstate_take(e, &t->key, t->snapshot_digest) : NULL,
        .want_state = true,
        .event = {t->event.event_id, t->event.sequence, t->event.accepted_at_ms, t->event.kind,
                  t->event.body, t->event.body_len, t->event.body_value},
        .limits = limits_of(e, wf),
    };
    sp_kernel_failure f;
    int krc = sp_kernel_transition(&req, &out->d, &f);
    if (krc == SP_KERNEL_OOM) {
        sp_oom(err);
        return ENGINE_DECIDE_OOM;
    }
    if (krc == SP_KERNEL_FAILURE) {
        sp_fail(why, f.code, "%s", f.details);
        return ENGINE_UNDECIDABLE;
    }
    out->has_decision = true;
    sp_failpoint("host.turn.after-reduce");
    out->next = out->d.state;
    out->d.state = NULL;
    sp_kernel_decision_digest(&out->d, out->decision_digest);
    if (e->cfg.observer)
        engine_observe_decided(e, t, out);
    if (fill_records(out, err)) {
        engine_decided_free(out);
        return ENGINE_DECIDE_OOM;
    }
    return ENGINE_DECIDED;
}

/* The decision cancels invocations (format 0.2): stop what runs of them
 * here once the commit is durable; other workers learn it from the lease
 * the commit took. */
static void cancel_local(sp_engine *e, const sp_kernel_decision *d)
{
    for (size_t i = 0; i < d->ncommands; i++) {
        if (strcmp(d->commands[i].kind, "activity.cancel") != 0)
            continue;
        if (d->commands[i].invocation_id[0])
            engine_cancel_durable(e, d->commands[i].invocation_id);
    }
}

void engine_decided_committed(sp_engine *e, const sp_run_key *key, engine_decided *dc,
                              sp_disposition disposition, sp_tick_stats *stats)
{
    engine_failpoint_durable(e, "host.turn.after-commit");
    cancel_local(e, &dc->d);
    engine_runstate_keep(e, key, dc->next, dc->d.snapshot_len);
    dc->next = NULL;
    if (dc->seen && disposition == SP_APPLIED) /* a duplicate was seen where it applied */
        engine_observe_turn(e, dc);
    if (disposition == SP_APPLIED)
        stats->applied++;
    else
        stats->duplicate++;
}

/* ---- coordinating one run ---- */

typedef enum turn_result { TURN_NEXT, TURN_STOP, TURN_ERROR } turn_result;

/* How a run came to be coordinated: found by the scan of ready runs (a
 * run another worker holds is left to it), or named by the caller. */
typedef enum turn_source { TURN_SCANNED, TURN_NAMED } turn_source;

static turn_result commit(sp_engine *e, const sp_turn *t, engine_decided *dc,
                          turn_source source, sp_tick_stats *stats, sp_error *err)
{
    const sp_kernel_decision *d = &dc->d;
    sp_commit_turn_req req = {t->key, NULL, t->revision, t->event.event_id,
                              t->event.sequence, dc->decision_digest, d->snapshot,
                              d->snapshot_len, d->snapshot_digest, d->status, dc->cmds,
                              d->ncommands, dc->diags, d->ndiagnostics,
                              .snapshot_digest_computed = true,
                              .skip_busy = source == TURN_SCANNED};
    sp_commit_turn_res res;
    sp_store_rc rc = ledger_commit_turn(e, &req, &res, err);
    if (rc == SP_STORE_OK) {
        engine_decided_committed(e, &t->key, dc, res.disposition, stats);
        return TURN_NEXT;
    }
    if (rc == SP_STORE_STALE) { /* another coordinator won: drop the decision */
        sp_error_clear(err);
        return TURN_STOP;
    }
    if (rc == SP_STORE_CONFLICT && strcmp(err->code, "run.busy") == 0) {
        stats->busy++; /* another worker has it in hand: the next scan looks again */
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

static turn_result one_turn(sp_engine *e, const sp_turn *t, turn_source source,
                           sp_tick_stats *stats, sp_error *err)
{
    engine_decided dc;
    sp_error why = {0};
    engine_decide_rc d = engine_decide(e, t, &dc, &why, err);
    turn_result r = TURN_ERROR;
    if (d == ENGINE_DECIDED)
        r = commit(e, t, &dc, source, stats, err);
    else if (d == ENGINE_UNDECIDABLE)
        r = quarantine(e, &t->key, t->revision, why.code, why.message, stats, err) ? TURN_ERROR
                                                                                   : TURN_STOP;
    else if (d == ENGINE_DECIDE_STORE)
        stats->store_unavailable = true;
    sp_error_clear(&why);
    engine_decided_free(&dc);
    return r;
}

static int coordinate_run(sp_engine *e, const sp_run_key *key, turn_source source,
                          sp_tick_stats *stats, sp_error *err)
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
        turn_result r = one_turn(e, &t, source, stats, err);
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
    /* a run a settle of this batch turned has no pending event - unless a
     * timer fired for it since, in this batch */
    char name[2 * SP_STORE_ID_MAX + 2];
    if (only && !stats->fired &&
        sp_strlist_has(&e->settled_runs, engine_run_name(only, name, sizeof name)))
        return 0;
    if (only)
        return coordinate_run(e, only, TURN_NAMED, stats, err);
    sp_key_page page;
    sp_store_rc rc = ledger_scan_ready(e, NULL, ENGINE_PAGE, &page, err);
    if (rc != SP_STORE_OK) {
        stats->store_unavailable = sp_store_rc_transient(rc);
        return -1;
    }
    int result = 0;
    for (size_t i = 0; i < page.n && result == 0; i++)
        result = coordinate_run(e, &page.keys[i], TURN_SCANNED, stats, err);
    stats->more |= page.next_cursor != NULL;
    sp_key_page_free(&page);
    return result;
}
