/*
 * steps.c - what an actor does with external and async steps (engine.md
 * §9): claim an external step, renew its lease, complete or fail it with
 * the token, and abandon a run's running step.
 *
 * Must never record anything for an invalid answer (undeclared outcome,
 * oversize or non-canonical output, bad code): those are refused before the
 * store is touched; never claim a step that is not external or whose actor
 * does not match; never act without a token whose MAC verifies.
 */
#include <stdlib.h>
#include <string.h>

#include "base/random.h"
#include "engine/internal.h"
#include "engine/ledger.h"
#include "json/json.h"

void sp_step_claim_free(sp_step_claim *c)
{
    json_decref(c->input);
    json_decref(c->outcomes);
    json_decref(c->description);
    memset(c, 0, sizeof *c);
}

static bool actor_matches(const json_t *action, const char *actor)
{
    const json_t *a = json_object_get(action, "actor");
    if (!actor)
        return a == NULL;
    return json_is_string(a) && strcmp(json_string_value(a), actor) == 0;
}

static json_t *declared_outcomes(const sp_action *a)
{
    json_t *list = json_array();
    for (size_t i = 0; list && i < a->noutcomes; i++)
        json_array_append_new(list, json_string(a->outcomes[i]));
    return list;
}

/* A mini tick so that expired claims and pending retries are claimable. */
static void refresh(sp_engine *e, const sp_run_key *only)
{
    sp_tick_stats stats;
    memset(&stats, 0, sizeof stats);
    sp_error err = {0};
    if (engine_sweep(e, &stats, &err) == 0)
        engine_coordinate(e, &stats, only, &err);
    sp_error_clear(&err);
}

static int fill_claim(sp_engine *e, const sp_claim *c, const sp_action *a, sp_step_claim *out,
                      sp_error *err)
{
    if (engine_token_make(e, &c->attempt, out->token, sizeof out->token, err))
        return -1;
    out->key = c->attempt.key;
    snprintf(out->invocation_id, sizeof out->invocation_id, "%s", c->attempt.invocation_id);
    snprintf(out->attempt_id, sizeof out->attempt_id, "%s", c->attempt.attempt_id);
    out->attempt = c->attempt_number;
    snprintf(out->node_id, sizeof out->node_id, "%s", c->node_id);
    snprintf(out->action_id, sizeof out->action_id, "%s", c->action_id);
    out->input = sp_json_parse_canonical(c->input, c->input_len, NULL);
    out->outcomes = declared_outcomes(a);
    const json_t *d = json_object_get(a->raw, "description");
    out->description = d ? json_incref((json_t *)d) : NULL;
    out->deadline_ms = c->deadline_ms;
    out->lease_until_ms = c->lease_until_ms;
    return out->input && out->outcomes ? 0 : sp_oom(err);
}

/* Try to claim one outbox item; 1 claimed, 0 not this one, -1 error. */
static int try_claim(sp_engine *e, const sp_due_item *item, const char *actor, const char *holder,
                     sp_step_claim *out, sp_error *err)
{
    sp_error lookup = {0};
    const engine_action *ea = engine_action_get(e, item->package_digest, item->action_id, &lookup);
    sp_error_clear(&lookup);
    if (!ea || !ea->runner || !ea->runner->external || !actor_matches(ea->action->raw, actor))
        return 0;
    sp_hold_terms terms;
    if (engine_action_terms(ea, &terms, err))
        return -1;
    char owner[40];
    memcpy(owner, "ext-", 4);
    sp_random_hex(owner + 4, 16);
    sp_claim_req req = {.key = item->key,
                        .invocation_id = item->id,
                        .worker = owner,
                        .lease_duration_ms = terms.lease_in_ms,
                        .holder = holder,
                        .deadline_in_ms = terms.deadline_in_ms};
    sp_claim c;
    sp_store_rc rc = ledger_claim_actor(e, &req, &c, err);
    if (rc != SP_STORE_OK) {
        if (sp_store_rc_transient(rc))
            return -1;
        sp_error_clear(err); /* someone else was faster */
        return 0;
    }
    int r = fill_claim(e, &c, ea->action, out, err) ? -1 : 1;
    sp_claim_free(&c);
    return r;
}

