/*
 * runs.c - the run operations of the public API: start, run until parked,
 * status, signal, resolve, release. Each parses the JSON text it is given,
 * calls the engine's client operation (engine.md §2-3) and converts the
 * result and errors to public values.
 *
 * Must never decide anything the engine decides (validation, request IDs,
 * parking), and never return a run's status from anywhere but the store.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "api/status.h"
#include "base/random.h"
#include "json/json.h"

/* Parse JSON text given to the API; the code is the parser's (canonical.*),
 * the message names the argument. NULL text -> NULL value, no error. */
static int parse_arg(const char *what, const char *text, json_t **out, sp_error *err)
{
    *out = NULL;
    if (!text)
        return 0;
    *out = sp_json_parse(text, strlen(text), err);
    if (*out)
        return 0;
    char code[SP_CODE_MAX], message[SP_MESSAGE_MAX];
    snprintf(code, sizeof code, "%s", err->code);
    snprintf(message, sizeof message, "%s", err->message);
    return sp_fail(err, code, "%s: %s", what, message);
}

static int need_text(const char *what, const char *s, spore_error *err)
{
    return s ? 0 : api_fail(err, "usage", "%s is required (NULL given)", what);
}

/* A fresh <prefix><16 hex> ID, like the `spore` command's defaults. */
static void fresh_id(const char *prefix, char *out, size_t n)
{
    char hex[17];
    sp_random_hex(hex, 8);
    snprintf(out, n, "%s%s", prefix, hex);
}

static int key_of(spore_db *db, const char *run_id, sp_run_key *key, spore_error *err)
{
    sp_error e = {0};
    if (api_need_db(db, err) || need_text("a run ID", run_id, err))
        return -1;
    if (sp_engine_key(db->engine, run_id, key, &e))
        return api_error(err, &e);
    return 0;
}

static char *copy_string(const char *s, sp_error *e)
{
    char *c = strdup(s);
    if (!c)
        sp_oom(e);
    return c;
}

int spore_start(spore_db *db, const char *workflow_json, const char *input_json,
                const char *start_key, char **run_id, bool *created, spore_error *err)
{
    if (run_id)
        *run_id = NULL;
    if (api_need_db(db, err) || need_text("a workflow", workflow_json, err))
        return -1;
    sp_error e = {0};
    json_t *workflow = NULL, *input = NULL;
    sp_start_result res;
    char *id = NULL;
    int rc = -1;
    if (parse_arg("the workflow", workflow_json, &workflow, &e) ||
        parse_arg("the input", input_json, &input, &e) ||
        sp_engine_start(db->engine, workflow, input, start_key, &res, &e))
        goto done;
    if (run_id && !(id = copy_string(res.key.run_id, &e)))
        goto done;
    if (run_id)
        *run_id = id;
    if (created)
        *created = res.created;
    rc = 0;
done:
    json_decref(workflow);
    json_decref(input);
    return rc ? api_error(err, &e) : 0;
}

/* Each input parsed (NULL where none was given); a malformed one is its
 * run's error, and that run is left out (*ok false). */
static json_t **parse_inputs(size_t n, const char *const *texts, bool *ok, spore_error *errors)
{
    json_t **inputs = calloc(n + 1, sizeof *inputs);
    for (size_t i = 0; inputs && i < n; i++) {
        sp_error e = {0};
        ok[i] = parse_arg("the input", texts ? texts[i] : NULL, &inputs[i], &e) == 0;
        if (!ok[i] && errors)
            api_error(&errors[i], &e);
        sp_error_clear(&e);
    }
    return inputs;
}

/* The engine's starts of the runs whose input parsed, and their answers
 * copied out; how many did not start. */
static int start_parsed(spore_db *db, const json_t *workflow, size_t n, json_t **inputs,
                        const char *const *start_keys, const bool *ok, char **run_ids,
                        bool *created, spore_error *errors, sp_error *e)
{
    size_t m = 0;
    size_t *at = calloc(n + 1, sizeof *at);
    const json_t **in = calloc(n + 1, sizeof *in);
    const char **keys = calloc(n + 1, sizeof *keys);
    sp_start_result *res = calloc(n + 1, sizeof *res);
    sp_error *errs = calloc(n + 1, sizeof *errs);
    int failed = -1;
    if (at && in && keys && res && errs) {
        for (size_t i = 0; i < n; i++)
            if (ok[i])
                at[m] = i, in[m] = inputs[i], keys[m] = start_keys ? start_keys[i] : NULL, m++;
        failed = sp_engine_start_many(db->engine, workflow, NULL, NULL, m, in, keys, res, errs, e);
    } else {
        sp_oom(e);
    }
    for (size_t j = 0; failed >= 0 && j < m; j++) {
        size_t i = at[j];
        bool started = !errs[j].code[0];
        if (started && run_ids && !(run_ids[i] = copy_string(res[j].key.run_id, &errs[j])))
            started = false, failed++;
        if (created)
            created[i] = started && res[j].created;
        if (!started && errors)
            api_error(&errors[i], &errs[j]);
    }
    for (size_t j = 0; errs && j < n; j++)
        sp_error_clear(&errs[j]);
    free(at), free(in), free(keys), free(res), free(errs);
    return failed < 0 ? -1 : failed + (int)(n - m);
}

