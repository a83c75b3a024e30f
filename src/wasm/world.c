/*
 * world.c - the runner world's imports and exports and the exact type check
 * (see world.h). Never lets a module through on its names alone.
 */
#include "wasm/world.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

typedef struct sig {
    const char *name;
    uint32_t nparams, nresults;
    sp_wasm_valtype params[4], results[1];
    const char *text; /* for messages */
} sig;

#define I32 SP_WASM_I32
#define I64 SP_WASM_I64

static const sig IMPORTS[SP_IMPORT_COUNT] = {
    {"process_start", 4, 1, {I32, I32, I32, I32}, {I32}, "(i32 ptr, i32 len, i32 out, i32 cap) -> i32"},
    {"process_alive", 4, 1, {I32, I32, I32, I32}, {I32}, "(i32 ptr, i32 len, i32 out, i32 cap) -> i32"},
    {"process_signal", 4, 1, {I32, I32, I32, I32}, {I32}, "(i32 ptr, i32 len, i32 out, i32 cap) -> i32"},
    {"socket_request", 4, 1, {I32, I32, I32, I32}, {I32}, "(i32 ptr, i32 len, i32 out, i32 cap) -> i32"},
    {"sleep_ms", 4, 1, {I32, I32, I32, I32}, {I32}, "(i32 ptr, i32 len, i32 out, i32 cap) -> i32"},
    {"file_read", 4, 1, {I32, I32, I32, I32}, {I32}, "(i32 ptr, i32 len, i32 out, i32 cap) -> i32"},
    {"dir_list", 4, 1, {I32, I32, I32, I32}, {I32}, "(i32 ptr, i32 len, i32 out, i32 cap) -> i32"},
    {"log", 3, 0, {I32, I32, I32}, {I32}, "(i32 level, i32 ptr, i32 len) -> ()"},
};

static const sig EXPORTS[] = {
    {"spore_alloc", 1, 1, {I32}, {I32}, "(i32 size) -> i32"},
    {"spore_start", 2, 1, {I32, I32}, {I64}, "(i32 ptr, i32 len) -> i64"},
    {"spore_probe", 2, 1, {I32, I32}, {I64}, "(i32 ptr, i32 len) -> i64"},
    {"spore_stop", 2, 1, {I32, I32}, {I64}, "(i32 ptr, i32 len) -> i64"},
};

const char *sp_world_import_name(sp_world_import i)
{
    return i < SP_IMPORT_COUNT ? IMPORTS[i].name : "?";
}

static bool same_type(const sp_wasm_extern *e, const sig *s)
{
    if (e->kind != SP_WASM_FUNC || e->nparams != s->nparams || e->nresults != s->nresults)
        return false;
    for (uint32_t i = 0; i < s->nparams; i++)
        if (e->params[i] != s->params[i])
            return false;
    for (uint32_t i = 0; i < s->nresults; i++)
        if (e->results[i] != s->results[i])
            return false;
    return true;
}

static void type_text(const sp_wasm_extern *e, char *out, size_t n)
{
    static const char *const names[] = {"i32", "i64", "f32", "f64", "other"};
    static const char *const kinds[] = {"function", "table", "memory", "global", "tag"};
    if (e->kind != SP_WASM_FUNC) {
        snprintf(out, n, "a %s", kinds[e->kind]);
        return;
    }
    size_t used = (size_t)snprintf(out, n, "(");
    for (uint32_t i = 0; i < e->nparams && i < SP_WASM_MAX_SIG && used < n; i++)
        used += (size_t)snprintf(out + used, n - used, "%s%s", i ? ", " : "", names[e->params[i]]);
    if (used < n)
        used += (size_t)snprintf(out + used, n - used, ") -> ");
    if (e->nresults == 0 && used < n)
        used += (size_t)snprintf(out + used, n - used, "()");
    for (uint32_t i = 0; i < e->nresults && i < SP_WASM_MAX_SIG && used < n; i++)
        used += (size_t)snprintf(out + used, n - used, "%s%s", i ? ", " : "", names[e->results[i]]);
}

int sp_world_import_of(const sp_wasm_extern *imp)
{
    if (strcmp(imp->module, SP_WORLD_HOST_MODULE) != 0)
        return -1;
    for (int i = 0; i < SP_IMPORT_COUNT; i++)
        if (strcmp(imp->name, IMPORTS[i].name) == 0)
            return same_type(imp, &IMPORTS[i]) ? i : -1;
    return -1;
}

static int mismatch(sp_error *err, const char *action_id, const char *what, const char *name,
                    const char *problem)
{
    return sp_fail_details(err, "component.world-mismatch",
                           json_pack("{s:s,s:s,s:s}", "action", action_id, what, name, "problem",
                                     problem),
                           "action %s: the runner is outside the world " SP_WORLD_NAME
                           ": %s %s: %s", action_id, what, name, problem);
}

static int check_imports(const sp_world_module *m, const char *id, sp_error *err)
{
    char problem[400], have[160];
    for (size_t i = 0; i < m->nimports; i++) {
        const sp_wasm_extern *imp = &m->imports[i];
        char full[300];
        snprintf(full, sizeof full, "%s.%s", imp->module, imp->name);
        if (strcmp(imp->module, SP_WORLD_HOST_MODULE) != 0) {
            snprintf(problem, sizeof problem,
                     "imports come only from module \"" SP_WORLD_HOST_MODULE "\", not \"%s\"",
                     imp->module);
            return mismatch(err, id, "import", full, problem);
        }
        int known = -1;
        for (int k = 0; k < SP_IMPORT_COUNT; k++)
            if (strcmp(imp->name, IMPORTS[k].name) == 0)
                known = k;
        if (known < 0)
            return mismatch(err, id, "import", full, "no such import in the world");
        if (!same_type(imp, &IMPORTS[known])) {
            type_text(imp, have, sizeof have);
            snprintf(problem, sizeof problem, "expected type %s, found %s", IMPORTS[known].text,
                     have);
            return mismatch(err, id, "import", full, problem);
        }
    }
    return 0;
}

