/*
 * waitview.c - the `waitingFor` member of a waiting run's status: the
 * signal its await-signal node waits for and the outcomes that node routes,
 * read from the run's workflow (the snapshot names only the node).
 *
 * Must never change the run or read anything but its snapshot and package.
 */
#include <string.h>

#include "engine/internal.h"
#include "engine/stateview.h"

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
    sv_state st;
    sp_error err = {0};
    if (!run->snapshot || sv_parse(run->snapshot, run->snapshot_len, &st, &err)) {
        sp_error_clear(&err);
        return json_null();
    }
    const char *node_id = st.nwaits ? st.waits[0].node_id : NULL;
    json_t *out = NULL;
    if (sv_status_is(&st, "waiting") && node_id) {
        const sp_workflow *wf = engine_workflow(e, run->package_digest, &err);
        const sp_node *n = wf ? sp_workflow_node(wf, node_id) : NULL;
        if (n && n->kind == SP_NODE_AWAIT_SIGNAL)
            out = json_pack("{s:s,s:s,s:o}", "signal", n->signal, "nodeId", n->id, "outcomes",
                            routed_outcomes(n));
        sp_error_clear(&err);
    }
    sv_free(&st);
    return out ? out : json_null();
}