int spore_start_many(spore_db *db, const char *workflow_json, size_t n,
                     const char *const *inputs_json, const char *const *start_keys,
                     char **run_ids, bool *created, spore_error *errors, spore_error *err)
{
    for (size_t i = 0; run_ids && i < n; i++)
        run_ids[i] = NULL;
    for (size_t i = 0; errors && i < n; i++)
        spore_error_clear(&errors[i]);
    if (api_need_db(db, err) || need_text("a workflow", workflow_json, err))
        return -1;
    if (n > SP_START_MANY_MAX)
        return api_fail(err, "usage", "at most %d runs start in one call, not %zu",
                        SP_START_MANY_MAX, n);
    sp_error e = {0};
    json_t *workflow = NULL;
    if (parse_arg("the workflow", workflow_json, &workflow, &e))
        return api_error(err, &e);
    bool *ok = calloc(n + 1, sizeof *ok);
    json_t **inputs = ok ? parse_inputs(n, inputs_json, ok, errors) : NULL;
    int rc = inputs ? start_parsed(db, workflow, n, inputs, start_keys, ok, run_ids, created,
                                   errors, &e)
                    : sp_oom(&e);
    for (size_t i = 0; inputs && i < n; i++)
        json_decref(inputs[i]);
    free(inputs), free(ok);
    json_decref(workflow);
    return rc < 0 ? api_error(err, &e) : rc;
}

static spore_park public_park(sp_park park)
{
    switch (park) {
    case SP_PARK_COMPLETED: return SPORE_PARK_COMPLETED;
    case SP_PARK_FAILED: return SPORE_PARK_FAILED;
    case SP_PARK_WAITING: return SPORE_PARK_WAITING;
    case SP_PARK_INTERVENTION: return SPORE_PARK_INTERVENTION;
    case SP_PARK_QUARANTINED: return SPORE_PARK_QUARANTINED;
    case SP_PARK_ASYNC: return SPORE_PARK_ASYNC;
    case SP_PARK_INTERRUPTED: return SPORE_PARK_INTERRUPTED;
    case SP_PARK_CANCELLED: return SPORE_PARK_CANCELLED;
    case SP_PARK_TIMER: return SPORE_PARK_TIMER;
    }
    return SPORE_PARK_INTERRUPTED; /* unreachable: every engine value is mapped */
}

int spore_run_until_parked(spore_db *db, const char *run_id, spore_park *park,
                           spore_error *err)
{
    sp_run_key key;
    if (key_of(db, run_id, &key, err))
        return -1;
    sp_error e = {0};
    sp_park p;
    if (sp_engine_run_until_parked(db->engine, &key, &p, NULL, NULL, &e))
        return api_error(err, &e);
    if (park)
        *park = public_park(p);
    return 0;
}

int spore_status(spore_db *db, const char *run_id, char **status_json, spore_error *err)
{
    if (status_json)
        *status_json = NULL;
    sp_run_key key;
    if (key_of(db, run_id, &key, err))
        return -1;
    if (!status_json)
        return api_fail(err, "usage", "spore_status needs somewhere to put the status");
    sp_error e = {0};
    sp_run_view view;
    bool found = false;
    if (sp_store_get_run(db->store, &key, &view, &found, &e) != SP_STORE_OK)
        return api_error(err, &e);
    if (!found) {
        sp_fail(&e, "run.not-found", "no run %s in %s", run_id, sp_store_location(db->store));
        return api_error(err, &e);
    }
    json_t *status = sp_status_json(&view);
    json_t *in_flight = status ? sp_engine_cancelled_in_flight(db->engine, &view) : NULL;
    sp_status_add_in_flight(status, in_flight);
    json_decref(in_flight);
    sp_run_view_free(&view);
    char *text = status ? sp_json_encode_alloc(status, NULL, &e) : NULL;
    if (!status)
        sp_oom(&e);
    json_decref(status);
    if (!text)
        return api_error(err, &e);
    *status_json = text;
    return 0;
}

