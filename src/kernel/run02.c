/*
 * run02.c - semantics 0.2 (workflows-0.2.md §2-7, kernel.md §4): the six
 * events, Enter and Route over strands, loop limits, stuck steps, signals
 * taken by the activation that began waiting first, cancellation, the
 * terminal states and the status precedence. Parallel branches, map items
 * and timers are parallel.c, map.c and timers.c; what 0.1 and 0.2 share
 * (admission, mappings, scheduling, judging a result, retry, taking a
 * signal) is core.c.
 *
 * Must never recurse without a bound (hops are followed in a loop, nesting
 * is at most 8 parallels deep), emit a schedule or retry after the run is
 * terminal (K11), iterate an unordered collection where the order shows
 * (sorted members only), or invent an ID.
 */
#include <stdlib.h>
#include <string.h>

#include "json/decimal.h"
#include "json/json.h"
#include "kernel/run02.h"

#define SIGNAL_BUFFER_MAX 64

/* ---- hops and the work stack ---- */

typedef struct kwork {
    khop *h;
    size_t n, cap;
} kwork;

void khop_set(kt *t, khop *h, const char *sid, const sp_node *node, uint32_t visit,
              json_t *outcome, json_t *output)
{
    khop_clear(h);
    if (!outcome || !output) {
        json_decref(outcome);
        json_decref(output);
        t->oom = true;
        return;
    }
    h->route = true;
    snprintf(h->sid, sizeof h->sid, "%s", sid);
    h->node = node;
    h->visit = visit;
    h->outcome = outcome;
    h->output = output;
}

void khop_clear(khop *h)
{
    json_decref(h->outcome);
    json_decref(h->output);
    memset(h, 0, sizeof *h);
}

static int push(kt *t, khop *h)
{
    kwork *w = t->work;
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 8;
        khop *nh = realloc(w->h, cap * sizeof *nh);
        if (!nh)
            return k_oom(t);
        w->h = nh;
        w->cap = cap;
    }
    w->h[w->n++] = *h;
    memset(h, 0, sizeof *h); /* the stack holds the references now */
    return 0;
}

int r02_push_enter(kt *t, const char *sid, const char *node_id)
{
    khop h = {0};
    h.route = true;
    snprintf(h.sid, sizeof h.sid, "%s", sid);
    h.enter = node_id;
    return push(t, &h);
}

/* ---- strands ---- */

static bool is_root(const char *sid) { return sid[0] == '\0'; }

json_t *s02_pos(kt *t, const char *sid)
{
    json_t *pos = is_root(sid) ? kt_st(t, "position")
                               : json_object_get(json_object_get(kt_st(t, "branches"), sid),
                                                 "position");
    return json_is_object(pos) ? pos : NULL;
}

static void set_pos_value(kt *t, const char *sid, json_t *pos)
{
    if (is_root(sid))
        kt_set(t, "position", pos);
    else
        kt_obj_set(t, json_object_get(kt_st(t, "branches"), sid), "position", pos);
}

void s02_set_pos(kt *t, const char *sid, const sp_node *node, const char *activation,
                 uint32_t visit)
{
    set_pos_value(t, sid, json_pack("{s:s,s:s,s:I}", "nodeId", node->id, "activationId",
                                    activation, "visit", (json_int_t)visit));
}

void s02_clear_pos(kt *t, const char *sid) { set_pos_value(t, sid, json_null()); }

const char *s02_pos_activation(const json_t *pos)
{
    return json_string_value(json_object_get(pos, "activationId"));
}

uint32_t s02_pos_visit(const json_t *pos) { return k_u32(json_object_get(pos, "visit")); }

const sp_node *s02_pos_node(kt *t, const json_t *pos)
{
    const char *id = json_string_value(json_object_get(pos, "nodeId"));
    return id ? sp_workflow_node(t->wf, id) : NULL;
}

/* The positions are unique by activation, so the walk order of `branches`
 * cannot change the answer. */
bool s02_find(kt *t, const char *activation, char sid[SID_MAX])
{
    const json_t *pos = s02_pos(t, "");
    if (pos && kjson_str_is(json_object_get(pos, "activationId"), activation)) {
        sid[0] = '\0';
        return true;
    }
    const char *key;
    json_t *b;
    json_object_foreach(kt_st(t, "branches"), key, b)
    {
        pos = json_object_get(b, "position");
        if (json_is_object(pos) && kjson_str_is(json_object_get(pos, "activationId"), activation)) {
            snprintf(sid, SID_MAX, "%s", key);
            return true;
        }
    }
    return false;
}

