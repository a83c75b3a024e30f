/*
 * state02.c - the run snapshot `spore.state/0.2` (docs/kernel.md §8.4):
 * the initial state of a 0.2 run, the typed decode of every member and the
 * consistency checks between them and the graph: every position belongs
 * to a live node of the right kind with its record (invocation, wait,
 * timer, map, branches), and every record belongs to a position.
 *
 * Must never accept a snapshot that contradicts itself or the graph: run02.c
 * and its modules rely on every invariant checked here (a kept state is
 * one the kernel itself produced). Must never report anything but
 * state.invalid for a 0.2 document that fails a check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/decimal.h"
#include "json/json.h"
#include "kernel/internal.h"

#define SIGNAL_BUFFER_MAX 64

static int invalid(kfail *f, const char *what)
{
    return kfail_set(f, "invalid-input", "state.invalid", "%s", what);
}

static bool str(const json_t *o, const char *name) { return json_is_string(json_object_get(o, name)); }

static bool u32(const json_t *o, const char *name, uint32_t *out)
{
    return kjson_u32(json_object_get(o, name), out);
}

/* Every member of an object satisfies `ok`, and is keyed by its `key_member`. */
static bool each(const json_t *obj, const char *key_member, bool (*ok)(const json_t *))
{
    if (!json_is_object(obj))
        return false;
    const char *key;
    size_t len;
    json_t *v;
    json_object_keylen_foreach((json_t *)obj, key, len, v)
    {
        const json_t *k = key_member ? json_object_get(v, key_member) : NULL;
        if (!ok(v) || (key_member && (!json_is_string(k) || json_string_length(k) != len ||
                                      memcmp(json_string_value(k), key, len) != 0)))
            return false;
    }
    return true;
}

/* ---- typed members ---- */

static bool streak_ok(const json_t *v)
{
    static const char *const names[] = {"outcome", "count", NULL};
    uint32_t count;
    return kjson_members_exactly(v, names) && str(v, "outcome") && u32(v, "count", &count) &&
           count >= 1;
}

static bool arrived_ok(const json_t *a)
{
    static const char *const names[] = {"node", "outcome", "output", NULL};
    return json_is_null(a) || (kjson_members_exactly(a, names) && str(a, "node") && str(a, "outcome"));
}

static bool branch_ok(const json_t *v)
{
    static const char *const names[] = {"branch", "parallel", "position", "arrived", NULL};
    const json_t *pos = json_object_get(v, "position"), *arrived = json_object_get(v, "arrived");
    return kjson_members_exactly(v, names) && str(v, "branch") && str(v, "parallel") &&
           ks_position_ok(pos) && arrived_ok(arrived) && json_is_null(pos) != json_is_null(arrived);
}

static bool invocation_ok(const json_t *v)
{
    static const char *const names[] = {"invocationId", "activationId", "nodeId", "actionId",
                                        "attempt",      "state",        "inputDigest", NULL};
    static const char *const stuck_names[] = {"invocationId", "activationId", "nodeId",
                                              "actionId",     "attempt",      "state",
                                              "inputDigest",  "error",        NULL};
    kinv_state state = k_inv_state(v);
    bool stuck = state == INV_STUCK;
    uint32_t attempt;
    if (!kjson_members_exactly(v, stuck ? stuck_names : names))
        return false;
    if (stuck && !ks_error_info_exact(json_object_get(v, "error")))
        return false;
    return state != INV_INVALID &&
           str(v, "invocationId") && str(v, "activationId") && str(v, "nodeId") &&
           str(v, "actionId") && str(v, "inputDigest") && u32(v, "attempt", &attempt) &&
           attempt >= 1;
}

static bool wait_ok(const json_t *v)
{
    static const char *const names[] = {"activationId", "nodeId", "signal", "timerId", NULL};
    const json_t *timer = json_object_get(v, "timerId");
    return kjson_members_exactly(v, names) && str(v, "activationId") && str(v, "nodeId") &&
           str(v, "signal") && (json_is_null(timer) || json_is_string(timer));
}

static bool timer_ok(const json_t *v)
{
    static const char *const names[] = {"timerId", "activationId", "dueAtMs", NULL};
    return kjson_members_exactly(v, names) && str(v, "timerId") && str(v, "activationId") &&
           ks_is_decimal(json_object_get(v, "dueAtMs"));
}

