/*
 * client.c - the client operations of engine.md §2 and §10: start (with
 * random run IDs and find_run), signal, resolve and release, each one store
 * mutation with its documented request ID.
 *
 * Must never create a run the kernel would refuse (validation and a dry
 * run.started come first), or give one start key two runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/random.h"
#include "engine/admission.h"
#include "engine/internal.h"
#include "engine/ledger.h"
#include "engine/validate.h"
#include "json/json.h"

static bool key_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-' || c == ':';
}

int engine_check_token(const char *what, const char *s, size_t max, sp_error *err)
{
    size_t n = strlen(s);
    bool ok = n >= 1 && n <= max;
    for (size_t i = 0; ok && i < n; i++)
        ok = key_char_ok(s[i]);
    if (!ok)
        return sp_fail(err, "usage.invalid-value",
                       "%s must be 1 to %zu characters of [A-Za-z0-9_.:-]", what, max);
    return 0;
}

static void new_run_id(sp_engine *e, char out[SP_ID_LEN + 1])
{
    if (e->cfg.run_id_source) {
        e->cfg.run_id_source(e->cfg.run_id_ctx, out);
        return;
    }
    memcpy(out, "run_", 4);
    sp_random_hex(out + 4, 16);
}

static char *encode(const json_t *v, size_t *len, char digest[SP_DIGEST_TEXT_LEN + 1],
                    sp_error *err)
{
    char *bytes = sp_json_encode_alloc(v, len, err);
    if (bytes)
        sp_digest_one("body", bytes, *len, digest);
    return bytes;
}

/* The input the run started with is `input` (canonical bytes compared). */
static int same_input(sp_engine *e, const sp_run_key *key, const json_t *input, bool *same,
                      sp_error *err)
{
    sp_event_list events;
    sp_store_rc rc;
    ENGINE_RETRY_READ(e, rc, err, ledger_list_events(e, key, 0, 1, &events, err));
    if (rc != SP_STORE_OK)
        return -1;
    json_t *body = events.n ? json_loadb(events.events[0].body, events.events[0].body_len, 0, NULL)
                            : NULL;
    char *had = body ? sp_json_encode_alloc(json_object_get(body, "input"), NULL, NULL) : NULL;
    char *given = sp_json_encode_alloc(input, NULL, NULL);
    *same = had && given && strcmp(had, given) == 0;
    int result = had && given ? 0 : sp_fail(err, "store.corrupt", "run %s has no start event",
                                            key->run_id);
    free(had);
    free(given);
    json_decref(body);
    sp_event_list_free(&events);
    return result;
}

/* An existing run for the start key: same workflow (and, when the caller
 * gave one, the same input) -> reuse, else run.exists. */
static int reuse(sp_engine *e, const sp_run_key *key, const char *package_digest,
                 const json_t *explicit_input, sp_start_result *out, sp_error *err)
{
    sp_run_view view;
    bool found = false;
    sp_store_rc rc = ledger_get_run(e, key, &view, &found, err);
    if (rc != SP_STORE_OK)
        return -1;
    if (!found)
        return sp_fail(err, "run.not-found", "run %s vanished", key->run_id);
    bool same = strcmp(view.package_digest, package_digest) == 0;
    sp_run_view_free(&view);
    if (!same)
        return sp_fail(err, "run.exists",
                       "start key %s already names run %s of another workflow", out->start_key,
                       key->run_id);
    if (explicit_input && same_input(e, key, explicit_input, &same, err))
        return -1;
    if (!same)
        return sp_fail_details(err, "run.exists", json_pack("{s:s}", "runId", key->run_id),
                               "start key %s already names run %s, which started with another "
                               "input; use another --key, or leave out --input to go on with it",
                               out->start_key, key->run_id);
    out->key = *key;
    out->created = false;
    return 0;
}

static int find(sp_engine *e, const char *start_key, sp_run_key *key, bool *found, sp_error *err)
{
    sp_store_rc rc = ledger_find_run(e, e->tenant, start_key, key, found, err);
    return rc == SP_STORE_OK ? 0 : -1;
}