static const sp_wasm_extern *find_export(const sp_world_module *m, const char *name)
{
    for (size_t i = 0; i < m->nexports; i++)
        if (strcmp(m->exports[i].name, name) == 0)
            return &m->exports[i];
    return NULL;
}

int sp_world_check(const sp_world_module *m, const char *id, sp_error *err)
{
    if (check_imports(m, id, err))
        return -1;
    char problem[400], have[160];
    for (size_t i = 0; i < sizeof EXPORTS / sizeof EXPORTS[0]; i++) {
        const sp_wasm_extern *e = find_export(m, EXPORTS[i].name);
        if (!e) {
            snprintf(problem, sizeof problem, "missing; expected a function %s", EXPORTS[i].text);
            return mismatch(err, id, "export", EXPORTS[i].name, problem);
        }
        if (!same_type(e, &EXPORTS[i])) {
            type_text(e, have, sizeof have);
            snprintf(problem, sizeof problem, "expected type %s, found %s", EXPORTS[i].text, have);
            return mismatch(err, id, "export", EXPORTS[i].name, problem);
        }
    }
    const sp_wasm_extern *mem = find_export(m, "memory");
    if (!mem || mem->kind != SP_WASM_MEMORY)
        return mismatch(err, id, "export", "memory",
                        "missing; expected a memory with a declared maximum of at most 1024 pages");
    if (mem->shared || mem->is64)
        return mismatch(err, id, "export", "memory", "a shared or 64-bit memory is not allowed");
    if (!mem->has_max || mem->max_pages > SP_WORLD_MAX_PAGES)
        return sp_fail_details(
            err, "component.memory-unbounded",
            json_pack("{s:s,s:s,s:I}", "action", id, "export", "memory", "maxPages",
                      (json_int_t)(mem->has_max ? mem->max_pages : 0)),
            "action %s: export memory must declare a maximum of at most %u pages (64 MiB); "
            "%s", id, SP_WORLD_MAX_PAGES, mem->has_max ? "its maximum is larger" : "it has none");
    return 0;
}

/* ---- descriptions ---- */

static const char *const KIND_NAMES[] = {"func", "table", "memory", "global", "tag"};
static const char *const TYPE_NAMES[] = {"i32", "i64", "f32", "f64", "other"};

const char *sp_world_kind_name(int kind) { return kind >= 0 && kind < 5 ? KIND_NAMES[kind] : "?"; }
const char *sp_world_type_name(int type) { return type >= 0 && type < 5 ? TYPE_NAMES[type] : "?"; }

static int index_of(const char *s, const char *const *names, int n)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

static int parse_types(const json_t *a, sp_wasm_valtype *out, uint32_t n)
{
    if (!json_is_array(a) || json_array_size(a) != (n < SP_WASM_MAX_SIG ? n : SP_WASM_MAX_SIG))
        return -1;
    for (size_t i = 0; i < json_array_size(a); i++) {
        int t = index_of(json_string_value(json_array_get(a, i)), TYPE_NAMES, 5);
        if (t < 0)
            return -1;
        out[i] = (sp_wasm_valtype)t;
    }
    return 0;
}

static int parse_externs(const json_t *a, sp_wasm_extern **out, size_t *n)
{
    if (!json_is_array(a) || json_array_size(a) > 100000)
        return -1;
    *n = json_array_size(a);
    *out = calloc(*n + 1, sizeof **out);
    if (!*out)
        return -1;
    for (size_t i = 0; i < *n; i++) {
        const json_t *e = json_array_get(a, i);
        sp_wasm_extern *x = &(*out)[i];
        int kind = index_of(json_string_value(json_object_get(e, "kind")), KIND_NAMES, 5);
        x->module = json_string_value(json_object_get(e, "module"));
        x->name = json_string_value(json_object_get(e, "name"));
        x->nparams = (uint32_t)json_integer_value(json_object_get(e, "nparams"));
        x->nresults = (uint32_t)json_integer_value(json_object_get(e, "nresults"));
        x->min_pages = (uint64_t)json_integer_value(json_object_get(e, "min"));
        x->max_pages = (uint64_t)json_integer_value(json_object_get(e, "max"));
        x->has_max = json_is_true(json_object_get(e, "hasMax"));
        x->shared = json_is_true(json_object_get(e, "shared"));
        x->is64 = json_is_true(json_object_get(e, "is64"));
        if (kind < 0 || !x->module || !x->name ||
            parse_types(json_object_get(e, "params"), x->params, x->nparams) ||
            parse_types(json_object_get(e, "results"), x->results, x->nresults))
            return -1;
        x->kind = (sp_wasm_kind)kind;
    }
    return 0;
}

int sp_world_module_parse(const char *json, size_t len, sp_world_module *out)
{
    memset(out, 0, sizeof *out);
    out->doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, NULL);
    if (!out->doc || parse_externs(json_object_get(out->doc, "imports"), &out->imports,
                                   &out->nimports) ||
        parse_externs(json_object_get(out->doc, "exports"), &out->exports, &out->nexports)) {
        sp_world_module_free(out);
        return -1;
    }
    return 0;
}

void sp_world_module_free(sp_world_module *m)
{
    free(m->imports);
    free(m->exports);
    json_decref(m->doc);
    memset(m, 0, sizeof *m);
}
