/*
 * validate02.c - what `spore.workflow/0.2` adds to the package
 * (workflows-0.2.md §1-5, kernel.md §2 and §4): decoding the members and
 * node kinds of 0.2 (parallel, join, map, sleep; loopLimits, outputSchemas,
 * timeoutMs), and the rules W12-W19 that the loader runs after W01-W11, in
 * this order, nodes in ascending byte order of their IDs, the first
 * violation winning (docs/kernel.md §8.2):
 *
 *   W12 loopLimits     W13 outputSchemas  W14 parallel   W15 join
 *   W16 map            W17 sleep          W18 timeoutMs  W19 branch regions
 *
 * Must never accept a package the transition could not run without an
 * invariant failure (a branch that reaches a complete node, a join shared
 * by two parallels, a route into a region from outside), never report any
 * violation but the first, and never touch a 0.1 package (workflow.c calls
 * it only for spore.workflow/0.2).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/decimal.h"
#include "json/json.h"
#include "kernel/mapping.h"
#include "kernel/workflow.h"
#include "schema/schema.h"

#define BRANCHES_MAX 32
#define NESTING_MAX 8

static int invalid(sp_kernel_failure *fail, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int invalid(sp_kernel_failure *fail, const char *fmt, ...)
{
    fail->kind = "invalid-input";
    snprintf(fail->code, sizeof fail->code, "workflow.invalid");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fail->details, sizeof fail->details, fmt, ap);
    va_end(ap);
    return -1;
}

static bool only(const json_t *obj, const char *const *allowed)
{
    const char *key;
    size_t len;
    json_t *v;
    json_object_keylen_foreach((json_t *)obj, key, len, v)
    {
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strlen(*a) == len && memcmp(*a, key, len) == 0;
        if (!known)
            return false;
    }
    return true;
}

static bool routes_are_strings(const json_t *routes)
{
    if (!json_is_object(routes))
        return false;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)routes, key, v)
    {
        if (!json_is_string(v))
            return false;
    }
    return true;
}

static bool read_u32(const json_t *v, uint32_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > (json_int_t)UINT32_MAX)
        return false;
    *out = (uint32_t)json_integer_value(v);
    return true;
}

/* ---- decoding ---- */

static int decode_parallel(sp_node *n, json_t *obj, sp_kernel_failure *fail)
{
    static const char *const allowed[] = {"kind", "branches", "join", "loopLimits",
                                          "outputSchemas", NULL};
    n->kind = SP_NODE_PARALLEL;
    n->branches = json_object_get(obj, "branches");
    const json_t *join = json_object_get(obj, "join");
    if (!only(obj, allowed) || !routes_are_strings(n->branches) || !json_is_string(join))
        return invalid(fail, "node %s: a parallel node has branches (name -> node) and join",
                       n->id);
    n->join = json_string_value(join);
    return 0;
}

static int decode_join(sp_node *n, json_t *obj, sp_kernel_failure *fail)
{
    static const char *const allowed[] = {"kind", "outcomes", "loopLimits", "outputSchemas", NULL};
    n->kind = SP_NODE_JOIN;
    n->routes = json_object_get(obj, "outcomes");
    if (!only(obj, allowed) || !routes_are_strings(n->routes))
        return invalid(fail, "node %s: a join node has outcomes", n->id);
    return 0;
}

static int decode_map(sp_node *n, json_t *obj, sp_kernel_failure *fail)
{
    static const char *const allowed[] = {"kind",           "items",    "action",
                                          "input",          "maxItems", "maxConcurrency",
                                          "outcomes",       "loopLimits", "outputSchemas",
                                          NULL};
    n->kind = SP_NODE_MAP;
    const json_t *action = json_object_get(obj, "action");
    n->items = json_object_get(obj, "items");
    n->mapping = json_object_get(obj, "input");
    n->routes = json_object_get(obj, "outcomes");
    if (!only(obj, allowed) || !json_is_string(action) || !n->items ||
        !routes_are_strings(n->routes))
        return invalid(fail, "node %s: a map node has items, action, input?, maxItems?, "
                             "maxConcurrency? and outcomes", n->id);
    n->action_id = json_string_value(action);
    return 0;
}

