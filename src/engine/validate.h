/*
 * validate.h - validate_workflow (engine.md §2): canonicalize a workflow
 * document, check every action's kind and runner, and make a dry
 * `run.started` transition, without touching any store.
 *
 * What it must never do: open a database, run an action, or accept a package
 * the kernel would refuse on its first transition.
 */
#ifndef SPORE_ENGINE_VALIDATE_H
#define SPORE_ENGINE_VALIDATE_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"
#include "kernel/kernel.h"

typedef struct sp_validated {
    char *package; /* canonical package bytes (owned) */
    size_t package_len;
    char package_digest[SP_DIGEST_TEXT_LEN + 1];
    size_t nnodes, nactions;
} sp_validated;

/* Validate the parsed document `doc` with a dry run.started of `input`
 * (JSON null when NULL) under `run_id` (a fixed placeholder when NULL).
 * Errors carry action.kind-missing, action.kind-unregistered,
 * action.invalid, canonical.* or the kernel's failure code. */
int sp_validate_workflow(const json_t *doc, const json_t *input, const char *run_id,
                         sp_validated *out, sp_error *err);

void sp_validated_free(sp_validated *v);

#endif
