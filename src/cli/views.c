/*
 * views.c - JSON and text views of runs and events (see views.h).
 */
#include "cli/views.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/browse.h"
#include "api/status.h"
#include "engine/stateview.h"
#include "json/decimal.h"
#include "json/json.h"

json_t *view_decimal(uint64_t v) { return sp_decimal_json(v); }

static json_t *snapshot_of(const sp_run_view *v)
{
    if (!v->snapshot)
        return NULL;
    return sp_json_parse(v->snapshot, v->snapshot_len, NULL);
}

json_t *view_status_json(const sp_run_view *v, json_t *step)
{
    json_t *out = sp_status_json(v);
    if (out)
        json_object_set(out, "step", step ? step : json_null());
    return out;
}

void view_in_flight_text(FILE *out, const json_t *in_flight)
{
    for (size_t i = 0; i < json_array_size(in_flight); i++) {
        const json_t *o = json_array_get(in_flight, i);
        fprintf(out, "%-12s %s %s effect key %s: cancelled in flight, its effect may have happened\n",
                "unsafe", json_string_value(json_object_get(o, "nodeId")),
                json_string_value(json_object_get(o, "invocationId")),
                json_string_value(json_object_get(o, "effectKey")));
    }
}

static void print_json_line(FILE *out, const char *label, const json_t *value)
{
    char *text = sp_json_encode_alloc(value, NULL, NULL);
    fprintf(out, "%-12s %s\n", label, text ? text : "?");
    free(text);
}

static void step_text(FILE *out, const json_t *step)
{
    if (!json_is_object(step))
        return;
    fprintf(out, "%-12s %s %s", "step", json_string_value(json_object_get(step, "kind")),
            json_string_value(json_object_get(step, "state")));
    const json_t *actor = json_object_get(step, "actor"), *probe = json_object_get(step, "probe");
    if (json_is_string(actor))
        fprintf(out, " actor %s", json_string_value(actor));
    if (json_is_string(probe))
        fprintf(out, " (probe: %s)", json_string_value(probe));
    fputc('\n', out);
    const json_t *holder = json_object_get(step, "holder");
    if (!json_is_null(holder) && holder)
        print_json_line(out, "holder", holder);
}

/* A 0.2 run: every invocation in flight or needing a person, every branch
 * (where it is, or what it arrived with), every map's progress and every
 * live timer (when it is due, from now). */
static void state02_text(FILE *out, const sp_run_view *v)
{
    sv_state st;
    sp_error err = {0};
    if (!v->snapshot || sv_parse(v->snapshot, v->snapshot_len, &st, &err)) {
        sp_error_clear(&err);
        return;
    }
    for (size_t i = 0; st.v02 && i < st.ninvocations; i++) {
        const sv_invocation *inv = &st.invocations[i];
        fprintf(out, "%-12s %s %s attempt %u %s%s\n", "invocation", inv->node_id,
                inv->invocation_id, inv->attempt, sv_invocation_state_name(inv->state),
                inv->state == SV_STUCK ? " (spore retry, or spore resolve --retry)" : "");
    }
    const char *id;
    json_t *m;
    if (st.v02 && json_is_object(st.branches))
        json_object_foreach((json_t *)st.branches, id, m) {
            const json_t *pos = json_object_get(m, "position"), *arrived = json_object_get(m, "arrived");
            if (json_is_object(arrived))
                fprintf(out, "%-12s %s: arrived from %s (%s)\n", "branch", id,
                        json_string_value(json_object_get(arrived, "node")),
                        json_string_value(json_object_get(arrived, "outcome")));
            else
                fprintf(out, "%-12s %s: at %s\n", "branch", id,
                        json_is_object(pos) ? json_string_value(json_object_get(pos, "nodeId")) : "?");
        }
    if (st.v02 && json_is_object(st.maps))
        json_object_foreach((json_t *)st.maps, id, m)
            fprintf(out, "%-12s %s: %lld of %lld done, %lld running\n", "map", id,
                    (long long)json_integer_value(json_object_get(m, "done")),
                    (long long)json_integer_value(json_object_get(m, "total")),
                    (long long)json_integer_value(json_object_get(m, "running")));
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long now_ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    for (size_t i = 0; st.v02 && i < st.ntimers; i++) {
        long long left = (long long)st.timers[i].due_at_ms - now_ms;
        fprintf(out, "%-12s %s for %s, due %s%lld.%03lld s\n", "timer", st.timers[i].timer_id,
                st.timers[i].activation_id ? st.timers[i].activation_id : "?",
                left < 0 ? "since " : "in ", (left < 0 ? -left : left) / 1000,
                (left < 0 ? -left : left) % 1000);
    }
    sv_free(&st);
}

void view_status_text(FILE *out, const sp_run_view *v, const json_t *step)
{
    json_t *snap = snapshot_of(v);
    fprintf(out, "%-12s %s\n", "run", v->key.run_id);
    fprintf(out, "%-12s %s\n", "start key", v->start_key ? v->start_key : "");
    fprintf(out, "%-12s %s\n", "status", v->status);
    fprintf(out, "%-12s %llu\n", "revision", (unsigned long long)v->revision);
    if (v->artifact_digest)
        fprintf(out, "%-12s %s\n", "artifact", v->artifact_digest);
    json_t *pos = snap ? json_object_get(snap, "position") : NULL;
    if (json_is_object(pos))
        fprintf(out, "%-12s %s (%s)\n", "position",
                json_string_value(json_object_get(pos, "nodeId")),
                json_string_value(json_object_get(pos, "activationId")));
    json_t *inv = snap ? json_object_get(snap, "invocation") : NULL;
    if (json_is_object(inv))
        fprintf(out, "%-12s %s attempt %lld %s\n", "invocation",
                json_string_value(json_object_get(inv, "invocationId")),
                (long long)json_integer_value(json_object_get(inv, "attempt")),
                json_string_value(json_object_get(inv, "state")));
    state02_text(out, v);
    step_text(out, step);
    json_t *result = snap ? json_object_get(snap, "result") : NULL;
    if (json_is_object(result))
        print_json_line(out, "result", result);
    if (v->quarantined)
        fprintf(out, "%-12s %s: %s\n", "quarantine", v->quarantine_code ? v->quarantine_code : "",
                v->quarantine_details ? v->quarantine_details : "");
    json_decref(snap);
}

static json_t *diagnostics_json(const sp_event *e)
{
    json_t *d = e->diagnostics ? sp_json_parse(e->diagnostics, strlen(e->diagnostics), NULL) : NULL;
    return d ? d : json_array();
}

json_t *view_event_json(const sp_event *e) { return sp_event_json(e); } /* api/browse.c */

void view_event_text(FILE *out, const sp_event *e)
{
    char rev[32];
    if (e->consumed)
        snprintf(rev, sizeof rev, "rev %llu", (unsigned long long)e->consumed_revision);
    else
        snprintf(rev, sizeof rev, "pending");
    fprintf(out, "%llu  %s  %s  %s", (unsigned long long)e->sequence, e->kind, rev, e->event_id);
    json_t *d = diagnostics_json(e);
    for (size_t i = 0; i < json_array_size(d); i++)
        fprintf(out, "  %s", json_string_value(json_object_get(json_array_get(d, i), "code")));
    json_decref(d);
    fputc('\n', out);
}
