/*
 * settings.c - settings.json merged into the package (authoring.md §1):
 * `limits` and `actions` as they are, and `nodes.<id>` holding only the
 * non-route members of each node (action, input, output, error, signal,
 * timeoutMs, items, maxConcurrency, loopLimits, outputSchemas, ...), added
 * to the node the DOT graph made.
 *
 * Must never let settings.json change the topology (kind and route members
 * belong to workflow.dot), name a node the graph lacks, or leave a node
 * that runs an action without its settings; members are visited in
 * ascending key order, so the first problem reported is always the same.
 */
#include <stdlib.h>
#include <string.h>

#include "authoring/folder_build.h"
#include "json/json.h"

static bool listed(const char *const *list, const char *key)
{
    for (; *list; list++)
        if (strcmp(*list, key) == 0)
            return true;
    return false;
}

static int top_level(folder_build *b)
{
    static const char *const allowed[] = {"limits", "actions", "nodes", NULL};
    static const char *const graph[] = {"format", "name", "start", NULL};
    if (!json_is_object(b->settings))
        return fb_settings_error(b, "build.settings-invalid", NULL, 0, false,
                                 "settings.json holds one object: {\"limits\", \"actions\", "
                                 "\"nodes\"}");
    bool oom = false;
    size_t n = json_object_size(b->settings);
    sp_json_member *m = sp_json_sorted_members(b->settings, &oom);
    int rc = oom ? sp_oom(b->err) : 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *path[] = {m[i].key};
        if (listed(graph, m[i].key))
            rc = fb_settings_error(b, "build.settings-invalid", path, 1, true,
                                   "\"%s\" belongs in workflow.dot (the graph attribute %s, or the "
                                   "digraph's ID for the name)",
                                   m[i].key, m[i].key);
        else if (!listed(allowed, m[i].key))
            rc = fb_settings_error(b, "build.settings-invalid", path, 1, true,
                                   "unknown member \"%.80s\" (settings.json holds limits, actions "
                                   "and nodes)",
                                   m[i].key);
    }
    free(m);
    return rc;
}

/* One nodes.<id> entry checked and added to the graph's node. */
static int node_entry(folder_build *b, const char *id, json_t *entry)
{
    static const char *const topology[] = {"kind", "outcomes", "branches", "join", NULL};
    const char *path[] = {"nodes", id, NULL};
    json_t *node = json_object_get(b->nodes, id);
    if (!node)
        return fb_settings_error(b, "build.settings-unknown-node", path, 2, true,
                                 "settings for node \"%.80s\", which workflow.dot does not have",
                                 id);
    if (!json_is_object(entry))
        return fb_settings_error(b, "build.settings-invalid", path, 2, false,
                                 "nodes.%.80s must be an object of the node's members", id);
    bool oom = false;
    size_t n = json_object_size(entry);
    sp_json_member *m = sp_json_sorted_members(entry, &oom);
    int rc = oom ? sp_oom(b->err) : 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        path[2] = m[i].key;
        if (listed(topology, m[i].key))
            rc = fb_settings_error(b, "build.settings-topology", path, 3, true,
                                   "nodes.%.80s.%s is topology: it belongs in workflow.dot (%s)",
                                   id, m[i].key,
                                   strcmp(m[i].key, "kind") == 0 ? "the node's kind attribute"
                                                                 : "its edges");
        else if (json_object_set(node, m[i].key, m[i].value))
            rc = sp_oom(b->err);
    }
    free(m);
    return rc;
}

static int node_entries(folder_build *b)
{
    json_t *nodes = json_object_get(b->settings, "nodes");
    const char *path[] = {"nodes"};
    if (!nodes)
        return 0;
    if (!json_is_object(nodes))
        return fb_settings_error(b, "build.settings-invalid", path, 1, false,
                                 "nodes must be an object: node ID -> the node's members");
    bool oom = false;
    size_t n = json_object_size(nodes);
    sp_json_member *m = sp_json_sorted_members(nodes, &oom);
    int rc = oom ? sp_oom(b->err) : 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = node_entry(b, m[i].key, m[i].value);
    free(m);
    return rc;
}

/* A node that runs an action (activity, map) needs its settings: at least
 * the action. */
static int runners_have_settings(folder_build *b)
{
    json_t *nodes = json_object_get(b->settings, "nodes");
    for (size_t i = 0; i < b->graph.nnodes; i++) {
        const sp_dot_node *n = &b->graph.nodes[i];
        const json_t *node = json_object_get(b->nodes, n->id);
        const char *kind = json_string_value(json_object_get(node, "kind"));
        bool runs = strcmp(kind, "activity") == 0 || strcmp(kind, "map") == 0;
        if (runs && !json_object_get(nodes, n->id))
            return fb_dot_error(b, "build.activity-without-settings", n->pos,
                                "%s node %.80s has no settings: add \"nodes\": {\"%.80s\": "
                                "{\"action\": ...}} to settings.json",
                                kind, n->id, n->id);
    }
    return 0;
}

int fb_settings(folder_build *b)
{
    if (top_level(b) || node_entries(b) || runners_have_settings(b))
        return -1;
    json_t *actions = json_object_get(b->settings, "actions");
    if (actions && !(b->actions = json_deep_copy(actions)))
        return sp_oom(b->err);
    return 0;
}
