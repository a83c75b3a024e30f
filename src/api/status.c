/*
 * status.c - the status object of one run (see status.h).
 *
 * Must never fail on a missing or unreadable snapshot: the members it would
 * give are shown as null.
 */
#include "api/status.h"

#include <string.h>

#include "engine/stateview.h"
#include "json/decimal.h"
#include "json/json.h"

static json_t *member_or_null(json_t *obj, const char *name)
{
    json_t *m = obj ? json_object_get(obj, name) : NULL;
    return m ? json_incref(m) : json_null();
}

static json_t *quarantine_json(const sp_run_view *v)
{
    if (!v->quarantined)
        return json_null();
    return json_pack("{s:s,s:s,s:o}", "code", v->quarantine_code ? v->quarantine_code : "",
                     "details", v->quarantine_details ? v->quarantine_details : "", "atMs",
                     sp_decimal_json(v->quarantine_at_ms));
}

static json_t *invocation_json(const sv_invocation *i)
{
    json_t *o = json_pack("{s:s,s:s?,s:s,s:s,s:I,s:s}", "invocationId", i->invocation_id,
                          "activationId", i->activation_id, "nodeId", i->node_id, "actionId",
                          i->action_id, "attempt", (json_int_t)i->attempt, "state",
                          sv_invocation_state_name(i->state));
    if (o && i->error)
        json_object_set(o, "error", (json_t *)i->error);
    return o;
}

/* A map's progress, never its items or results (they may be megabytes):
 * activation -> {activationId, node, total, done, running}. */
static json_t *maps_json(const json_t *maps)
{
    json_t *out = json_object();
    const char *id;
    json_t *m;
    json_object_foreach((json_t *)maps, id, m) {
        json_t *slim = json_object();
        static const char *const keep[] = {"activationId", "node", "total", "done", "running"};
        for (size_t i = 0; slim && i < sizeof keep / sizeof keep[0]; i++) {
            json_t *v = json_object_get(m, keep[i]);
            if (v)
                json_object_set(slim, keep[i], v);
        }
        json_object_set_new(out, id, slim);
    }
    return out;
}

/* A branch with the invocation it runs (the one at its position), or null. */
static json_t *branches_json(const sv_state *st)
{
    json_t *out = json_object();
    const char *id;
    json_t *b;
    json_object_foreach((json_t *)st->branches, id, b) {
        json_t *copy = json_deep_copy(b);
        const char *at = json_string_value(
            json_object_get(json_object_get(b, "position"), "activationId"));
        json_t *inv = NULL;
        for (size_t i = 0; at && !inv && i < st->ninvocations; i++)
            if (st->invocations[i].activation_id &&
                strcmp(st->invocations[i].activation_id, at) == 0)
                inv = invocation_json(&st->invocations[i]);
        if (copy)
            json_object_set_new(copy, "invocation", inv ? inv : json_null());
        else
            json_decref(inv);
        json_object_set_new(out, id, copy);
    }
    return out;
}

/* What the run waits for: every await-signal activation that waits. */
static json_t *waits_json(const sv_state *st)
{
    json_t *out = json_array();
    for (size_t i = 0; i < st->nwaits; i++)
        json_array_append_new(out, json_pack("{s:s?,s:s,s:s?,s:s?}", "activationId",
                                             st->waits[i].activation_id, "nodeId",
                                             st->waits[i].node_id, "signal", st->waits[i].signal,
                                             "timerId", st->waits[i].timer_id));
    return out;
}

/* A 0.2 run's invocations (in flight or needing a person), interventions
 * (those that need a person: unknown or stuck), timers, branches and maps.
 * A 0.1 run's status keeps exactly its members (position, invocation). */
static void add_state_members(json_t *out, const sv_state *st)
{
    json_t *invocations = json_array(), *interventions = json_array(), *timers = json_array();
    for (size_t i = 0; i < st->ninvocations; i++) {
        json_array_append_new(invocations, invocation_json(&st->invocations[i]));
        if (st->invocations[i].state != SV_SCHEDULED)
            json_array_append_new(interventions, invocation_json(&st->invocations[i]));
    }
    for (size_t i = 0; i < st->ntimers; i++)
        json_array_append_new(timers,
                              json_pack("{s:s,s:s?,s:o}", "timerId", st->timers[i].timer_id,
                                        "activationId", st->timers[i].activation_id, "dueAtMs",
                                        sp_decimal_json(st->timers[i].due_at_ms)));
    json_object_set_new(out, "invocations", invocations);
    json_object_set_new(out, "interventions", interventions);
    json_object_set_new(out, "timers", timers);
    json_object_set_new(out, "branches", st->branches ? branches_json(st) : json_null());
    json_object_set_new(out, "waits", waits_json(st));
    json_object_set_new(out, "maps", st->maps ? maps_json(st->maps) : json_null());
}

/* The snapshot parsed once: as a state this spore reads (*parsed), else as
 * any JSON (its members are then still shown), else NULL. */
static json_t *snapshot_doc(const sp_run_view *v, sv_state *st, bool *parsed)
{
    sp_error err = {0};
    *parsed = v->snapshot && sv_parse(v->snapshot, v->snapshot_len, st, &err) == 0;
    sp_error_clear(&err);
    if (*parsed)
        return json_incref(st->doc);
    return v->snapshot ? sp_json_parse(v->snapshot, v->snapshot_len, NULL) : NULL;
}

json_t *sp_status_json(const sp_run_view *v)
{
    sv_state st;
    bool parsed = false;
    json_t *snap = snapshot_doc(v, &st, &parsed);
    json_t *nodes = snap ? json_incref(json_object_get(snap, "nodes")) : NULL;
    json_t *out = json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:s}", "runId", v->key.run_id,
                            "startKey", v->start_key ? v->start_key : "", "status", v->status,
                            "revision", sp_decimal_json(v->revision), "position",
                            member_or_null(snap, "position"), "invocation",
                            member_or_null(snap, "invocation"), "result",
                            member_or_null(snap, "result"), "nodes", nodes ? nodes : json_object(),
                            "quarantine", quarantine_json(v), "packageDigest", v->package_digest);
    if (out) /* the artifact the run was started from (authoring.md §2), or null */
        json_object_set_new(out, "artifactDigest",
                            v->artifact_digest ? json_string(v->artifact_digest) : json_null());
    json_decref(snap);
    if (out && parsed && st.v02)
        add_state_members(out, &st);
    if (parsed)
        sv_free(&st);
    return out;
}

void sp_status_add_in_flight(json_t *status, const json_t *in_flight)
{
    json_t *list = json_object_get(status, "interventions");
    for (size_t i = 0; json_is_array(list) && i < json_array_size(in_flight); i++)
        json_array_append(list, json_array_get(in_flight, i));
}
