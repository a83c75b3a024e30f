/*
 * workflow.c - decoding the package and rules W01-W11 (kernel.md §1-2);
 * a spore.workflow/0.2 package also gets its 0.2 members decoded and rules
 * W12-W19 run by validate02.c.
 *
 * First the document is decoded (canonical bytes, known members, types);
 * any problem there is workflow.invalid. Then W01..W11 run in order, nodes
 * and actions visited in ascending byte order of their IDs; the first
 * violation wins. Must never reorder the rules: only W07's unsupported
 * effect has a code of its own, so the order is observable.
 */
#include "kernel/workflow.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/decimal.h"
#include "json/json.h"
#include "kernel/mapping.h"

typedef struct loader {
    sp_kernel_failure *fail;
    bool oom;
    bool v02; /* the package is spore.workflow/0.2 (decode its members) */
} loader;

static int reject(loader *L, const char *kind, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int reject(loader *L, const char *kind, const char *code, const char *fmt, ...)
{
    L->fail->kind = kind;
    snprintf(L->fail->code, sizeof L->fail->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->fail->details, sizeof L->fail->details, fmt, ap);
    va_end(ap);
    return -1;
}

#define INVALID(L, ...) reject((L), "invalid-input", "workflow.invalid", __VA_ARGS__)

/* ---- small typed readers ---- */

static bool only_members(const json_t *obj, const char *const *allowed)
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

static bool read_u32(const json_t *v, uint32_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > (json_int_t)UINT32_MAX)
        return false;
    *out = (uint32_t)json_integer_value(v);
    return true;
}

static bool str_pattern(const json_t *s, bool (*pattern)(const char *, size_t))
{
    return json_is_string(s) && pattern(json_string_value(s), json_string_length(s));
}

static int byte_order(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = memcmp(a, b, n);
    return c ? c : (alen < blen ? -1 : alen > blen ? 1 : 0);
}

static int action_cmp(const void *x, const void *y)
{
    const sp_action *a = x, *b = y;
    return byte_order(a->id, strlen(a->id), b->id, strlen(b->id));
}

static int node_cmp(const void *x, const void *y)
{
    const sp_node *a = x, *b = y;
    return byte_order(a->id, strlen(a->id), b->id, strlen(b->id));
}

/* ---- decoding ---- */

static int decode_limits(loader *L, sp_workflow *wf, const json_t *limits)
{
    static const char *const allowed[] = {"maxVisitsPerNode", "maxActivations", NULL};
    wf->max_visits_per_node = 16;
    wf->max_activations = 256;
    if (!limits)
        return 0;
    if (!json_is_object(limits) || !only_members(limits, allowed))
        return INVALID(L, "limits must be an object with maxVisitsPerNode and maxActivations");
    const json_t *v = json_object_get(limits, "maxVisitsPerNode");
    if (v && !read_u32(v, &wf->max_visits_per_node))
        return INVALID(L, "limits.maxVisitsPerNode must be an integer");
    v = json_object_get(limits, "maxActivations");
    if (v && !read_u32(v, &wf->max_activations))
        return INVALID(L, "limits.maxActivations must be an integer");
    return 0;
}

static int decode_routes(loader *L, const char *id, const json_t *routes)
{
    if (!json_is_object(routes))
        return INVALID(L, "node %s: outcomes must be an object", id);
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)routes, key, v)
    {
        if (!json_is_string(v))
            return INVALID(L, "node %s: outcome targets must be node IDs", id);
    }
    return 0;
}

static int decode_fail_error(loader *L, sp_node *n, json_t *error)
{
    static const char *const allowed[] = {"code", "message", "nodeId", "details", NULL};
    if (!json_is_object(error) || !only_members(error, allowed) ||
        !json_is_string(json_object_get(error, "code")) ||
        !json_is_string(json_object_get(error, "message")))
        return INVALID(L, "node %s: error must be {code, message, nodeId?, details?}", n->id);
    const json_t *node_id = json_object_get(error, "nodeId");
    if (node_id && !json_is_null(node_id) && !json_is_string(node_id))
        return INVALID(L, "node %s: error.nodeId must be null", n->id);
    n->error = error;
    return 0;
}

