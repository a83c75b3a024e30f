/*
 * world.h - the runner world `spore:runner@0.1` (runners.md §3): the exact
 * imports a runner may use and the exports it must have, with their types,
 * and the check of a loaded module against them (runners.md §6 step 4).
 *
 * What it must never do: accept a module by names alone: every import and
 * export is compared by kind and exact type, and the memory must declare a
 * maximum of at most SP_WORLD_MAX_PAGES.
 */
#ifndef SPORE_WASM_WORLD_H
#define SPORE_WASM_WORLD_H

#include <stddef.h>

#include "base/error.h"
#include "wasm/engine.h"

#define SP_WORLD_NAME "spore:runner@0.1"
#define SP_WORLD_HOST_MODULE "spore:runner/host@0.1"
#define SP_WORLD_MAX_PAGES 1024u /* 64 MiB */

typedef enum sp_world_import {
    SP_IMPORT_PROCESS_START,
    SP_IMPORT_PROCESS_ALIVE,
    SP_IMPORT_PROCESS_SIGNAL,
    SP_IMPORT_SOCKET_REQUEST,
    SP_IMPORT_SLEEP_MS,
    SP_IMPORT_FILE_READ,
    SP_IMPORT_DIR_LIST,
    SP_IMPORT_LOG,
    SP_IMPORT_COUNT,
} sp_world_import;

/* The import's name ("process_start", ...). */
const char *sp_world_import_name(sp_world_import i);

/* The world import an import of the module is (by module, name and type),
 * or -1. */
int sp_world_import_of(const sp_wasm_extern *imp);

/* A module's imports and exports as the jail describes them (the worker
 * never parses a module itself). Strings point into `doc`. */
typedef struct sp_world_module {
    sp_wasm_extern *imports, *exports;
    size_t nimports, nexports;
    struct json_t *doc;
} sp_world_module;

const char *sp_world_kind_name(int kind); /* "func", "memory", ... */
const char *sp_world_type_name(int type); /* "i32", ... */

/* The description as JSON (jail child side, jail_child.c): {"imports": [...], "exports":
 * [...]}, each {"module", "name", "kind", "params", "results", "min", "max",
 * "hasMax", "shared", "is64"}. malloc'd; NULL when out of memory. */
char *sp_world_describe(const sp_wasm_module *m, size_t *len);

/* Decode a description (worker side); -1 when malformed. */
int sp_world_module_parse(const char *json, size_t len, sp_world_module *out);
void sp_world_module_free(sp_world_module *m);

/* Check a module against the world: component.world-mismatch or
 * component.memory-unbounded, the message naming the action, the import or
 * export and what was expected. */
int sp_world_check(const sp_world_module *m, const char *action_id, sp_error *err);

#endif