/* ---- invocations ---- */

json_t *r02_invocation(kt *t, const char *invocation_id)
{
    return json_object_get(kt_st(t, "invocations"), invocation_id);
}

void r02_invocation_drop(kt *t, const char *invocation_id)
{
    json_object_del(kt_st(t, "invocations"), invocation_id);
}

int r02_cancel_invocation(kt *t, const char *invocation_id)
{
    json_t *inv = r02_invocation(t, invocation_id);
    if (!inv)
        return 0;
    json_t *payload = json_pack("{s:s}", "invocationId", invocation_id);
    int rc = k_command(t, "activity.cancel",
                       json_string_value(json_object_get(inv, "activationId")), "cancel", payload);
    r02_invocation_drop(t, invocation_id);
    return rc;
}

int r02_stuck(kt *t, const sp_node *node, json_t *inv, json_t *error)
{
    kt_obj_set(t, inv, "state", json_string("stuck"));
    kt_obj_set(t, inv, "error", json_incref(error));
    json_t *details = json_pack("{s:O,s:O,s:O}", "attempt", json_object_get(inv, "attempt"),
                                "error", error, "invocationId", json_object_get(inv, "invocationId"));
    json_decref(error);
    if (t->oom) {
        json_decref(details);
        return k_oom(t);
    }
    return k_diagnose(t, "invocation.stuck", node->id, details);
}

/* ---- terminal states ---- */

static bool is_terminal(kt *t) { return k_run_terminal(k_run_status(kt_st(t, "status"))); }

int r02_terminate(kt *t, const char *status, json_t *result)
{
    if (!result)
        return k_oom(t);
    int rc = p02_cancel_strand(t, "");
    /* nothing may outlive the run: what the strands did not reach (none,
     * when the state is consistent) is cancelled in ID order */
    bool oom = false;
    json_t *invs = kt_st(t, "invocations");
    size_t n = json_object_size(invs);
    sp_json_member *left = rc ? NULL : sp_json_sorted_members(invs, &oom);
    for (size_t i = 0; i < n && rc == 0 && !oom; i++)
        rc = k_command(t, "activity.cancel",
                       json_string_value(json_object_get(left[i].value, "activationId")), "cancel",
                       json_pack("{s:O}", "invocationId", json_object_get(left[i].value,
                                                                          "invocationId")));
    free(left);
    json_t *timers = kt_st(t, "timers");
    n = json_object_size(timers);
    left = rc || oom ? NULL : sp_json_sorted_members(timers, &oom);
    for (size_t i = 0; i < n && rc == 0 && !oom; i++)
        rc = k_command(t, "timer.cancel",
                       json_string_value(json_object_get(left[i].value, "activationId")),
                       "timer.cancel", json_pack("{s:O}", "timerId",
                                                 json_object_get(left[i].value, "timerId")));
    free(left);
    if (rc || oom) {
        json_decref(result);
        return rc ? rc : k_oom(t);
    }
    kt_set(t, "status", json_string(status));
    kt_set(t, "result", result);
    kt_set(t, "position", json_null());
    kt_set(t, "branches", json_object());
    kt_set(t, "invocations", json_object());
    kt_set(t, "maps", json_object());
    kt_set(t, "timers", json_object());
    kt_set(t, "waits", json_object());
    kt_set(t, "waitOrder", json_array());
    return t->oom ? k_oom(t) : 0;
}

int r02_terminate_failed(kt *t, json_t *error)
{
    if (!error)
        return k_oom(t);
    return r02_terminate(t, "failed", json_pack("{s:o}", "error", error));
}

int r02_strand_failed(kt *t, const char *sid, json_t *error, khop *next)
{
    char cur[SID_MAX];
    snprintf(cur, sizeof cur, "%s", sid);
    while (!is_root(cur)) {
        json_t *up = NULL;
        char parent[SID_MAX];
        if (p02_branch_failed(t, cur, error, next, &up, parent))
            return -1;
        if (!up)
            return 0;
        error = up;
        memcpy(cur, parent, sizeof cur);
    }
    return r02_terminate_failed(t, error);
}

/* ---- Route (kernel.md §4: loop limits) ---- */

/* The target of `outcome` from `node`, through the node's loop limits
 * (*target NULL: the outcome is not routed). */
