/*
 * core.c - what the transition of both semantics shares (kernel.md §7.8-
 * 7.10, workflows-0.2.md §2): emitting commands and diagnostics, counting
 * microsteps, admitting a node entry against the visit and activation
 * limits, evaluating mappings, scheduling an invocation, judging a result
 * (succeed / retry / fail / unknown), authorizing a retry, taking a signal.
 * run01.c and run02.c build their procedures from these, so a rule that is
 * the same in 0.1 and 0.2 is written once, here.
 *
 * Must never decide where a run goes next (routing, terminal states, the
 * shape of the state's position members belong to run01.c / run02.c), do
 * I/O, read a clock, or emit anything but canonical bytes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/decimal.h"
#include "json/json.h"
#include "kernel/internal.h"
#include "kernel/mapping.h"

static const char MSG_VISITS[] = "node visit limit exceeded";
static const char MSG_ACTIVATIONS[] = "run activation limit exceeded";
static const char MSG_MISSING_PATH[] = "mapping path does not resolve";
static const char MSG_UNDECLARED[] = "activity reported an undeclared outcome";
static const char MSG_EXHAUSTED[] = "activity attempts exhausted";
static const char MSG_FAILED[] = "activity failed";

/* ---- state accessors ---- */

json_t *kt_st(kt *t, const char *member) { return json_object_get(t->state, member); }

const char *kt_str(kt *t, const char *member) { return json_string_value(kt_st(t, member)); }

void kt_set(kt *t, const char *member, json_t *value)
{
    if (!value || json_object_set_new(t->state, member, value))
        t->oom = true;
}

void kt_obj_set(kt *t, json_t *obj, const char *key, json_t *value)
{
    if (!value || !obj || json_object_set_new(obj, key, value))
        t->oom = true;
}

uint32_t k_u32(const json_t *v)
{
    uint32_t x = 0;
    kjson_u32(v, &x);
    return x;
}

int k_oom(kt *t)
{
    t->oom = true;
    return kfail_oom(t->f);
}

int k_fail(kt *t, const char *kind, const char *code, const char *what)
{
    return kfail_set(t->f, kind, code, "%s", what);
}

int k_budget(kt *t, const char *code, const char *what)
{
    return k_fail(t, "resource-limit", code, what);
}

int k_invariant(kt *t, const char *what)
{
    return k_fail(t, "invariant-violation", "kernel.invariant", what);
}

/* ---- emitting ---- */

char *k_emit_bytes(kt *t, json_t *v, size_t *len)
{
    if (!v) {
        k_oom(t);
        return NULL;
    }
    sp_error err = {0};
    char *bytes = sp_json_encode_alloc(v, len, &err);
    json_decref(v);
    if (!bytes) {
        if (strcmp(err.code, "canonical.too-deep") == 0)
            k_budget(t, "budget.value-depth", "an emitted value nests deeper than 32");
        else if (strcmp(err.code, "runtime.out-of-memory") == 0)
            k_oom(t);
        else
            k_invariant(t, err.message);
        sp_error_clear(&err);
    }
    return bytes;
}

int k_diagnose(kt *t, const char *code, const char *node_id, json_t *details)
{
    size_t len;
    char *bytes = k_emit_bytes(t, details, &len);
    if (!bytes)
        return -1;
    if (t->ndiags == t->diags_cap) {
        size_t cap = t->diags_cap ? 2 * t->diags_cap : 4;
        sp_kernel_diagnostic *d = realloc(t->diags, cap * sizeof *d);
        if (!d) {
            free(bytes);
            return k_oom(t);
        }
        t->diags = d;
        t->diags_cap = cap;
    }
    sp_kernel_diagnostic *d = &t->diags[t->ndiags];
    d->code = code;
    d->node_id = node_id ? strdup(node_id) : NULL;
    d->details = bytes;
    d->details_len = len;
    if (node_id && !d->node_id) {
        free(bytes);
        return k_oom(t);
    }
    t->ndiags++;
    return 0;
}

/* The invocation and action a command's payload names (command_id and the
 * rest are filled by k_command). False: out of memory. */
static bool command_names(sp_kernel_command *c, const json_t *payload)
{
    const char *inv = json_string_value(json_object_get(payload, "invocationId"));
    const char *act = json_string_value(json_object_get(payload, "actionId"));
    snprintf(c->invocation_id, sizeof c->invocation_id, "%s",
             inv && strlen(inv) <= SP_ID_LEN ? inv : "");
    c->action_id = act ? strdup(act) : NULL;
    return !act || c->action_id;
}