static int decode_sleep(sp_node *n, json_t *obj, sp_kernel_failure *fail)
{
    static const char *const allowed[] = {"kind", "durationMs", "until", "outcomes",
                                          "loopLimits", "outputSchemas", NULL};
    n->kind = SP_NODE_SLEEP;
    n->routes = json_object_get(obj, "outcomes");
    n->until = json_object_get(obj, "until");
    if (!only(obj, allowed) || !routes_are_strings(n->routes))
        return invalid(fail, "node %s: a sleep node has durationMs or until, and outcomes", n->id);
    return 0;
}

int sp_decode02_node(sp_node *n, json_t *obj, const char *kind, sp_kernel_failure *fail,
                     bool *handled)
{
    *handled = true;
    n->raw = obj;
    n->loop_limits = json_object_get(obj, "loopLimits");
    n->output_schemas = json_object_get(obj, "outputSchemas");
    if (strcmp(kind, "parallel") == 0)
        return decode_parallel(n, obj, fail);
    if (strcmp(kind, "join") == 0)
        return decode_join(n, obj, fail);
    if (strcmp(kind, "map") == 0)
        return decode_map(n, obj, fail);
    if (strcmp(kind, "sleep") == 0)
        return decode_sleep(n, obj, fail);
    *handled = false; /* activity, await-signal, complete, fail: workflow.c */
    return 0;
}

/* ---- W12 loopLimits ---- */

static bool routes_key(const sp_node *n, const char *key, size_t len)
{
    return n->routes && json_object_getn(n->routes, key, len) != NULL;
}

static int w12_loop_limits(const sp_workflow *wf, const sp_node *n, sp_kernel_failure *fail)
{
    const json_t *ll = n->loop_limits;
    if (!ll)
        return 0;
    if (n->kind != SP_NODE_ACTIVITY && n->kind != SP_NODE_AWAIT_SIGNAL)
        return invalid(fail, "W12: node %s: loopLimits only on activity and await-signal nodes",
                       n->id);
    if (!json_is_object(ll) || json_object_size(ll) == 0)
        return invalid(fail, "W12: node %s: loopLimits must be a non-empty object", n->id);
    const char *key;
    size_t len;
    json_t *v;
    json_object_keylen_foreach((json_t *)ll, key, len, v)
    {
        uint32_t limit;
        if ((len == 9 && memcmp(key, "exhausted", 9) == 0) || !routes_key(n, key, len))
            return invalid(fail, "W12: node %s: loopLimits keys are routed outcomes other than "
                                 "exhausted", n->id);
        if (!read_u32(v, &limit) || limit < 1 || limit > 1000 ||
            limit + 1 > wf->max_visits_per_node)
            return invalid(fail, "W12: node %s: a loop limit is 1..=1000 and below "
                                 "maxVisitsPerNode", n->id);
    }
    if (!routes_key(n, "exhausted", 9))
        return invalid(fail, "W12: node %s: a node with loopLimits routes exhausted", n->id);
    return 0;
}

/* ---- W13 outputSchemas (the shape here; the schema subset is src/schema's) ---- */

static int invalid_schema(sp_kernel_failure *fail, const char *node, const char *outcome,
                          const sp_schema_error *e)
{
    fail->kind = "invalid-input";
    snprintf(fail->code, sizeof fail->code, "workflow.invalid-schema");
    int n = snprintf(fail->details, sizeof fail->details, "W13: node %.64s: outputSchemas.%.64s",
                     node, outcome);
    if (n > 0 && (size_t)n < sizeof fail->details)
        snprintf(fail->details + n, sizeof fail->details - (size_t)n, " at %.60s: %.24s: %.80s",
                 e->path, e->rule, e->message);
    return -1;
}

