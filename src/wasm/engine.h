/*
 * engine.h - the WebAssembly engine interface (runners.md §7).
 *
 * What it is for: a narrow C view of a WebAssembly engine, enough for the
 * runner jail and for validation: load and validate a core module, list its
 * imports and exports with exact types, instantiate it with host functions,
 * call an export, and read or write the exported linear memory. The one
 * implementation today is wabt's interpreter (wabt_engine.cc, the only C++
 * in spore); another engine (wasm2c-compiled runners, say) can be added
 * behind the same functions without touching the runner host.
 *
 * Values cross as uint64_t bit patterns: i32 zero-extended, i64 as is, f32
 * and f64 by their IEEE bits.
 *
 * What it must never do: accept a module outside the feature set of the
 * runner world (MVP plus bulk-memory, sign-extension, mutable-globals and
 * multi-value: no threads, SIMD, memory64, reference types, exceptions),
 * throw a C++ exception across this interface, or let a trap escape as
 * anything but an error message.
 */
#ifndef SPORE_WASM_ENGINE_H
#define SPORE_WASM_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SP_WASM_MAX_SIG 16 /* params or results of one function type shown */

typedef enum sp_wasm_valtype {
    SP_WASM_I32,
    SP_WASM_I64,
    SP_WASM_F32,
    SP_WASM_F64,
    SP_WASM_OTHER, /* v128, references: never part of the runner world */
} sp_wasm_valtype;

typedef enum sp_wasm_kind {
    SP_WASM_FUNC,
    SP_WASM_TABLE,
    SP_WASM_MEMORY,
    SP_WASM_GLOBAL,
    SP_WASM_TAG,
} sp_wasm_kind;

/* One import or export. Strings are NUL-terminated copies owned by the module. */
typedef struct sp_wasm_extern {
    const char *module; /* imports only; "" for exports */
    const char *name;
    sp_wasm_kind kind;
    /* SP_WASM_FUNC */
    uint32_t nparams, nresults; /* true counts (may exceed SP_WASM_MAX_SIG) */
    sp_wasm_valtype params[SP_WASM_MAX_SIG], results[SP_WASM_MAX_SIG];
    /* SP_WASM_MEMORY (pages of 64 KiB) */
    uint64_t min_pages, max_pages;
    bool has_max, shared, is64;
} sp_wasm_extern;

typedef struct sp_wasm_module sp_wasm_module;
typedef struct sp_wasm_instance sp_wasm_instance;

/* Decode and validate `bytes` (copied). NULL with a message in err[0..n) when
 * it is not a valid module of the runner world's feature set. */
sp_wasm_module *sp_wasm_load(const void *bytes, size_t len, char *err, size_t n);
void sp_wasm_module_free(sp_wasm_module *m);

size_t sp_wasm_import_count(const sp_wasm_module *m);
const sp_wasm_extern *sp_wasm_import(const sp_wasm_module *m, size_t i);
size_t sp_wasm_export_count(const sp_wasm_module *m);
const sp_wasm_extern *sp_wasm_export(const sp_wasm_module *m, size_t i);

/* A host function, called for import number `import_index`. `args` and
 * `results` follow the import's type. Return 0, or -1 to trap with the
 * message written to trap[0..n). `inst` is NULL while the module's start
 * function runs during instantiation. */
typedef int (*sp_wasm_host_fn)(void *ctx, sp_wasm_instance *inst, size_t import_index,
                               const uint64_t *args, uint64_t *results, char *trap, size_t n);

/* Instantiate with one host callback serving every function import (every
 * import must be a function). NULL with the reason (link error or a trap
 * in the start function) in err[0..n). */
sp_wasm_instance *sp_wasm_instantiate(sp_wasm_module *m, sp_wasm_host_fn host, void *ctx,
                                      char *err, size_t n);
void sp_wasm_instance_free(sp_wasm_instance *inst);

/* Call the exported function `name` with exactly its parameter count.
 * 0 on return; -1 with a message (trap, no such export, wrong arity). */
int sp_wasm_call(sp_wasm_instance *inst, const char *name, const uint64_t *args, size_t nargs,
                 uint64_t *results, size_t nresults, char *err, size_t n);

/* The exported memory named "memory": its bytes and size (NULL, 0 when the
 * module exports none). The pointer is valid until the next call into the
 * instance (memory.grow may move it). */
uint8_t *sp_wasm_memory(sp_wasm_instance *inst, uint64_t *size);

#ifdef __cplusplus
}
#endif

#endif
