/*
 * artifacts.c - what the engine hands component runners instead of the
 * store (sp_artifacts in runners/runner.h): sealed blobs by digest, the
 * store's secret, and audit entries for the calling attempt
 * (record_late_evidence, request ID audit/<attemptId>/<kind>/<random>).
 *
 * Must never hand out anything but verified-by-the-store bytes under the
 * digest asked for, or keep the secret beyond the engine's own copy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/random.h"
#include "engine/internal.h"
#include "engine/ledger.h"

static int get_blob(void *ctx, const char *digest, void **bytes, size_t *len, sp_error *err)
{
    engine_artifacts *a = ctx;
    bool found = false;
    sp_store_rc rc;
    ENGINE_RETRY_READ(a->e, rc, err,
                      ledger_get_blob(a->e, digest, bytes, len, &found, err));
    if (rc != SP_STORE_OK)
        return -1;
    return found ? 0 : 1;
}

static int secret(void *ctx, unsigned char key[32], sp_error *err)
{
    engine_artifacts *a = ctx;
    return engine_secret(a->e, key, err);
}

static void audit(void *ctx, const char *kind, const char *body, size_t len)
{
    engine_artifacts *a = ctx;
    if (!a->has_ref)
        return;
    ledger_audit(a->e, &a->ref, kind, body, len); /* best effort: the refusal already happened */
}

void engine_artifacts_init(sp_engine *e, const sp_attempt_ref *ref, engine_artifacts *out)
{
    memset(out, 0, sizeof *out);
    out->e = e;
    if (ref) {
        out->ref = *ref;
        out->has_ref = true;
    }
    out->api = (sp_artifacts){out, get_blob, secret, audit};
}