/* Each schema inside the subset (kernel.md §5), in outcome key order. */
static int w13_compile(const sp_node *n, sp_kernel_failure *fail, bool *oom)
{
    bool alloc_failed = false;
    size_t count = json_object_size(n->output_schemas);
    sp_json_member *m = sp_json_sorted_members(n->output_schemas, &alloc_failed);
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0 && !alloc_failed; i++) {
        sp_schema *compiled = NULL;
        sp_schema_error e = {0};
        int c = sp_schema_compile(m[i].value, &compiled, &e);
        sp_schema_free(compiled);
        if (c == -2)
            alloc_failed = true;
        else if (c != 0)
            rc = invalid_schema(fail, n->id, m[i].key, &e);
    }
    free(m);
    if (alloc_failed) {
        *oom = true;
        return -1;
    }
    return rc;
}

/* await-signal nodes on one signal declare equal schemas per shared outcome
 * (the engine checks a signal's data before it knows which node takes it). */
static int w13_shared_signals(const sp_workflow *wf, sp_kernel_failure *fail)
{
    for (size_t i = 0; i < wf->nnodes; i++) {
        const sp_node *a = &wf->nodes[i];
        if (a->kind != SP_NODE_AWAIT_SIGNAL)
            continue;
        for (size_t k = i + 1; k < wf->nnodes; k++) {
            const sp_node *b = &wf->nodes[k];
            if (b->kind != SP_NODE_AWAIT_SIGNAL || strcmp(a->signal, b->signal) != 0)
                continue;
            const char *key;
            json_t *v;
            json_object_foreach(a->routes, key, v)
            {
                if (!json_object_get(b->routes, key))
                    continue;
                const json_t *sa = a->output_schemas ? json_object_get(a->output_schemas, key) : NULL;
                const json_t *sb = b->output_schemas ? json_object_get(b->output_schemas, key) : NULL;
                if ((sa || sb) && !(sa && sb && sp_json_same(sa, sb)))
                    return invalid(fail, "W13: await-signal nodes %s and %s wait on %s with "
                                         "different schemas for outcome %s", a->id, b->id,
                                   a->signal, key);
            }
        }
    }
    return 0;
}

static int w13_output_schemas(const sp_workflow *wf, const sp_node *n, sp_kernel_failure *fail)
{
    (void)wf;
    const json_t *os = n->output_schemas;
    if (!os)
        return 0;
    if (n->kind != SP_NODE_ACTIVITY && n->kind != SP_NODE_AWAIT_SIGNAL)
        return invalid(fail, "W13: node %s: outputSchemas only on activity and await-signal "
                             "nodes", n->id);
    if (!json_is_object(os) || json_object_size(os) == 0)
        return invalid(fail, "W13: node %s: outputSchemas must be a non-empty object", n->id);
    const char *key;
    size_t len;
    json_t *v;
    json_object_keylen_foreach((json_t *)os, key, len, v)
    {
        bool reserved = (len == 6 && memcmp(key, "failed", 6) == 0) ||
                        (len == 9 && memcmp(key, "exhausted", 9) == 0);
        bool produced = n->kind == SP_NODE_ACTIVITY ? sp_action_declares(n->action, key, len)
                                                    : routes_key(n, key, len);
        if (reserved || !produced)
            return invalid(fail, "W13: node %s: outputSchemas keys are outcomes the node can "
                                 "produce (never failed or exhausted)", n->id);
        if (!json_is_object(v))
            return invalid(fail, "W13: node %s: an output schema is an object", n->id);
    }
    return 0;
}

/* ---- W14 parallel, W15 join ---- */

static int w14_parallel(const sp_workflow *wf, const sp_node *n, sp_kernel_failure *fail)
{
    size_t nb = json_object_size(n->branches);
    if (nb < 1 || nb > BRANCHES_MAX)
        return invalid(fail, "W14: node %s: a parallel node has 1..=32 branches", n->id);
    const char *key;
    size_t len;
    json_t *v;
    json_object_keylen_foreach(n->branches, key, len, v)
    {
        if (!sp_is_outcome(key, len))
            return invalid(fail, "W14: node %s: branch names match [a-z0-9][a-z0-9-]{0,63}",
                           n->id);
    }
    json_object_foreach(n->branches, key, v)
    {
        if (!sp_workflow_node(wf, json_string_value(v)))
            return invalid(fail, "W14: node %s: branch %s starts at a missing node", n->id, key);
    }
    const sp_node *join = sp_workflow_node(wf, n->join);
    if (!join || join->kind != SP_NODE_JOIN)
        return invalid(fail, "W14: node %s: join names no join node", n->id);
    return 0;
}