static void set_duplicate(bool *duplicate, sp_disposition d)
{
    if (duplicate)
        *duplicate = d == SP_DUPLICATE;
}

int spore_signal(spore_db *db, const char *run_id, const char *name, const char *outcome,
                 const char *data_json, const char *message_id, bool *duplicate,
                 spore_error *err)
{
    sp_run_key key;
    if (key_of(db, run_id, &key, err) || need_text("a signal name", name, err))
        return -1;
    sp_error e = {0};
    char fresh[32];
    if (!message_id) {
        fresh_id("msg_", fresh, sizeof fresh);
        message_id = fresh;
    }
    json_t *data = NULL;
    sp_signal_answer answer;
    int rc = parse_arg("the signal data", data_json, &data, &e) ||
             sp_engine_signal(db->engine, &key, message_id, name, outcome, data, &answer, &e);
    json_decref(data);
    if (rc)
        return api_error(err, &e);
    set_duplicate(duplicate, answer.disposition);
    return 0;
}

int spore_resolve(spore_db *db, const char *run_id, const char *invocation_id,
                  spore_resolution resolution, const char *outcome, const char *output_json,
                  const char *message, const char *request_id, bool *duplicate,
                  spore_error *err)
{
    sp_run_key key;
    if (key_of(db, run_id, &key, err) || need_text("an invocation ID", invocation_id, err))
        return -1;
    sp_resolution r;
    switch (resolution) {
    case SPORE_RESOLVE_COMPLETE: r = SP_RESOLVE_COMPLETE; break;
    case SPORE_RESOLVE_RETRY: r = SP_RESOLVE_RETRY; break;
    case SPORE_RESOLVE_FAIL: r = SP_RESOLVE_FAIL; break;
    default: return api_fail(err, "usage.invalid-value", "unknown resolution %d", (int)resolution);
    }
    if (r == SP_RESOLVE_COMPLETE && need_text("an outcome (to complete)", outcome, err))
        return -1;
    sp_error e = {0};
    char fresh[32];
    if (!request_id) {
        fresh_id("req_", fresh, sizeof fresh);
        request_id = fresh;
    }
    json_t *output = NULL;
    sp_disposition d;
    int rc = parse_arg("the output", output_json, &output, &e) ||
             sp_engine_resolve(db->engine, &key, request_id, invocation_id, r, outcome, output,
                               message, &d, &e);
    json_decref(output);
    if (rc)
        return api_error(err, &e);
    set_duplicate(duplicate, d);
    return 0;
}

int spore_release(spore_db *db, const char *run_id, bool *duplicate, spore_error *err)
{
    sp_run_key key;
    if (key_of(db, run_id, &key, err))
        return -1;
    sp_error e = {0};
    sp_disposition d;
    if (sp_engine_release(db->engine, &key, &d, &e))
        return api_error(err, &e);
    set_duplicate(duplicate, d);
    return 0;
}

/* The run's key, and the request ID: the caller's, else a fresh req_<hex>. */
static int request_of(spore_db *db, const char *run_id, sp_run_key *key, const char **request_id,
                      char fresh[32], spore_error *err)
{
    if (key_of(db, run_id, key, err))
        return -1;
    if (!*request_id) {
        fresh_id("req_", fresh, 32);
        *request_id = fresh;
    }
    return 0;
}

int spore_cancel(spore_db *db, const char *run_id, const char *reason, const char *request_id,
                 bool *already_terminal, spore_error *err)
{
    sp_run_key key;
    char fresh[32];
    if (request_of(db, run_id, &key, &request_id, fresh, err))
        return -1;
    sp_error e = {0};
    sp_cancel_answer a;
    if (sp_engine_cancel(db->engine, &key, request_id, reason ? reason : "cancelled", "libspore",
                         1000, &a, &e))
        return api_error(err, &e);
    if (already_terminal)
        *already_terminal = a.already_terminal;
    return 0;
}

int spore_retry(spore_db *db, const char *run_id, const char *request_id, size_t *count,
                spore_error *err)
{
    sp_run_key key;
    char fresh[32];
    if (request_of(db, run_id, &key, &request_id, fresh, err))
        return -1;
    sp_error e = {0};
    size_t n = 0;
    if (sp_engine_retry(db->engine, &key, request_id, &n, &e))
        return api_error(err, &e);
    if (count)
        *count = n;
    return 0;
}
