/*
 * token.c - step tokens (engine.md §9): what an external actor or an async
 * job holds to act on its attempt.
 *
 *   token = "spt1." + base64url(canonical [tenant, runId, invocationId,
 *            attemptId, owner, fence]) + "." + first 32 hex of
 *            HMAC-SHA-256(store secret, that canonical JSON)
 *
 * The MAC uses the per-store secret every worker of the store shares, so a
 * token cannot be made up or altered; the attempt reference inside it is
 * what the store fences like any attempt (owner + fence + lease), so a
 * token whose attempt was fenced out (abandoned, expired, re-claimed) is
 * refused by the store. External claims use a fresh random owner per claim.
 *
 * Must never accept a token whose MAC does not verify (constant-time
 * compare), or put the secret anywhere but the HMAC key.
 */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "digest/hmac.h"
#include "engine/internal.h"
#include "engine/ledger.h"
#include "json/decimal.h"
#include "json/json.h"

#define TOKEN_PREFIX "spt1."
#define MAC_HEX 32

int engine_secret(sp_engine *e, unsigned char key[32], sp_error *err)
{
    pthread_mutex_lock(&e->mu);
    bool have = e->has_secret;
    if (have)
        memcpy(key, e->secret, 32);
    pthread_mutex_unlock(&e->mu);
    if (have)
        return 0;
    if (ledger_secret(e, key, err) != SP_STORE_OK)
        return -1;
    pthread_mutex_lock(&e->mu);
    memcpy(e->secret, key, 32);
    e->has_secret = true;
    pthread_mutex_unlock(&e->mu);
    return 0;
}

static void mac_hex(const unsigned char key[32], const char *payload, size_t len,
                    char out[MAC_HEX + 1])
{
    sp_hmac_sha256_hex(key, 32, payload, len, MAC_HEX, out);
}

int engine_token_make(sp_engine *e, const sp_attempt_ref *ref, char *out, size_t n, sp_error *err)
{
    unsigned char key[32];
    if (engine_secret(e, key, err))
        return -1;
    json_t *v = json_pack("[s,s,s,s,s,o]", ref->key.tenant, ref->key.run_id, ref->invocation_id,
                          ref->attempt_id, ref->owner, sp_decimal_json(ref->fence));
    size_t len;
    char *payload = v ? sp_json_encode_alloc(v, &len, err) : NULL;
    json_decref(v);
    if (!payload)
        return v ? -1 : sp_oom(err);
    char mac[MAC_HEX + 1];
    mac_hex(key, payload, len, mac);
    OPENSSL_cleanse(key, sizeof key);
    size_t need = strlen(TOKEN_PREFIX) + sp_base64_len(len, true) + 1 + MAC_HEX + 1;
    if (need > n) {
        free(payload);
        return sp_fail(err, "step.token-too-long", "the attempt's identity is too long for a token");
    }
    strcpy(out, TOKEN_PREFIX);
    sp_base64_encode(payload, len, true, out + strlen(TOKEN_PREFIX));
    strcat(out, ".");
    strcat(out, mac);
    free(payload);
    return 0;
}

static int invalid(sp_error *err)
{
    return sp_fail(err, "step.token-invalid",
                   "not a step token of this store (forged, altered or truncated)");
}

static bool copy_field(const json_t *v, char *out, size_t n)
{
    if (!json_is_string(v) || json_string_length(v) >= n ||
        strlen(json_string_value(v)) != json_string_length(v))
        return false;
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return true;
}

static int decode_ref(const char *payload, size_t len, sp_attempt_ref *ref, sp_error *err)
{
    json_t *v = sp_json_parse_canonical(payload, len, NULL);
    memset(ref, 0, sizeof *ref);
    bool ok = json_is_array(v) && json_array_size(v) == 6 &&
              copy_field(json_array_get(v, 0), ref->key.tenant, sizeof ref->key.tenant) &&
              copy_field(json_array_get(v, 1), ref->key.run_id, sizeof ref->key.run_id) &&
              copy_field(json_array_get(v, 2), ref->invocation_id, sizeof ref->invocation_id) &&
              copy_field(json_array_get(v, 3), ref->attempt_id, sizeof ref->attempt_id) &&
              copy_field(json_array_get(v, 4), ref->owner, sizeof ref->owner) &&
              sp_decimal_from_json(json_array_get(v, 5), &ref->fence);
    json_decref(v);
    return ok ? 0 : invalid(err);
}

int engine_token_parse(sp_engine *e, const char *token, sp_attempt_ref *ref, sp_error *err)
{
    size_t plen = strlen(TOKEN_PREFIX), tlen = strnlen(token, SP_TOKEN_MAX + 1);
    if (tlen > SP_TOKEN_MAX || strncmp(token, TOKEN_PREFIX, plen) != 0)
        return invalid(err);
    const char *body = token + plen, *dot = strrchr(body, '.');
    if (!dot || strlen(dot + 1) != MAC_HEX)
        return invalid(err);
    size_t blen = (size_t)(dot - body);
    unsigned char *payload = malloc(blen + 4);
    size_t len = 0;
    if (!payload)
        return sp_oom(err);
    if (!sp_base64_decode(body, blen, true, payload, &len)) {
        free(payload);
        return invalid(err);
    }
    unsigned char key[32];
    char mac[MAC_HEX + 1];
    if (engine_secret(e, key, err)) {
        free(payload);
        return -1;
    }
    mac_hex(key, (const char *)payload, len, mac);
    OPENSSL_cleanse(key, sizeof key);
    int rc = sp_mac_equal(mac, dot + 1, MAC_HEX)
                 ? decode_ref((const char *)payload, len, ref, err)
                 : invalid(err);
    free(payload);
    return rc;
}
