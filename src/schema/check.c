/*
 * check.c - sp_schema_check(): one value against a compiled schema.
 *
 * What it is for: the engine's output check (workflows-0.2.md §2): the
 * first mismatch, in a fixed order (type, enum, const, bounds, then an
 * object's required members, its undeclared members, its declared members
 * in canonical key order, an array's items in index order, anyOf), named
 * by a JSON Pointer into the value and the rule that failed.
 *
 * What it must never do: put any part of the value into an error. Every
 * byte of an error comes from the schema (its property names, keywords and
 * numbers) or is an array index: an undeclared member is reported at its
 * object, never by its name, and no message says what was found. It never
 * allocates, and its recursion follows the compiled schema, whose height
 * compile.c bounds by SP_SCHEMA_DEPTH_MAX.
 */
#include <string.h>

#include "schema/internal.h"

static int check_node(const sp_schema_node *n, const json_t *v, sp_schema_trail *t,
                      sp_schema_error *err);

static bool has_type(const json_t *v, sp_schema_type type)
{
    switch (type) {
    case SP_T_OBJECT:
        return json_is_object(v);
    case SP_T_ARRAY:
        return json_is_array(v);
    case SP_T_STRING:
        return json_is_string(v);
    case SP_T_INTEGER:
        return json_is_integer(v); /* a real is never an integer */
    case SP_T_BOOLEAN:
        return json_is_boolean(v);
    case SP_T_NULL:
        return json_is_null(v);
    case SP_T_ANY:
        break;
    }
    return true;
}

/* Code points of a (valid UTF-8) string: the bytes that start one. */
static size_t code_points(const json_t *s)
{
    const unsigned char *p = (const unsigned char *)json_string_value(s);
    size_t len = json_string_length(s), n = 0;
    for (size_t i = 0; i < len; i++)
        n += (p[i] & 0xC0) != 0x80;
    return n;
}

/* The bounds per measured type, and what they measure. */
static const struct {
    sp_schema_type type;
    sp_schema_bound min, max;
} MEASURED[] = {
    {SP_T_STRING, SP_B_MIN_LENGTH, SP_B_MAX_LENGTH},
    {SP_T_ARRAY, SP_B_MIN_ITEMS, SP_B_MAX_ITEMS},
    {SP_T_INTEGER, SP_B_MINIMUM, SP_B_MAXIMUM},
};

static long long measure_of(const json_t *v, sp_schema_type type)
{
    if (type == SP_T_STRING)
        return (long long)code_points(v);
    if (type == SP_T_ARRAY)
        return (long long)json_array_size(v);
    return (long long)json_integer_value(v);
}

static bool has_bound(const sp_schema_node *n, sp_schema_bound b)
{
    return (n->bounds >> b) & 1u;
}

static int check_bounds(const sp_schema_node *n, const json_t *v, sp_schema_trail *t,
                        sp_schema_error *err)
{
    for (size_t i = 0; i < sizeof MEASURED / sizeof MEASURED[0]; i++) {
        if (n->type != MEASURED[i].type)
            continue;
        long long m = measure_of(v, n->type);
        sp_schema_bound lo = MEASURED[i].min, hi = MEASURED[i].max;
        if (has_bound(n, lo) && m < n->bound[lo])
            return sp_schema_fail(err, t, 1, sp_schema_bound_name(lo), "below the %s of %lld",
                                  sp_schema_bound_name(lo), n->bound[lo]);
        if (has_bound(n, hi) && m > n->bound[hi])
            return sp_schema_fail(err, t, 1, sp_schema_bound_name(hi), "above the %s of %lld",
                                  sp_schema_bound_name(hi), n->bound[hi]);
    }
    return 0;
}

static bool in_enum(const json_t *values, const json_t *v)
{
    for (size_t i = 0; i < json_array_size(values); i++)
        if (json_equal(json_array_get(values, i), (json_t *)v))
            return true;
    return false;
}

static const json_t *member(const json_t *obj, const sp_schema_prop *p)
{
    return json_object_getn(obj, p->name, p->len);
}

static int check_object(const sp_schema_node *n, const json_t *v, sp_schema_trail *t,
                        sp_schema_error *err)
{
    for (size_t i = 0; i < n->nrequired; i++) {
        const sp_schema_prop *p = &n->props[n->required[i]];
        if (member(v, p))
            continue;
        sp_schema_push_key(t, p->name, p->len);
        int rc = sp_schema_fail(err, t, 1, "required", "this required property is missing");
        sp_schema_pop(t);
        return rc;
    }
    size_t declared = 0;
    for (size_t i = 0; i < n->nprops; i++)
        declared += member(v, &n->props[i]) != NULL;
    if (n->closed && json_object_size(v) > declared)
        return sp_schema_fail(err, t, 1, "additionalProperties",
                              "the object has a property that properties does not declare");
    for (size_t i = 0; i < n->nprops; i++) {
        const json_t *m = member(v, &n->props[i]);
        if (!m)
            continue;
        sp_schema_push_key(t, n->props[i].name, n->props[i].len);
        int rc = check_node(n->props[i].schema, m, t, err);
        sp_schema_pop(t);
        if (rc)
            return rc;
    }
    return 0;
}

static int check_items(const sp_schema_node *n, const json_t *v, sp_schema_trail *t,
                       sp_schema_error *err)
{
    for (size_t i = 0; n->items && i < json_array_size(v); i++) {
        sp_schema_push_index(t, i);
        int rc = check_node(n->items, json_array_get(v, i), t, err);
        sp_schema_pop(t);
        if (rc)
            return rc;
    }
    return 0;
}

/* The branches are tried without an error to fill: only "anyOf" is told. */
static int check_any(const sp_schema_node *n, const json_t *v, sp_schema_trail *t,
                     sp_schema_error *err)
{
    for (size_t i = 0; i < n->nany; i++)
        if (check_node(n->any[i], v, t, NULL) == 0)
            return 0;
    return sp_schema_fail(err, t, 1, "anyOf", "matches none of the %zu anyOf schemas", n->nany);
}

static int check_node(const sp_schema_node *n, const json_t *v, sp_schema_trail *t,
                      sp_schema_error *err)
{
    if (!has_type(v, n->type))
        return sp_schema_fail(err, t, 1, "type", "not of type %s", sp_schema_type_name(n->type));
    if (n->enum_values && !in_enum(n->enum_values, v))
        return sp_schema_fail(err, t, 1, "enum", "not one of the enum values");
    if (n->const_value && !json_equal(n->const_value, (json_t *)v))
        return sp_schema_fail(err, t, 1, "const", "not the const value");
    int rc = check_bounds(n, v, t, err);
    if (rc == 0 && n->type == SP_T_OBJECT)
        rc = check_object(n, v, t, err);
    if (rc == 0 && n->type == SP_T_ARRAY)
        rc = check_items(n, v, t, err);
    if (rc == 0 && n->nany)
        rc = check_any(n, v, t, err);
    return rc;
}

int sp_schema_check(const sp_schema *schema, const json_t *value, sp_schema_error *err)
{
    sp_schema_trail trail = {.n = 0};
    if (err)
        memset(err, 0, sizeof *err);
    if (!schema || !value)
        return sp_schema_fail(err, &trail, 1, "type", "no schema or no value to check");
    return check_node(schema->root, value, &trail, err);
}
