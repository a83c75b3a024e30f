/*
 * map.c - the map node (workflows-0.2.md §4): `items` evaluated to an array
 * of 0..=maxItems elements, one invocation of the action per item (its
 * activation "<map>/<visit>#<index>", its own invocation and command IDs),
 * at most maxConcurrency in flight, the next item in index order scheduled
 * as one settles, results in item order; a failed item leaves through the
 * map's `failed` route (the others cancelled) or becomes stuck.
 *
 * Must never have more than maxConcurrency items in flight (K12: stuck and
 * unknown items hold their place), schedule an item twice, or order
 * anything but by index.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "kernel/run02.h"

static const char MSG_ITEMS[] = "map items are not an array within maxItems";

static json_t *map_of(kt *t, const char *activation)
{
    return json_object_get(kt_st(t, "maps"), activation);
}

static uint32_t member_u32(const json_t *m, const char *name)
{
    return k_u32(json_object_get(m, name));
}

static void item_activation(const char *activation, uint32_t index, char out[160])
{
    snprintf(out, 160, "%s#%u", activation, index);
}

bool m02_is_item(const char *activation) { return activation && strchr(activation, '#') != NULL; }

/* "<map>/<visit>#<index>" -> the map activation and the index. */
static bool split_item(const char *item, char activation[160], uint32_t *index)
{
    const char *hash = strchr(item, '#');
    if (!hash || (size_t)(hash - item) >= 160)
        return false;
    memcpy(activation, item, (size_t)(hash - item));
    activation[hash - item] = '\0';
    char *end;
    unsigned long v = strtoul(hash + 1, &end, 10);
    if (*end || v > UINT32_MAX)
        return false;
    *index = (uint32_t)v;
    return true;
}

static const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

/* Schedule item `index`; 1 when its input ended the run (missing path). */
static int schedule_item(kt *t, const sp_node *node, const char *activation, json_t *m,
                         uint32_t index)
{
    json_t *input, *error, *inv;
    int rc = k_evaluate(t, node, node->mapping, json_array_get(json_object_get(m, "items"), index),
                        index, &input, &error);
    if (rc)
        return rc < 0 ? -1 : r02_terminate_failed(t, error) ? -1 : 1;
    char item[160];
    item_activation(activation, index, item);
    rc = k_schedule(t, node, item, input, &inv);
    json_decref(input);
    if (rc) {
        json_decref(inv);
        return -1;
    }
    kt_obj_set(t, kt_st(t, "invocations"), json_string_value(json_object_get(inv, "invocationId")),
               inv);
    kt_obj_set(t, m, "next", json_integer((json_int_t)index + 1));
    kt_obj_set(t, m, "running", json_integer((json_int_t)member_u32(m, "running") + 1));
    return t->oom ? k_oom(t) : 0;
}

/* Schedule items in index order while fewer than maxConcurrency run. */
static int fill(kt *t, const sp_node *node, const char *activation)
{
    json_t *m = map_of(t, activation);
    while (m && member_u32(m, "running") < node->max_concurrency &&
           member_u32(m, "next") < member_u32(m, "total")) {
        int rc = schedule_item(t, node, activation, m, member_u32(m, "next"));
        if (rc)
            return rc < 0 ? -1 : 0;
    }
    return 0;
}

int m02_enter(kt *t, const char *sid, const sp_node *node, const char *activation,
              uint32_t visit, khop *next)
{
    json_t *items, *error;
    int rc = k_evaluate(t, node, node->items, NULL, -1, &items, &error);
    if (rc)
        return rc < 0 ? -1 : r02_terminate_failed(t, error);
    s02_set_pos(t, sid, node, activation, visit);
    if (!json_is_array(items) || json_array_size(items) > node->max_items) {
        json_t *details = json_is_array(items)
                              ? json_pack("{s:I}", "length", (json_int_t)json_array_size(items))
                              : json_pack("{s:s}", "type", json_type_name(items));
        json_decref(items);
        return r02_terminate_failed(t, k_error_info("map.items-invalid", MSG_ITEMS, node->id,
                                                    details));
    }
    size_t total = json_array_size(items);
    if (total == 0) {
        json_decref(items);
        khop_set(t, next, sid, node, visit, json_string("ok"), json_pack("{s:[]}", "results"));
        return t->oom ? k_oom(t) : 0;
    }
    json_t *results = json_array();
    for (size_t i = 0; results && i < total; i++)
        if (json_array_append_new(results, json_null()))
            t->oom = true;
    kt_obj_set(t, kt_st(t, "maps"), activation,
               json_pack("{s:s,s:s,s:I,s:i,s:i,s:i,s:o,s:o}", "activationId", activation, "node",
                         node->id, "total", (json_int_t)total, "done", 0, "running", 0, "next", 0,
                         "items", items, "results", results));
    return t->oom ? k_oom(t) : fill(t, node, activation);
}

