/*
 * mapping.c - validation (W10) and evaluation of mappings (kernel.md §3;
 * the `item` / `index` roots of a 0.2 map's input, workflows-0.2.md §4).
 * Never evaluates members out of canonical order, never undercharges, never
 * accepts the map roots outside a map's input.
 */
#include "kernel/mapping.h"

#include <stdlib.h>
#include <string.h>

#include "json/json.h"

static bool key_is(const char *key, size_t len, const char *lit)
{
    return len == strlen(lit) && memcmp(key, lit, len) == 0;
}

static bool is_step(const json_t *s)
{
    return json_is_string(s) || (json_is_integer(s) && json_integer_value(s) >= 0);
}

static bool string_is(const json_t *s, const char *lit)
{
    return json_is_string(s) && key_is(json_string_value(s), json_string_length(s), lit);
}

static bool path_valid(const json_t *path, bool map_roots)
{
    size_t n = json_array_size(path);
    if (!json_is_array(path) || n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_step(json_array_get(path, i)))
            return false;
    const json_t *root = json_array_get(path, 0);
    if (string_is(root, "input"))
        return true;
    if (map_roots && string_is(root, "item"))
        return true;
    if (map_roots && string_is(root, "index"))
        return n == 1;
    if (string_is(root, "run"))
        return n == 1 || (n == 2 && (string_is(json_array_get(path, 1), "id") ||
                                     string_is(json_array_get(path, 1), "tenant")));
    if (!string_is(root, "nodes"))
        return false;
    if (n < 2 || !json_is_string(json_array_get(path, 1)))
        return false;
    if (n == 2)
        return true;
    const json_t *field = json_array_get(path, 2);
    if (string_is(field, "output"))
        return true;
    return n == 3 && (string_is(field, "visit") || string_is(field, "outcome"));
}

/* An object is special when one of its keys starts with '$'. */
static bool has_dollar_key(const json_t *obj)
{
    const char *key;
    size_t len;
    json_t *v;
    json_object_keylen_foreach((json_t *)obj, key, len, v)
    {
        if (len > 0 && key[0] == '$')
            return true;
    }
    return false;
}

static const json_t *only_member(const json_t *obj, const char *name)
{
    return json_object_size(obj) == 1 ? json_object_get(obj, name) : NULL;
}

static bool valid(const json_t *m, bool map_roots)
{
    if (json_is_array(m)) {
        for (size_t i = 0; i < json_array_size(m); i++)
            if (!valid(json_array_get(m, i), map_roots))
                return false;
        return true;
    }
    if (!json_is_object(m))
        return true;
    if (has_dollar_key(m)) {
        const json_t *path = only_member(m, "$get");
        if (path)
            return path_valid(path, map_roots);
        return only_member(m, "$literal") != NULL;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)m, key, v)
    {
        if (!valid(v, map_roots))
            return false;
    }
    return true;
}

bool sp_mapping_valid(const json_t *m) { return valid(m, false); }

bool sp_mapping_valid_map_input(const json_t *m) { return valid(m, true); }

/* One step into a value; NULL when it does not resolve. */
static json_t *step_into(const json_t *v, const json_t *step)
{
    if (json_is_string(step))
        return json_is_object(v) ? json_object_getn(v, json_string_value(step),
                                                    json_string_length(step))
                                 : NULL;
    if (!json_is_array(v))
        return NULL;
    json_int_t i = json_integer_value(step);
    return (size_t)i < json_array_size(v) ? json_array_get(v, (size_t)i) : NULL;
}

static json_t *walk(const json_t *v, const json_t *path, size_t from)
{
    for (size_t i = from; v && i < json_array_size(path); i++)
        v = step_into(v, json_array_get(path, i));
    return (json_t *)v;
}

/* Resolve a valid path; returns a new reference, NULL when missing, and sets
 * *oom when memory ran out. */