int k_command(kt *t, const char *kind, const char *activation_id, const char *ordinal,
              json_t *payload)
{
    sp_kernel_command names = {0};
    if (payload && !command_names(&names, payload)) {
        json_decref(payload);
        return k_oom(t);
    }
    size_t len;
    json_t *value = json_incref(payload); /* the decision keeps one reference */
    char *bytes = k_emit_bytes(t, payload, &len);
    if (!bytes) {
        json_decref(value);
        free(names.action_id);
        return -1;
    }
    if (t->ncmds == t->cmds_cap) {
        size_t cap = t->cmds_cap ? 2 * t->cmds_cap : 2;
        sp_kernel_command *c = realloc(t->cmds, cap * sizeof *c);
        if (!c) {
            free(bytes);
            free(names.action_id);
            json_decref(value);
            return k_oom(t);
        }
        t->cmds = c;
        t->cmds_cap = cap;
    }
    sp_kernel_command *c = &t->cmds[t->ncmds];
    *c = names;
    const char *tenant = kt_str(t, "tenant"), *run = kt_str(t, "runId");
    sp_part p[4] = {{tenant, strlen(tenant)},
                    {run, strlen(run)},
                    {activation_id, strlen(activation_id)},
                    {ordinal, strlen(ordinal)}};
    sp_derive_id("cmd_", "command", p, 4, c->command_id);
    c->kind = kind;
    c->activation_id = strdup(activation_id);
    c->payload = bytes;
    c->payload_len = len;
    c->payload_value = value;
    if (!c->activation_id) {
        free(bytes);
        free(c->action_id);
        json_decref(value);
        return k_oom(t);
    }
    t->ncmds++;
    return 0;
}

int k_command_n(kt *t, const char *kind, const char *activation_id, uint32_t ordinal,
                json_t *payload)
{
    char ord[16];
    snprintf(ord, sizeof ord, "%u", ordinal);
    return k_command(t, kind, activation_id, ord, payload);
}

/* ---- small procedures ---- */

int k_microstep(kt *t)
{
    if (++t->microsteps > t->req->limits.microsteps)
        return k_budget(t, "budget.microsteps", "more microsteps than the budget allows");
    return 0;
}

json_t *k_error_info(const char *code, const char *message, const char *node_id, json_t *details)
{
    return json_pack("{s:s,s:s,s:s?,s:o}", "code", code, "message", message, "nodeId", node_id,
                     "details", details ? details : json_null());
}

json_t *k_node_error(const sp_node *node)
{
    const json_t *details = json_object_get(node->error, "details");
    return k_error_info(json_string_value(json_object_get(node->error, "code")),
                        json_string_value(json_object_get(node->error, "message")), node->id,
                        json_incref(details ? (json_t *)details : json_null()));
}

void k_record(kt *t, const sp_node *node, uint32_t visit, const json_t *outcome,
              const json_t *output)
{
    json_t *rec = json_pack("{s:I,s:O,s:O}", "visit", (json_int_t)visit, "outcome", outcome,
                            "output", output);
    kt_obj_set(t, kt_st(t, "nodes"), node->id, rec);
}

int k_admit(kt *t, const sp_node *node, uint32_t *visit, char activation[160], json_t **limit)
{
    *limit = NULL;
    if (k_microstep(t))
        return -1;
    json_t *visits = kt_st(t, "visits");
    uint32_t v = k_u32(json_object_get(visits, node->id));
    uint32_t activations = k_u32(kt_st(t, "activations"));
    bool over_visits = v >= t->wf->max_visits_per_node;
    if (over_visits || activations >= t->wf->max_activations) {
        *limit = over_visits
                     ? k_error_info("limit.visits-exceeded", MSG_VISITS, node->id, NULL)
                     : k_error_info("limit.activations-exceeded", MSG_ACTIVATIONS, node->id, NULL);
        return *limit ? 1 : k_oom(t);
    }
    v++;
    kt_obj_set(t, visits, node->id, json_integer(v));
    kt_set(t, "activations", json_integer((json_int_t)activations + 1));
    *visit = v;
    snprintf(activation, 160, "%s/%u", node->id, v);
    return t->oom ? k_oom(t) : 0;
}

