/*
 * transition.c - the transition function (kernel.md §7.7-7.12): request
 * checks in order, bookkeeping, dispatch to the semantics the identity
 * names (run01.c for 0.1, run02.c for 0.2), and the result checks with
 * their budgets; the host's decoded state taken in place of the snapshot
 * bytes and handed back updated.
 *
 * Must never do I/O, read a clock, use randomness or floating point, or let
 * a failure leave anything behind: a failure discards the whole decision
 * (and the taken state). Must never let the kept state change a result
 * byte: it is used only where the decode of the bytes would give it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/decimal.h"
#include "json/json.h"
#include "kernel/internal.h"
#include "kernel/mapping.h"

/* ---- request checks (kernel.md §7.7) ---- */

/* Check 1: the semantics version is one we know; *sem is the one chosen. */
static int check_semantics(const sp_kernel_request *req, sp_semantics *sem_out, kfail *f)
{
    const char *sem = req->identity.semantics_version;
    bool v01 = sem && strcmp(sem, SP_SEMANTICS_VERSION) == 0;
    bool v02 = sem && strcmp(sem, SP_SEMANTICS_VERSION_02) == 0;
    if (!v01 && !v02)
        return kfail_set(f, "incompatible-version", "version.semantics",
                         "semantics version %s is not %s or %s", sem ? sem : "(none)",
                         SP_SEMANTICS_VERSION, SP_SEMANTICS_VERSION_02);
    *sem_out = v02 ? SP_SEM_02 : SP_SEM_01;
    return 0;
}

static int check_codec(const sp_kernel_request *req, kfail *f)
{
    const char *codec = req->identity.codec_version;
    if (!codec || strcmp(codec, SP_CODEC_VERSION) != 0)
        return kfail_set(f, "incompatible-version", "version.codec", "codec %s is not %s",
                         codec ? codec : "(none)", SP_CODEC_VERSION);
    return 0;
}

/* A graph loaded by the host (sp_workflow_load picks the semantics from the
 * format) answers as sp_workflow_load_as() under `sem` would: a 0.2
 * package under 0.1 fails W01, a 0.1 package under 0.2 is
 * version.semantics (docs/format-0.2.md). */
static int check_graph_semantics(const sp_workflow *wf, sp_semantics sem, kfail *f)
{
    if (wf->semantics == sem)
        return 0;
    if (sem == SP_SEM_01)
        return kfail_set(f, "invalid-input", "workflow.invalid", "W01: format must be %s",
                         SP_WORKFLOW_FORMAT);
    return kfail_set(f, "incompatible-version", "version.semantics",
                     "semantics 0.2 runs only %s packages", SP_WORKFLOW_FORMAT_02);
}

static int check_sequence(const sp_kernel_request *req, json_t *state, kfail *f)
{
    uint64_t last = 0;
    if (state)
        sp_decimal_from_json(json_object_get(state, "lastSequence"), &last);
    uint64_t want = state ? last + 1 : 1;
    if (req->event.sequence != want)
        return kfail_set(f, "invalid-input", "event.out-of-order",
                         "event sequence %llu, expected %llu",
                         (unsigned long long)req->event.sequence, (unsigned long long)want);
    return 0;
}

/* Check 5's decode: the host's decoded state when it was decoded for this
 * package (taken out of `kept`: the caller owns the result), else the decode
 * of the snapshot bytes. */
static json_t *present_state(const sp_kernel_request *req, sp_kernel_state *kept,
                             const sp_workflow *wf, kfail *f)
{
    if (kept && kept->doc && strcmp(kept->package_digest, wf->package_digest) == 0) {
        json_t *doc = kept->doc;
        kept->doc = NULL;
        return doc;
    }
    if (!req->snapshot) {
        kfail_set(f, "invalid-input", "state.invalid",
                  "the decoded state belongs to another package and no snapshot bytes were given");
        return NULL;
    }
    return kstate_decode(wf, req->snapshot, req->snapshot_len, f);
}

/* Checks 4-7; on success *state is the decoded snapshot or the initial one. */
static int check_event_and_state(const sp_kernel_request *req, sp_kernel_state *kept,
                                 const sp_workflow *wf, kevent *ev, json_t **state, kfail *f)
{
    if (kevent_decode(wf->semantics, &req->event, ev, f))
        return -1;
    if (req->event.sequence > SP_U63_MAX || req->event.accepted_at_ms > SP_U63_MAX)
        return kfail_set(f, "invalid-input", "event.invalid", "sequence or time above 2^63-1");
    bool start = ev->kind == EV_RUN_STARTED;
    bool present = req->snapshot || kept;
    if (!present && !start)
        return kfail_set(f, "invalid-input", "state.missing", "this event needs a snapshot");
    if (present && start)
        return kfail_set(f, "invalid-input", "state.unexpected-start",
                         "run.started cannot apply to an existing snapshot");
    if (present && !(*state = present_state(req, kept, wf, f)))
        return -1;
    if (check_sequence(req, *state, f))
        return -1;
    if (start) {
        if (!sp_is_name(json_string_value(ev->tenant), json_string_length(ev->tenant)) ||
            !sp_is_name(json_string_value(ev->run_id), json_string_length(ev->run_id)))
            return kfail_set(f, "invalid-input", "event.invalid",
                             "tenant and runId must match [A-Za-z0-9_.-]{1,128}");
        *state = wf->semantics == SP_SEM_02 ? kstate02_initial(ev->tenant, ev->run_id, ev->input)
                                            : kstate_initial(ev->tenant, ev->run_id, ev->input);
        if (!*state)
            return kfail_oom(f);
    }
    return 0;
}