static json_t *resolve(const json_t *path, const sp_mapping_ctx *ctx, bool *oom)
{
    const json_t *root = json_array_get(path, 0);
    if (string_is(root, "input"))
        return json_incref(walk(ctx->input, path, 1));
    if (string_is(root, "item")) /* valid only where the map roots exist */
        return ctx->item ? json_incref(walk(ctx->item, path, 1)) : NULL;
    if (string_is(root, "index")) {
        json_t *index = ctx->index >= 0 ? json_integer(ctx->index) : NULL;
        if (ctx->index >= 0 && !index)
            *oom = true;
        return index;
    }
    if (string_is(root, "run")) {
        json_t *run;
        if (json_array_size(path) == 2)
            run = json_string(string_is(json_array_get(path, 1), "id") ? ctx->run_id
                                                                        : ctx->tenant);
        else
            run = json_pack("{s:s,s:s}", "id", ctx->run_id, "tenant", ctx->tenant);
        if (!run)
            *oom = true;
        return run;
    }
    const json_t *node = json_array_get(path, 1);
    json_t *record = json_object_getn(ctx->nodes, json_string_value(node), json_string_length(node));
    return json_incref(walk(record, path, 2));
}

static sp_mapping_status eval(const json_t *m, sp_mapping_ctx *ctx, json_t **out,
                              const json_t **missing);

static sp_mapping_status eval_array(const json_t *m, sp_mapping_ctx *ctx, json_t **out,
                                    const json_t **missing)
{
    json_t *arr = json_array();
    if (!arr)
        return SP_MAPPING_OOM;
    for (size_t i = 0; i < json_array_size(m); i++) {
        json_t *e;
        sp_mapping_status st = eval(json_array_get(m, i), ctx, &e, missing);
        if (st == SP_MAPPING_OK && json_array_append_new(arr, e))
            st = SP_MAPPING_OOM;
        if (st != SP_MAPPING_OK) {
            json_decref(arr);
            return st;
        }
    }
    *out = arr;
    return SP_MAPPING_OK;
}

static sp_mapping_status eval_object(const json_t *m, sp_mapping_ctx *ctx, json_t **out,
                                     const json_t **missing)
{
    bool oom;
    size_t n = json_object_size(m);
    sp_json_member *members = sp_json_sorted_members(m, &oom);
    json_t *obj = oom ? NULL : json_object();
    if (!obj) {
        free(members);
        return SP_MAPPING_OOM;
    }
    sp_mapping_status st = SP_MAPPING_OK;
    for (size_t i = 0; i < n && st == SP_MAPPING_OK; i++) {
        json_t *e;
        st = eval(members[i].value, ctx, &e, missing);
        if (st == SP_MAPPING_OK &&
            json_object_setn_new_nocheck(obj, members[i].key, members[i].len, e))
            st = SP_MAPPING_OOM;
    }
    free(members);
    if (st != SP_MAPPING_OK) {
        json_decref(obj);
        return st;
    }
    *out = obj;
    return SP_MAPPING_OK;
}

static sp_mapping_status eval(const json_t *m, sp_mapping_ctx *ctx, json_t **out,
                              const json_t **missing)
{
    ctx->ops += 1;
    if (json_is_array(m))
        return eval_array(m, ctx, out, missing);
    if (!json_is_object(m) || !has_dollar_key(m)) {
        if (json_is_object(m))
            return eval_object(m, ctx, out, missing);
        *out = json_incref((json_t *)m);
        return SP_MAPPING_OK;
    }
    const json_t *literal = only_member(m, "$literal");
    if (literal) {
        *out = json_incref((json_t *)literal);
        return SP_MAPPING_OK;
    }
    const json_t *path = json_object_get(m, "$get");
    ctx->ops += json_array_size(path);
    bool oom = false;
    json_t *v = resolve(path, ctx, &oom);
    if (oom)
        return SP_MAPPING_OOM;
    if (!v) {
        *missing = path;
        return SP_MAPPING_MISSING;
    }
    *out = v;
    return SP_MAPPING_OK;
}

sp_mapping_status sp_mapping_eval(const json_t *m, sp_mapping_ctx *ctx, json_t **out,
                                  const json_t **missing)
{
    return eval(m, ctx, out, missing);
}