static int decode_node(loader *L, sp_node *n, json_t *obj)
{
    static const char *const activity01[] = {"kind", "action", "input", "outcomes", NULL};
    static const char *const await01[] = {"kind", "signal", "outcomes", NULL};
    static const char *const complete01[] = {"kind", "output", NULL};
    static const char *const fail01[] = {"kind", "error", NULL};
    static const char *const activity02[] = {"kind", "action", "input", "outcomes", "loopLimits",
                                             "outputSchemas", NULL};
    static const char *const await02[] = {"kind", "signal", "outcomes", "timeoutMs",
                                          "loopLimits", "outputSchemas", NULL};
    static const char *const complete02[] = {"kind", "output", "loopLimits", "outputSchemas", NULL};
    static const char *const fail02[] = {"kind", "error", "loopLimits", "outputSchemas", NULL};
    const char *const *activity = L->v02 ? activity02 : activity01;
    const char *const *await = L->v02 ? await02 : await01;
    const char *const *complete = L->v02 ? complete02 : complete01;
    const char *const *fail = L->v02 ? fail02 : fail01;
    if (!json_is_object(obj) || !json_is_string(json_object_get(obj, "kind")))
        return INVALID(L, "node %s must be an object with a kind", n->id);
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    if (L->v02) {
        bool handled;
        int rc = sp_decode02_node(n, obj, kind, L->fail, &handled);
        if (rc || handled)
            return rc;
    }
    if (strcmp(kind, "activity") == 0) {
        n->kind = SP_NODE_ACTIVITY;
        const json_t *action = json_object_get(obj, "action");
        if (!only_members(obj, activity) || !json_is_string(action))
            return INVALID(L, "node %s: an activity has action, input and outcomes", n->id);
        n->action_id = json_string_value(action);
        n->mapping = json_object_get(obj, "input");
        n->routes = json_object_get(obj, "outcomes");
        if (!n->routes)
            return INVALID(L, "node %s: outcomes missing", n->id);
        return decode_routes(L, n->id, n->routes);
    }
    if (strcmp(kind, "await-signal") == 0) {
        n->kind = SP_NODE_AWAIT_SIGNAL;
        const json_t *signal = json_object_get(obj, "signal");
        n->routes = json_object_get(obj, "outcomes");
        if (!only_members(obj, await) || !json_is_string(signal) || !n->routes)
            return INVALID(L, "node %s: an await-signal node has signal and outcomes", n->id);
        n->signal = json_string_value(signal);
        return decode_routes(L, n->id, n->routes);
    }
    if (strcmp(kind, "complete") == 0) {
        n->kind = SP_NODE_COMPLETE;
        if (!only_members(obj, complete))
            return INVALID(L, "node %s: a complete node has only output", n->id);
        n->mapping = json_object_get(obj, "output");
        return 0;
    }
    if (strcmp(kind, "fail") == 0) {
        n->kind = SP_NODE_FAIL;
        if (!only_members(obj, fail) || !json_object_get(obj, "error"))
            return INVALID(L, "node %s: a fail node has only error", n->id);
        return decode_fail_error(L, n, json_object_get(obj, "error"));
    }
    return INVALID(L, "node %s: unknown kind \"%s\"", n->id, kind);
}

static int decode_nodes(loader *L, sp_workflow *wf, json_t *nodes)
{
    if (!json_is_object(nodes))
        return INVALID(L, "nodes must be an object");
    wf->nnodes = json_object_size(nodes);
    wf->nodes = calloc(wf->nnodes ? wf->nnodes : 1, sizeof *wf->nodes);
    if (!wf->nodes) {
        L->oom = true;
        return -1;
    }
    size_t i = 0;
    const char *key;
    json_t *v;
    size_t klen;
    json_object_keylen_foreach(nodes, key, klen, v)
    {
        if (strlen(key) != klen)
            return INVALID(L, "W03: node IDs cannot hold NUL bytes");
        wf->nodes[i].id = key;
        wf->nodes[i].mapping = NULL;
        if (decode_node(L, &wf->nodes[i], v))
            return -1;
        i++;
    }
    qsort(wf->nodes, wf->nnodes, sizeof *wf->nodes, node_cmp);
    return 0;
}

