/*
 * component_seal.h - sealing runners into the package (runners.md §2, §6).
 *
 * What it is for: when a package is built (validate, start, run), every
 * component action and every {"component": ...} hook of a command action
 * is checked in the order of runners.md §6 (grants, module, world, and at
 * start/run a trial instantiation in the jail), and gains a member
 * "sealed": {"<normalized path>": "sha256:<hex>"} covering the module and
 * every relative grant (a folder grant seals each regular file below it,
 * under its path). The bytes are collected so that start/run can put them
 * into the store's blob table before the run exists.
 *
 * What it must never do: read a file outside the workflow folder for a
 * relative grant (symlinks are resolved and checked), follow more than
 * SP_SEAL_FILES_MAX files or SP_SEAL_BYTES_MAX bytes, or seal a path other
 * than the one sp_path_normalize gives.
 */
#ifndef SPORE_RUNNERS_COMPONENT_SEAL_H
#define SPORE_RUNNERS_COMPONENT_SEAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "digest/digest.h"

#define SP_SEAL_FILES_MAX 10000
#define SP_SEAL_BYTES_MAX (256u << 20)
#define SP_SEAL_DEPTH_MAX 32

typedef struct sp_seal_blob {
    char digest[SP_DIGEST_TEXT_LEN + 1];
    char *bytes;
    size_t len;
} sp_seal_blob;

typedef struct sp_seal_set {
    sp_seal_blob *items; /* unique digests */
    size_t n, cap;
    size_t total; /* bytes read */
    size_t files;
} sp_seal_set;

void sp_seal_set_free(sp_seal_set *s);

/* Seal every runner of `doc` (changed in place) from `workflow_dir` (NULL:
 * the current directory). `blobs` (may be NULL) collects the bytes. With
 * `trial`, each module is also instantiated once in the jail (§6 step 5,
 * component.instantiate on failure). Codes: component.grant-unsupported,
 * component.grant-missing, component.grant-escapes,
 * component.invalid-module, component.world-mismatch,
 * component.memory-unbounded, component.instantiate, action.invalid. */
int sp_component_seal_workflow(json_t *doc, const char *workflow_dir, sp_seal_set *blobs,
                               bool trial, sp_error *err);

#endif