/* The map of an item invocation, its node, strand and visit. */
static int item_context(kt *t, const json_t *inv, char activation[160], uint32_t *index,
                        json_t **m, const sp_node **node, char sid[SID_MAX], uint32_t *visit)
{
    const char *item = json_string_value(json_object_get(inv, "activationId"));
    if (!split_item(item, activation, index) || !(*m = map_of(t, activation)) ||
        !(*node = sp_workflow_node(t->wf, json_string_value(json_object_get(*m, "node")))) ||
        !s02_find(t, activation, sid))
        return k_invariant(t, "a map item without its map");
    *visit = s02_pos_visit(s02_pos(t, sid));
    return 0;
}

static int item_settled(kt *t, json_t *m)
{
    kt_obj_set(t, m, "running", json_integer((json_int_t)member_u32(m, "running") - 1));
    kt_obj_set(t, m, "done", json_integer((json_int_t)member_u32(m, "done") + 1));
    return t->oom ? k_oom(t) : 0;
}

int m02_item_succeeded(kt *t, json_t *inv, const json_t *outcome, const json_t *output,
                       khop *next)
{
    char activation[160], sid[SID_MAX];
    uint32_t index, visit;
    json_t *m;
    const sp_node *node;
    if (item_context(t, inv, activation, &index, &m, &node, sid, &visit))
        return -1;
    json_t *results = json_object_get(m, "results");
    if (json_array_set_new(results, index, json_pack("{s:O,s:O}", "outcome", outcome, "output",
                                                     output)))
        return k_oom(t);
    r02_invocation_drop(t, json_string_value(json_object_get(inv, "invocationId")));
    if (item_settled(t, m))
        return -1;
    if (member_u32(m, "done") < member_u32(m, "total"))
        return fill(t, node, activation);
    json_t *output_all = json_pack("{s:O}", "results", results);
    json_object_del(kt_st(t, "maps"), activation);
    khop_set(t, next, sid, node, visit, json_string("ok"), output_all);
    return t->oom ? k_oom(t) : 0;
}

/* activity.cancel for every in-flight item but `except`, in index order. */
static int cancel_items(kt *t, const char *activation, const json_t *m, int64_t except)
{
    uint32_t scheduled = member_u32(m, "next");
    for (uint32_t i = 0; i < scheduled; i++) {
        if ((int64_t)i == except)
            continue;
        char item[160], id[SP_ID_LEN + 1];
        item_activation(activation, i, item);
        sp_invocation_id(kt_str(t, "tenant"), kt_str(t, "runId"), item, id);
        if (r02_cancel_invocation(t, id))
            return -1;
    }
    return 0;
}

int m02_item_failed(kt *t, json_t *inv, json_t *error, bool terminal, khop *next)
{
    char activation[160], sid[SID_MAX];
    uint32_t index, visit;
    json_t *m;
    const sp_node *node;
    if (item_context(t, inv, activation, &index, &m, &node, sid, &visit)) {
        json_decref(error);
        return -1;
    }
    if (!sp_node_route(node, "failed", 6)) {
        if (terminal) { /* the operator's answer: this item is not cancelled, the others are */
            r02_invocation_drop(t, json_string_value(json_object_get(inv, "invocationId")));
            return r02_terminate_failed(t, error);
        }
        return r02_stuck(t, node, inv, error);
    }
    if (cancel_items(t, activation, m, index)) {
        json_decref(error);
        return -1;
    }
    r02_invocation_drop(t, json_string_value(json_object_get(inv, "invocationId")));
    json_t *output = json_pack("{s:o,s:I,s:O}", "error", error, "index", (json_int_t)index,
                               "results", json_object_get(m, "results"));
    json_object_del(kt_st(t, "maps"), activation);
    khop_set(t, next, sid, node, visit, json_string("failed"), output);
    return t->oom ? k_oom(t) : 0;
}

int m02_cancel(kt *t, const char *activation)
{
    const json_t *m = map_of(t, activation);
    if (!m)
        return 0;
    if (cancel_items(t, activation, m, -1))
        return -1;
    json_object_del(kt_st(t, "maps"), activation);
    return 0;
}