static int decode_actions(loader *L, sp_workflow *wf, json_t *actions)
{
    if (!actions)
        return 0;
    if (!json_is_object(actions))
        return INVALID(L, "actions must be an object");
    wf->nactions = json_object_size(actions);
    wf->actions = calloc(wf->nactions ? wf->nactions : 1, sizeof *wf->actions);
    if (!wf->actions) {
        L->oom = true;
        return -1;
    }
    size_t i = 0;
    const char *key;
    json_t *v;
    size_t klen;
    json_object_keylen_foreach(actions, key, klen, v)
    {
        if (strlen(key) != klen)
            return INVALID(L, "W04: action IDs cannot hold NUL bytes");
        if (!json_is_object(v))
            return INVALID(L, "action %s must be an object", key);
        wf->actions[i].id = key;
        wf->actions[i].raw = v;
        i++;
    }
    qsort(wf->actions, wf->nactions, sizeof *wf->actions, action_cmp);
    return 0;
}

static int decode(loader *L, sp_workflow *wf)
{
    static const char *const allowed[] = {"format", "name", "start", "limits",
                                          "actions", "nodes", NULL};
    json_t *doc = wf->doc;
    if (!json_is_object(doc) || !only_members(doc, allowed))
        return INVALID(L, "a workflow is an object with format, name, start, limits, actions "
                          "and nodes only");
    const json_t *format = json_object_get(doc, "format"), *name = json_object_get(doc, "name"),
                 *start = json_object_get(doc, "start");
    if (!json_is_string(format) || !json_is_string(name) || !json_is_string(start))
        return INVALID(L, "format, name and start must be strings");
    wf->name = json_string_value(name);
    wf->start = json_string_value(start);
    if (!json_object_get(doc, "nodes"))
        return INVALID(L, "nodes missing");
    if (decode_limits(L, wf, json_object_get(doc, "limits")))
        return -1;
    if (decode_actions(L, wf, json_object_get(doc, "actions")))
        return -1;
    return decode_nodes(L, wf, json_object_get(doc, "nodes"));
}

/* ---- validation W01-W11 ---- */

