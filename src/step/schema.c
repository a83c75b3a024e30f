/*
 * schema.c - the JSON Schema subset spore-step checks: the action's
 * outputSchema against the model's final answer, and each built-in tool's
 * input schema against the model's arguments. Keywords: type (a name or a
 * list), enum, const, properties, required, additionalProperties (false or
 * a schema), items, minItems, maxItems, minLength, maxLength (in bytes),
 * minimum, maximum, anyOf, allOf. Other keywords are ignored: this is a
 * guard on the shape, not a full validator.
 *
 * Must never recurse without a bound (depth 32), or quote a value of the
 * checked document in its reason (only the path and the rule).
 */
#include <stdio.h>
#include <string.h>

#include "step/step.h"

#define SCHEMA_DEPTH 32

typedef struct checker {
    char *why;
    size_t len;
    char path[256];
} checker;

static bool fail(checker *k, const char *rule)
{
    snprintf(k->why, k->len, "%s: %s", k->path[0] ? k->path : "(the value)", rule);
    return false;
}

static bool type_is(const json_t *v, const char *t)
{
    if (strcmp(t, "object") == 0)
        return json_is_object(v);
    if (strcmp(t, "array") == 0)
        return json_is_array(v);
    if (strcmp(t, "string") == 0)
        return json_is_string(v);
    if (strcmp(t, "integer") == 0)
        return json_is_integer(v);
    if (strcmp(t, "number") == 0)
        return json_is_number(v);
    if (strcmp(t, "boolean") == 0)
        return json_is_boolean(v);
    if (strcmp(t, "null") == 0)
        return json_is_null(v);
    return false;
}

static bool check_type(checker *k, const json_t *s, const json_t *v)
{
    const json_t *t = json_object_get(s, "type");
    if (!t)
        return true;
    if (json_is_string(t))
        return type_is(v, json_string_value(t)) || fail(k, "wrong type");
    for (size_t i = 0; i < json_array_size(t); i++)
        if (json_is_string(json_array_get(t, i)) &&
            type_is(v, json_string_value(json_array_get(t, i))))
            return true;
    return fail(k, "wrong type");
}

static bool check_enum(checker *k, const json_t *s, const json_t *v)
{
    const json_t *c = json_object_get(s, "const"), *e = json_object_get(s, "enum");
    if (c && !json_equal(c, v))
        return fail(k, "not the const value");
    if (!e)
        return true;
    for (size_t i = 0; i < json_array_size(e); i++)
        if (json_equal(json_array_get(e, i), v))
            return true;
    return fail(k, "not one of the enum values");
}

static bool limit(const json_t *s, const char *name, double *out)
{
    const json_t *l = json_object_get(s, name);
    if (!json_is_number(l))
        return false;
    *out = json_number_value(l);
    return true;
}

static bool check_bounds(checker *k, const json_t *s, const json_t *v)
{
    double lo, hi;
    double n = json_is_string(v)  ? (double)json_string_length(v)
               : json_is_array(v) ? (double)json_array_size(v)
                                  : json_number_value(v);
    const char *min = json_is_string(v) ? "minLength" : json_is_array(v) ? "minItems" : "minimum";
    const char *max = json_is_string(v) ? "maxLength" : json_is_array(v) ? "maxItems" : "maximum";
    if (!json_is_string(v) && !json_is_array(v) && !json_is_number(v))
        return true;
    if (limit(s, min, &lo) && n < lo)
        return fail(k, min);
    if (limit(s, max, &hi) && n > hi)
        return fail(k, max);
    return true;
}

static bool check(checker *k, const json_t *s, const json_t *v, int depth);

/* Descend into a member or an item, extending the path for the reason. */
static bool descend(checker *k, const json_t *s, const json_t *v, int depth, const char *key,
                    size_t index)
{
    size_t at = strlen(k->path);
    if (key)
        snprintf(k->path + at, sizeof k->path - at, "/%s", key);
    else
        snprintf(k->path + at, sizeof k->path - at, "/%zu", index);
    bool ok = check(k, s, v, depth + 1);
    if (ok)
        k->path[at] = '\0';
    return ok;
}

static bool check_object(checker *k, const json_t *s, const json_t *v, int depth)
{
    const json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    const json_t *extra = json_object_get(s, "additionalProperties");
    if (!json_is_object(v))
        return true;
    for (size_t i = 0; i < json_array_size(req); i++) {
        const char *name = json_string_value(json_array_get(req, i));
        if (name && !json_object_get(v, name)) {
            char rule[200];
            snprintf(rule, sizeof rule, "the required member \"%.120s\" is missing", name);
            return fail(k, rule);
        }
    }
    const char *key;
    json_t *m;
    json_object_foreach((json_t *)v, key, m)
    {
        const json_t *ps = json_object_get(props, key);
        if (ps && !descend(k, ps, m, depth, key, 0))
            return false;
        if (!ps && json_is_false(extra))
            return fail(k, "a member the schema does not allow (additionalProperties: false)");
        if (!ps && json_is_object(extra) && !descend(k, extra, m, depth, key, 0))
            return false;
    }
    return true;
}

static bool check_items(checker *k, const json_t *s, const json_t *v, int depth)
{
    const json_t *items = json_object_get(s, "items");
    if (!json_is_array(v) || !json_is_object(items))
        return true;
    for (size_t i = 0; i < json_array_size(v); i++)
        if (!descend(k, items, json_array_get(v, i), depth, NULL, i))
            return false;
    return true;
}

static bool check_combined(checker *k, const json_t *s, const json_t *v, int depth)
{
    const json_t *all = json_object_get(s, "allOf"), *any = json_object_get(s, "anyOf");
    for (size_t i = 0; i < json_array_size(all); i++)
        if (!check(k, json_array_get(all, i), v, depth + 1))
            return false;
    if (!json_array_size(any))
        return true;
    size_t at = strlen(k->path);
    for (size_t i = 0; i < json_array_size(any); i++) {
        if (check(k, json_array_get(any, i), v, depth + 1))
            return true;
        k->path[at] = '\0'; /* a failed branch's path is not the answer */
    }
    return fail(k, "matches none of anyOf");
}

static bool check(checker *k, const json_t *s, const json_t *v, int depth)
{
    if (depth > SCHEMA_DEPTH)
        return fail(k, "nested deeper than 32 levels");
    if (json_is_true(s) || !json_is_object(s))
        return true;
    return check_type(k, s, v) && check_enum(k, s, v) && check_bounds(k, s, v) &&
           check_object(k, s, v, depth) && check_items(k, s, v, depth) &&
           check_combined(k, s, v, depth);
}

bool step_schema_check(const json_t *schema, const json_t *v, char *why, size_t why_len)
{
    checker k = {why, why_len, ""};
    return check(&k, schema, v, 0);
}

bool step_schema_wanted(const json_t *schema)
{
    return json_is_object(schema) && json_object_size(schema) > 0;
}