static int limited_route(kt *t, const sp_node *node, const json_t *outcome, const char **target)
{
    const char *o = json_string_value(outcome);
    size_t len = json_string_length(outcome);
    json_t *streaks = kt_st(t, "streaks");
    const json_t *streak = json_object_get(streaks, node->id);
    const json_t *limit = node->loop_limits ? json_object_getn(node->loop_limits, o, len) : NULL;
    if (!limit) {
        if (streak)
            json_object_del(streaks, node->id);
        *target = sp_node_route(node, o, len);
        return 0;
    }
    uint32_t n = k_u32(limit);
    uint32_t count = streak && json_equal(json_object_get(streak, "outcome"), outcome)
                         ? k_u32(json_object_get(streak, "count"))
                         : 0;
    if (count >= n) {
        json_object_del(streaks, node->id);
        *target = sp_node_route(node, "exhausted", 9);
        return k_diagnose(t, "loop.exhausted", node->id,
                          json_pack("{s:O,s:O}", "limit", limit, "outcome", outcome));
    }
    kt_obj_set(t, streaks, node->id,
               json_pack("{s:I,s:O}", "count", (json_int_t)count + 1, "outcome", outcome));
    *target = sp_node_route(node, o, len);
    return t->oom ? k_oom(t) : 0;
}

static int route(kt *t, const khop *h, khop *next)
{
    k_record(t, h->node, h->visit, h->outcome, h->output);
    const char *target = NULL;
    if (limited_route(t, h->node, h->outcome, &target))
        return -1;
    if (t->oom)
        return k_oom(t);
    if (!target)
        return k_invariant(t, "an unrouted outcome");
    if (!is_root(h->sid) && p02_is_own_join(t, h->sid, target))
        return p02_arrive(t, h->sid, h->node, h->outcome, h->output, next);
    return r02_enter(t, h->sid, target, next);
}

int r02_drive(kt *t, khop *hop)
{
    kwork w = {0};
    void *saved = t->work;
    t->work = &w;
    int rc = push(t, hop);
    while (rc == 0 && w.n > 0) {
        khop h = w.h[--w.n], next = {0};
        if (is_terminal(t))
            ; /* the run ended: what is queued is moot */
        else if (h.enter)
            rc = is_root(h.sid) || p02_branch_waiting(t, h.sid) ? r02_enter(t, h.sid, h.enter, &next)
                                                               : 0;
        else
            rc = route(t, &h, &next);
        khop_clear(&h);
        if (rc == 0 && next.route)
            rc = push(t, &next);
        khop_clear(&next);
    }
    while (w.n > 0)
        khop_clear(&w.h[--w.n]);
    free(w.h);
    t->work = saved;
    return rc;
}

/* ---- Enter ---- */

static int enter_activity(kt *t, const char *sid, const sp_node *node, const char *activation,
                          uint32_t visit)
{
    json_t *input, *error, *inv;
    int rc = k_evaluate(t, node, node->mapping, NULL, -1, &input, &error);
    if (rc)
        return rc < 0 ? -1 : r02_terminate_failed(t, error);
    rc = k_schedule(t, node, activation, input, &inv);
    json_decref(input);
    if (rc) {
        json_decref(inv);
        return -1;
    }
    kt_obj_set(t, kt_st(t, "invocations"), json_string_value(json_object_get(inv, "invocationId")),
               inv);
    s02_set_pos(t, sid, node, activation, visit);
    return t->oom ? k_oom(t) : 0;
}

static int enter_await(kt *t, const char *sid, const sp_node *node, const char *activation,
                       uint32_t visit, khop *next)
{
    s02_set_pos(t, sid, node, activation, visit);
    int rc;
    json_t *outcome, *data;
    if (k_consume(t, node, &rc, &outcome, &data)) {
        khop_set(t, next, sid, node, visit, outcome, data);
        return t->oom ? k_oom(t) : 0;
    }
    if (rc)
        return -1;
    char timer_id[SP_ID_LEN + 1];
    if (node->has_timeout) {
        if (node->timeout_ms > SP_U63_MAX - t->now)
            return k_budget(t, "budget.counter-range", "dueAtMs would pass 2^63-1");
        t02_timer_id(t, activation, timer_id);
        if (t02_start(t, activation, t->now + node->timeout_ms))
            return -1;
    }
    kt_obj_set(t, kt_st(t, "waits"), activation,
               json_pack("{s:s,s:s,s:s,s:s?}", "activationId", activation, "nodeId", node->id,
                         "signal", node->signal, "timerId",
                         node->has_timeout ? timer_id : NULL));
    if (json_array_append_new(kt_st(t, "waitOrder"), json_string(activation)))
        t->oom = true;
    return t->oom ? k_oom(t) : 0;
}