static int w07_action(loader *L, sp_action *a)
{
    bool v02 = L->v02;
    static const char *const retry_allowed[] = {"maxAttempts", "backoffMs", "maxBackoffMs", NULL};
    const json_t *effect = json_object_get(a->raw, "effect");
    const json_t *outcomes = json_object_get(a->raw, "outcomes");
    const json_t *retry = json_object_get(a->raw, "retry");
    const char *e = json_is_string(effect) ? json_string_value(effect) : "";
    bool reconcilable = strcmp(e, "reconcilable") == 0;
    if (strcmp(e, "pure") == 0)
        a->effect = SP_EFFECT_PURE;
    else if (strcmp(e, "read-only") == 0)
        a->effect = SP_EFFECT_READ_ONLY;
    else if (strcmp(e, "idempotent") == 0)
        a->effect = SP_EFFECT_IDEMPOTENT;
    else if (strcmp(e, "unsafe") == 0)
        a->effect = SP_EFFECT_UNSAFE;
    else if (!reconcilable)
        return INVALID(L, "W07: action %s: effect must be pure, read-only, idempotent or unsafe",
                       a->id);
    /* parse the rest of the policy before judging the effect */
    if (outcomes && !json_is_array(outcomes))
        return INVALID(L, "W07: action %s: outcomes must be an array", a->id);
    for (size_t i = 0; outcomes && i < json_array_size(outcomes); i++)
        if (!json_is_string(json_array_get(outcomes, i)))
            return INVALID(L, "W07: action %s: outcomes must be strings", a->id);
    a->max_attempts = 1;
    a->backoff_ms = 0;
    a->max_backoff_ms = 60000;
    if (retry) {
        if (!json_is_object(retry) || !only_members(retry, retry_allowed))
            return INVALID(L, "W07: action %s: retry has maxAttempts, backoffMs, maxBackoffMs",
                           a->id);
        const json_t *v = json_object_get(retry, "maxAttempts");
        if (v && !read_u32(v, &a->max_attempts))
            return INVALID(L, "W07: action %s: retry.maxAttempts must be an integer", a->id);
        v = json_object_get(retry, "backoffMs");
        if (v && !sp_decimal_from_json(v, &a->backoff_ms))
            return INVALID(L, "W07: action %s: retry.backoffMs must be a decimal string", a->id);
        v = json_object_get(retry, "maxBackoffMs");
        if (v && !sp_decimal_from_json(v, &a->max_backoff_ms))
            return INVALID(L, "W07: action %s: retry.maxBackoffMs must be a decimal string",
                           a->id);
    }
    if (reconcilable)
        return reject(L, "incompatible-version", "workflow.unsupported-effect",
                      "W07: action %s: effect reconcilable is not supported by semantics 0.1",
                      a->id);
    size_t n = outcomes ? json_array_size(outcomes) : 1;
    if (n == 0)
        return INVALID(L, "W07: action %s: outcomes must not be empty", a->id);
    a->outcomes = malloc(n * sizeof *a->outcomes);
    if (!a->outcomes) {
        L->oom = true;
        return -1;
    }
    a->noutcomes = n;
    for (size_t i = 0; i < n; i++)
        a->outcomes[i] = outcomes ? json_string_value(json_array_get(outcomes, i)) : "ok";
    for (size_t i = 0; outcomes && i < n; i++)
        if (!str_pattern(json_array_get(outcomes, i), sp_is_outcome))
            return INVALID(L, "W07: action %s: outcome \"%s\" breaks [a-z0-9][a-z0-9-]{0,63}",
                           a->id, a->outcomes[i]);
    for (size_t i = 0; i < n; i++)
        if (strcmp(a->outcomes[i], "failed") == 0 || (v02 && strcmp(a->outcomes[i], "exhausted") == 0))
            return INVALID(L, "W07: action %s: outcome \"%s\" is reserved", a->id, a->outcomes[i]);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(a->outcomes[i], a->outcomes[j]) == 0)
                return INVALID(L, "W07: action %s: outcome \"%s\" declared twice", a->id,
                               a->outcomes[i]);
    if (a->max_attempts < 1 || a->max_attempts > 100)
        return INVALID(L, "W07: action %s: retry.maxAttempts must be 1..=100", a->id);
    return 0;
}

static int w08_activity(loader *L, const sp_workflow *wf, sp_node *n)
{
    n->action = sp_workflow_action(wf, n->action_id);
    if (!n->action)
        return INVALID(L, "W08: node %s: action %s does not exist", n->id, n->action_id);
    for (size_t i = 0; i < n->action->noutcomes; i++)
        if (!json_object_get(n->routes, n->action->outcomes[i]))
            return INVALID(L, "W08: node %s: outcome %s is not routed", n->id,
                           n->action->outcomes[i]);
    const char *key;
    size_t klen;
    json_t *target;
    json_object_keylen_foreach(n->routes, key, klen, target)
    {
        bool failed = klen == 6 && memcmp(key, "failed", 6) == 0;
        bool exhausted = n->loop_limits && klen == 9 && memcmp(key, "exhausted", 9) == 0;
        if (!failed && !exhausted && !sp_action_declares(n->action, key, klen))
            return INVALID(L, "W08: node %s: route %s is not a declared outcome", n->id, key);
    }
    json_object_foreach(n->routes, key, target)
    {
        if (!sp_workflow_node(wf, json_string_value(target)))
            return INVALID(L, "W08: node %s: route %s targets a missing node", n->id, key);
    }
    return 0;
}

