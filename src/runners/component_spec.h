/*
 * component_spec.h - the runner part of a `component` action, or of a
 * command action's {"component": {...}} async hook (runners.md §1): the
 * module, the grants, config, callTimeoutMs and the sealed map; and the one
 * path normalization used for grants when the package is built and for
 * every name a runner passes at use (runners.md §2).
 *
 * Normalization: split on '/', drop empty and "." segments, let ".." remove
 * the previous segment. A relative path stays relative ("." for the folder
 * itself); an absolute one keeps its leading '/'. Refused: an empty string,
 * a NUL byte, a glob character (* ? [), a relative path whose ".." leaves
 * the folder, an absolute path whose ".." climbs above "/", and anything
 * longer than SP_PATH_MAX.
 *
 * What it must never do: normalize one name two ways (the build and the
 * host call this same function), or let a grant through that spore cannot
 * offer.
 */
#ifndef SPORE_RUNNERS_COMPONENT_SPEC_H
#define SPORE_RUNNERS_COMPONENT_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define SP_PATH_MAX 4096
#define SP_COMPONENT_CALL_TIMEOUT_DEFAULT_MS UINT64_C(60000)
#define SP_COMPONENT_PROBE_EVERY_DEFAULT_MS UINT64_C(10000)
#define SP_GRANTS_MAX 256 /* entries per grant kind */

typedef enum sp_path_status {
    SP_PATH_OK,
    SP_PATH_EMPTY,
    SP_PATH_NUL,
    SP_PATH_GLOB,
    SP_PATH_ESCAPES, /* a ".." leaves the folder (relative) or climbs past "/" */
    SP_PATH_TOO_LONG,
} sp_path_status;

/* Normalize in[0..len) into out[0..n) (runners.md §2). */
sp_path_status sp_path_normalize(const char *in, size_t len, char *out, size_t n);

/* True when normalized `path` is `dir` or lies below it (both normalized;
 * "." contains every relative path). *rest gets the part below ("." when
 * equal). Relative and absolute never contain each other. */
bool sp_path_within(const char *dir, const char *path, const char **rest);

typedef enum sp_grant_kind { SP_GRANT_PROGRAMS, SP_GRANT_SOCKETS, SP_GRANT_FOLDERS, SP_GRANT_KINDS } sp_grant_kind;

const char *sp_grant_kind_name(sp_grant_kind k); /* "programs" | "sockets" | "folders" */

typedef struct sp_component_spec {
    char *module;                   /* normalized (owned) */
    char **grants[SP_GRANT_KINDS];  /* normalized entries (owned) */
    size_t ngrants[SP_GRANT_KINDS];
    const json_t *config;           /* borrowed; NULL = null */
    uint64_t call_timeout_ms;
    const json_t *sealed;           /* borrowed; NULL before sealing */
} sp_component_spec;

/* Parse `obj`: a whole component action (hook = false: kind, effect,
 * outcomes, retry, description and async are its members too) or the
 * object inside a {"component": ...} hook (hook = true). action.invalid for
 * a malformed member, component.grant-unsupported for grants spore cannot
 * offer. `where` names the object in messages ("action job", "action job:
 * async.probe"). */
int sp_component_spec_parse(const char *where, const json_t *obj, bool hook,
                            sp_component_spec *out, sp_error *err);
void sp_component_spec_free(sp_component_spec *spec);

/* The grant entry `name` normalizes to in `kind`, or NULL (not granted). */
const char *sp_component_granted(const sp_component_spec *spec, sp_grant_kind kind,
                                 const char *name, size_t len);

/* The folder grant that contains `name` (normalized into norm[0..n)), or
 * NULL; *rest is the part below it. */
const char *sp_component_folder_of(const sp_component_spec *spec, const char *name, size_t len,
                                   char *norm, size_t n, const char **rest);

#endif