/* the outcomes of a join or a map: ok, and failed at most */
static int ok_failed_routes(const sp_workflow *wf, const sp_node *n, const char *rule,
                            sp_kernel_failure *fail)
{
    if (!json_object_get(n->routes, "ok"))
        return invalid(fail, "%s: node %s: outcomes must route ok", rule, n->id);
    const char *key;
    size_t len;
    json_t *v;
    json_object_keylen_foreach(n->routes, key, len, v)
    {
        if (!(len == 2 && memcmp(key, "ok", 2) == 0) && !(len == 6 && memcmp(key, "failed", 6) == 0))
            return invalid(fail, "%s: node %s: outcomes are ok and failed only", rule, n->id);
    }
    json_object_foreach(n->routes, key, v)
    {
        if (!sp_workflow_node(wf, json_string_value(v)))
            return invalid(fail, "%s: node %s: route %s targets a missing node", rule, n->id, key);
    }
    return 0;
}

/* ---- W16 map ---- */

static int w16_map(sp_workflow *wf, sp_node *n, sp_kernel_failure *fail)
{
    n->action = sp_workflow_action(wf, n->action_id);
    if (!n->action)
        return invalid(fail, "W16: node %s: action %s does not exist", n->id, n->action_id);
    if (!sp_mapping_valid(n->items))
        return invalid(fail, "W16: node %s: items is a malformed mapping", n->id);
    if (n->mapping && !sp_mapping_valid_map_input(n->mapping))
        return invalid(fail, "W16: node %s: input is a malformed mapping", n->id);
    const json_t *max_items = json_object_get(n->raw, "maxItems");
    const json_t *max_conc = json_object_get(n->raw, "maxConcurrency");
    n->max_items = 256;
    n->max_concurrency = 8;
    if (max_items && (!read_u32(max_items, &n->max_items) || n->max_items < 1 ||
                      n->max_items > 1000))
        return invalid(fail, "W16: node %s: maxItems is 1..=1000", n->id);
    if (max_conc && (!read_u32(max_conc, &n->max_concurrency) || n->max_concurrency < 1 ||
                     n->max_concurrency > 64))
        return invalid(fail, "W16: node %s: maxConcurrency is 1..=64", n->id);
    return ok_failed_routes(wf, n, "W16", fail);
}

/* ---- W17 sleep, W18 timeoutMs ---- */

static int w17_sleep(const sp_workflow *wf, sp_node *n, sp_kernel_failure *fail)
{
    const json_t *duration = json_object_get(n->raw, "durationMs");
    if (!duration == !n->until)
        return invalid(fail, "W17: node %s: a sleep node has exactly one of durationMs and until",
                       n->id);
    if (duration && !sp_decimal_from_json(duration, &n->duration_ms))
        return invalid(fail, "W17: node %s: durationMs is a decimal string", n->id);
    n->has_duration = duration != NULL;
    if (n->until && !sp_mapping_valid(n->until))
        return invalid(fail, "W17: node %s: until is a malformed mapping", n->id);
    const json_t *ok = json_object_get(n->routes, "ok");
    if (!ok || json_object_size(n->routes) != 1)
        return invalid(fail, "W17: node %s: a sleep node routes ok and nothing else", n->id);
    if (!sp_workflow_node(wf, json_string_value(ok)))
        return invalid(fail, "W17: node %s: route ok targets a missing node", n->id);
    return 0;
}

