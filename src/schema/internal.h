/*
 * internal.h - what compile.c, check.c and path.c of src/schema/ share: the
 * compiled node and the trail of JSON Pointer segments an error names.
 *
 * What it is for: a compiled schema is a graph of immutable nodes in which
 * every $ref has already been replaced by a pointer to the compiled
 * definition (a definition used twice is one node reached twice: inlining
 * without copying). Every node is owned by the sp_schema's list, never by
 * its parents, so sharing needs no reference counts.
 *
 * What it must never do: leave a $ref for the checker to follow, or hold a
 * pointer into the document it was compiled from (every name and enum value
 * is the schema's own copy).
 */
#ifndef SPORE_SCHEMA_INTERNAL_H
#define SPORE_SCHEMA_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "schema/schema.h"

/* The value types of the subset; SP_T_ANY when a schema has no `type`. */
typedef enum sp_schema_type {
    SP_T_ANY,
    SP_T_OBJECT,
    SP_T_ARRAY,
    SP_T_STRING,
    SP_T_INTEGER,
    SP_T_BOOLEAN,
    SP_T_NULL,
} sp_schema_type;

/* The six numeric bounds, in pairs (min, max) per measured type. */
typedef enum sp_schema_bound {
    SP_B_MIN_LENGTH,
    SP_B_MAX_LENGTH,
    SP_B_MIN_ITEMS,
    SP_B_MAX_ITEMS,
    SP_B_MINIMUM,
    SP_B_MAXIMUM,
    SP_B_COUNT,
} sp_schema_bound;

typedef struct sp_schema_node sp_schema_node;

typedef struct sp_schema_prop {
    char *name; /* owned; may hold U+0000 */
    size_t len;
    sp_schema_node *schema;
    bool required;
} sp_schema_prop;

struct sp_schema_node {
    sp_schema_node *owned_next; /* the sp_schema's list of every node */
    sp_schema_type type;
    /* objects: properties in canonical key order, `required` in document
     * order as indexes into props, additionalProperties: false */
    sp_schema_prop *props;
    size_t nprops;
    size_t *required;
    size_t nrequired;
    bool closed;
    sp_schema_node *items; /* arrays; NULL when absent */
    long long bound[SP_B_COUNT];
    unsigned bounds; /* bit (1u << sp_schema_bound) per bound present */
    json_t *enum_values; /* owned array of scalars, or NULL */
    json_t *const_value; /* owned scalar, or NULL */
    sp_schema_node **any; /* anyOf branches (then type is SP_T_ANY) */
    size_t nany;
    /* measured once every $ref below is resolved (compile.c) */
    int height;   /* 1 for a node without subschemas */
    size_t nodes; /* the size of the tree once inlined, saturating */
    bool measured;
};

struct sp_schema {
    sp_schema_node *root;
    sp_schema_node *owned; /* every node, for sp_schema_free */
};

/* ---- trails: the segments of a JSON Pointer, rendered only on error ---- */

enum { SP_SCHEMA_TRAIL_MAX = 2 * SP_SCHEMA_DEPTH_MAX + 8 };

typedef struct sp_schema_seg {
    const char *key; /* NULL: an array index */
    size_t len;
    size_t index;
} sp_schema_seg;

typedef struct sp_schema_trail {
    sp_schema_seg seg[SP_SCHEMA_TRAIL_MAX];
    int n; /* may exceed SP_SCHEMA_TRAIL_MAX: the extra segments are not kept */
} sp_schema_trail;

void sp_schema_push_key(sp_schema_trail *t, const char *key, size_t len);
void sp_schema_push_name(sp_schema_trail *t, const char *name); /* a C string */
void sp_schema_push_index(sp_schema_trail *t, size_t index);
void sp_schema_pop(sp_schema_trail *t);

/* Render `t` as a JSON Pointer into out[SP_SCHEMA_PATH_MAX] (RFC 6901
 * escapes; U+0000 in a key becomes U+FFFD; cut with "..." when too long). */
void sp_schema_render(const sp_schema_trail *t, char *out);

/* Fill *err (when not NULL) with the path of `t`, `rule` and the message.
 * Returns `rc`, so that callers can write `return sp_schema_fail(...)`. */
int sp_schema_fail(sp_schema_error *err, const sp_schema_trail *t, int rc, const char *rule,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The same with a path already rendered (a $ref site remembered by compile). */
int sp_schema_fail_at(sp_schema_error *err, const char *path, int rc, const char *rule,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The name of a type ("object", ...; "any" for SP_T_ANY). */
const char *sp_schema_type_name(sp_schema_type type);

/* The keyword of a bound ("minLength", ...). */
const char *sp_schema_bound_name(sp_schema_bound bound);

#endif