static bool map_ok(const json_t *v)
{
    static const char *const names[] = {"activationId", "node", "total", "done", "running",
                                        "next",         "items", "results", NULL};
    uint32_t total, done, running, next;
    const json_t *items = json_object_get(v, "items"), *results = json_object_get(v, "results");
    if (!kjson_members_exactly(v, names) || !str(v, "activationId") || !str(v, "node") ||
        !u32(v, "total", &total) || !u32(v, "done", &done) || !u32(v, "running", &running) ||
        !u32(v, "next", &next) || !json_is_array(items) || !json_is_array(results))
        return false;
    if (json_array_size(items) != total || json_array_size(results) != total || total == 0 ||
        next > total || (uint64_t)done + running != next)
        return false;
    size_t settled = 0;
    for (size_t i = 0; i < total; i++) {
        const json_t *r = json_array_get(results, i);
        static const char *const rnames[] = {"outcome", "output", NULL};
        if (json_is_null(r))
            continue;
        if (i >= next || !kjson_members_exactly(r, rnames) || !str(r, "outcome"))
            return false;
        settled++;
    }
    return settled == done;
}

static bool wait_order_ok(const json_t *order, const json_t *waits)
{
    if (!json_is_array(order) || json_array_size(order) != json_object_size(waits))
        return false;
    for (size_t i = 0; i < json_array_size(order); i++) {
        const json_t *a = json_array_get(order, i);
        if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a) ||
            !json_object_get(waits, json_string_value(a)))
            return false;
        for (size_t j = 0; j < i; j++)
            if (json_equal(a, json_array_get(order, j)))
                return false;
    }
    return true;
}

static int typed(const json_t *s, kfail *f)
{
    static const char *const names[] = {
        "format",  "semantics", "tenant",      "runId",       "status",    "input",
        "nodes",   "visits",    "activations", "signals",     "streaks",   "position",
        "branches", "invocations", "waits",    "waitOrder",   "timers",    "maps",
        "result",  "lastSequence", "lastAcceptedAtMs", NULL};
    uint32_t activations;
    if (!kjson_members_exactly(s, names))
        return invalid(f, "the snapshot's members are not those of spore.state/0.2");
    if (k_run_status(json_object_get(s, "status")) == RUN_INVALID || !str(s, "tenant") || !str(s, "runId") ||
        !ks_node_records_ok(json_object_get(s, "nodes")) ||
        !ks_visits_ok(json_object_get(s, "visits")) || !u32(s, "activations", &activations) ||
        !ks_signals_ok(json_object_get(s, "signals")) ||
        !each(json_object_get(s, "streaks"), NULL, streak_ok) ||
        !ks_position_ok(json_object_get(s, "position")) ||
        !each(json_object_get(s, "branches"), NULL, branch_ok) ||
        !each(json_object_get(s, "invocations"), "invocationId", invocation_ok) ||
        !each(json_object_get(s, "waits"), "activationId", wait_ok) ||
        !wait_order_ok(json_object_get(s, "waitOrder"), json_object_get(s, "waits")) ||
        !each(json_object_get(s, "timers"), "timerId", timer_ok) ||
        !each(json_object_get(s, "maps"), "activationId", map_ok) ||
        !ks_result_ok(json_object_get(s, "result")) ||
        !ks_is_decimal(json_object_get(s, "lastSequence")) ||
        !ks_is_decimal(json_object_get(s, "lastAcceptedAtMs")))
        return invalid(f, "a snapshot member has the wrong type");
    return 0;
}

/* ---- consistency ---- */

typedef struct cx {
    const sp_workflow *wf;
    const json_t *s;
    const char *tenant, *run;
    size_t positions; /* positions walked */
} cx;

static const json_t *member(const cx *c, const char *name) { return json_object_get(c->s, name); }