typedef struct claim_ctx {
    const sp_run_key *only;
    const char *actor, *holder;
    sp_step_claim *out;
} claim_ctx;

static int claim_visit(sp_engine *e, const sp_due_item *item, void *arg, sp_error *err)
{
    claim_ctx *c = arg;
    return try_claim(e, item, c->actor, c->holder, c->out, err);
}

int sp_engine_step_claim(sp_engine *e, const char *run_id, const char *actor,
                         const json_t *holder_value, sp_step_claim *out, bool *claimed,
                         sp_error *err)
{
    memset(out, 0, sizeof *out);
    *claimed = false;
    sp_run_key only;
    if (run_id && sp_engine_key(e, run_id, &only, err))
        return -1;
    refresh(e, run_id ? &only : NULL);
    char *holder = holder_value ? sp_json_encode_alloc(holder_value, NULL, err) : NULL;
    if (holder_value && !holder)
        return -1;
    claim_ctx c = {run_id ? &only : NULL, actor, holder, out};
    int r = engine_each_due(e, ENGINE_DUE_OUTBOX, c.only, NULL, claim_visit, &c, err);
    free(holder);
    *claimed = r == 1;
    return r < 0 ? -1 : 0;
}

/* ---- acting with a token ---- */

typedef struct step_ctx {
    sp_attempt_ref ref;
    uint32_t attempt_number;
    const engine_action *action;
} step_ctx;

static int from_token(sp_engine *e, const char *token, step_ctx *s, sp_error *err)
{
    if (engine_token_parse(e, token, &s->ref, err))
        return -1;
    const char *dot = strrchr(s->ref.attempt_id, '.');
    s->attempt_number = dot ? (uint32_t)strtoul(dot + 1, NULL, 10) : 0;
    sp_invocation_list list;
    if (ledger_list_invocations(e, &s->ref.key, &list, err) != SP_STORE_OK)
        return -1;
    char action_id[SP_STORE_ID_MAX + 1] = "";
    for (size_t i = 0; i < list.n; i++)
        if (strcmp(list.items[i].invocation_id, s->ref.invocation_id) == 0)
            snprintf(action_id, sizeof action_id, "%s", list.items[i].action_id);
    sp_invocation_list_free(&list);
    sp_run_view view;
    bool found = false;
    if (ledger_get_run(e, &s->ref.key, &view, &found, err) != SP_STORE_OK)
        return -1;
    if (!found || !action_id[0]) {
        if (found)
            sp_run_view_free(&view);
        return sp_fail(err, "step.token-invalid", "the token names no step of this store");
    }
    s->action = engine_action_get(e, view.package_digest, action_id, err);
    sp_run_view_free(&view);
    return s->action ? 0 : -1;
}

int sp_engine_step_renew(sp_engine *e, const char *token, uint64_t *lease_until_ms, sp_error *err)
{
    step_ctx s;
    if (from_token(e, token, &s, err))
        return -1;
    sp_hold_terms terms;
    if (engine_action_terms(s.action, &terms, err))
        return -1;
    sp_heartbeat_res res;
    sp_store_rc rc = ledger_heartbeat(e, &s.ref, terms.lease_in_ms, true, &res, err);
    if (rc != SP_STORE_OK)
        return -1;
    *lease_until_ms = res.lease_until_ms;
    return 0;
}

static int finish(sp_engine *e, const step_ctx *s, const sp_activity_output *out, sp_error *err)
{
    sp_claim claim;
    memset(&claim, 0, sizeof claim);
    claim.attempt = s->ref;
    claim.attempt_number = s->attempt_number;
    size_t len;
    char *body = engine_result_body(&claim, out, &len, err);
    if (!body)
        return -1;
    sp_store_rc rc = ledger_finish_or_keep(e, &s->ref, body, len, "step-result-late", err);
    free(body);
    return rc == SP_STORE_OK ? 0 : -1;
}

