/*
 * result.c - turning a runner's output into the activity.result body that
 * finish_attempt records (engine.md §4 step 4): Success -> status success,
 * Failure -> failure, Unknown -> unknown (retryable, output null); a
 * success whose output breaks its node's output schema (format 0.2) is a
 * non-retryable output.invalid failure that names the path and the rule.
 *
 * Must never produce a body the store would refuse: one that cannot be
 * encoded canonically or exceeds the 64 KiB event cap becomes a
 * non-retryable host failure that names the problem; never put any part
 * of a refused output into the error.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "json/json.h"

static const char *status_name(sp_output_kind k)
{
    return k == SP_OUTPUT_SUCCESS ? "success" : k == SP_OUTPUT_FAILURE ? "failure" : "unknown";
}

static json_t *body_value(const sp_claim *c, const sp_activity_output *out)
{
    bool success = out->kind == SP_OUTPUT_SUCCESS;
    json_t *outcome = success ? json_string(out->outcome ? out->outcome : "ok") : json_null();
    json_t *output = success && out->output ? json_incref(out->output) : json_null();
    json_t *error = !success && out->error ? json_incref(out->error) : json_null();
    bool retryable = out->kind == SP_OUTPUT_FAILURE ? out->retryable : true;
    return json_pack("{s:I,s:s,s:o,s:s,s:o,s:o,s:b,s:s}", "attempt",
                     (json_int_t)c->attempt_number, "attemptId", c->attempt.attempt_id, "error",
                     error, "invocationId", c->attempt.invocation_id, "outcome", outcome,
                     "output", output, "retryable", retryable, "status", status_name(out->kind));
}

static char *encode_bounded(json_t *v, size_t *len, sp_error *err)
{
    sp_buf b = SP_BUF_INIT;
    b.limit = SP_STORE_EVENT_MAX;
    int rc = sp_json_encode(v, &b, err);
    json_decref(v);
    if (rc) {
        sp_buf_free(&b);
        return NULL;
    }
    return sp_buf_take(&b, len);
}

bool engine_output_invalid(const sp_schema *schema, const sp_activity_output *out,
                           sp_activity_output *replaced)
{
    if (!schema || out->kind != SP_OUTPUT_SUCCESS)
        return false;
    sp_schema_error se;
    if (sp_schema_check(schema, out->output ? out->output : json_null(), &se) != 1)
        return false;
    sp_output_failure(replaced, "output.invalid", false,
                      json_pack("{s:s,s:s}", "path", se.path, "rule", se.rule),
                      "the step's output does not match its schema at %s (%s): %s",
                      se.path[0] ? se.path : "the root", se.rule, se.message);
    return true;
}

char *engine_result_body(const sp_claim *claim, const sp_activity_output *out, size_t *len,
                         sp_error *err)
{
    json_t *v = body_value(claim, out);
    if (!v) {
        sp_oom(err);
        return NULL;
    }
    char *body = encode_bounded(v, len, err);
    if (body || strcmp(err->code, "runtime.out-of-memory") == 0)
        return body;
    /* too large or not canonical: report that instead, it always fits */
    sp_activity_output replaced;
    bool too_large = strcmp(err->code, "canonical.too-large") == 0;
    sp_output_failure(&replaced, too_large ? "host.result-too-large" : "host.result-invalid",
                      false, NULL, "the step's result could not be recorded: %s", err->message);
    sp_error_clear(err);
    v = body_value(claim, &replaced);
    sp_activity_output_free(&replaced);
    if (!v) {
        sp_oom(err);
        return NULL;
    }
    return encode_bounded(v, len, err);
}
