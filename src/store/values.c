/*
 * values.c - the typed result of every mutation as canonical JSON (the
 * receipt value, store.md §4) and back. Operations build the value; the
 * mutation runner decodes it into the caller's result on both the applied
 * and the replayed path, so a replay answers exactly what the first call did.
 *
 * | result              | value                                                           |
 * | ------------------- | --------------------------------------------------------------- |
 * | sp_create_run_res   | {key: {runId, tenant}, startedSequence}                          |
 * | sp_append_event_res | {acceptedAtMs, sequence}                                         |
 * | sp_commit_turn_res  | {appliedSequence, decisionDigest, key, revision}                 |
 * | sp_claim            | {actionId, attempt: REF, attemptNumber, deadlineMs, effectKey,   |
 * |                     |  input (the JSON value), inputDigest, leaseUntilMs, nodeId}      |
 * | sp_heartbeat_res    | {leaseUntilMs}   (heartbeat, hold_attempt)                       |
 * | sp_finish_res       | {resultSequence} (finish_attempt, expire_attempt)                |
 * | sp_settle_res       | {claims: [sp_claim values], decisionDigest|null, resultSequence, |
 * |                     |  revision|null}                                                  |
 * | sp_late_evidence_res| {auditId}                                                        |
 * | sp_flag_res         | {quarantined}    (quarantine_run, release_run)                   |
 *
 * REF = {attemptId, fence, invocationId, key, owner}. Counters and times are
 * decimal strings; attemptNumber is an integer.
 *
 * What it must never do: accept a value that does not decode completely
 * (that is corrupt/store.corrupt), or touch the result's disposition.
 */
#include <stdlib.h>

#include "json/decimal.h"
#include "json/json.h"
#include "store/logic.h"

json_t *lg_u63_json(uint64_t v) { return sp_decimal_json(v); }

bool lg_get_u63(const json_t *obj, const char *name, uint64_t *out)
{
    return sp_decimal_from_json(json_object_get(obj, name), out);
}

const char *lg_get_str(const json_t *obj, const char *name)
{
    return json_string_value(json_object_get(obj, name));
}

static bool copy_str(char *dst, size_t cap, const char *src)
{
    if (!src || strlen(src) >= cap)
        return false;
    strcpy(dst, src);
    return true;
}

sp_store_rc lg_bad_value(sp_error *err, const char *op)
{
    return lg_fail(err, SP_STORE_CORRUPT, "store.corrupt", "a stored %s value does not decode", op);
}

json_t *lg_key_json(const sp_run_key *key)
{
    return json_pack("{s:s, s:s}", "runId", key->run_id, "tenant", key->tenant);
}

bool lg_key_from(const json_t *v, sp_run_key *key)
{
    return copy_str(key->tenant, sizeof key->tenant, lg_get_str(v, "tenant")) &&
           copy_str(key->run_id, sizeof key->run_id, lg_get_str(v, "runId"));
}

json_t *lg_ref_json(const sp_attempt_ref *ref)
{
    return json_pack("{s:s, s:o, s:s, s:o, s:s}", "attemptId", ref->attempt_id, "fence",
                     lg_u63_json(ref->fence), "invocationId", ref->invocation_id, "key",
                     lg_key_json(&ref->key), "owner", ref->owner);
}

bool lg_ref_from(const json_t *v, sp_attempt_ref *ref)
{
    return lg_key_from(json_object_get(v, "key"), &ref->key) &&
           copy_str(ref->attempt_id, sizeof ref->attempt_id, lg_get_str(v, "attemptId")) &&
           copy_str(ref->invocation_id, sizeof ref->invocation_id, lg_get_str(v, "invocationId")) &&
           copy_str(ref->owner, sizeof ref->owner, lg_get_str(v, "owner")) &&
           lg_get_u63(v, "fence", &ref->fence);
}

/* ---- create_run ---- */

json_t *lg_created_value(const sp_run_key *key)
{
    return json_pack("{s:o, s:s}", "key", lg_key_json(key), "startedSequence", "1");
}

