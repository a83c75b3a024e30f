/*
 * waitview.c - the `waitingFor` member of a waiting run's status: the
 * signal its await-signal node waits for and the outcomes that node routes,
 * read from the run's workflow (the snapshot names only the node).
 *
 * Must never change the run or read anything but its snapshot and package.
 */
#include <string.h>

#include "engine/internal.h"
#include "json/json.h"

static json_t *routed_outcomes(const sp_node *n)
{
    json_t *out = json_array();
    const char *outcome;
    json_t *target;
    if (out && json_is_object(n->routes))
        json_object_foreach(n->routes, outcome, target)
            json_array_append_new(out, json_string(outcome));
    return out;
}

json_t *sp_engine_wait_view(sp_engine *e, const sp_run_view *run)
{
    json_t *snap = run->snapshot ? sp_json_parse(run->snapshot, run->snapshot_len, NULL) : NULL;
    const char *status = json_string_value(json_object_get(snap, "status"));
    const char *node_id =
        json_string_value(json_object_get(json_object_get(snap, "position"), "nodeId"));
    json_t *out = NULL;
    if (status && strcmp(status, "waiting") == 0 && node_id) {
        sp_error err = {0};
        const sp_workflow *wf = engine_workflow(e, run->package_digest, &err);
        const sp_node *n = wf ? sp_workflow_node(wf, node_id) : NULL;
        if (n && n->kind == SP_NODE_AWAIT_SIGNAL)
            out = json_pack("{s:s,s:s,s:o}", "signal", n->signal, "nodeId", n->id, "outcomes",
                            routed_outcomes(n));
        sp_error_clear(&err);
    }
    json_decref(snap);
    return out ? out : json_null();
}