int k_evaluate(kt *t, const sp_node *node, const json_t *mapping, const json_t *item,
               int64_t index, json_t **out, json_t **error)
{
    sp_mapping_ctx ctx = {kt_st(t, "input"), kt_st(t, "nodes"), kt_str(t, "runId"),
                          kt_str(t, "tenant"), t->ops, item, index};
    const json_t *missing = NULL;
    *error = NULL;
    sp_mapping_status s = sp_mapping_eval(mapping ? mapping : json_null(), &ctx, out, &missing);
    t->ops = ctx.ops;
    if (s == SP_MAPPING_OOM)
        return k_oom(t);
    if (s == SP_MAPPING_MISSING) {
        *error = k_error_info("mapping.missing-path", MSG_MISSING_PATH, node->id,
                              json_pack("{s:O}", "path", missing));
        return *error ? 1 : k_oom(t);
    }
    return 0;
}

int k_schedule(kt *t, const sp_node *node, const char *activation, const json_t *input,
               json_t **inv)
{
    *inv = NULL;
    size_t input_len;
    char *input_bytes = k_emit_bytes(t, json_incref((json_t *)input), &input_len);
    if (!input_bytes)
        return -1;
    char digest[SP_DIGEST_TEXT_LEN + 1], inv_id[SP_ID_LEN + 1];
    sp_digest_one("body", input_bytes, input_len, digest);
    free(input_bytes);
    sp_invocation_id(kt_str(t, "tenant"), kt_str(t, "runId"), activation, inv_id);
    *inv = json_pack("{s:s,s:s,s:s,s:s,s:i,s:s,s:s}", "invocationId", inv_id, "activationId",
                     activation, "nodeId", node->id, "actionId", node->action_id, "attempt", 1,
                     "state", "scheduled", "inputDigest", digest);
    char now[SP_DECIMAL_MAX_LEN + 1];
    json_t *payload = json_pack("{s:s,s:s,s:i,s:s,s:O,s:s,s:s,s:s}", "actionId", node->action_id,
                                "activationId", activation, "attempt", 1, "effectKey", inv_id,
                                "input", input, "invocationId", inv_id, "nodeId", node->id,
                                "notBeforeMs", sp_decimal_format(t->now, now));
    if (!*inv || !payload) {
        json_decref(payload);
        return k_oom(t);
    }
    return k_command(t, "activity.schedule", activation, "1", payload);
}

/* ---- results ---- */

static uint64_t delay_after(const sp_action *a, uint32_t n)
{
    uint32_t shift = n - 1 < 32 ? n - 1 : 32;
    uint64_t factor = UINT64_C(1) << shift;
    uint64_t d = a->backoff_ms > UINT64_MAX / factor ? UINT64_MAX : a->backoff_ms * factor;
    return d < a->max_backoff_ms ? d : a->max_backoff_ms;
}

static json_t *ev_error_or(const kevent *ev, const char *code, const char *message,
                           json_t *details)
{
    if (ev->error) {
        json_decref(details);
        return json_deep_copy(ev->error);
    }
    return k_error_info(code, message, NULL, details);
}

int k_judge(kt *t, const sp_action *action, const kevent *ev, kjudgement *j)
{
    memset(j, 0, sizeof *j);
    switch (ev->status) {
    case RS_SUCCESS: {
        json_t *outcome = ev->outcome ? json_incref((json_t *)ev->outcome) : json_string("ok");
        if (!outcome)
            return k_oom(t);
        if (sp_action_declares(action, json_string_value(outcome), json_string_length(outcome))) {
            j->verdict = KV_SUCCEED;
            j->outcome = outcome;
            return 0;
        }
        j->verdict = KV_FAIL;
        j->error = k_error_info("activity.undeclared-outcome", MSG_UNDECLARED, NULL,
                                json_pack("{s:O}", "outcome", outcome));
        json_decref(outcome);
        return j->error ? 0 : k_oom(t);
    }
    case RS_FAILURE:
        if (ev->retryable && ev->attempt < action->max_attempts) {
            j->verdict = KV_RETRY;
            j->delay = delay_after(action, ev->attempt);
            return 0;
        }
        j->verdict = KV_FAIL;
        j->error = ev_error_or(ev, "activity.failed", MSG_FAILED, NULL);
        return j->error ? 0 : k_oom(t);
    case RS_UNKNOWN:
    case RS_EXPIRED:
        j->status = ev->status == RS_UNKNOWN ? "unknown" : "expired";
        if (action->effect == SP_EFFECT_UNSAFE) {
            j->verdict = KV_UNKNOWN;
            return 0;
        }
        if (ev->attempt < action->max_attempts) {
            j->verdict = KV_RETRY;
            j->delay = delay_after(action, ev->attempt);
            return 0;
        }
        j->verdict = KV_FAIL;
        j->error = k_error_info("activity.attempts-exhausted", MSG_EXHAUSTED, NULL,
                                json_pack("{s:s}", "lastStatus", j->status));
        return j->error ? 0 : k_oom(t);
    }
    return k_invariant(t, "unknown result status");
}