sp_store_rc lg_created_decode(const json_t *v, void *out, sp_error *err)
{
    sp_create_run_res *res = out;
    if (!lg_key_from(json_object_get(v, "key"), &res->key) ||
        !lg_get_u63(v, "startedSequence", &res->started_sequence))
        return lg_bad_value(err, "create_run");
    return SP_STORE_OK;
}

/* ---- append_event ---- */

json_t *lg_appended_value(uint64_t sequence, uint64_t accepted_at_ms)
{
    return json_pack("{s:o, s:o}", "acceptedAtMs", lg_u63_json(accepted_at_ms), "sequence",
                     lg_u63_json(sequence));
}

sp_store_rc lg_appended_decode(const json_t *v, void *out, sp_error *err)
{
    sp_append_event_res *res = out;
    if (!lg_get_u63(v, "sequence", &res->sequence) ||
        !lg_get_u63(v, "acceptedAtMs", &res->accepted_at_ms))
        return lg_bad_value(err, "append_event");
    return SP_STORE_OK;
}

/* ---- commit_turn ---- */

json_t *lg_committed_value(const sp_run_key *key, uint64_t revision, uint64_t applied,
                           const char *decision_digest)
{
    return json_pack("{s:o, s:s, s:o, s:o}", "appliedSequence", lg_u63_json(applied),
                     "decisionDigest", decision_digest, "key", lg_key_json(key), "revision",
                     lg_u63_json(revision));
}

sp_store_rc lg_committed_decode(const json_t *v, void *out, sp_error *err)
{
    sp_commit_turn_res *res = out;
    if (!lg_get_u63(v, "revision", &res->revision) ||
        !lg_get_u63(v, "appliedSequence", &res->applied_sequence) ||
        !copy_str(res->decision_digest, sizeof res->decision_digest,
                  lg_get_str(v, "decisionDigest")))
        return lg_bad_value(err, "commit_turn");
    return SP_STORE_OK;
}

/* ---- claim_attempt ---- */

json_t *lg_claim_value(const sp_claim *c)
{
    json_t *input = json_loadb(c->input, c->input_len, JSON_DECODE_ANY, NULL);
    if (!input)
        return NULL;
    return json_pack("{s:s, s:o, s:I, s:o, s:s, s:o, s:s, s:o, s:s}", "actionId", c->action_id,
                     "attempt", lg_ref_json(&c->attempt), "attemptNumber",
                     (json_int_t)c->attempt_number, "deadlineMs", lg_u63_json(c->deadline_ms),
                     "effectKey", c->effect_key, "input", input, "inputDigest", c->input_digest,
                     "leaseUntilMs", lg_u63_json(c->lease_until_ms), "nodeId", c->node_id);
}

static bool dup_member(char **dst, const json_t *v, const char *name)
{
    const char *s = lg_get_str(v, name);
    return s && (*dst = strdup(s)) != NULL;
}

static sp_store_rc claim_strings(const json_t *v, sp_claim *c, sp_error *err)
{
    sp_error eerr = {0};
    if (!dup_member(&c->node_id, v, "nodeId") || !dup_member(&c->action_id, v, "actionId") ||
        !dup_member(&c->effect_key, v, "effectKey"))
        return lg_bad_value(err, "claim_attempt");
    c->input = sp_json_encode_alloc(json_object_get(v, "input"), &c->input_len, &eerr);
    if (!c->input) {
        sp_error_clear(&eerr);
        return lg_bad_value(err, "claim_attempt");
    }
    return SP_STORE_OK;
}

sp_store_rc lg_claim_decode(const json_t *v, void *out, sp_error *err)
{
    sp_claim *c = out;
    json_int_t number = json_integer_value(json_object_get(v, "attemptNumber"));
    if (!lg_ref_from(json_object_get(v, "attempt"), &c->attempt) || number < 1 ||
        number > (json_int_t)UINT32_MAX || !lg_get_u63(v, "leaseUntilMs", &c->lease_until_ms) ||
        !lg_get_u63(v, "deadlineMs", &c->deadline_ms) ||
        !copy_str(c->input_digest, sizeof c->input_digest, lg_get_str(v, "inputDigest")))
        return lg_bad_value(err, "claim_attempt");
    c->attempt_number = (uint32_t)number;
    sp_store_rc rc = claim_strings(v, c, err);
    if (rc)
        sp_claim_free(c);
    return rc;
}

