/*
 * stepview.c - the `step` member of a run's status (engine.md §9): the
 * running step's kind, actor, state (ready | running | held | settled |
 * capability-missing), holder, deadline, lease and attempt, and for a held
 * step this host can probe, the answer of an on-demand probe.
 *
 * Must never change the run (an on-demand probe that says `dead` is shown,
 * and the next sweep, or probe of any worker, ends the attempt), or name an
 * action kind: the kind shown is the action's as written.
 */
#include <string.h>

#include "engine/internal.h"
#include "engine/ledger.h"
#include "engine/stateview.h"
#include "json/decimal.h"
#include "json/json.h"

static const char *state_of(const sp_invocation_view *v, const engine_action *ea)
{
    if (ea->unservable)
        return "capability-missing";
    switch (engine_step_state_of(v)) {
    case ENGINE_STEP_PENDING:
        return "ready";
    case ENGINE_STEP_RUNNING:
        return v->holder || ea->runner->external ? "held" : "running";
    default:
        return "settled";
    }
}

static json_t *probe_now(sp_engine *e, const sp_run_key *key, const sp_invocation_view *v,
                         const engine_action *ea)
{
    sp_holder_state st;
    if (!engine_hook_now(e, key, v, ea, ENGINE_HOOK_PROBE, &st))
        return json_null();
    return json_string(sp_holder_state_name(st));
}

static json_t *view_of(sp_engine *e, const sp_run_key *key, const sp_invocation_view *v,
                       const engine_action *ea)
{
    bool attempted = v->has_attempt && engine_step_state_of(v) != ENGINE_STEP_PENDING;
    bool running = attempted && engine_attempt_state_of(v) == ENGINE_ATTEMPT_RUNNING;
    json_t *holder = running && v->holder ? sp_json_parse(v->holder, strlen(v->holder), NULL)
                                          : NULL;
    const json_t *actor = json_object_get(ea->action->raw, "actor");
    const json_t *kind = json_object_get(ea->action->raw, "kind");
    json_t *out = json_pack(
        "{s:O,s:O,s:s,s:O,s:o,s:o,s:o,s:o}", "kind", kind ? kind : json_null(), "actor",
        actor ? actor : json_null(), "state", state_of(v, ea), "holder",
        holder ? holder : json_null(), "deadlineMs",
        running && v->deadline_ms ? sp_decimal_json(v->deadline_ms) : json_null(),
        "leaseUntilMs", running ? sp_decimal_json(v->lease_until_ms) : json_null(), "attempt",
        json_integer(v->attempt_number), "probe",
        running && holder ? probe_now(e, key, v, ea) : json_null());
    json_decref(holder);
    return out;
}

/* The step shown: the run's invocation (0.1), or its first in flight (0.2). */
static const sv_invocation *shown(const sv_state *s)
{
    for (size_t i = 0; i < s->ninvocations; i++)
        if (s->invocations[i].state == SV_SCHEDULED)
            return &s->invocations[i];
    return s->ninvocations ? &s->invocations[0] : NULL;
}

json_t *sp_engine_step_view(sp_engine *e, const sp_run_view *run)
{
    sv_state st;
    sp_error err = {0};
    if (!run->snapshot || sv_parse(run->snapshot, run->snapshot_len, &st, &err)) {
        sp_error_clear(&err);
        return json_null();
    }
    const sv_invocation *inv = shown(&st);
    const char *inv_id = inv ? inv->invocation_id : NULL;
    const char *action_id = inv ? inv->action_id : NULL;
    const engine_action *ea = NULL;
    if (inv_id && action_id)
        engine_action_find(e, run->package_digest, action_id, &ea, &err);
    json_t *out = NULL;
    sp_invocation_list list;
    if (ea && ledger_list_invocations(e, &run->key, &list, &err) == SP_STORE_OK) {
        for (size_t i = 0; i < list.n && !out; i++)
            if (strcmp(list.items[i].invocation_id, inv_id) == 0)
                out = view_of(e, &run->key, &list.items[i], ea);
        sp_invocation_list_free(&list);
    }
    sp_error_clear(&err);
    sv_free(&st);
    return out ? out : json_null();
}
