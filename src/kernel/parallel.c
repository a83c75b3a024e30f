/*
 * parallel.c - parallel branches and their join (workflows-0.2.md §3): a
 * parallel activation starts one branch strand per name, in name order;
 * a branch arrives when a node of its region routes to the join; the join
 * is entered once, when every branch has arrived (outcome ok), or at the
 * first branch failure (outcome failed: the other branches cancelled), and
 * a join that does not route failed hands the error to the strand around
 * it. Also the cancellation of everything in flight under a strand, which
 * run.cancel and the terminal states use.
 *
 * Must never enter a join twice for one parallel activation (K13), start a
 * branch whose parallel is gone, or walk the branches in any order but
 * their names' (sorted members).
 */
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "kernel/run02.h"

static json_t *branch(kt *t, const char *sid) { return json_object_get(kt_st(t, "branches"), sid); }

/* The parallel node of a parallel activation "<node>/<visit>". */
static const sp_node *parallel_node(kt *t, const char *activation)
{
    const char *slash = strrchr(activation, '/');
    char id[SID_MAX];
    if (!slash || (size_t)(slash - activation) >= sizeof id)
        return NULL;
    memcpy(id, activation, (size_t)(slash - activation));
    id[slash - activation] = '\0';
    const sp_node *n = sp_workflow_node(t->wf, id);
    return n && n->kind == SP_NODE_PARALLEL ? n : NULL;
}

static const char *branch_parallel(kt *t, const char *sid)
{
    return json_string_value(json_object_get(branch(t, sid), "parallel"));
}

/* The branch strands of a parallel activation, in name order (their IDs
 * share the prefix "<activation>:"). Returns a new array (NULL + *n 0 when
 * none; *oom on allocation failure). */
static sp_json_member *branches_of(kt *t, const char *activation, size_t *n, bool *oom)
{
    json_t *all = kt_st(t, "branches");
    size_t total = json_object_size(all);
    sp_json_member *m = sp_json_sorted_members(all, oom);
    *n = 0;
    for (size_t i = 0; i < total; i++)
        if (kjson_str_is(json_object_get(m[i].value, "parallel"), activation))
            m[(*n)++] = m[i];
    return m;
}

int p02_enter(kt *t, const char *sid, const sp_node *node, const char *activation,
              uint32_t visit, khop *next)
{
    (void)next;
    s02_set_pos(t, sid, node, activation, visit);
    bool oom = false;
    size_t nb = json_object_size(node->branches);
    sp_json_member *names = sp_json_sorted_members(node->branches, &oom);
    int rc = oom ? k_oom(t) : 0;
    char bid[SID_MAX];
    for (size_t i = 0; i < nb && rc == 0; i++) {
        snprintf(bid, sizeof bid, "%s:%.*s", activation, (int)names[i].len, names[i].key);
        kt_obj_set(t, kt_st(t, "branches"), bid,
                   json_pack("{s:s%,s:s,s:n,s:n}", "branch", names[i].key, names[i].len,
                             "parallel", activation, "position", "arrived"));
    }
    /* started in name order: queued last first */
    for (size_t i = nb; i-- > 0 && rc == 0;) {
        snprintf(bid, sizeof bid, "%s:%.*s", activation, (int)names[i].len, names[i].key);
        rc = r02_push_enter(t, bid, json_string_value(names[i].value));
    }
    free(names);
    return rc ? rc : t->oom ? k_oom(t) : 0;
}

bool p02_branch_waiting(kt *t, const char *sid)
{
    const json_t *b = branch(t, sid);
    return b && json_is_null(json_object_get(b, "position")) &&
           json_is_null(json_object_get(b, "arrived"));
}

bool p02_is_own_join(kt *t, const char *sid, const char *target)
{
    const char *activation = branch_parallel(t, sid);
    const sp_node *p = activation ? parallel_node(t, activation) : NULL;
    return p && strcmp(p->join, target) == 0;
}

/* Leave the parallel activation: its branches are gone; the join is
 * admitted in the strand around it. Returns 0 (admitted: *join, *visit,
 * parent), 1 (a limit ended the run) or -1. */
static int leave(kt *t, const char *activation, const sp_node **join, uint32_t *visit,
                 char parent[SID_MAX])
{
    const sp_node *p = parallel_node(t, activation);
    *join = p ? sp_workflow_node(t->wf, p->join) : NULL;
    if (!*join || !s02_find(t, activation, parent))
        return k_invariant(t, "a parallel activation without its position");
    char join_activation[160];
    json_t *limit;
    int rc = k_admit(t, *join, visit, join_activation, &limit);
    if (rc)
        return rc < 0 ? -1 : r02_terminate_failed(t, limit) ? -1 : 1;
    s02_set_pos(t, parent, *join, join_activation, *visit);
    return t->oom ? k_oom(t) : 0;
}

/* Delete a branch entry by a key borrowed from the object itself. */
static void drop_branch(kt *t, const char *key, size_t len)
{
    char copy[SID_MAX];
    snprintf(copy, sizeof copy, "%.*s", (int)len, key);
    json_object_del(kt_st(t, "branches"), copy);
}

/* {<branch>: {node, outcome, output}} of the arrived branches; with
 * `remove`, the parallel's branch entries are deleted. */