static bool derived(const cx *c, const char *prefix, const char *activation, const json_t *id)
{
    char want[SP_ID_LEN + 1];
    if (strcmp(prefix, "inv_") == 0) {
        sp_invocation_id(c->tenant, c->run, activation, want);
    } else {
        sp_part p[3] = {{c->tenant, strlen(c->tenant)},
                        {c->run, strlen(c->run)},
                        {activation, strlen(activation)}};
        sp_derive_id("tmr_", "timer", p, 3, want);
    }
    return kjson_str_is(id, want);
}

/* Every branch of the parallel node has its entry, and nothing else. */
static bool branches_of(const cx *c, const sp_node *node, const char *activation)
{
    size_t n = 0;
    const char *key;
    json_t *b;
    json_object_foreach((json_t *)member(c, "branches"), key, b)
    {
        if (!kjson_str_is(json_object_get(b, "parallel"), activation))
            continue;
        const json_t *name = json_object_get(b, "branch");
        if (!json_object_getn(node->branches, json_string_value(name), json_string_length(name)))
            return false;
        n++;
    }
    return n == json_object_size(node->branches);
}

/* The record a position of `node` at `activation` must have. */
static bool position_records(const cx *c, const sp_node *node, const char *activation)
{
    char id[SP_ID_LEN + 1];
    switch (node->kind) {
    case SP_NODE_ACTIVITY: {
        sp_invocation_id(c->tenant, c->run, activation, id);
        const json_t *inv = json_object_get(member(c, "invocations"), id);
        return inv && kjson_str_is(json_object_get(inv, "activationId"), activation) &&
               kjson_str_is(json_object_get(inv, "nodeId"), node->id) &&
               kjson_str_is(json_object_get(inv, "actionId"), node->action_id);
    }
    case SP_NODE_AWAIT_SIGNAL: {
        const json_t *w = json_object_get(member(c, "waits"), activation);
        const json_t *timer = json_object_get(w, "timerId");
        return w && kjson_str_is(json_object_get(w, "nodeId"), node->id) &&
               kjson_str_is(json_object_get(w, "signal"), node->signal) &&
               (node->has_timeout ? derived(c, "tmr_", activation, timer) &&
                                        json_object_get(member(c, "timers"), json_string_value(timer))
                                  : json_is_null(timer));
    }
    case SP_NODE_SLEEP: {
        sp_part p[3] = {{c->tenant, strlen(c->tenant)},
                        {c->run, strlen(c->run)},
                        {activation, strlen(activation)}};
        sp_derive_id("tmr_", "timer", p, 3, id);
        return json_object_get(member(c, "timers"), id) != NULL;
    }
    case SP_NODE_MAP: {
        const json_t *m = json_object_get(member(c, "maps"), activation);
        return m && kjson_str_is(json_object_get(m, "node"), node->id);
    }
    case SP_NODE_PARALLEL: return branches_of(c, node, activation);
    default: return false; /* join, complete, fail are never a position */
    }
}

static int check_position(cx *c, const json_t *pos, kfail *f)
{
    const json_t *node_id = json_object_get(pos, "nodeId");
    const sp_node *node = strlen(json_string_value(node_id)) == json_string_length(node_id)
                              ? sp_workflow_node(c->wf, json_string_value(node_id))
                              : NULL;
    if (!node)
        return invalid(f, "a position names no node");
    uint32_t visit = 0, visits = 0;
    kjson_u32(json_object_get(pos, "visit"), &visit);
    const json_t *counted = json_object_get(member(c, "visits"), node->id);
    if (visit == 0 || !kjson_u32(counted, &visits) || visits != visit)
        return invalid(f, "a position's visit is 0 or differs from visits[node]");
    char activation[160];
    snprintf(activation, sizeof activation, "%s/%u", node->id, visit);
    if (!kjson_str_is(json_object_get(pos, "activationId"), activation))
        return invalid(f, "a position's activationId is not <node>/<visit>");
    if (!position_records(c, node, activation))
        return invalid(f, "a position's record (invocation, wait, timer, map, branches) is missing");
    c->positions++;
    return 0;
}

static bool position_at(const cx *c, const json_t *pos, const char *activation, int kind)
{
    if (!json_is_object(pos) || !kjson_str_is(json_object_get(pos, "activationId"), activation))
        return false;
    const sp_node *n = sp_workflow_node(c->wf, json_string_value(json_object_get(pos, "nodeId")));
    return n && (int)n->kind == kind;
}