static int w18_timeout(sp_node *n, sp_kernel_failure *fail)
{
    const json_t *timeout = json_object_get(n->raw, "timeoutMs");
    if (!timeout)
        return 0;
    if (!sp_decimal_from_json(timeout, &n->timeout_ms))
        return invalid(fail, "W18: node %s: timeoutMs is a decimal string", n->id);
    if (!json_object_get(n->routes, "timeout"))
        return invalid(fail, "W18: node %s: a node with timeoutMs routes timeout", n->id);
    n->has_timeout = true;
    return 0;
}

/* ---- W19 branch regions ---- */

typedef struct regions {
    const sp_workflow *wf;
    size_t nn;          /* nodes */
    size_t nr;          /* regions */
    unsigned char *in;  /* nr x nn membership */
    size_t *owner;      /* region -> index of its parallel node */
    const char **start; /* region -> start node */
    size_t *queue;
} regions;

static size_t node_index(const sp_workflow *wf, const sp_node *n) { return (size_t)(n - wf->nodes); }

/* The successors of a node: its routes' targets; for a parallel, its branch
 * starts and its join. Calls visit(index) for each existing one. */
static void successors(const sp_workflow *wf, const sp_node *n, void (*visit)(void *, size_t),
                       void *ctx)
{
    const char *key;
    json_t *v;
    const json_t *edges = n->kind == SP_NODE_PARALLEL ? n->branches : n->routes;
    if (edges)
        json_object_foreach((json_t *)edges, key, v)
        {
            const sp_node *m = sp_workflow_node(wf, json_string_value(v));
            if (m)
                visit(ctx, node_index(wf, m));
        }
    if (n->kind == SP_NODE_PARALLEL) {
        const sp_node *j = sp_workflow_node(wf, n->join);
        if (j)
            visit(ctx, node_index(wf, j));
    }
}

typedef struct bfs {
    regions *R;
    size_t r, head, tail;
    size_t stop; /* the join: never entered */
} bfs;

static void bfs_visit(void *ctx, size_t i)
{
    bfs *b = ctx;
    unsigned char *in = b->R->in + b->r * b->R->nn;
    if (i == b->stop || in[i])
        return;
    in[i] = 1;
    b->R->queue[b->tail++] = i;
}

static void region_fill(regions *R, size_t r, const sp_node *start, size_t stop)
{
    bfs b = {R, r, 0, 0, stop};
    bfs_visit(&b, node_index(R->wf, start));
    while (b.head < b.tail)
        successors(R->wf, &R->wf->nodes[R->queue[b.head++]], bfs_visit, &b);
}

static bool region_has(const regions *R, size_t r, size_t i) { return R->in[r * R->nn + i]; }

static int regions_build(regions *R, const sp_workflow *wf)
{
    R->wf = wf;
    R->nn = wf->nnodes;
    for (size_t i = 0; i < wf->nnodes; i++)
        if (wf->nodes[i].kind == SP_NODE_PARALLEL)
            R->nr += json_object_size(wf->nodes[i].branches);
    size_t nr = R->nr ? R->nr : 1;
    R->in = calloc(nr * R->nn, 1);
    R->owner = calloc(nr, sizeof *R->owner);
    R->start = calloc(nr, sizeof *R->start);
    R->queue = calloc(R->nn, sizeof *R->queue);
    if (!R->in || !R->owner || !R->start || !R->queue)
        return -1;
    size_t r = 0;
    for (size_t i = 0; i < wf->nnodes; i++) {
        const sp_node *p = &wf->nodes[i];
        if (p->kind != SP_NODE_PARALLEL)
            continue;
        size_t stop = node_index(wf, sp_workflow_node(wf, p->join));
        bool oom = false;
        size_t nb = json_object_size(p->branches);
        sp_json_member *names = sp_json_sorted_members(p->branches, &oom);
        if (oom)
            return -1;
        for (size_t k = 0; k < nb; k++, r++) {
            R->owner[r] = i;
            R->start[r] = json_string_value(names[k].value);
            region_fill(R, r, sp_workflow_node(wf, R->start[r]), stop);
        }
        free(names);
    }
    return 0;
}