static int bookkeeping(kt *t)
{
    uint64_t last = 0;
    sp_decimal_from_json(kt_st(t, "lastAcceptedAtMs"), &last);
    t->now = t->req->event.accepted_at_ms > last ? t->req->event.accepted_at_ms : last;
    kt_set(t, "lastSequence", sp_decimal_json(t->req->event.sequence));
    kt_set(t, "lastAcceptedAtMs", sp_decimal_json(t->now));
    return t->oom ? kfail_oom(t->f) : 0;
}

/* ---- result checks (kernel.md §7.11) ---- */

/* Hand the new state out as decision.state, in the request's box. */
static void keep_state(kt *t, sp_kernel_state **box, sp_kernel_decision *out)
{
    sp_kernel_state *s = *box;
    json_decref(s->doc);
    s->doc = t->state;
    t->state = NULL;
    memcpy(s->package_digest, t->wf->package_digest, sizeof s->package_digest);
    memcpy(s->snapshot_digest, out->snapshot_digest, sizeof s->snapshot_digest);
    out->state = s;
    *box = NULL;
}

/* The snapshot's bytes: through the kept state's memo when there is one
 * (the same bytes); any failure there is left to the plain encoder, which
 * names it. */
static char *emit_state(kt *t, size_t *len)
{
    if (t->memo) {
        sp_error err = {0};
        char *bytes = ksnapshot_encode(t->state, t->memo, len, &err);
        sp_error_clear(&err);
        if (bytes)
            return bytes;
        kmemo_clear(t->memo);
    }
    return k_emit_bytes(t, json_incref(t->state), len);
}

static int finish(kt *t, sp_kernel_decision *out)
{
    const sp_kernel_limits *lim = &t->req->limits;
    if (t->wf->semantics == SP_SEM_02 && k02_finish(t))
        return -1;
    if (t->ncmds > lim->max_command_count)
        return k_budget(t, "budget.command-count", "more commands than the budget allows");
    size_t len;
    char *snapshot = emit_state(t, &len);
    if (!snapshot)
        return -1;
    if (len > lim->max_state_bytes) {
        free(snapshot);
        return k_budget(t, "budget.state-bytes", "the snapshot is larger than the budget allows");
    }
    if (t->ops > lim->expression_operations) {
        free(snapshot);
        return k_budget(t, "budget.expression-operations",
                      "more expression operations than the budget allows");
    }
    out->snapshot = snapshot;
    out->snapshot_len = len;
    sp_digest_one("state", snapshot, len, out->snapshot_digest);
    snprintf(out->status, sizeof out->status, "%s", kt_str(t, "status"));
    out->commands = t->cmds;
    out->ncommands = t->ncmds;
    out->diagnostics = t->diags;
    out->ndiagnostics = t->ndiags;
    t->cmds = NULL;
    t->diags = NULL;
    t->ncmds = t->ndiags = 0;
    return 0;
}

static void free_outputs(sp_kernel_command *cmds, size_t ncmds, sp_kernel_diagnostic *diags,
                         size_t ndiags)
{
    for (size_t i = 0; i < ncmds; i++) {
        free(cmds[i].activation_id);
        free(cmds[i].payload);
        free(cmds[i].action_id);
        json_decref(cmds[i].payload_value);
    }
    for (size_t i = 0; i < ndiags; i++) {
        free(diags[i].node_id);
        free(diags[i].details);
    }
    free(cmds);
    free(diags);
}

