/*
 * artifacts.h - what a component runner needs from the engine beyond the
 * runner context (runners.md §2, §5): sealed bytes from the store by digest,
 * the store's secret for sealed process handles, and an audit entry for
 * the attempt (a forged handle, say).
 *
 * The engine fills one per call (engine/artifacts.c); runners never see the
 * store itself.
 *
 * What it must never do: hand out bytes it did not read under that digest,
 * or the secret to anything but a MAC.
 */
#ifndef SPORE_RUNNERS_ARTIFACTS_H
#define SPORE_RUNNERS_ARTIFACTS_H

#include <stddef.h>

#include "base/error.h"

typedef struct sp_artifacts {
    void *ctx;
    /* 0 with malloc'd bytes, 1 when the store has no such blob, -1 with err. */
    int (*get_blob)(void *ctx, const char *digest, void **bytes, size_t *len, sp_error *err);
    /* The store's secret (32 bytes). 0 or -1 with err. */
    int (*secret)(void *ctx, unsigned char key[32], sp_error *err);
    /* Keep an audit entry of `kind` with a canonical JSON body for the
     * calling attempt (best effort). */
    void (*audit)(void *ctx, const char *kind, const char *body, size_t len);
} sp_artifacts;

#endif
