/*
 * admission.c - a signal or a resolve checked against the run before it is
 * recorded, and where an accepted signal goes (docs/cli.md "Truthful
 * answers").
 *
 * What it is for: refusing, with a code and nothing recorded, what the kernel
 * could only drop later with a diagnostic: anything sent to a terminal run
 * (run.terminal), a signal name no await-signal node of the workflow waits
 * for (signal.unknown-name), an outcome none of those nodes routes
 * (signal.outcome-unrouted), a resolve of an invocation that is not one of
 * the run's unknown (or, in format 0.2, stuck) ones, one already answered, or one completing with an outcome
 * its action does not declare (resolve.not-applicable). A request whose
 * receipt exists is not checked again: repeating it answers `duplicate` (or
 * a digest conflict) whatever the run's state is now.
 *
 * What it must never do: write to the store, or replace the kernel's
 * decision: these checks read committed state only, so a commit that races
 * them still ends in the kernel's own diagnostic, as before.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "engine/admission.h"
#include "engine/internal.h"
#include "engine/ledger.h"
#include "engine/stateview.h"

/* What the checks read of a run. */
typedef struct run_facts {
    sp_engine *e;
    sp_run_view view;
    sv_state state;        /* empty before the first commit */
    const sp_workflow *wf;
    const char *status;    /* the snapshot's, else the run's ("created") */
    sp_event_list pending; /* accepted, not yet consumed */
} run_facts;

static void facts_free(run_facts *f)
{
    sv_free(&f->state);
    sp_event_list_free(&f->pending);
    sp_run_view_free(&f->view);
}

static int read_snapshot(run_facts *f, sp_error *err)
{
    f->status = f->view.status;
    if (!f->view.snapshot)
        return 0;
    if (sv_parse(f->view.snapshot, f->view.snapshot_len, &f->state, err))
        return -1;
    f->status = f->state.status;
    return 0;
}

/* The await-signal activation a signal `name` would be taken by now: the
 * first that waits for it (0.2), or the node a 0.1 run waits at. */
static const sp_node *waiting_for(const run_facts *f, const char *name)
{
    for (size_t i = 0; i < f->state.nwaits; i++) {
        const sp_node *n = sp_workflow_node(f->wf, f->state.waits[i].node_id);
        if (n && n->kind == SP_NODE_AWAIT_SIGNAL && strcmp(n->signal, name) == 0)
            return n;
    }
    return NULL;
}

static int load_facts(sp_engine *e, const sp_run_key *key, run_facts *f, sp_error *err)
{
    memset(f, 0, sizeof *f);
    f->e = e;
    if (engine_get_run(e, key, &f->view, err))
        return -1;
    if (read_snapshot(f, err) || !(f->wf = engine_workflow(e, f->view.package_digest, err)))
        return -1;
    sp_store_rc rc;
    ENGINE_RETRY_READ(e, rc, err,
                      ledger_list_events(e, key, f->view.applied_sequence,
                                           ADMISSION_PENDING_MAX, &f->pending, err));
    return rc == SP_STORE_OK ? 0 : -1;
}

static int receipt_exists(sp_engine *e, const sp_run_key *key, const char *request_id,
                          bool *exists, sp_error *err)
{
    sp_receipt r;
    sp_store_rc rc;
    ENGINE_RETRY_READ(e, rc, err, ledger_get_receipt(e, key, request_id, &r, exists, err));
    if (rc != SP_STORE_OK)
        return -1;
    if (*exists)
        sp_receipt_free(&r);
    return 0;
}

static int refuse_terminal(const run_facts *f, const char *what, sp_error *err)
{
    if (strcmp(f->status, "completed") != 0 && strcmp(f->status, "failed") != 0 &&
        strcmp(f->status, "cancelled") != 0)
        return 0;
    return sp_fail_details(err, "run.terminal", json_pack("{s:s}", "status", f->status),
                           "run %s has %s: a %s can no longer change it; nothing recorded",
                           f->view.key.run_id, f->status, what);
}

/* A request's own check, after the run was found not terminal. */
typedef int (*admission_check)(const run_facts *f, void *ctx, sp_error *err);

/* The frame every request shares: one whose receipt exists goes through
 * unchecked (the append answers duplicate or a conflict); else the run is
 * read, a terminal one refused, then `check` decides. */
static int admit(sp_engine *e, const sp_run_key *key, const char *request_id, const char *what,
                 admission_check check, void *ctx, sp_error *err)
{
    bool repeated = false;
    if (receipt_exists(e, key, request_id, &repeated, err))
        return -1;
    if (repeated)
        return 0;
    run_facts f;
    int rc = load_facts(e, key, &f, err);
    if (rc == 0)
        rc = refuse_terminal(&f, what, err);
    if (rc == 0)
        rc = check(&f, ctx, err);
    facts_free(&f);
    return rc;
}