static void regions_free(regions *R)
{
    free(R->in);
    free(R->owner);
    free(R->start);
    free(R->queue);
}

static bool regions_meet(const regions *R, size_t a, size_t b)
{
    for (size_t i = 0; i < R->nn; i++)
        if (region_has(R, a, i) && region_has(R, b, i))
            return true;
    return false;
}

/* Is region b inside region a (a parallel nested in a)? */
static bool region_within(const regions *R, size_t b, size_t a)
{
    for (size_t i = 0; i < R->nn; i++)
        if (region_has(R, b, i) && !region_has(R, a, i))
            return false;
    return true;
}

static int rule_disjoint(const regions *R, size_t r, sp_kernel_failure *fail)
{
    for (size_t s = r + 1; s < R->nr && R->owner[s] == R->owner[r]; s++)
        if (regions_meet(R, r, s))
            return invalid(fail, "W19: parallel %s: branch regions overlap",
                           R->wf->nodes[R->owner[r]].id);
    return 0;
}

static int rule_contents(const regions *R, size_t r, sp_kernel_failure *fail)
{
    const sp_workflow *wf = R->wf;
    const sp_node *p = &wf->nodes[R->owner[r]];
    if (strcmp(R->start[r], p->join) == 0 || region_has(R, r, R->owner[r]))
        return invalid(fail, "W19: parallel %s: a branch region contains its parallel or its join",
                       p->id);
    for (size_t i = 0; i < R->nn; i++)
        if (region_has(R, r, i) && wf->nodes[i].kind == SP_NODE_COMPLETE)
            return invalid(fail, "W19: parallel %s: a branch region contains a complete node",
                           p->id);
    for (size_t s = 0; s < R->nr; s++) {
        if (R->owner[s] == R->owner[r] || !regions_meet(R, r, s))
            continue;
        /* another parallel's region: only by nesting, one inside the other */
        bool nested = (region_has(R, r, R->owner[s]) && region_within(R, s, r)) ||
                      (region_has(R, s, R->owner[r]) && region_within(R, r, s));
        if (!nested)
            return invalid(fail, "W19: parallel %s: a branch region shares a node with a region "
                                 "of parallel %s", p->id, wf->nodes[R->owner[s]].id);
    }
    return 0;
}

typedef struct entry_check {
    const regions *R;
    size_t r, from;
    bool bad;
} entry_check;

static void entry_visit(void *ctx, size_t i)
{
    entry_check *e = ctx;
    const regions *R = e->R;
    if (!region_has(R, e->r, i) || region_has(R, e->r, e->from))
        return;
    bool own_start = e->from == R->owner[e->r] && strcmp(R->wf->nodes[i].id, R->start[e->r]) == 0;
    if (!own_start)
        e->bad = true;
}

static int rule_entries(const regions *R, size_t r, sp_kernel_failure *fail)
{
    entry_check e = {R, r, 0, false};
    for (e.from = 0; e.from < R->nn && !e.bad; e.from++)
        successors(R->wf, &R->wf->nodes[e.from], entry_visit, &e);
    if (e.bad)
        return invalid(fail, "W19: parallel %s: a route from outside enters a branch region "
                             "other than at its start", R->wf->nodes[R->owner[r]].id);
    return 0;
}

static int rule_nested(const regions *R, size_t r, sp_kernel_failure *fail)
{
    const sp_workflow *wf = R->wf;
    for (size_t i = 0; i < R->nn; i++) {
        if (!region_has(R, r, i))
            continue;
        const sp_node *n = &wf->nodes[i];
        const sp_node *other = n->kind == SP_NODE_PARALLEL ? sp_workflow_node(wf, n->join)
                               : n->kind == SP_NODE_JOIN   ? n->parallel
                                                           : NULL;
        if (other && !region_has(R, r, node_index(wf, other)))
            return invalid(fail, "W19: parallel %s: a nested parallel and its join lie in "
                                 "different regions", wf->nodes[R->owner[r]].id);
    }
    return 0;
}