int sp_engine_step_complete(sp_engine *e, const char *token, const char *outcome,
                            const json_t *output, sp_error *err)
{
    step_ctx s;
    if (from_token(e, token, &s, err))
        return -1;
    if (!sp_action_declares(s.action->action, outcome, strlen(outcome)))
        return sp_fail(err, "step.undeclared-outcome",
                       "action %s does not declare outcome \"%s\"", s.action->action->id,
                       outcome);
    sp_buf b = SP_BUF_INIT;
    b.limit = SP_STORE_EVENT_MAX - 1024; /* room for the result's other members */
    int rc = sp_json_encode(output ? output : json_null(), &b, err);
    sp_buf_free(&b);
    if (rc)
        return strcmp(err->code, "canonical.too-large") == 0
                   ? sp_fail(err, "step.output-too-large", "the output is larger than 64 KiB")
                   : -1;
    sp_activity_output out;
    sp_output_success(&out, outcome, output ? json_incref((json_t *)output) : NULL);
    rc = finish(e, &s, &out, err);
    sp_activity_output_free(&out);
    return rc;
}

int sp_engine_step_fail(sp_engine *e, const char *token, const char *message, const char *code,
                        bool retryable, sp_error *err)
{
    if (!code)
        code = "external.failed";
    if (!sp_is_error_code(code, strlen(code)))
        return sp_fail(err, "usage.invalid-value", "--code must match [a-z0-9][a-z0-9.-]{0,63}");
    step_ctx s;
    if (from_token(e, token, &s, err))
        return -1;
    sp_activity_output out;
    sp_output_failure(&out, code, retryable, NULL, "%s", message);
    int rc = finish(e, &s, &out, err);
    sp_activity_output_free(&out);
    return rc;
}

/* ---- abandon ----
 *
 * A person's act that fences out the old holder (engine.md §9): the attempt
 * is expired (reason abandoned) first, and only then is its job stopped
 * through its runner. Stopping first let a worker's probe see the job gone
 * in between and record the step as finished (a component's probe answers
 * "gone" as the step's result), so the abandon lost to its own stop. */

static void stop_job(sp_engine *e, const sp_run_key *key, const sp_invocation_view *v,
                     const char *package_digest)
{
    sp_error err = {0};
    const engine_action *ea = engine_action_get(e, package_digest, v->action_id, &err);
    sp_error_clear(&err);
    if (ea)
        engine_hook_now(e, key, v, ea, ENGINE_HOOK_STOP, NULL);
}

int sp_engine_step_abandon(sp_engine *e, const sp_run_key *key, char *attempt_id, size_t n,
                           sp_error *err)
{
    sp_run_view view;
    if (engine_get_run(e, key, &view, err))
        return -1;
    sp_invocation_list list;
    int rc = -1;
    if (ledger_list_invocations(e, key, &list, err) == SP_STORE_OK) {
        rc = sp_fail(err, "step.none", "run %s has no running step to abandon", key->run_id);
        for (size_t i = 0; i < list.n; i++) {
            const sp_invocation_view *v = &list.items[i];
            if (engine_attempt_state_of(v) != ENGINE_ATTEMPT_RUNNING)
                continue;
            sp_error_clear(err);
            sp_attempt_ref ref = {.key = *key, .fence = v->fence};
            snprintf(ref.invocation_id, sizeof ref.invocation_id, "%s", v->invocation_id);
            snprintf(ref.attempt_id, sizeof ref.attempt_id, "%s", v->attempt_id);
            snprintf(ref.owner, sizeof ref.owner, "%s", v->owner);
            snprintf(attempt_id, n, "%s", v->attempt_id);
            sp_finish_res res;
            sp_store_rc src = ledger_expire(e, &ref, SP_EXPIRE_ABANDONED, &res, err);
            rc = src == SP_STORE_OK ? 0 : -1;
            if (rc == 0) /* fenced first: a probe or watch that sees the job end now is late */
                stop_job(e, key, v, view.package_digest);
            break;
        }
        sp_invocation_list_free(&list);
    }
    sp_run_view_free(&view);
    return rc;
}