/* ---- signals ---- */

/* The await-signal nodes for `name`, as a JSON array of node IDs, and
 * whether one of them routes `outcome`. */
static json_t *waiters(const sp_workflow *wf, const char *name, const char *outcome,
                       bool *routed)
{
    json_t *nodes = json_array();
    *routed = false;
    for (size_t i = 0; nodes && i < wf->nnodes; i++) {
        const sp_node *n = &wf->nodes[i];
        if (n->kind != SP_NODE_AWAIT_SIGNAL || strcmp(n->signal, name) != 0)
            continue;
        json_array_append_new(nodes, json_string(n->id));
        *routed = *routed || sp_node_route(n, outcome, strlen(outcome)) != NULL;
    }
    return nodes;
}

static json_t *awaited_names(const sp_workflow *wf)
{
    json_t *names = json_array();
    for (size_t i = 0; names && i < wf->nnodes; i++)
        if (wf->nodes[i].kind == SP_NODE_AWAIT_SIGNAL)
            json_array_append_new(names, json_string(wf->nodes[i].signal));
    return names;
}

static int check_signal_route(const sp_workflow *wf, const char *name, const char *outcome,
                              sp_error *err)
{
    bool routed = false;
    json_t *nodes = waiters(wf, name, outcome, &routed);
    if (!nodes)
        return sp_oom(err);
    size_t n = json_array_size(nodes);
    json_decref(nodes);
    if (n == 0)
        return sp_fail_details(err, "signal.unknown-name",
                               json_pack("{s:s,s:o}", "name", name, "awaited", awaited_names(wf)),
                               "workflow %s never waits for a signal named \"%s\"; nothing "
                               "recorded (its await-signal nodes are in details)",
                               wf->name ? wf->name : "", name);
    if (!routed)
        return sp_fail_details(err, "signal.outcome-unrouted",
                               json_pack("{s:s,s:s}", "name", name, "outcome", outcome),
                               "no await-signal node for \"%s\" routes the outcome \"%s\"; "
                               "nothing recorded",
                               name, outcome);
    return 0;
}

/* Whether an unconsumed event of `kind` whose `member` is `value` is queued. */
static bool pending_has(const run_facts *f, const char *kind, const char *member,
                        const char *value)
{
    for (size_t i = 0; i < f->pending.n; i++) {
        const sp_event *ev = &f->pending.events[i];
        if (strcmp(ev->kind, kind) != 0)
            continue;
        json_t *body = json_loadb(ev->body, ev->body_len, 0, NULL);
        const char *text = json_string_value(json_object_get(body, member));
        bool same = text && strcmp(text, value) == 0;
        json_decref(body);
        if (same)
            return true;
    }
    return false;
}

static void delivery_of(const run_facts *f, const char *name, sp_signal_answer *a)
{
    const sp_node *at = waiting_for(f, name);
    a->delivery = at && !pending_has(f, "signal.received", "name", name) ? SP_SIGNAL_DELIVERED
                                                                         : SP_SIGNAL_BUFFERED;
    const char *node = at ? at->id : f->state.nwaits ? f->state.waits[0].node_id : NULL;
    snprintf(a->node_id, sizeof a->node_id, "%s", node ? node : "");
    snprintf(a->status, sizeof a->status, "%s", f->status);
}

typedef struct signal_request {
    const char *name, *outcome;
    const json_t *data;
    sp_signal_answer *answer;
} signal_request;

/* Format 0.2: the data of a signal is the output of the await-signal node
 * that takes it, checked against that node's schema for the outcome (W13
 * makes every waiter for one name declare the same). output.invalid names
 * the path and the rule, never the value. */
static int check_signal_data(const run_facts *f, const signal_request *q, const char *outcome,
                             sp_error *err)
{
    for (size_t i = 0; i < f->wf->nnodes; i++) {
        const sp_node *n = &f->wf->nodes[i];
        if (n->kind != SP_NODE_AWAIT_SIGNAL || strcmp(n->signal, q->name) != 0)
            continue;
        const sp_schema *schema =
            engine_output_schema(f->e, f->view.package_digest, n->id, outcome);
        sp_schema_error se;
        if (schema && sp_schema_check(schema, q->data ? q->data : json_null(), &se) == 1)
            return sp_fail_details(err, "output.invalid",
                                   json_pack("{s:s,s:s,s:s}", "path", se.path, "rule", se.rule,
                                             "nodeId", n->id),
                                   "the signal's data does not match the schema of %s for \"%s\" "
                                   "at %s (%s): %s; nothing recorded",
                                   n->id, outcome, se.path[0] ? se.path : "the root", se.rule,
                                   se.message);
    }
    return 0;
}