static int enter_complete(kt *t, const sp_node *node)
{
    json_t *value, *error;
    int rc = k_evaluate(t, node, node->mapping, NULL, -1, &value, &error);
    if (rc)
        return rc < 0 ? -1 : r02_terminate_failed(t, error);
    return r02_terminate(t, "completed", json_pack("{s:o}", "output", value));
}

int r02_enter(kt *t, const char *sid, const char *node_id, khop *next)
{
    const sp_node *node = sp_workflow_node(t->wf, node_id);
    if (!node) {
        if (k_microstep(t))
            return -1;
        return k_invariant(t, "route to no node");
    }
    uint32_t visit;
    char activation[160];
    json_t *limit;
    int rc = k_admit(t, node, &visit, activation, &limit);
    if (rc)
        return rc < 0 ? -1 : r02_terminate_failed(t, limit);
    switch (node->kind) {
    case SP_NODE_ACTIVITY: return enter_activity(t, sid, node, activation, visit);
    case SP_NODE_AWAIT_SIGNAL: return enter_await(t, sid, node, activation, visit, next);
    case SP_NODE_COMPLETE:
        return is_root(sid) ? enter_complete(t, node)
                            : k_invariant(t, "a branch entered a complete node");
    case SP_NODE_FAIL: return r02_strand_failed(t, sid, k_node_error(node), next);
    case SP_NODE_PARALLEL: return p02_enter(t, sid, node, activation, visit, next);
    case SP_NODE_MAP: return m02_enter(t, sid, node, activation, visit, next);
    case SP_NODE_SLEEP: return t02_enter_sleep(t, sid, node, activation, visit);
    case SP_NODE_JOIN: return k_invariant(t, "a join entered other than by its branches");
    }
    return k_invariant(t, "unknown node kind");
}

/* ---- activity.result and invocation.resolved ---- */

/* The invocation's activity: its strand and visit. */
static int activity_of(kt *t, const json_t *inv, const sp_node **node, char sid[SID_MAX],
                       uint32_t *visit)
{
    const char *activation = json_string_value(json_object_get(inv, "activationId"));
    *node = sp_workflow_node(t->wf, json_string_value(json_object_get(inv, "nodeId")));
    if (!*node || !activation || !s02_find(t, activation, sid))
        return k_invariant(t, "an invocation without its activity's position");
    *visit = s02_pos_visit(s02_pos(t, sid));
    return 0;
}

static int settle_success(kt *t, json_t *inv, const json_t *outcome, const json_t *output,
                          khop *next)
{
    const char *activation = json_string_value(json_object_get(inv, "activationId"));
    if (m02_is_item(activation))
        return m02_item_succeeded(t, inv, outcome, output, next);
    const sp_node *node;
    char sid[SID_MAX];
    uint32_t visit;
    if (activity_of(t, inv, &node, sid, &visit))
        return -1;
    r02_invocation_drop(t, json_string_value(json_object_get(inv, "invocationId")));
    khop_set(t, next, sid, node, visit, json_incref((json_t *)outcome),
             json_incref((json_t *)output));
    return t->oom ? k_oom(t) : 0;
}

/* Fail the invocation (0.2): the failed route, else stuck; `terminal` (an
 * operator's fail) ends the run instead of making it stuck. */
static int settle_failure(kt *t, json_t *inv, json_t *error, bool terminal, khop *next)
{
    if (!error)
        return k_oom(t);
    kt_obj_set(t, error, "nodeId", json_incref(json_object_get(inv, "nodeId")));
    const char *activation = json_string_value(json_object_get(inv, "activationId"));
    if (m02_is_item(activation))
        return m02_item_failed(t, inv, error, terminal, next);
    const sp_node *node;
    char sid[SID_MAX];
    uint32_t visit;
    if (activity_of(t, inv, &node, sid, &visit)) {
        json_decref(error);
        return -1;
    }
    if (sp_node_route(node, "failed", 6)) {
        r02_invocation_drop(t, json_string_value(json_object_get(inv, "invocationId")));
        khop_set(t, next, sid, node, visit, json_string("failed"),
                 json_pack("{s:o}", "error", error));
        return t->oom ? k_oom(t) : 0;
    }
    if (terminal) { /* the operator's answer: the run ends, nothing to cancel here */
        r02_invocation_drop(t, json_string_value(json_object_get(inv, "invocationId")));
        return r02_terminate_failed(t, error);
    }
    return r02_stuck(t, node, inv, error);
}