/* Is some position (root or branch) at `activation` of a node of `kind`? */
static bool positioned(const cx *c, const char *activation, int kind)
{
    if (position_at(c, member(c, "position"), activation, kind))
        return true;
    const char *key;
    json_t *b;
    json_object_foreach((json_t *)member(c, "branches"), key, b)
    {
        if (position_at(c, json_object_get(b, "position"), activation, kind))
            return true;
    }
    return false;
}

static bool split_item(const char *item, char map[160], uint32_t *index)
{
    const char *hash = strchr(item, '#');
    if (!hash || (size_t)(hash - item) >= 160 || !hash[1] || (hash[1] == '0' && hash[2]))
        return false;
    for (const char *d = hash + 1; *d; d++)
        if (*d < '0' || *d > '9' || d - hash > 4)
            return false;
    memcpy(map, item, (size_t)(hash - item));
    map[hash - item] = '\0';
    *index = (uint32_t)strtoul(hash + 1, NULL, 10);
    return true;
}

static int check_invocations(cx *c, kfail *f)
{
    const char *key;
    json_t *inv;
    json_object_foreach((json_t *)member(c, "invocations"), key, inv)
    {
        const char *activation = json_string_value(json_object_get(inv, "activationId"));
        if (strlen(activation) != json_string_length(json_object_get(inv, "activationId")) ||
            !derived(c, "inv_", activation, json_object_get(inv, "invocationId")))
            return invalid(f, "an invocation ID is not the derived one");
        char map[160];
        uint32_t index;
        if (strchr(activation, '#')) {
            const json_t *m = split_item(activation, map, &index)
                                  ? json_object_get(member(c, "maps"), map)
                                  : NULL;
            uint32_t next = 0;
            kjson_u32(json_object_get(m, "next"), &next);
            if (!m || index >= next || !json_is_null(json_array_get(json_object_get(m, "results"), index)) ||
                !kjson_str_is(json_object_get(inv, "nodeId"), json_string_value(json_object_get(m, "node"))))
                return invalid(f, "a map item invocation does not belong to a map");
            const sp_node *n = sp_workflow_node(c->wf, json_string_value(json_object_get(m, "node")));
            if (!n || !kjson_str_is(json_object_get(inv, "actionId"), n->action_id))
                return invalid(f, "a map item invocation has another action");
        } else if (!positioned(c, activation, SP_NODE_ACTIVITY)) {
            return invalid(f, "an invocation does not belong to a position");
        }
    }
    return 0;
}

static int check_maps(cx *c, kfail *f)
{
    const char *key;
    json_t *m;
    json_object_foreach((json_t *)member(c, "maps"), key, m)
    {
        if (!positioned(c, key, SP_NODE_MAP))
            return invalid(f, "a map does not belong to a position");
        uint32_t running = 0, next = 0, in_flight = 0;
        kjson_u32(json_object_get(m, "running"), &running);
        kjson_u32(json_object_get(m, "next"), &next);
        const sp_node *n = sp_workflow_node(c->wf, json_string_value(json_object_get(m, "node")));
        for (uint32_t i = 0; i < next; i++) {
            char item[180], id[SP_ID_LEN + 1];
            snprintf(item, sizeof item, "%s#%u", key, i);
            sp_invocation_id(c->tenant, c->run, item, id);
            if (json_object_get(member(c, "invocations"), id))
                in_flight++;
        }
        if (!n || in_flight != running || running > n->max_concurrency)
            return invalid(f, "a map's running count differs from its items in flight");
    }
    return 0;
}