static int check_signal(const run_facts *f, void *ctx, sp_error *err)
{
    signal_request *q = ctx;
    const char *outcome = q->outcome ? q->outcome : "received";
    if (check_signal_route(f->wf, q->name, outcome, err) ||
        check_signal_data(f, q, outcome, err))
        return -1;
    delivery_of(f, q->name, q->answer);
    if (q->answer->delivery != SP_SIGNAL_DELIVERED)
        return 0;
    /* taken at this node now: its routes decide, not another waiter's */
    const sp_node *at = waiting_for(f, q->name);
    if (sp_node_route(at, outcome, strlen(outcome)))
        return 0;
    return sp_fail_details(err, "signal.outcome-unrouted",
                           json_pack("{s:s,s:s,s:s}", "name", q->name, "outcome", outcome,
                                     "nodeId", at->id),
                           "the run waits for \"%s\" at %s, which does not route the outcome "
                           "\"%s\"; nothing recorded (spore status shows the outcomes it routes)",
                           q->name, at->id, outcome);
}

int engine_admit_signal(sp_engine *e, const sp_run_key *key, const char *request_id,
                        const char *name, const char *outcome, const json_t *data,
                        sp_signal_answer *answer, sp_error *err)
{
    memset(answer, 0, sizeof *answer);
    signal_request q = {name, outcome, data, answer};
    return admit(e, key, request_id, "signal", check_signal, &q, err);
}

/* ---- resolves ---- */

static int not_applicable(sp_error *err, const char *invocation_id, const char *reason,
                          const char *message)
{
    return sp_fail_details(err, "resolve.not-applicable",
                           json_pack("{s:s,s:s}", "invocationId", invocation_id, "reason", reason),
                           "%s; nothing recorded", message);
}

static int check_resolve(const run_facts *f, const char *invocation_id, sp_resolution r,
                         const char *outcome, sp_error *err)
{
    char why[320];
    const sv_invocation *inv = sv_invocation_of(&f->state, invocation_id);
    const char *current = f->state.ninvocations ? f->state.invocations[0].invocation_id : NULL;
    if (!inv) {
        if (current && f->state.ninvocations == 1)
            snprintf(why, sizeof why,
                     "the run's current invocation is %s, not %s (see spore status)", current,
                     invocation_id);
        else if (current)
            snprintf(why, sizeof why,
                     "invocation %s is not one of the run's invocations in flight (see spore "
                     "status)",
                     invocation_id);
        else
            snprintf(why, sizeof why, "run %s has no invocation to resolve (see spore status)",
                     f->view.key.run_id);
        return not_applicable(err, invocation_id, "invocation-mismatch", why);
    }
    if (pending_has(f, "invocation.resolved", "invocationId", invocation_id)) {
        snprintf(why, sizeof why,
                 "invocation %s already has a resolve waiting to be applied (spore resume "
                 "applies it)",
                 invocation_id);
        return not_applicable(err, invocation_id, "already-resolved", why);
    }
    const sp_node *node = sp_workflow_node(f->wf, inv->node_id);
    if (r == SP_RESOLVE_COMPLETE && node && node->action &&
        !sp_action_declares(node->action, outcome, strlen(outcome))) {
        snprintf(why, sizeof why, "the action of step %s does not declare the outcome \"%s\"",
                 node->id, outcome);
        return not_applicable(err, invocation_id, "outcome-undeclared", why);
    }
    /* a result of it waiting to be applied may make it unknown: the kernel decides */
    if (pending_has(f, "activity.result", "invocationId", invocation_id))
        return 0;
    if (inv->state == SV_SCHEDULED) {
        snprintf(why, sizeof why, "invocation %s is scheduled: its outcome is not unknown",
                 invocation_id);
        return not_applicable(err, invocation_id, "invocation-not-unknown", why);
    }
    return 0;
}

typedef struct resolve_request {
    const char *invocation_id, *outcome;
    sp_resolution resolution;
} resolve_request;

static int check_resolve_request(const run_facts *f, void *ctx, sp_error *err)
{
    const resolve_request *q = ctx;
    return check_resolve(f, q->invocation_id, q->resolution, q->outcome, err);
}

int engine_admit_resolve(sp_engine *e, const sp_run_key *key, const char *request_id,
                         const char *invocation_id, sp_resolution r, const char *outcome,
                         sp_error *err)
{
    resolve_request q = {invocation_id, outcome, r};
    return admit(e, key, request_id, "resolve", check_resolve_request, &q, err);
}