static const sp_node *invocation_node(kt *t, const json_t *inv)
{
    return sp_workflow_node(t->wf, json_string_value(json_object_get(inv, "nodeId")));
}

static int on_result(kt *t, khop *next)
{
    const kevent *ev = t->ev;
    json_t *inv = r02_invocation(t, json_string_value(ev->invocation_id));
    if (inv && strlen(json_string_value(ev->invocation_id)) != json_string_length(ev->invocation_id))
        inv = NULL; /* an ID with NUL names no invocation */
    const sp_node *node = inv ? invocation_node(t, inv) : NULL;
    if (inv && !node)
        return k_invariant(t, "an invocation of no node");
    if (!inv || k_u32(json_object_get(inv, "attempt")) != ev->attempt ||
        k_inv_state(inv) != INV_SCHEDULED)
        return k_diagnose(t, "result.stale", inv ? node->id : NULL,
                          json_pack("{s:I,s:O}", "attempt", (json_int_t)ev->attempt,
                                    "invocationId", ev->invocation_id));
    kjudgement j;
    if (k_judge(t, node->action, ev, &j))
        return -1;
    int rc = -1;
    switch (j.verdict) {
    case KV_SUCCEED: rc = settle_success(t, inv, j.outcome, ev->output, next); break;
    case KV_RETRY: rc = k_retry(t, node, inv, j.delay); break;
    case KV_FAIL:
        rc = settle_failure(t, inv, j.error, false, next);
        j.error = NULL;
        break;
    case KV_UNKNOWN: rc = k_unknown(t, node, inv, ev, j.status); break;
    }
    k_judgement_free(&j);
    return rc;
}

static int not_applicable(kt *t, const char *node_id, const char *reason)
{
    return k_diagnose(t, "resolve.not-applicable", node_id,
                      json_pack("{s:O,s:s}", "invocationId", t->ev->invocation_id, "reason", reason));
}

static int on_resolved(kt *t, khop *next)
{
    const kevent *ev = t->ev;
    json_t *inv = r02_invocation(t, json_string_value(ev->invocation_id));
    if (inv && strlen(json_string_value(ev->invocation_id)) != json_string_length(ev->invocation_id))
        inv = NULL;
    if (!inv)
        return not_applicable(t, NULL, "invocation-mismatch");
    const sp_node *node = invocation_node(t, inv);
    if (!node)
        return k_invariant(t, "an invocation of no node");
    bool stuck = k_inv_state(inv) == INV_STUCK;
    if (!stuck && k_inv_state(inv) != INV_UNKNOWN)
        return not_applicable(t, node->id, "invocation-not-unknown");
    switch (ev->resolution) {
    case RES_COMPLETE:
        if (!sp_action_declares(node->action, json_string_value(ev->outcome),
                                json_string_length(ev->outcome)))
            return not_applicable(t, node->id, "outcome-undeclared");
        return settle_success(t, inv, ev->outcome, ev->output, next);
    case RES_RETRY:
        json_object_del(inv, "error");
        return k_retry(t, node, inv, 0);
    case RES_FAIL:
        if (stuck) { /* kernel.md §4: the run ends with the kept error */
            json_t *kept = json_deep_copy(json_object_get(inv, "error"));
            r02_invocation_drop(t, json_string_value(ev->invocation_id));
            return r02_terminate_failed(t, kept);
        }
        return settle_failure(t, inv, json_deep_copy(ev->error), true, next);
    }
    return k_invariant(t, "unknown resolution");
}

/* ---- signal.received ---- */

/* The wait that began first among those for `name`, or NULL. */
static json_t *first_wait(kt *t, const json_t *name, size_t *order_index)
{
    json_t *order = kt_st(t, "waitOrder");
    for (size_t i = 0; i < json_array_size(order); i++) {
        json_t *w = json_object_get(kt_st(t, "waits"), json_string_value(json_array_get(order, i)));
        if (w && json_equal(json_object_get(w, "signal"), name)) {
            *order_index = i;
            return w;
        }
    }
    return NULL;
}

void r02_wait_drop(kt *t, const char *activation)
{
    json_t *order = kt_st(t, "waitOrder");
    for (size_t i = 0; i < json_array_size(order); i++)
        if (kjson_str_is(json_array_get(order, i), activation)) {
            json_array_remove(order, i);
            break;
        }
    json_object_del(kt_st(t, "waits"), activation);
}