static int create(sp_engine *e, const sp_validated *v, const char *artifact_digest,
                  const json_t *input, const json_t *explicit_input, sp_run_key *key,
                  sp_start_result *out, sp_error *err)
{
    json_t *started = json_pack("{s:O,s:s,s:s}", "input", input, "runId", key->run_id, "tenant",
                                key->tenant);
    size_t len;
    char digest[SP_DIGEST_TEXT_LEN + 1];
    char *body = started ? encode(started, &len, digest, err) : NULL;
    json_decref(started);
    if (!body)
        return started ? -1 : sp_oom(err);
    sp_create_run_req req = {*key, NULL, out->start_key, v->package_digest, v->package,
                             v->package_len, artifact_digest, {body, len, digest}};
    sp_create_run_res res;
    sp_store_rc rc = ledger_create_run(e, &req, &res, err);
    free(body);
    if (rc == SP_STORE_OK) {
        out->key = res.key;
        out->created = res.disposition == SP_APPLIED;
        return 0;
    }
    if (rc == SP_STORE_CONFLICT && strcmp(err->code, "run.start-key-mismatch") == 0) {
        bool found = false; /* a racing start won: look it up once more */
        sp_error_clear(err);
        if (find(e, out->start_key, key, &found, err))
            return -1;
        if (found)
            return reuse(e, key, v->package_digest, explicit_input, out, err);
        return sp_fail(err, "run.start-key-mismatch", "start key %s is taken", out->start_key);
    }
    return -1;
}

/* Sealed runner bytes into the store's blob table before the run exists. */
static int put_blobs(sp_engine *e, const sp_seal_set *blobs, sp_error *err)
{
    for (size_t i = 0; i < blobs->n; i++) {
        if (ledger_put_blob(e, blobs->items[i].digest, blobs->items[i].bytes,
                            blobs->items[i].len, err) != SP_STORE_OK)
            return -1;
    }
    return 0;
}

int sp_engine_start(sp_engine *e, const json_t *workflow, const json_t *input,
                    const char *start_key, sp_start_result *out, sp_error *err)
{
    return sp_engine_start_at(e, workflow, NULL, input, start_key, out, err);
}

int sp_engine_start_at(sp_engine *e, const json_t *workflow, const char *workflow_dir,
                       const json_t *input, const char *start_key, sp_start_result *out,
                       sp_error *err)
{
    return sp_engine_start_artifact(e, workflow, workflow_dir, NULL, input, start_key, out, err);
}

/* What every start of one workflow shares: its package, validated, sealed
 * and digested once (with a runner's trial instantiation, once), and loaded
 * once for the dry runs. A package that failed is every start's answer. */
typedef struct start_plan {
    const json_t *workflow;
    sp_validated v;
    sp_seal_set blobs;
    sp_workflow *loaded; /* NULL: each dry run loads it (and says what is wrong) */
    bool failed;
    sp_error why;
} start_plan;

/* The plan of starts of `workflow`; a failure is kept in it (plan->why). */
static void plan_make(const json_t *workflow, const char *workflow_dir, start_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->workflow = workflow;
    sp_validate_opts opts = {workflow_dir, true, &plan->blobs};
    plan->failed = sp_validate_package(workflow, &opts, &plan->v, &plan->why) != 0;
    if (plan->failed)
        return;
    sp_kernel_failure fail; /* a package the kernel refuses: each dry run says so */
    bool oom = false;
    plan->loaded = sp_workflow_load(plan->v.package, plan->v.package_len, &fail, &oom);
}

static void plan_free(start_plan *plan)
{
    sp_workflow_free(plan->loaded);
    sp_seal_set_free(&plan->blobs);
    sp_validated_free(&plan->v);
    sp_error_clear(&plan->why);
}

/* The plan's failure, as one start's answer. */
static int plan_failure(const start_plan *plan, sp_error *err)
{
    return sp_fail_details(err, plan->why.code, json_incref(plan->why.details), "%s",
                           plan->why.message);
}

/* One start on its way: its key (found or new). */
typedef struct start_item {
    sp_run_key key;
    bool found;
    const json_t *input;          /* {} when none was given */
    const json_t *explicit_input; /* NULL when none was given */
} start_item;

/* Everything of a start before its write: the start key, the run it names
 * (if any), the dry run with the run's real ID and input. */
static int start_prepare(sp_engine *e, const start_plan *plan, const json_t *input,
                         const json_t *empty, const char *start_key, start_item *it,
                         sp_start_result *out, sp_error *err)
{
    memset(out, 0, sizeof *out);
    memset(it, 0, sizeof *it);
    it->explicit_input = input;
    it->input = input ? input : empty;
    if (start_key) {
        if (engine_check_token("a start key", start_key, SP_STORE_ID_MAX, err))
            return -1;
        snprintf(out->start_key, sizeof out->start_key, "%s", start_key);
    } else {
        memcpy(out->start_key, "key_", 4);
        sp_random_hex(out->start_key + 4, 8);
    }
    snprintf(it->key.tenant, sizeof it->key.tenant, "%s", e->tenant);
    if (find(e, out->start_key, &it->key, &it->found, err))
        return -1;
    if (!it->found) {
        memset(&it->key, 0, sizeof it->key);
        snprintf(it->key.tenant, sizeof it->key.tenant, "%s", e->tenant);
        new_run_id(e, it->key.run_id);
    }
    if (plan->failed)
        return plan_failure(plan, err);
    return sp_validate_start(plan->workflow, &plan->v, plan->loaded, it->input, it->key.run_id,
                             err);
}

