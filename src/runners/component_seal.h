/*
 * component_seal.h - sealing runners into the package (runners.md §2, §6).
 *
 * What it is for: when a package is built (validate, start, run), the
 * runners' seal (runner.h) checks every component action and every
 * {"component": ...} hook of a command action in the order of runners.md
 * §6 (grants, module, world, and at start/run a trial instantiation in the
 * jail); each gains a member
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
#include "runners/runner.h" /* sp_seal_ctx, sp_seal_set */

#define SP_SEAL_FILES_MAX 10000
#define SP_SEAL_BYTES_MAX (256u << 20)
#define SP_SEAL_DEPTH_MAX 32

/* Seal one runner into the package: `obj` is a whole component action
 * (hook false) or the object inside a {"component": ...} hook of a command
 * action (hook true); it gains "sealed". `where` names it in messages. With
 * sc->trial the module is also instantiated once in the jail (§6 step 5,
 * component.instantiate on failure). Codes: component.grant-unsupported,
 * component.grant-missing, component.grant-escapes,
 * component.invalid-module, component.world-mismatch,
 * component.memory-unbounded, component.instantiate, action.invalid. The
 * component and command runners' seal call it (runner.h). */
int sp_component_seal(sp_seal_ctx *sc, const char *where, const char *action_id, json_t *obj,
                      bool hook, sp_error *err);

#endif
