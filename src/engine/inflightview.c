/*
 * inflightview.c - what a cancelled run's status must tell (workflows-0.2.md
 * §6): every `unsafe` step that was running when the run was cancelled,
 * `cancelled-in-flight` with its effect key, because its effect may have
 * happened and a person has to know.
 *
 * Must never change the run, or list a step whose attempt finished (its
 * outcome is known) or whose effect class makes a repeat harmless.
 */
#include <string.h>

#include "engine/internal.h"
#include "engine/ledger.h"

static bool unsafe_action(sp_engine *e, const char *package_digest, const char *action_id)
{
    sp_error err = {0};
    const engine_action *ea = engine_action_get(e, package_digest, action_id, &err);
    sp_error_clear(&err);
    return ea && ea->action->effect == SP_EFFECT_UNSAFE;
}

json_t *sp_engine_cancelled_in_flight(sp_engine *e, const sp_run_view *run)
{
    json_t *out = json_array();
    sp_invocation_list list;
    sp_error err = {0};
    if (!out || strcmp(run->status, "cancelled") != 0 ||
        ledger_list_invocations(e, &run->key, &list, &err) != SP_STORE_OK) {
        sp_error_clear(&err);
        return out;
    }
    for (size_t i = 0; i < list.n; i++) {
        const sp_invocation_view *v = &list.items[i];
        bool unfinished = v->has_attempt && strcmp(v->attempt_status, "finished") != 0;
        if (unfinished && unsafe_action(e, run->package_digest, v->action_id))
            json_array_append_new(
                out, json_pack("{s:s,s:s,s:s,s:s,s:I,s:s}", "invocationId", v->invocation_id,
                               "nodeId", v->node_id, "actionId", v->action_id, "effectKey",
                               v->effect_key, "attempt", (json_int_t)v->attempt_number, "state",
                               "cancelled-in-flight"));
    }
    sp_invocation_list_free(&list);
    return out;
}