static int take_directly(kt *t, json_t *wait, const json_t *event_id, khop *next)
{
    const kevent *ev = t->ev;
    char sid[SID_MAX];
    const char *activation = json_string_value(json_object_get(wait, "activationId"));
    const sp_node *node = sp_workflow_node(t->wf, json_string_value(json_object_get(wait, "nodeId")));
    if (!node || !s02_find(t, activation, sid))
        return k_invariant(t, "a wait without its position");
    int rc;
    if (!k_take_signal(t, node, event_id, ev->outcome, &rc))
        return rc;
    uint32_t visit = s02_pos_visit(s02_pos(t, sid));
    const json_t *timer = json_object_get(wait, "timerId");
    if (json_is_string(timer) && t02_cancel(t, json_string_value(timer)))
        return -1;
    char act[160];
    snprintf(act, sizeof act, "%s", activation);
    r02_wait_drop(t, act);
    khop_set(t, next, sid, node, visit,
             ev->outcome ? json_incref((json_t *)ev->outcome) : json_string("received"),
             json_incref((json_t *)ev->data));
    return t->oom ? k_oom(t) : 0;
}

static int on_signal(kt *t, khop *next)
{
    const kevent *ev = t->ev;
    json_t *event_id = json_string(t->req->event.event_id);
    if (!event_id)
        return k_oom(t);
    size_t at;
    json_t *wait = first_wait(t, ev->name, &at);
    int rc = 0;
    if (wait) {
        rc = take_directly(t, wait, event_id, next);
    } else if (json_array_size(kt_st(t, "signals")) >= SIGNAL_BUFFER_MAX) {
        rc = k_diagnose(t, "signal.buffer-overflow", NULL, json_pack("{s:O}", "eventId", event_id));
    } else {
        char seq[SP_DECIMAL_MAX_LEN + 1];
        json_t *sig = json_pack("{s:O,s:s,s:O,s:O,s:O}", "eventId", event_id, "sequence",
                                sp_decimal_format(t->req->event.sequence, seq), "name", ev->name,
                                "outcome", ev->outcome ? ev->outcome : json_null(), "data",
                                ev->data);
        if (!sig || json_array_append_new(kt_st(t, "signals"), sig))
            rc = k_oom(t);
    }
    json_decref(event_id);
    return rc;
}

/* ---- run.cancel ---- */

static int on_cancel(kt *t)
{
    json_t *error = k_error_info("run.cancelled", json_string_value(t->ev->reason), NULL, NULL);
    if (error)
        kt_obj_set(t, error, "message", json_incref((json_t *)t->ev->reason)); /* NUL-safe */
    return r02_terminate(t, "cancelled", error ? json_pack("{s:o}", "error", error) : NULL);
}

/* ---- dispatch and status ---- */

int k02_dispatch(kt *t)
{
    const kevent *ev = t->ev;
    khop next = {0};
    int rc;
    if (ev->kind == EV_RUN_STARTED) {
        next.route = true;
        next.enter = t->wf->start;
        rc = 0;
    } else if (is_terminal(t)) {
        return k_diagnose(t, "event.ignored-terminal", NULL,
                          json_pack("{s:s}", "kind", ev->kind_name));
    } else {
        switch (ev->kind) {
        case EV_ACTIVITY_RESULT: rc = on_result(t, &next); break;
        case EV_SIGNAL: rc = on_signal(t, &next); break;
        case EV_RESOLVED: rc = on_resolved(t, &next); break;
        case EV_TIMER_FIRED: rc = t02_on_fired(t, &next); break;
        case EV_RUN_CANCEL: rc = on_cancel(t); break;
        default: rc = k_invariant(t, "unknown event kind"); break;
        }
    }
    if (rc == 0 && next.route)
        return r02_drive(t, &next);
    khop_clear(&next);
    return rc;
}

/* Status precedence (workflows-0.2.md §7): terminal > running (some
 * invocation authorized) > needs-intervention (some unknown or stuck) >
 * waiting (signals or timers only). */
int k02_finish(kt *t)
{
    if (is_terminal(t))
        return 0;
    krun_status status = k02_derived_status(t->state);
    if (status == RUN_INVALID)
        return k_invariant(t, "a live run waits for nothing");
    kt_set(t, "status", json_string(k_run_status_name(status)));
    return t->oom ? k_oom(t) : 0;
}