static json_t *arrivals(kt *t, const char *activation, bool remove)
{
    bool oom = false;
    size_t n;
    sp_json_member *m = branches_of(t, activation, &n, &oom);
    json_t *out = oom ? NULL : json_object();
    for (size_t i = 0; i < n && out; i++) {
        const json_t *arrived = json_object_get(m[i].value, "arrived");
        if (!json_is_null(arrived) &&
            json_object_set(out, json_string_value(json_object_get(m[i].value, "branch")),
                            (json_t *)arrived)) {
            json_decref(out);
            out = NULL;
        }
    }
    if (remove && out)
        for (size_t i = 0; i < n; i++)
            drop_branch(t, m[i].key, m[i].len);
    free(m);
    if (!out)
        t->oom = true;
    return out;
}

int p02_arrive(kt *t, const char *sid, const sp_node *from, const json_t *outcome,
               const json_t *output, khop *next)
{
    json_t *b = branch(t, sid);
    char activation[160];
    snprintf(activation, sizeof activation, "%s", branch_parallel(t, sid));
    kt_obj_set(t, b, "arrived",
               json_pack("{s:s,s:O,s:O}", "node", from->id, "outcome", outcome, "output", output));
    kt_obj_set(t, b, "position", json_null());
    if (t->oom)
        return k_oom(t);
    bool oom = false;
    size_t n;
    sp_json_member *m = branches_of(t, activation, &n, &oom);
    bool all = !oom;
    for (size_t i = 0; i < n && all; i++)
        all = !json_is_null(json_object_get(m[i].value, "arrived"));
    free(m);
    if (oom)
        return k_oom(t);
    if (!all)
        return 0;
    json_t *joined = arrivals(t, activation, true);
    const sp_node *join;
    uint32_t visit;
    char parent[SID_MAX];
    int rc = joined ? leave(t, activation, &join, &visit, parent) : k_oom(t);
    if (rc) {
        json_decref(joined);
        return rc < 0 ? -1 : 0;
    }
    khop_set(t, next, parent, join, visit, json_string("ok"), joined);
    return t->oom ? k_oom(t) : 0;
}

int p02_branch_failed(kt *t, const char *sid, json_t *error, khop *next, json_t **propagate,
                      char parent[SID_MAX])
{
    *propagate = NULL;
    char activation[160], name[80];
    snprintf(activation, sizeof activation, "%s", branch_parallel(t, sid));
    snprintf(name, sizeof name, "%s", json_string_value(json_object_get(branch(t, sid), "branch")));
    bool oom = false;
    size_t n;
    sp_json_member *m = branches_of(t, activation, &n, &oom);
    int rc = oom ? k_oom(t) : 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char child[SID_MAX];
        snprintf(child, sizeof child, "%.*s", (int)m[i].len, m[i].key);
        rc = p02_cancel_strand(t, child);
    }
    free(m);
    json_t *arrived = rc ? NULL : arrivals(t, activation, true);
    const sp_node *join;
    uint32_t visit;
    if (rc == 0)
        rc = arrived ? leave(t, activation, &join, &visit, parent) : k_oom(t);
    if (rc) {
        json_decref(arrived);
        json_decref(error);
        return rc < 0 ? -1 : 0;
    }
    json_t *output = json_pack("{s:O,s:s,s:o}", "error", error, "branch", name, "arrived", arrived);
    if (sp_node_route(join, "failed", 6)) {
        json_decref(error);
        khop_set(t, next, parent, join, visit, json_string("failed"), output);
        return t->oom ? k_oom(t) : 0;
    }
    json_t *failed = json_string("failed");
    if (failed && output)
        k_record(t, join, visit, failed, output);
    json_decref(failed);
    json_decref(output);
    *propagate = error;
    return t->oom ? k_oom(t) : 0;
}

int p02_cancel_strand(kt *t, const char *sid)
{
    const json_t *pos = s02_pos(t, sid);
    const sp_node *node = pos ? s02_pos_node(t, pos) : NULL;
    if (!node)
        return 0;
    char activation[160], id[SP_ID_LEN + 1];
    snprintf(activation, sizeof activation, "%s", s02_pos_activation(pos));
    switch (node->kind) {
    case SP_NODE_ACTIVITY:
        sp_invocation_id(kt_str(t, "tenant"), kt_str(t, "runId"), activation, id);
        return r02_cancel_invocation(t, id);
    case SP_NODE_AWAIT_SIGNAL: {
        const json_t *w = json_object_get(kt_st(t, "waits"), activation);
        const json_t *timer = json_object_get(w, "timerId");
        if (json_is_string(timer) && t02_cancel(t, json_string_value(timer)))
            return -1;
        r02_wait_drop(t, activation);
        return t->oom ? k_oom(t) : 0;
    }
    case SP_NODE_SLEEP:
        t02_timer_id(t, activation, id);
        return t02_cancel(t, id);
    case SP_NODE_MAP:
        return m02_cancel(t, activation);
    case SP_NODE_PARALLEL: {
        bool oom = false;
        size_t n;
        sp_json_member *m = branches_of(t, activation, &n, &oom);
        int rc = oom ? k_oom(t) : 0;
        for (size_t i = 0; i < n && rc == 0; i++) {
            char child[SID_MAX];
            snprintf(child, sizeof child, "%.*s", (int)m[i].len, m[i].key);
            rc = p02_cancel_strand(t, child);
        }
        for (size_t i = 0; i < n && rc == 0; i++)
            drop_branch(t, m[i].key, m[i].len);
        free(m);
        return rc;
    }
    default:
        return 0;
    }
}