/* The start's write: the run reused, or created with its sealed blobs. */
static int start_apply(sp_engine *e, const start_plan *plan, start_item *it,
                       const char *artifact_digest, sp_start_result *out, sp_error *err)
{
    if (it->found)
        return reuse(e, &it->key, plan->v.package_digest, it->explicit_input, out, err);
    if (put_blobs(e, &plan->blobs, err))
        return -1;
    return create(e, &plan->v, artifact_digest, it->input, it->explicit_input, &it->key, out,
                  err);
}

int sp_engine_start_artifact(sp_engine *e, const json_t *workflow, const char *workflow_dir,
                             const char *artifact_digest, const json_t *input,
                             const char *start_key, sp_start_result *out, sp_error *err)
{
    json_t *empty = json_object();
    if (!empty)
        return sp_oom(err);
    start_plan plan;
    plan_make(workflow, workflow_dir, &plan);
    start_item it;
    int rc = start_prepare(e, &plan, input, empty, start_key, &it, out, err);
    if (rc == 0)
        rc = start_apply(e, &plan, &it, artifact_digest, out, err);
    plan_free(&plan);
    json_decref(empty);
    return rc;
}

/* The prepared starts' writes in one store batch: one durable commit for
 * all. False when the batch failed (nothing of it is stored): the caller
 * makes each write again on its own. */
static bool apply_batched(sp_engine *e, const start_plan *plan, start_item *items,
                          const bool *prepared, size_t n, const char *artifact_digest,
                          sp_start_result *out, sp_error *errs, bool *applied)
{
    sp_error err = {0};
    if (ledger_batch_begin(e, &err) != SP_STORE_OK) {
        sp_error_clear(&err);
        return false;
    }
    e->batch_failed = e->batch_missed = false;
    for (size_t i = 0; i < n && !e->batch_failed; i++)
        if (prepared[i])
            applied[i] =
                start_apply(e, plan, &items[i], artifact_digest, &out[i], &errs[i]) == 0;
    if (e->batch_failed) {
        ledger_batch_abort(e);
        return false;
    }
    sp_store_rc rc = ledger_batch_commit(e, &err);
    if (rc == SP_STORE_OK)
        rc = ledger_wait_flushed(e, &err);
    sp_error_clear(&err);
    return rc == SP_STORE_OK;
}

int sp_engine_start_many(sp_engine *e, const json_t *workflow, const char *workflow_dir,
                         const char *artifact_digest, size_t n, const json_t *const *inputs,
                         const char *const *start_keys, sp_start_result *out, sp_error *errs,
                         sp_error *err)
{
    if (n > SP_START_MANY_MAX)
        return sp_fail(err, "usage.invalid-value", "at most %d runs start in one call, not %zu",
                       SP_START_MANY_MAX, n);
    json_t *empty = json_object();
    start_item *items = calloc(n + 1, sizeof *items);
    bool *flags = calloc(2 * n + 2, sizeof *flags);
    if (!empty || !items || !flags) {
        json_decref(empty), free(items), free(flags);
        return sp_oom(err);
    }
    bool *prepared = flags, *applied = flags + n + 1;
    start_plan plan;
    plan_make(workflow, workflow_dir, &plan);
    for (size_t i = 0; i < n; i++)
        prepared[i] = start_prepare(e, &plan, inputs ? inputs[i] : NULL, empty,
                                    start_keys ? start_keys[i] : NULL, &items[i], &out[i],
                                    &errs[i]) == 0;
    if (!apply_batched(e, &plan, items, prepared, n, artifact_digest, out, errs, applied))
        for (size_t i = 0; i < n; i++) { /* nothing of the batch is stored: one by one */
            if (!prepared[i])
                continue;
            sp_error_clear(&errs[i]);
            out[i].created = false;
            memset(&out[i].key, 0, sizeof out[i].key);
            applied[i] =
                start_apply(e, &plan, &items[i], artifact_digest, &out[i], &errs[i]) == 0;
        }
    size_t failed = 0;
    for (size_t i = 0; i < n; i++)
        failed += !applied[i];
    plan_free(&plan);
    json_decref(empty), free(items), free(flags);
    return (int)failed;
}