/* ---- settle_attempt ---- */

json_t *lg_settled_value(uint64_t sequence, uint64_t revision, const char *decision_digest,
                         json_t *claims)
{
    if (!claims)
        return NULL;
    return json_pack("{s:o, s:s?, s:o, s:o}", "claims", claims, "decisionDigest", decision_digest,
                     "resultSequence", lg_u63_json(sequence), "revision",
                     revision ? lg_u63_json(revision) : json_null());
}

static sp_store_rc settled_claims(const json_t *claims, sp_settle_res *res, sp_error *err)
{
    size_t n = json_array_size(claims);
    if (!json_is_array(claims) || n > SP_SETTLE_CLAIMS_MAX)
        return lg_bad_value(err, "settle_attempt");
    if (n && !(res->claims = calloc(n, sizeof *res->claims)))
        return lg_encode_fail(err, true, "claims");
    sp_store_rc rc = SP_STORE_OK;
    for (size_t i = 0; i < n && rc == SP_STORE_OK; i++)
        if ((rc = lg_claim_decode(json_array_get(claims, i), &res->claims[i], err)) == SP_STORE_OK)
            res->nclaims++;
    return rc;
}

sp_store_rc lg_settled_decode(const json_t *v, void *out, sp_error *err)
{
    sp_settle_res *res = out;
    const json_t *revision = json_object_get(v, "revision");
    const char *digest = lg_get_str(v, "decisionDigest");
    res->turned = !json_is_null(revision);
    if (!lg_get_u63(v, "resultSequence", &res->result_sequence) ||
        (res->turned && (!lg_get_u63(v, "revision", &res->revision) ||
                         !copy_str(res->decision_digest, sizeof res->decision_digest, digest))))
        return lg_bad_value(err, "settle_attempt");
    sp_store_rc rc = settled_claims(json_object_get(v, "claims"), res, err);
    if (rc)
        sp_settle_res_free(res);
    return rc;
}

/* ---- heartbeat, hold_attempt ---- */

json_t *lg_lease_value(uint64_t lease_until_ms)
{
    return json_pack("{s:o}", "leaseUntilMs", lg_u63_json(lease_until_ms));
}

sp_store_rc lg_lease_decode(const json_t *v, void *out, sp_error *err)
{
    sp_heartbeat_res *res = out;
    return lg_get_u63(v, "leaseUntilMs", &res->lease_until_ms) ? SP_STORE_OK
                                                               : lg_bad_value(err, "lease");
}

/* ---- finish_attempt, expire_attempt ---- */

json_t *lg_result_value(uint64_t sequence)
{
    return json_pack("{s:o}", "resultSequence", lg_u63_json(sequence));
}

sp_store_rc lg_result_decode(const json_t *v, void *out, sp_error *err)
{
    sp_finish_res *res = out;
    return lg_get_u63(v, "resultSequence", &res->result_sequence) ? SP_STORE_OK
                                                                  : lg_bad_value(err, "result");
}

/* ---- record_late_evidence ---- */

json_t *lg_audit_value(uint64_t audit_id)
{
    return json_pack("{s:o}", "auditId", lg_u63_json(audit_id));
}

sp_store_rc lg_audit_decode(const json_t *v, void *out, sp_error *err)
{
    sp_late_evidence_res *res = out;
    return lg_get_u63(v, "auditId", &res->audit_id) ? SP_STORE_OK
                                                    : lg_bad_value(err, "record_late_evidence");
}

/* ---- quarantine_run, release_run ---- */

json_t *lg_flag_value(bool quarantined) { return json_pack("{s:b}", "quarantined", quarantined); }

sp_store_rc lg_flag_decode(const json_t *v, void *out, sp_error *err)
{
    sp_flag_res *res = out;
    const json_t *flag = json_object_get(v, "quarantined");
    if (!json_is_boolean(flag))
        return lg_bad_value(err, "quarantine");
    res->value = json_is_true(flag);
    return SP_STORE_OK;
}
