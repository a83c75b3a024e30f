/*
 * settle.c - a finished attempt reported as ONE request (step-path.md §1,
 * docs/step-path.md): settle_attempt with this engine's kernel as the
 * decider, so the result, the decision on it and the claim of the step it
 * authorizes commit together. The claims start on the pool once the tick's
 * batch commits, like dispatch's.
 *
 * What the decision asks to claim: the invocations it schedules - and a
 * retry of the attempt's own invocation - whose action this host serves (not
 * external), while free slots of their kind (pool or inline) last.
 * Everything else stays pending for dispatch or another worker.
 *
 * Must never act on a decision whose request did not commit, claim past the
 * free slots, or lose a result: when the store refuses the decision (or the
 * kernel cannot decide) the result is still reported - finish_attempt, or
 * the event left pending - and the coordinator decides as before.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/ledger.h"

typedef struct settle_ctx {
    sp_engine *e;
    inflight *a;
    engine_decided dc;
    bool decided;
    char (*claim)[SP_ID_LEN + 1]; /* the invocations the decision asks to claim */
    const char **claim_ptr;
    size_t nclaim;
} settle_ctx;

/* The invocation a schedule or retry command makes pending, and its action
 * ("" when the command does not say: a retry names only the invocation), as
 * the kernel gave them beside the payload. */
bool engine_command_target(const sp_kernel_command *c, char id[SP_ID_LEN + 1], char *action,
                           size_t action_cap)
{
    bool schedule = strcmp(c->kind, "activity.schedule") == 0;
    if ((!schedule && strcmp(c->kind, "activity.retry") != 0) || !c->invocation_id[0])
        return false;
    snprintf(id, SP_ID_LEN + 1, "%s", c->invocation_id);
    snprintf(action, action_cap, "%s", schedule && c->action_id ? c->action_id : "");
    return true;
}

/* The action of a command's invocation, as far as this attempt knows it. */
static const char *target_action(const settle_ctx *c, const char *id, const char *action)
{
    if (*action)
        return action;
    const sp_claim *mine = &c->a->claim;
    return strcmp(id, mine->attempt.invocation_id) == 0 ? mine->action_id : NULL;
}

static int want_claims(settle_ctx *c)
{
    const engine_decided *dc = &c->dc;
    const char *pkg = c->a->package_digest;
    engine_slots slots;
    engine_slots_get(c->e, &slots);
    if (!dc->d.ncommands || !(slots.free[ENGINE_SLOT_POOL] + slots.free[ENGINE_SLOT_INLINE]))
        return 0;
    c->claim = calloc(dc->d.ncommands, sizeof *c->claim);
    c->claim_ptr = calloc(dc->d.ncommands, sizeof *c->claim_ptr);
    if (!c->claim || !c->claim_ptr)
        return -1;
    for (size_t i = 0; i < dc->d.ncommands; i++) {
        char action[SP_STORE_ID_MAX + 1];
        char *id = c->claim[c->nclaim];
        if (!engine_command_target(&dc->d.commands[i], id, action, sizeof action))
            continue;
        const char *act = target_action(c, id, action);
        engine_slot slot;
        if (act && engine_workable(c->e, pkg, act, &slot) && engine_slots_take(&slots, slot))
            c->claim_ptr[c->nclaim++] = id;
    }
    return 0;
}

static sp_decide_rc decide(void *ctx, const sp_turn *t, sp_decision *out)
{
    settle_ctx *c = ctx;
    if (!t->snapshot && !engine_runstate_has(c->e, &t->key, t->snapshot_digest))
        return SP_DECIDE_NEED_SNAPSHOT;
    sp_error why = {0}, err = {0};
    engine_decide_rc rc = engine_decide(c->e, t, &c->dc, &why, &err);
    sp_error_clear(&why);
    sp_error_clear(&err);
    if (rc != ENGINE_DECIDED || want_claims(c))
        return SP_DECIDE_PASS; /* the coordinator decides (and quarantines) as before */
    c->decided = true;
    const sp_kernel_decision *d = &c->dc.d;
    *out = (sp_decision){c->dc.decision_digest, d->snapshot,     d->snapshot_len,
                         d->snapshot_digest,    d->status,       c->dc.cmds,
                         d->ncommands,          c->dc.diags,     d->ndiagnostics,
                         c->claim_ptr,          c->nclaim,       true};
    return SP_DECIDE_COMMIT;
}

/* Each claim the request made: held here, started once the batch commits. */
static void take_claims(sp_engine *e, inflight *a, sp_settle_res *res, sp_tick_stats *stats)
{
    for (size_t i = 0; i < res->nclaims; i++) {
        sp_claim *claim = &res->claims[i];
        sp_error err = {0};
        if (res->disposition == SP_DUPLICATE && !engine_claim_confirm(e, claim, &err))
            continue;
        engine_failpoint_durable(e, "host.attempt.after-claim");
        stats->claimed++;
        engine_attempt_claimed(e, claim, a->package_digest, &err); /* out of memory: its lease */
        sp_error_clear(&err);
    }
}

/* The turn was committed by this settle and all it commands is claimed:
 * nothing of it is left for coordinate or dispatch. */
static bool handled_all(const settle_ctx *c, const sp_settle_res *res)
{
    return res->turned && c->decided && res->disposition == SP_APPLIED &&
           res->nclaims == c->dc.d.ncommands;
}

static void settled(settle_ctx *c, sp_settle_res *res, sp_tick_stats *stats)
{
    sp_engine *e = c->e;
    engine_failpoint_durable(e, "host.attempt.after-finish");
    const sp_run_key *key = &c->a->claim.attempt.key;
    if (res->turned && c->decided)
        engine_decided_committed(e, key, &c->dc, res->disposition, stats);
    else if (res->turned)
        stats->duplicate++;
    /* the run is locked by this batch until it commits, and nothing of it
     * is pending: coordinating it again in this pass would read nothing
     * (out of memory: it is read, as before) */
    if (res->turned && res->disposition == SP_APPLIED) {
        char name[2 * SP_STORE_ID_MAX + 2];
        engine_run_name(key, name, sizeof name);
        (void)sp_strlist_add(&e->settled_runs, name);
    }
    take_claims(e, c->a, res, stats);
}

bool engine_settle(sp_engine *e, inflight *a, const char *body, size_t len, sp_tick_stats *stats)
{
    bool clean = false;
    settle_ctx c = {.e = e, .a = a};
    sp_decider decider = {decide, &c};
    sp_settle_res res;
    sp_error err = {0};
    sp_store_rc rc = ledger_settle(e, &a->claim.attempt, body, len, &decider, &res, &err);
    if (rc == SP_STORE_OK) {
        clean = handled_all(&c, &res);
        settled(&c, &res, stats);
        sp_settle_res_free(&res);
    } else if (rc == SP_STORE_STALE) {
        ledger_keep_late(e, &a->claim.attempt, "result-after-lease-expired", body, len);
    } else if (!sp_store_rc_transient(rc)) {
        /* the store refused the decision: the result alone, the coordinator decides */
        sp_error_clear(&err);
        if (ledger_finish_or_keep(e, &a->claim.attempt, body, len, "result-after-lease-expired",
                                  &err) == SP_STORE_OK)
            engine_failpoint_durable(e, "host.attempt.after-finish");
    }
    sp_error_clear(&err);
    engine_decided_free(&c.dc);
    free(c.claim);
    free(c.claim_ptr);
    return clean;
}