static int rule_depth(const regions *R, size_t p, sp_kernel_failure *fail)
{
    size_t depth = 1;
    for (size_t s = 0; s < R->nr; s++)
        if (region_has(R, s, p))
            depth++;
    if (depth > NESTING_MAX)
        return invalid(fail, "W19: parallel %s: parallels nest at most 8 deep", R->wf->nodes[p].id);
    return 0;
}

static int join_owners(sp_workflow *wf, sp_kernel_failure *fail)
{
    for (size_t i = 0; i < wf->nnodes; i++) {
        sp_node *j = &wf->nodes[i];
        if (j->kind != SP_NODE_JOIN)
            continue;
        size_t owners = 0;
        for (size_t k = 0; k < wf->nnodes; k++)
            if (wf->nodes[k].kind == SP_NODE_PARALLEL && strcmp(wf->nodes[k].join, j->id) == 0) {
                owners++;
                j->parallel = &wf->nodes[k];
            }
        if (owners != 1)
            return invalid(fail, "W19: join %s belongs to %zu parallel nodes, not exactly one",
                           j->id, owners);
    }
    return 0;
}

typedef int (*region_rule)(const regions *, size_t, sp_kernel_failure *);

static int w19_regions(sp_workflow *wf, sp_kernel_failure *fail, bool *oom)
{
    /* the owners of joins first (rule_nested reads them), reported last */
    sp_kernel_failure owners_fail = {0};
    int owners_rc = join_owners(wf, &owners_fail);
    regions R = {0};
    if (regions_build(&R, wf)) {
        regions_free(&R);
        *oom = true;
        return -1;
    }
    static const region_rule rules[] = {rule_disjoint, rule_contents, rule_entries, rule_nested};
    int rc = 0;
    for (size_t k = 0; k < sizeof rules / sizeof *rules && rc == 0; k++)
        for (size_t r = 0; r < R.nr && rc == 0; r++)
            rc = rules[k](&R, r, fail);
    for (size_t i = 0; i < wf->nnodes && rc == 0; i++)
        if (wf->nodes[i].kind == SP_NODE_PARALLEL)
            rc = rule_depth(&R, i, fail);
    regions_free(&R);
    if (rc == 0 && owners_rc) {
        *fail = owners_fail;
        rc = -1;
    }
    return rc;
}

/* ---- the order ---- */

int sp_validate02(sp_workflow *wf, sp_kernel_failure *fail, bool *oom)
{
    *oom = false;
    for (size_t i = 0; i < wf->nnodes; i++)
        if (w12_loop_limits(wf, &wf->nodes[i], fail))
            return -1;
    for (size_t i = 0; i < wf->nnodes; i++)
        if (w13_output_schemas(wf, &wf->nodes[i], fail) ||
            (wf->nodes[i].output_schemas && w13_compile(&wf->nodes[i], fail, oom)))
            return -1;
    if (w13_shared_signals(wf, fail))
        return -1;
    for (size_t i = 0; i < wf->nnodes; i++)
        if (wf->nodes[i].kind == SP_NODE_PARALLEL && w14_parallel(wf, &wf->nodes[i], fail))
            return -1;
    for (size_t i = 0; i < wf->nnodes; i++)
        if (wf->nodes[i].kind == SP_NODE_JOIN && ok_failed_routes(wf, &wf->nodes[i], "W15", fail))
            return -1;
    for (size_t i = 0; i < wf->nnodes; i++)
        if (wf->nodes[i].kind == SP_NODE_MAP && w16_map(wf, &wf->nodes[i], fail))
            return -1;
    for (size_t i = 0; i < wf->nnodes; i++)
        if (wf->nodes[i].kind == SP_NODE_SLEEP && w17_sleep(wf, &wf->nodes[i], fail))
            return -1;
    for (size_t i = 0; i < wf->nnodes; i++)
        if (wf->nodes[i].kind == SP_NODE_AWAIT_SIGNAL && w18_timeout(&wf->nodes[i], fail))
            return -1;
    return w19_regions(wf, fail, oom);
}