int sp_kernel_transition(const sp_kernel_request *req, sp_kernel_decision *out,
                         sp_kernel_failure *fail)
{
    memset(out, 0, sizeof *out);
    memset(fail, 0, sizeof *fail);
    kfail f = {fail, false};
    kevent ev;
    memset(&ev, 0, sizeof ev);
    sp_workflow *owned = NULL;
    const sp_workflow *wf = req->loaded_graph;
    sp_kernel_state *box = req->state; /* ours from here on (kernel.h) */
    kt t = {0};
    int rc = -1;
    sp_semantics sem = SP_SEM_01;
    if (check_semantics(req, &sem, &f))
        goto done;
    /* Check 1 also covers the package under 0.2 (a 0.1 package there is
     * version.semantics, before the codec); any other graph failure is
     * check 3's, reported after check 2. */
    sp_kernel_failure graph_fail = {0};
    kfail gf = {&graph_fail, false};
    if (!wf)
        wf = owned = sp_workflow_load_as(req->graph, req->graph_len, sem, &graph_fail, &f.oom);
    if (f.oom)
        goto done;
    int graph_rc = wf ? check_graph_semantics(wf, sem, &gf) : -1;
    if (graph_rc && strcmp(graph_fail.code, "version.semantics") == 0) {
        *fail = graph_fail;
        goto done;
    }
    if (check_codec(req, &f))
        goto done;
    if (graph_rc) {
        *fail = graph_fail;
        goto done;
    }
    json_t *state = NULL;
    if (check_event_and_state(req, box, wf, &ev, &state, &f)) {
        json_decref(state);
        goto done;
    }
    if (req->want_state && !box && !(box = calloc(1, sizeof *box))) {
        json_decref(state);
        kfail_oom(&f);
        goto done;
    }
    t = (kt){.wf = wf, .req = req, .ev = &ev, .f = &f, .state = state,
             .memo = box ? &box->memo : NULL};
    rc = bookkeeping(&t);
    if (rc == 0)
        rc = sem == SP_SEM_02 ? k02_dispatch(&t) : k01_dispatch(&t);
    if (rc == 0 && t.oom)
        rc = kfail_oom(&f);
    if (rc == 0)
        rc = finish(&t, out);
    if (rc == 0 && req->want_state)
        keep_state(&t, &box, out);
done:
    free_outputs(t.cmds, t.ncmds, t.diags, t.ndiags);
    json_decref(t.state);
    sp_kernel_state_free(box);
    kevent_free(&ev);
    sp_workflow_free(owned);
    if (rc == 0)
        return SP_KERNEL_DECISION;
    memset(out, 0, sizeof *out);
    if (f.oom) {
        fail->kind = "resource-limit";
        snprintf(fail->code, sizeof fail->code, "kernel.out-of-memory");
        return SP_KERNEL_OOM;
    }
    return SP_KERNEL_FAILURE;
}

void sp_kernel_decision_free(sp_kernel_decision *d)
{
    if (!d)
        return;
    free_outputs(d->commands, d->ncommands, d->diagnostics, d->ndiagnostics);
    free(d->snapshot);
    sp_kernel_state_free(d->state);
    memset(d, 0, sizeof *d);
}

static void count_part(sp_hasher *h, uint64_t n)
{
    unsigned char be[8];
    for (int k = 7; k >= 0; k--, n >>= 8)
        be[k] = (unsigned char)(n & 0xFF);
    sp_hasher_part(h, be, 8);
}

static void text_part(sp_hasher *h, const char *s) { sp_hasher_part(h, s, strlen(s)); }

void sp_kernel_decision_digest(const sp_kernel_decision *d, char out[SP_DIGEST_TEXT_LEN + 1])
{
    static const unsigned char one = 1, zero = 0;
    sp_hasher h;
    sp_hasher_begin(&h, "decision");
    text_part(&h, d->snapshot_digest);
    count_part(&h, d->ncommands);
    for (size_t c = 0; c < d->ncommands; c++) {
        text_part(&h, d->commands[c].command_id);
        text_part(&h, d->commands[c].activation_id);
        text_part(&h, d->commands[c].kind);
        sp_hasher_part(&h, d->commands[c].payload, d->commands[c].payload_len);
    }
    count_part(&h, d->ndiagnostics);
    for (size_t k = 0; k < d->ndiagnostics; k++) {
        const sp_kernel_diagnostic *g = &d->diagnostics[k];
        text_part(&h, g->code);
        text_part(&h, g->node_id ? g->node_id : "");
        sp_hasher_part(&h, g->node_id ? &one : &zero, 1);
        sp_hasher_part(&h, g->details, g->details_len);
    }
    sp_hasher_end_text(&h, out);
}

sp_kernel_limits sp_kernel_default_limits(const char *semantics_version)
{
    if (semantics_version && strcmp(semantics_version, SP_SEMANTICS_VERSION_02) == 0)
        return SP_KERNEL_DEFAULT_LIMITS_02;
    return SP_KERNEL_DEFAULT_LIMITS;
}

static const sp_kernel_descriptor DESCRIPTORS[] = {
    {SP_ABI_VERSION, SP_SEMANTICS_VERSION, SP_WORKFLOW_FORMAT, SP_CODEC_VERSION},
    {SP_ABI_VERSION, SP_SEMANTICS_VERSION_02, SP_WORKFLOW_FORMAT_02, SP_CODEC_VERSION},
};

const sp_kernel_descriptor *sp_kernel_describe(void) { return &DESCRIPTORS[0]; }

const sp_kernel_descriptor *sp_kernel_describe_all(size_t *n)
{
    *n = sizeof DESCRIPTORS / sizeof DESCRIPTORS[0];
    return DESCRIPTORS;
}