static int w09_await(loader *L, const sp_workflow *wf, const sp_node *n)
{
    if (!sp_is_signal_name(n->signal, strlen(n->signal)))
        return INVALID(L, "W09: node %s: signal name breaks [A-Za-z0-9_.-]{1,64}", n->id);
    if (json_object_size(n->routes) == 0)
        return INVALID(L, "W09: node %s: outcomes must not be empty", n->id);
    const char *key;
    size_t klen;
    json_t *target;
    json_object_keylen_foreach(n->routes, key, klen, target)
    {
        if (!sp_is_outcome(key, klen))
            return INVALID(L, "W09: node %s: outcome key breaks the outcome pattern", n->id);
        if (L->v02 && !n->loop_limits && klen == 9 && memcmp(key, "exhausted", 9) == 0)
            return INVALID(L, "W09: node %s: exhausted is routed only with loopLimits", n->id);
    }
    json_object_foreach(n->routes, key, target)
    {
        if (!sp_workflow_node(wf, json_string_value(target)))
            return INVALID(L, "W09: node %s: route %s targets a missing node", n->id, key);
    }
    return 0;
}

static int validate(loader *L, sp_workflow *wf)
{
    const char *format = L->v02 ? SP_WORKFLOW_FORMAT_02 : SP_WORKFLOW_FORMAT;
    if (strcmp(json_string_value(json_object_get(wf->doc, "format")), format) != 0)
        return INVALID(L, "W01: format must be %s", format);
    if (!str_pattern(json_object_get(wf->doc, "name"), sp_is_name))
        return INVALID(L, "W02: name breaks [A-Za-z0-9_.-]{1,128}");
    if (wf->nnodes < 1 || wf->nnodes > 256)
        return INVALID(L, "W03: a workflow has 1 to 256 nodes");
    for (size_t i = 0; i < wf->nnodes; i++)
        if (!sp_is_node_id(wf->nodes[i].id, strlen(wf->nodes[i].id)))
            return INVALID(L, "W03: node ID breaks [A-Za-z0-9_-]{1,64}");
    for (size_t i = 0; i < wf->nactions; i++)
        if (!sp_is_node_id(wf->actions[i].id, strlen(wf->actions[i].id)))
            return INVALID(L, "W04: action ID breaks [A-Za-z0-9_-]{1,64}");
    if (!sp_workflow_node(wf, wf->start))
        return INVALID(L, "W05: start names no node");
    if (wf->max_visits_per_node < 1 || wf->max_visits_per_node > 1000 ||
        wf->max_activations < 1 || wf->max_activations > 10000)
        return INVALID(L, "W06: maxVisitsPerNode 1..=1000, maxActivations 1..=10000");
    for (size_t i = 0; i < wf->nactions; i++)
        if (w07_action(L, &wf->actions[i]))
            return -1;
    for (size_t i = 0; i < wf->nnodes; i++)
        if (wf->nodes[i].kind == SP_NODE_ACTIVITY && w08_activity(L, wf, &wf->nodes[i]))
            return -1;
    for (size_t i = 0; i < wf->nnodes; i++)
        if (wf->nodes[i].kind == SP_NODE_AWAIT_SIGNAL && w09_await(L, wf, &wf->nodes[i]))
            return -1;
    for (size_t i = 0; i < wf->nnodes; i++) {
        const sp_node *n = &wf->nodes[i];
        if ((n->kind == SP_NODE_ACTIVITY || n->kind == SP_NODE_COMPLETE) && n->mapping &&
            !sp_mapping_valid(n->mapping))
            return INVALID(L, "W10: node %s: malformed mapping", n->id);
    }
    for (size_t i = 0; i < wf->nnodes; i++) {
        const sp_node *n = &wf->nodes[i];
        if (n->kind != SP_NODE_FAIL)
            continue;
        const json_t *code = json_object_get(n->error, "code");
        if (!str_pattern(code, sp_is_error_code))
            return INVALID(L, "W11: node %s: error code breaks [a-z0-9][a-z0-9.-]{0,63}", n->id);
        const json_t *node_id = json_object_get(n->error, "nodeId");
        if (node_id && !json_is_null(node_id))
            return INVALID(L, "W11: node %s: error.nodeId must be null", n->id);
    }
    if (!L->v02)
        return 0;
    int rc = sp_validate02(wf, L->fail, &L->oom);
    return rc;
}