int engine_append_event(sp_engine *e, const sp_run_key *key, const char *request_id,
                        const char *event_id, const char *kind, const json_t *body_value,
                        sp_append_event_res *out, sp_error *err)
{
    size_t len;
    char digest[SP_DIGEST_TEXT_LEN + 1];
    char *body = encode(body_value, &len, digest, err);
    if (!body)
        return -1;
    sp_append_event_req req = {*key, request_id, event_id, kind, {body, len, digest}};
    sp_store_rc rc = ledger_append(e, &req, out, err);
    free(body);
    return rc == SP_STORE_OK ? 0 : -1;
}

static int append(sp_engine *e, const sp_run_key *key, const char *request_id,
                  const char *event_id, const char *kind, const json_t *body_value,
                  sp_disposition *disposition, sp_error *err)
{
    sp_append_event_res res;
    if (engine_append_event(e, key, request_id, event_id, kind, body_value, &res, err))
        return -1;
    *disposition = res.disposition;
    return 0;
}

int sp_engine_signal(sp_engine *e, const sp_run_key *key, const char *message_id,
                     const char *name, const char *outcome, const json_t *data,
                     sp_signal_answer *answer, sp_error *err)
{
    if (engine_check_token("a message ID", message_id, SP_STORE_ID_MAX, err) ||
        engine_check_token("a signal name", name, 64, err) ||
        (outcome && engine_check_token("an outcome", outcome, 64, err)))
        return -1;
    char request_id[SP_STORE_REQUEST_ID_MAX], event_id[SP_STORE_REQUEST_ID_MAX];
    ledger_signal_id(message_id, request_id);
    snprintf(event_id, sizeof event_id, "sig:%s", message_id);
    if (engine_admit_signal(e, key, request_id, name, outcome, data, answer, err))
        return -1;
    json_t *body = json_pack("{s:s,s:O}", "name", name, "data", data ? data : json_null());
    if (body && outcome)
        json_object_set_new(body, "outcome", json_string(outcome));
    if (!body)
        return sp_oom(err);
    int rc = append(e, key, request_id, event_id, "signal.received", body, &answer->disposition,
                    err);
    json_decref(body);
    return rc;
}

static json_t *resolution_value(sp_resolution r, const char *outcome, const json_t *output,
                                const char *message)
{
    switch (r) {
    case SP_RESOLVE_COMPLETE:
        return json_pack("{s:s,s:s,s:O}", "action", "complete", "outcome", outcome, "output",
                         output ? output : json_null());
    case SP_RESOLVE_RETRY:
        return json_pack("{s:s}", "action", "retry");
    case SP_RESOLVE_FAIL:
        return json_pack("{s:s,s:{s:s,s:s,s:n,s:n}}", "action", "fail", "error", "code",
                         "operator.failed", "message", message, "nodeId", "details");
    }
    return NULL;
}

int sp_engine_resolve(sp_engine *e, const sp_run_key *key, const char *request_id,
                      const char *invocation_id, sp_resolution resolution, const char *outcome,
                      const json_t *output, const char *message, sp_disposition *disposition,
                      sp_error *err)
{
    if (engine_check_token("a request ID", request_id, SP_STORE_ID_MAX, err) ||
        engine_check_token("an invocation ID", invocation_id, SP_STORE_ID_MAX, err))
        return -1;
    if (resolution == SP_RESOLVE_COMPLETE && engine_check_token("an outcome", outcome, 64, err))
        return -1;
    char rid[SP_STORE_REQUEST_ID_MAX], event_id[SP_STORE_REQUEST_ID_MAX];
    snprintf(rid, sizeof rid, "resolve/%s", request_id);
    snprintf(event_id, sizeof event_id, "res:%s", request_id);
    if (engine_admit_resolve(e, key, rid, invocation_id, resolution, outcome, err))
        return -1;
    json_t *r = resolution_value(resolution, outcome, output, message ? message : "");
    json_t *body = r ? json_pack("{s:s,s:o}", "invocationId", invocation_id, "resolution", r)
                     : NULL;
    if (!body)
        return sp_oom(err);
    int rc = append(e, key, rid, event_id, "invocation.resolved", body, disposition, err);
    json_decref(body);
    return rc;
}

int sp_engine_release(sp_engine *e, const sp_run_key *key, sp_disposition *disposition,
                      sp_error *err)
{
    sp_run_view view;
    if (engine_get_run(e, key, &view, err))
        return -1;
    sp_flag_res res;
    sp_store_rc rc =
        ledger_release(e, key, view.revision, view.quarantine_at_ms, &res, err);
    sp_run_view_free(&view);
    if (rc != SP_STORE_OK)
        return -1;
    *disposition = res.disposition;
    return 0;
}
