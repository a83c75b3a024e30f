/*
 * validate.h - validate_workflow (engine.md §2): canonicalize a workflow
 * document, check every action's kind and runner, seal component runners
 * into the package (runners.md §2, §6: their modules are described - and at
 * start, instantiated once - in the jail, never parsed here), and make a dry
 * `run.started` transition, without touching any store.
 *
 * What it must never do: open a database, run an action, or accept a package
 * the kernel would refuse on its first transition.
 */
#ifndef SPORE_ENGINE_VALIDATE_H
#define SPORE_ENGINE_VALIDATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "kernel/kernel.h"

typedef struct sp_validated {
    char *package; /* canonical package bytes (owned) */
    size_t package_len;
    char package_digest[SP_DIGEST_TEXT_LEN + 1];
    size_t nnodes, nactions;
} sp_validated;

struct sp_seal_set; /* runners/runner.h */

/* Where the workflow's files are and what building the package also does
 * (runners.md §2, §6). */
typedef struct sp_validate_opts {
    const char *workflow_dir;    /* relative module and grant paths; NULL: "." */
    bool trial;                  /* instantiate each runner once in the jail */
    struct sp_seal_set *blobs;   /* collects the sealed bytes (may be NULL) */
} sp_validate_opts;

/* Validate the parsed document `doc` with a dry run.started of `input`
 * (JSON null when NULL) under `run_id` (a fixed placeholder when NULL).
 * Component runners are sealed into the package first (each action gains
 * "sealed"); `opts` NULL = the current directory, no trial, no blobs.
 * Errors carry action.kind-missing, action.kind-unregistered,
 * action.invalid, component.*, canonical.* or the kernel's failure code. */
int sp_validate_workflow(const json_t *doc, const json_t *input, const char *run_id,
                         const sp_validate_opts *opts, sp_validated *out, sp_error *err);

/* The two halves of sp_validate_workflow, for many starts of one workflow
 * (sp_engine_start_many): the package once - built, sealed, digested -
 * then a dry run per start. `loaded` is the package loaded once by
 * sp_workflow_load() (a cache; NULL: the dry run loads it, and reports
 * what is wrong with it). */
int sp_validate_package(const json_t *doc, const sp_validate_opts *opts, sp_validated *out,
                        sp_error *err);
int sp_validate_start(const json_t *doc, const sp_validated *v, const struct sp_workflow *loaded,
                      const json_t *input, const char *run_id, sp_error *err);

void sp_validated_free(sp_validated *v);

#endif