sp_semantics sp_workflow_semantics_of(const json_t *doc)
{
    const json_t *format = json_object_get(doc, "format");
    return json_is_string(format) && strcmp(json_string_value(format), SP_WORKFLOW_FORMAT_02) == 0 &&
                   strlen(SP_WORKFLOW_FORMAT_02) == json_string_length(format)
               ? SP_SEM_02
               : SP_SEM_01;
}

sp_workflow *sp_workflow_load(const char *bytes, size_t len, sp_kernel_failure *fail, bool *oom)
{
    return sp_workflow_load_as(bytes, len, (sp_semantics)-1, fail, oom);
}

/* sem (sp_semantics)-1: chosen by the format */
sp_workflow *sp_workflow_load_as(const char *bytes, size_t len, sp_semantics sem,
                                 sp_kernel_failure *fail, bool *oom)
{
    loader L = {fail, false, false};
    *oom = false;
    sp_workflow *wf = calloc(1, sizeof *wf);
    if (!wf) {
        *oom = true;
        return NULL;
    }
    sp_error err = {0};
    wf->doc = sp_json_parse_canonical(bytes, len, &err);
    if (!wf->doc) {
        if (strcmp(err.code, "runtime.out-of-memory") == 0)
            L.oom = true;
        else
            INVALID(&L, "the package is not canonical JSON: %s: %s", err.code, err.message);
        sp_error_clear(&err);
        goto failed;
    }
    wf->canonical = malloc(len + 1);
    if (!wf->canonical) {
        L.oom = true;
        goto failed;
    }
    memcpy(wf->canonical, bytes, len);
    wf->canonical[len] = '\0';
    wf->canonical_len = len;
    sp_digest_one("package", bytes, len, wf->package_digest);
    wf->semantics = sp_workflow_semantics_of(wf->doc);
    if (sem == SP_SEM_02 && wf->semantics != SP_SEM_02) {
        reject(&L, "incompatible-version", "version.semantics",
               "semantics 0.2 runs only %s packages", SP_WORKFLOW_FORMAT_02);
        goto failed;
    }
    if (sem == SP_SEM_01)
        wf->semantics = SP_SEM_01; /* a 0.2 package under 0.1: W01 */
    L.v02 = wf->semantics == SP_SEM_02;
    if (decode(&L, wf) || validate(&L, wf))
        goto failed;
    return wf;
failed:
    *oom = L.oom;
    sp_workflow_free(wf);
    return NULL;
}

void sp_workflow_free(sp_workflow *wf)
{
    if (!wf)
        return;
    for (size_t i = 0; i < wf->nactions; i++)
        free(wf->actions[i].outcomes);
    free(wf->actions);
    free(wf->nodes);
    free(wf->canonical);
    json_decref(wf->doc);
    free(wf);
}

static int find_cmp(const char *key, const char *id)
{
    return byte_order(key, strlen(key), id, strlen(id));
}

const sp_node *sp_workflow_node(const sp_workflow *wf, const char *id)
{
    size_t lo = 0, hi = wf->nnodes;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = find_cmp(id, wf->nodes[mid].id);
        if (c == 0)
            return &wf->nodes[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const sp_action *sp_workflow_action(const sp_workflow *wf, const char *id)
{
    size_t lo = 0, hi = wf->nactions;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = find_cmp(id, wf->actions[mid].id);
        if (c == 0)
            return &wf->actions[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const char *sp_node_route(const sp_node *n, const char *outcome, size_t len)
{
    const json_t *t = n->routes ? json_object_getn(n->routes, outcome, len) : NULL;
    return t ? json_string_value(t) : NULL;
}

bool sp_action_declares(const sp_action *a, const char *outcome, size_t len)
{
    for (size_t i = 0; i < a->noutcomes; i++)
        if (strlen(a->outcomes[i]) == len && memcmp(a->outcomes[i], outcome, len) == 0)
            return true;
    return false;
}
