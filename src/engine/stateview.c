/*
 * stateview.c - a run's snapshot as the engine reads it (stateview.h):
 * runspore.state/0.1 (one `invocation`, one `position`) and spore.state/0.2
 * (`invocations`, `waits`, `timers` maps keyed by ID, docs/format-0.2.md)
 * into one shape.
 *
 * Must never interpret the kernel's rules or keep a pointer past sv_free.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/stateview.h"
#include "json/decimal.h"
#include "json/json.h"

#define STATE_01 "runspore.state/0.1"
#define STATE_02 "spore.state/0.2"

static const char *text(const json_t *o, const char *name)
{
    return json_string_value(json_object_get(o, name));
}

const char *sv_invocation_state_name(sv_invocation_state st)
{
    switch (st) {
    case SV_SCHEDULED:
        return "scheduled";
    case SV_UNKNOWN:
        return "unknown";
    case SV_STUCK:
        return "stuck";
    }
    return "scheduled";
}

static bool invocation_of(const json_t *o, sv_invocation *out)
{
    const char *state = text(o, "state");
    json_int_t attempt = json_integer_value(json_object_get(o, "attempt"));
    *out = (sv_invocation){text(o, "invocationId"), text(o, "activationId"), text(o, "nodeId"),
                           text(o, "actionId"), (uint32_t)attempt, SV_SCHEDULED, NULL};
    if (!out->invocation_id || !out->node_id || !out->action_id || !state || attempt < 1)
        return false;
    if (strcmp(state, "unknown") == 0)
        out->state = SV_UNKNOWN;
    else if (strcmp(state, "stuck") == 0)
        out->state = SV_STUCK, out->error = json_object_get(o, "error");
    else if (strcmp(state, "scheduled") != 0)
        return false;
    return true;
}

static bool parse_01(sv_state *s)
{
    const json_t *inv = json_object_get(s->doc, "invocation");
    if (json_is_object(inv)) {
        s->invocations = calloc(1, sizeof *s->invocations);
        if (!s->invocations || !invocation_of(inv, &s->invocations[0]))
            return false;
        s->ninvocations = 1;
    }
    const json_t *pos = json_object_get(s->doc, "position");
    if (sv_status_is(s, "waiting") && json_is_object(pos)) {
        s->waits = calloc(1, sizeof *s->waits);
        if (!s->waits)
            return false;
        s->waits[0] = (sv_wait){text(pos, "activationId"), text(pos, "nodeId"), NULL, NULL};
        s->nwaits = 1;
    }
    return true;
}

/* Count the members of a map of objects and allocate that many items. */
static void *alloc_for(const json_t *map, size_t size, size_t *n)
{
    *n = 0;
    if (!json_is_object(map) || json_object_size(map) == 0)
        return NULL;
    return calloc(json_object_size(map), size);
}

static bool parse_invocations(sv_state *s, const json_t *map)
{
    s->invocations = alloc_for(map, sizeof *s->invocations, &s->ninvocations);
    const char *id;
    json_t *o;
    json_object_foreach((json_t *)map, id, o) {
        if (!s->invocations || !invocation_of(o, &s->invocations[s->ninvocations]))
            return false;
        s->ninvocations++;
    }
    return true;
}

static bool parse_waits(sv_state *s, const json_t *map)
{
    s->waits = alloc_for(map, sizeof *s->waits, &s->nwaits);
    const char *id;
    json_t *o;
    json_object_foreach((json_t *)map, id, o) {
        if (!s->waits || !text(o, "nodeId") || !text(o, "signal"))
            return false;
        s->waits[s->nwaits++] = (sv_wait){id, text(o, "nodeId"), text(o, "signal"),
                                          text(o, "timerId")};
    }
    return true;
}

static bool parse_timers(sv_state *s, const json_t *map)
{
    s->timers = alloc_for(map, sizeof *s->timers, &s->ntimers);
    const char *id;
    json_t *o;
    json_object_foreach((json_t *)map, id, o) {
        uint64_t due = 0;
        if (!s->timers || !sp_decimal_from_json(json_object_get(o, "dueAtMs"), &due))
            return false;
        s->timers[s->ntimers++] = (sv_timer){id, text(o, "activationId"), due};
    }
    return true;
}

/* The run's position and, in 0.2, every branch's that has one. */
static bool parse_positions(sv_state *s)
{
    const json_t *root = json_object_get(s->doc, "position");
    size_t room = 1 + (json_is_object(s->branches) ? json_object_size(s->branches) : 0);
    s->positions = calloc(room, sizeof *s->positions);
    if (!s->positions)
        return false;
    if (json_is_object(root))
        s->positions[s->npositions++] =
            (sv_position){text(root, "nodeId"), text(root, "activationId"), NULL, NULL};
    const char *key;
    json_t *b;
    json_object_foreach((json_t *)s->branches, key, b) {
        const json_t *at = json_object_get(b, "position");
        if (json_is_object(at))
            s->positions[s->npositions++] = (sv_position){
                text(at, "nodeId"), text(at, "activationId"), key, text(b, "parallel")};
    }
    for (size_t i = 0; i < s->npositions; i++)
        if (!s->positions[i].node_id || !s->positions[i].activation_id)
            return false;
    return true;
}

static bool parse_02(sv_state *s)
{
    s->branches = json_object_get(s->doc, "branches");
    s->maps = json_object_get(s->doc, "maps");
    return parse_positions(s) && parse_invocations(s, json_object_get(s->doc, "invocations")) &&
           parse_waits(s, json_object_get(s->doc, "waits")) &&
           parse_timers(s, json_object_get(s->doc, "timers"));
}

int sv_parse(const char *snapshot, size_t len, sv_state *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    out->doc = snapshot ? sp_json_parse(snapshot, len, NULL) : NULL;
    const char *format = text(out->doc, "format");
    out->status = text(out->doc, "status");
    out->result = json_object_get(out->doc, "result");
    out->nodes = json_object_get(out->doc, "nodes");
    out->visits = json_object_get(out->doc, "visits");
    out->v02 = format && strcmp(format, STATE_02) == 0;
    bool ok = format && out->status &&
              (out->v02 ? parse_02(out)
                        : strcmp(format, STATE_01) == 0 && parse_positions(out) && parse_01(out));
    if (ok)
        return 0;
    sv_free(out);
    return sp_fail(err, "store.corrupt", "a run snapshot is not a state this spore reads");
}

void sv_free(sv_state *s)
{
    free(s->invocations);
    free(s->waits);
    free(s->timers);
    free(s->positions);
    json_decref(s->doc);
    memset(s, 0, sizeof *s);
}

const sv_invocation *sv_invocation_of(const sv_state *s, const char *invocation_id)
{
    for (size_t i = 0; invocation_id && i < s->ninvocations; i++)
        if (strcmp(s->invocations[i].invocation_id, invocation_id) == 0)
            return &s->invocations[i];
    return NULL;
}

const sv_timer *sv_next_timer(const sv_state *s)
{
    const sv_timer *next = NULL;
    for (size_t i = 0; i < s->ntimers; i++)
        if (!next || s->timers[i].due_at_ms < next->due_at_ms)
            next = &s->timers[i];
    return next;
}

bool sv_status_is(const sv_state *s, const char *status)
{
    return s->status && strcmp(s->status, status) == 0;
}