void k_judgement_free(kjudgement *j)
{
    json_decref(j->outcome);
    json_decref(j->error);
    memset(j, 0, sizeof *j);
}

int k_retry(kt *t, const sp_node *node, json_t *inv, uint64_t delay)
{
    uint32_t attempt = k_u32(json_object_get(inv, "attempt"));
    if (attempt == UINT32_MAX)
        return k_budget(t, "budget.counter-range", "the attempt counter would overflow");
    if (delay > SP_U63_MAX - t->now)
        return k_budget(t, "budget.counter-range", "notBeforeMs would pass 2^63-1");
    attempt++;
    uint64_t not_before = t->now + delay;
    kt_obj_set(t, inv, "attempt", json_integer(attempt));
    kt_obj_set(t, inv, "state", json_string("scheduled"));
    if (t->oom)
        return k_oom(t);
    char nb[SP_DECIMAL_MAX_LEN + 1];
    const json_t *inv_id = json_object_get(inv, "invocationId");
    json_t *payload = json_pack("{s:i,s:O,s:s}", "attempt", (json_int_t)attempt, "invocationId",
                                inv_id, "notBeforeMs", sp_decimal_format(not_before, nb));
    if (k_command_n(t, "activity.retry", json_string_value(json_object_get(inv, "activationId")),
                    attempt, payload))
        return -1;
    return k_diagnose(t, "activity.retry-scheduled", node->id,
                      json_pack("{s:I}", "attempt", (json_int_t)attempt));
}

int k_unknown(kt *t, const sp_node *node, json_t *inv, const kevent *ev, const char *status)
{
    kt_obj_set(t, inv, "state", json_string("unknown"));
    if (t->oom)
        return k_oom(t);
    return k_diagnose(t, "invocation.unknown", node->id,
                      json_pack("{s:I,s:O,s:s}", "attempt", (json_int_t)ev->attempt,
                                "invocationId", ev->invocation_id, "status", status));
}

/* ---- signals ---- */

const char *k_take_signal(kt *t, const sp_node *node, const json_t *event_id,
                          const json_t *outcome, int *rc)
{
    *rc = k_microstep(t);
    if (*rc)
        return NULL;
    const char *name = outcome ? json_string_value(outcome) : "received";
    size_t len = outcome ? json_string_length(outcome) : strlen("received");
    /* kernel.md §4: on a node with loop limits, `exhausted` is the kernel's
     * route, never a signal's */
    bool reserved = node->loop_limits && len == 9 && memcmp(name, "exhausted", 9) == 0;
    const char *target = reserved ? NULL : sp_node_route(node, name, len);
    if (!target)
        *rc = k_diagnose(t, "signal.outcome-unrouted", node->id,
                         json_pack("{s:O,s:s%}", "eventId", event_id, "outcome", name, len));
    return target;
}

const char *k_consume(kt *t, const sp_node *node, int *rc, json_t **outcome, json_t **data)
{
    json_t *signals = kt_st(t, "signals");
    *rc = 0;
    *outcome = *data = NULL;
    for (;;) {
        size_t i = 0;
        while (i < json_array_size(signals) &&
               !kjson_str_is(json_object_get(json_array_get(signals, i), "name"), node->signal))
            i++;
        if (i == json_array_size(signals))
            return NULL;
        json_t *sig = json_incref(json_array_get(signals, i));
        json_array_remove(signals, i);
        const json_t *given = json_object_get(sig, "outcome");
        const char *target = k_take_signal(t, node, json_object_get(sig, "eventId"),
                                           json_is_null(given) ? NULL : given, rc);
        if (target) {
            *outcome = json_is_null(given) ? json_string("received") : json_incref((json_t *)given);
            *data = json_incref(json_object_get(sig, "data"));
            if (!*outcome)
                *rc = k_oom(t);
        }
        json_decref(sig);
        if (*rc) {
            json_decref(*outcome);
            json_decref(*data);
            *outcome = *data = NULL;
            return NULL;
        }
        if (target)
            return target;
    }
}