static int check_records(cx *c, kfail *f)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)member(c, "waits"), key, v)
    {
        if (!positioned(c, key, SP_NODE_AWAIT_SIGNAL))
            return invalid(f, "a wait does not belong to a position");
    }
    json_object_foreach((json_t *)member(c, "timers"), key, v)
    {
        const char *activation = json_string_value(json_object_get(v, "activationId"));
        if (strlen(activation) != json_string_length(json_object_get(v, "activationId")) ||
            !derived(c, "tmr_", activation, json_object_get(v, "timerId")) ||
            !(positioned(c, activation, SP_NODE_SLEEP) ||
              positioned(c, activation, SP_NODE_AWAIT_SIGNAL)))
            return invalid(f, "a timer does not belong to a position");
    }
    json_object_foreach((json_t *)member(c, "branches"), key, v)
    {
        const char *parallel = json_string_value(json_object_get(v, "parallel"));
        char want[200];
        snprintf(want, sizeof want, "%s:%s", parallel, json_string_value(json_object_get(v, "branch")));
        if (strcmp(want, key) != 0 || !positioned(c, parallel, SP_NODE_PARALLEL))
            return invalid(f, "a branch does not belong to a parallel activation");
        const json_t *pos = json_object_get(v, "position");
        if (json_is_object(pos) && check_position(c, pos, f))
            return -1;
    }
    return 0;
}

static int check_terminal(const json_t *s, kfail *f)
{
    static const char *const empty[] = {"branches", "invocations", "waits", "timers", "maps", NULL};
    for (const char *const *e = empty; *e; e++)
        if (json_object_size(json_object_get(s, *e)))
            return invalid(f, "a terminal state has something in flight");
    bool completed = k_run_status(json_object_get(s, "status")) == RUN_COMPLETED;
    if (!json_is_null(json_object_get(s, "position")) || json_array_size(json_object_get(s, "waitOrder")) ||
        !json_object_get(json_object_get(s, "result"), completed ? "output" : "error"))
        return invalid(f, "a terminal state has no position and the right result");
    return 0;
}

krun_status k02_derived_status(const json_t *state)
{
    bool scheduled = false, intervention = false;
    const char *key;
    json_t *inv;
    json_object_foreach((json_t *)json_object_get(state, "invocations"), key, inv)
    {
        if (k_inv_state(inv) == INV_SCHEDULED)
            scheduled = true;
        else
            intervention = true;
    }
    bool waits = json_object_size(json_object_get(state, "waits")) ||
                 json_object_size(json_object_get(state, "timers"));
    return scheduled      ? RUN_RUNNING
           : intervention ? RUN_NEEDS_INTERVENTION
           : waits        ? RUN_WAITING
                          : RUN_INVALID;
}

int kstate02_check(const sp_workflow *wf, const json_t *s, kfail *f)
{
    if (typed(s, f))
        return -1;
    if (json_array_size(json_object_get(s, "signals")) > SIGNAL_BUFFER_MAX)
        return invalid(f, "more than 64 buffered signals");
    if (k_run_terminal(k_run_status(json_object_get(s, "status"))))
        return check_terminal(s, f);
    cx c = {wf, s, json_string_value(json_object_get(s, "tenant")),
            json_string_value(json_object_get(s, "runId")), 0};
    if (!json_is_null(json_object_get(s, "result")) || json_is_null(json_object_get(s, "position")))
        return invalid(f, "a live state has a position and no result");
    if (strlen(c.tenant) != json_string_length(json_object_get(s, "tenant")) ||
        strlen(c.run) != json_string_length(json_object_get(s, "runId")))
        return invalid(f, "tenant and runId hold no NUL");
    if (check_position(&c, json_object_get(s, "position"), f) || check_records(&c, f) ||
        check_invocations(&c, f) || check_maps(&c, f))
        return -1;
    krun_status want = k02_derived_status(s);
    if (want == RUN_INVALID || k_run_status(json_object_get(s, "status")) != want)
        return invalid(f, "the status is not the one its invocations, waits and timers give");
    return 0;
}

json_t *kstate02_initial(const json_t *tenant, const json_t *run_id, const json_t *input)
{
    return json_pack("{s:s,s:s,s:O,s:O,s:s,s:O,s:{},s:{},s:i,s:[],s:{},s:n,s:{},s:{},s:{},s:[],"
                     "s:{},s:{},s:n,s:s,s:s}",
                     "format", SP_STATE_FORMAT_02, "semantics", SP_SEMANTICS_VERSION_02, "tenant",
                     tenant, "runId", run_id, "status", "running", "input", input, "nodes",
                     "visits", "activations", 0, "signals", "streaks", "position", "branches",
                     "invocations", "waits", "waitOrder", "timers", "maps", "result",
                     "lastSequence", "0", "lastAcceptedAtMs", "0");
}
