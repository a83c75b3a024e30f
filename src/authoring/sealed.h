/*
 * sealed.h - what a sealed package says it carries (runners.md §2): every
 * runner object of the package (a component action, a command action's
 * component-form hook) and, over them all, the sealed files
 * ("sealed": {"<path>": "sha256:<hex>"}) and the relative folder grants.
 *
 * What it is for: the artifact writer lists the sealed files in the
 * manifest, the reader checks them against its members, and unpacking lays
 * them out: all from one reading of the package.
 *
 * What it must never do: accept a sealed path that is not a normal relative
 * path, a digest that is not sha256:<64 hex>, or one path sealed with two
 * digests (artifact.package).
 */
#ifndef SPORE_AUTHORING_SEALED_H
#define SPORE_AUTHORING_SEALED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

typedef struct sp_sealed_file {
    const char *path;   /* borrowed from the package */
    const char *digest; /* "sha256:<hex>" */
} sp_sealed_file;

typedef struct sp_sealed_list {
    sp_sealed_file *files; /* ascending byte order of paths, each path once */
    size_t n;
} sp_sealed_list;

/* Call `fn` on every runner object of `package`, in ascending byte order of
 * action IDs (the action, then its hooks probe, watch, stop); stop at the
 * first non-zero answer and return it. */
int sp_package_runners(const json_t *package, int (*fn)(const json_t *runner, void *ctx),
                       void *ctx);

/* The sealed files of `package`. */
int sp_package_sealed(const json_t *package, sp_sealed_list *out, sp_error *err);

void sp_sealed_list_free(sp_sealed_list *l);

/* Whether `digest` is "sha256:" and 64 lower-case hex digits. */
bool sp_is_sha256_text(const char *digest);

#endif
