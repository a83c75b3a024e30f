/*
 * compile.c - sp_schema_compile(): the JSON-Schema subset of kernel.md §5
 * (2020-12 meaning) and the compiled graph of internal.h.
 *
 * What it is for: deciding whether a schema document is inside the subset,
 * naming the first construct that is not (a JSON Pointer into the schema,
 * the rule, a message), and building the checker with every $ref inlined.
 * Two phases: every schema of the document (the root and each of the
 * root's $defs, each a "tree") is compiled structurally, a $ref becoming a
 * remembered site; then the trees are finished in dependency order (Kahn's
 * algorithm: a tree is finished once every tree it refers to is), each site
 * becoming a pointer to its definition's compiled node. A tree never
 * finished is on or behind a reference cycle.
 *
 * What it must never do: recurse through a $ref (the structural recursion
 * is bounded by SP_SCHEMA_DEPTH_MAX, the definitions are ordered by a
 * loop), accept a keyword or a form the subset does not have, hold a
 * pointer into `doc` after returning, or leak on any failure.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "schema/internal.h"

/* The keywords of the subset, in the order a schema's keywords are
 * compiled: $defs first (a $ref anywhere may name a definition), then type
 * (the keywords that need a type read it), properties before required. */
typedef enum keyword {
    KW_DEFS,
    KW_TYPE,
    KW_PROPERTIES,
    KW_REQUIRED,
    KW_ADDITIONAL,
    KW_ITEMS,
    KW_ENUM,
    KW_CONST,
    KW_ANY_OF,
    KW_REF,
    KW_MIN_LENGTH, /* the six bounds, in sp_schema_bound order */
    KW_MAX_LENGTH,
    KW_MIN_ITEMS,
    KW_MAX_ITEMS,
    KW_MINIMUM,
    KW_MAXIMUM,
    KW_DESCRIPTION,
    KW_TITLE,
    KW_COUNT,
} keyword;

typedef struct ref_site {
    sp_schema_node **slot; /* where the definition's node goes */
    size_t owner, target;  /* trees */
    int depth;             /* of the schema holding the $ref */
    size_t next_of_owner, next_of_target;
    char path[SP_SCHEMA_PATH_MAX]; /* .../$ref */
} ref_site;

enum { NO_SITE = SIZE_MAX };

typedef struct tree {
    sp_schema_node *root;
    size_t pending; /* its sites whose target is not finished */
    size_t sites, referrers; /* lists of ref_site, by owner and by target */
    bool finished;
} tree;

typedef struct ctx {
    sp_schema *schema;
    sp_schema_error *err;
    sp_schema_trail trail;
    sp_json_member *defs; /* the root's $defs, canonical order */
    size_t ndefs;
    tree *trees; /* ndefs definitions, then the root (index ndefs) */
    size_t current;
    ref_site *sites;
    size_t nsites, cap;
} ctx;

typedef int (*keyword_fn)(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth);

static int compile_schema(ctx *c, const json_t *v, int depth, sp_schema_node **slot);

#define REFUSE(c, rule, ...) sp_schema_fail((c)->err, &(c)->trail, -1, (rule), __VA_ARGS__)

static int out_of_memory(ctx *c)
{
    return sp_schema_fail(c->err, &c->trail, -2, "memory", "out of memory");
}

/* ---- small helpers ---- */

static sp_schema_node *new_node(ctx *c)
{
    sp_schema_node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->owned_next = c->schema->owned;
    c->schema->owned = n;
    return n;
}

static bool is_scalar(const json_t *v)
{
    return json_is_string(v) || json_is_integer(v) || json_is_boolean(v) || json_is_null(v);
}

static bool is_length_bound(keyword k)
{
    return k == KW_MIN_LENGTH || k == KW_MAX_LENGTH || k == KW_MIN_ITEMS || k == KW_MAX_ITEMS;
}

/* Index of `key` among `n` entries sorted in canonical order, each reached
 * through `name_at`; n when absent. */
static size_t find_sorted(const char *key, size_t len, size_t n,
                          const char *(*name_at)(const void *, size_t, size_t *), const void *arr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2, mlen;
        const char *m = name_at(arr, mid, &mlen);
        int cmp = sp_json_key_cmp(key, len, m, mlen);
        if (cmp == 0)
            return mid;
        if (cmp < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return n;
}

static const char *member_name(const void *arr, size_t i, size_t *len)
{
    const sp_json_member *m = (const sp_json_member *)arr + i;
    *len = m->len;
    return m->key;
}

static const char *prop_name(const void *arr, size_t i, size_t *len)
{
    const sp_schema_prop *p = (const sp_schema_prop *)arr + i;
    *len = p->len;
    return p->name;
}

/* ---- the keyword table ---- */

static int kw_type(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth);
static int kw_properties(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth);
static int kw_required(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth);
static int kw_additional(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth);
static int kw_items(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth);
static int kw_enum(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth);
static int kw_const(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth);
static int kw_any_of(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth);
static int kw_bound(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth);

static const struct {
    const char *name; /* NULL for the bounds: sp_schema_bound_name() */
    sp_schema_type needs; /* the `type` the keyword needs beside it */
    keyword_fn compile;   /* NULL: handled before a node exists */
} KEYWORDS[KW_COUNT] = {
    [KW_DEFS] = {"$defs", SP_T_ANY, NULL},
    [KW_TYPE] = {"type", SP_T_ANY, kw_type},
    [KW_PROPERTIES] = {"properties", SP_T_OBJECT, kw_properties},
    [KW_REQUIRED] = {"required", SP_T_OBJECT, kw_required},
    [KW_ADDITIONAL] = {"additionalProperties", SP_T_OBJECT, kw_additional},
    [KW_ITEMS] = {"items", SP_T_ARRAY, kw_items},
    [KW_ENUM] = {"enum", SP_T_ANY, kw_enum},
    [KW_CONST] = {"const", SP_T_ANY, kw_const},
    [KW_ANY_OF] = {"anyOf", SP_T_ANY, kw_any_of},
    [KW_REF] = {"$ref", SP_T_ANY, NULL},
    [KW_MIN_LENGTH] = {NULL, SP_T_STRING, kw_bound},
    [KW_MAX_LENGTH] = {NULL, SP_T_STRING, kw_bound},
    [KW_MIN_ITEMS] = {NULL, SP_T_ARRAY, kw_bound},
    [KW_MAX_ITEMS] = {NULL, SP_T_ARRAY, kw_bound},
    [KW_MINIMUM] = {NULL, SP_T_INTEGER, kw_bound},
    [KW_MAXIMUM] = {NULL, SP_T_INTEGER, kw_bound},
    [KW_DESCRIPTION] = {"description", SP_T_ANY, NULL},
    [KW_TITLE] = {"title", SP_T_ANY, NULL},
};

static const char *keyword_name(keyword k)
{
    return KEYWORDS[k].name ? KEYWORDS[k].name
                            : sp_schema_bound_name((sp_schema_bound)(k - KW_MIN_LENGTH));
}

static keyword keyword_of(const char *key, size_t len)
{
    for (keyword k = 0; k < KW_COUNT; k++) {
        const char *name = keyword_name(k);
        if (strlen(name) == len && memcmp(name, key, len) == 0)
            return k;
    }
    return KW_COUNT;
}

/* ---- one schema: its keywords ---- */

/* kw[k] = the value of keyword k; an unknown keyword is refused. */
static int gather(ctx *c, const json_t *v, const json_t *kw[KW_COUNT])
{
    bool oom = false;
    size_t n = json_object_size(v);
    sp_json_member *members = sp_json_sorted_members(v, &oom);
    if (oom)
        return out_of_memory(c);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        keyword k = keyword_of(members[i].key, members[i].len);
        if (k == KW_COUNT) {
            sp_schema_push_key(&c->trail, members[i].key, members[i].len);
            rc = REFUSE(c, "unsupported", "this keyword is not in the supported subset");
        } else {
            kw[k] = members[i].value;
        }
    }
    free(members);
    return rc;
}

/* anyOf and $ref stand alone: only description and title beside them (and
 * $defs, which only the root may hold). */
static int check_alone(ctx *c, const json_t *const kw[KW_COUNT])
{
    keyword alone = kw[KW_ANY_OF] ? KW_ANY_OF : kw[KW_REF] ? KW_REF : KW_COUNT;
    if (alone == KW_COUNT)
        return 0;
    for (keyword k = 0; k < KW_COUNT; k++) {
        if (!kw[k] || k == alone || k == KW_DESCRIPTION || k == KW_TITLE || k == KW_DEFS)
            continue;
        sp_schema_push_name(&c->trail, keyword_name(k));
        return REFUSE(c, keyword_name(alone),
                      "%s allows only description and title beside it", keyword_name(alone));
    }
    return 0;
}

static int check_annotations(ctx *c, const json_t *const kw[KW_COUNT])
{
    static const keyword annotations[] = {KW_DESCRIPTION, KW_TITLE};
    for (size_t i = 0; i < sizeof annotations / sizeof annotations[0]; i++) {
        keyword k = annotations[i];
        if (kw[k] && !json_is_string(kw[k])) {
            sp_schema_push_name(&c->trail, keyword_name(k));
            return REFUSE(c, keyword_name(k), "%s must be a string", keyword_name(k));
        }
    }
    return 0;
}

/* The root's $defs: each definition is a tree of its own, at depth 2. */
static int compile_defs(ctx *c, const json_t *v, int depth)
{
    sp_schema_push_name(&c->trail, "$defs");
    if (depth != 1)
        return REFUSE(c, "$defs", "$defs is allowed only at the root of a schema");
    if (!json_is_object(v))
        return REFUSE(c, "$defs", "$defs must be an object");
    for (size_t i = 0; i < c->ndefs; i++) {
        sp_schema_push_key(&c->trail, c->defs[i].key, c->defs[i].len);
        c->current = i;
        int rc = compile_schema(c, c->defs[i].value, depth + 1, &c->trees[i].root);
        c->current = c->ndefs;
        if (rc)
            return rc;
        sp_schema_pop(&c->trail);
    }
    sp_schema_pop(&c->trail);
    return 0;
}

/* The definition `#/$defs/<name>` names (RFC 6901 token: ~0 ~1), or
 * c->ndefs when the form is wrong (*form = false) or there is none. */
static size_t ref_target(ctx *c, const char *ref, size_t len, bool *form, bool *oom)
{
    static const char prefix[] = "#/$defs/";
    size_t plen = sizeof prefix - 1;
    *form = len > plen && memcmp(ref, prefix, plen) == 0 && !memchr(ref, '%', len) &&
            !memchr(ref + plen, '/', len - plen);
    if (!*form)
        return c->ndefs;
    char *name = malloc(len - plen);
    if (!name) {
        *oom = true;
        return c->ndefs;
    }
    size_t n = 0;
    for (size_t i = plen; i < len && *form; i++) {
        if (ref[i] != '~') {
            name[n++] = ref[i];
        } else if (i + 1 < len && (ref[i + 1] == '0' || ref[i + 1] == '1')) {
            name[n++] = ref[++i] == '0' ? '~' : '/';
        } else {
            *form = false;
        }
    }
    size_t found = *form ? find_sorted(name, n, c->ndefs, member_name, c->defs) : c->ndefs;
    free(name);
    return found;
}

static int add_site(ctx *c, size_t target, int depth, sp_schema_node **slot)
{
    if (c->nsites == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        ref_site *sites = realloc(c->sites, cap * sizeof *sites);
        if (!sites)
            return out_of_memory(c);
        c->sites = sites;
        c->cap = cap;
    }
    ref_site *s = &c->sites[c->nsites++];
    *s = (ref_site){.slot = slot, .owner = c->current, .target = target, .depth = depth};
    sp_schema_render(&c->trail, s->path);
    return 0;
}

static int compile_ref(ctx *c, const json_t *v, int depth, sp_schema_node **slot)
{
    sp_schema_push_name(&c->trail, "$ref");
    if (!json_is_string(v))
        return REFUSE(c, "$ref", "$ref must be a string");
    bool form = false, oom = false;
    size_t target = ref_target(c, json_string_value(v), json_string_length(v), &form, &oom);
    if (oom)
        return out_of_memory(c);
    if (!form)
        return REFUSE(c, "$ref", "$ref must have the form #/$defs/<name>");
    if (target == c->ndefs)
        return REFUSE(c, "$ref", "$ref names no definition of the root's $defs");
    int rc = add_site(c, target, depth, slot);
    sp_schema_pop(&c->trail);
    return rc;
}

static int compile_keywords(ctx *c, sp_schema_node *n, const json_t *const kw[KW_COUNT],
                            int depth)
{
    for (keyword k = 0; k < KW_COUNT; k++) {
        if (!kw[k] || !KEYWORDS[k].compile)
            continue;
        sp_schema_push_name(&c->trail, keyword_name(k));
        if (KEYWORDS[k].needs != SP_T_ANY && n->type != KEYWORDS[k].needs)
            return REFUSE(c, keyword_name(k), "%s is allowed only with \"type\": \"%s\"",
                          keyword_name(k), sp_schema_type_name(KEYWORDS[k].needs));
        int rc = KEYWORDS[k].compile(c, n, k, kw[k], depth);
        if (rc)
            return rc;
        sp_schema_pop(&c->trail);
    }
    return 0;
}

/* Compile the schema `v` at `depth` (the root is 1) into *slot; a $ref
 * leaves *slot NULL until its tree is finished. */
static int compile_schema(ctx *c, const json_t *v, int depth, sp_schema_node **slot)
{
    *slot = NULL;
    if (depth > SP_SCHEMA_DEPTH_MAX)
        return REFUSE(c, "depth", "schemas nest at most %d deep", SP_SCHEMA_DEPTH_MAX);
    if (!json_is_object(v))
        return REFUSE(c, "schema", "a schema must be a JSON object");
    const json_t *kw[KW_COUNT] = {0};
    int rc = gather(c, v, kw);
    if (rc == 0)
        rc = check_alone(c, kw);
    if (rc == 0)
        rc = check_annotations(c, kw);
    if (rc == 0 && kw[KW_DEFS])
        rc = compile_defs(c, kw[KW_DEFS], depth);
    if (rc || kw[KW_REF])
        return rc ? rc : compile_ref(c, kw[KW_REF], depth, slot);
    sp_schema_node *n = new_node(c);
    if (!n)
        return out_of_memory(c);
    *slot = n;
    return compile_keywords(c, n, kw, depth);
}

/* ---- the keywords ---- */

static int kw_type(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth)
{
    if (json_is_array(v))
        return REFUSE(c, "type", "type must be one type name, not an array");
    for (sp_schema_type t = SP_T_OBJECT; t <= SP_T_NULL && json_is_string(v); t++) {
        if (strcmp(json_string_value(v), sp_schema_type_name(t)) == 0 &&
            strlen(sp_schema_type_name(t)) == json_string_length(v)) {
            n->type = t;
            return 0;
        }
    }
    return REFUSE(c, "type", "type must be one of object, array, string, integer, boolean, null");
}

static int kw_properties(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth)
{
    if (!json_is_object(v))
        return REFUSE(c, "properties", "properties must be an object of schemas");
    size_t count = json_object_size(v);
    bool oom = false;
    sp_json_member *members = sp_json_sorted_members(v, &oom);
    n->props = count ? calloc(count, sizeof *n->props) : NULL;
    if (oom || (count && !n->props)) {
        free(members);
        return out_of_memory(c);
    }
    n->nprops = count;
    int rc = 0;
    for (size_t i = 0; i < count && rc == 0; i++) {
        sp_schema_prop *p = &n->props[i];
        p->name = malloc(members[i].len + 1);
        if (!p->name) {
            rc = out_of_memory(c);
            break;
        }
        memcpy(p->name, members[i].key, members[i].len);
        p->name[members[i].len] = '\0';
        p->len = members[i].len;
        sp_schema_push_key(&c->trail, p->name, p->len);
        rc = compile_schema(c, members[i].value, depth + 1, &p->schema);
        if (rc == 0)
            sp_schema_pop(&c->trail);
    }
    free(members);
    return rc;
}

static int kw_required(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth)
{
    if (!json_is_array(v))
        return REFUSE(c, "required", "required must be an array of property names");
    size_t count = json_array_size(v);
    n->required = count ? calloc(count, sizeof *n->required) : NULL;
    if (count && !n->required)
        return out_of_memory(c);
    for (size_t i = 0; i < count; i++) {
        const json_t *name = json_array_get(v, i);
        sp_schema_push_index(&c->trail, i);
        if (!json_is_string(name))
            return REFUSE(c, "required", "required must list strings");
        size_t j = find_sorted(json_string_value(name), json_string_length(name), n->nprops,
                               prop_name, n->props);
        if (j == n->nprops)
            return REFUSE(c, "required", "required names a property that properties does not declare");
        if (n->props[j].required)
            return REFUSE(c, "required", "required lists this name twice");
        n->props[j].required = true;
        n->required[n->nrequired++] = j;
        sp_schema_pop(&c->trail);
    }
    return 0;
}

static int kw_additional(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth)
{
    if (!json_is_false(v))
        return REFUSE(c, "additionalProperties", "additionalProperties may only be false");
    n->closed = true;
    return 0;
}

static int kw_items(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth)
{
    if (!json_is_object(v))
        return REFUSE(c, "items", "items must be one schema (an object)");
    return compile_schema(c, v, depth + 1, &n->items);
}

/* A copy of the scalar `v` (strings are copied, never shared with doc). */
static json_t *scalar_copy(const json_t *v) { return json_copy((json_t *)v); }

static int kw_enum(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return REFUSE(c, "enum", "enum must be a non-empty array");
    n->enum_values = json_array();
    if (!n->enum_values)
        return out_of_memory(c);
    for (size_t i = 0; i < json_array_size(v); i++) {
        const json_t *e = json_array_get(v, i);
        sp_schema_push_index(&c->trail, i);
        if (!is_scalar(e))
            return REFUSE(c, "enum", "enum values must be strings, integers, booleans or null");
        if (json_array_append_new(n->enum_values, scalar_copy(e)) != 0)
            return out_of_memory(c);
        sp_schema_pop(&c->trail);
    }
    return 0;
}

static int kw_const(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth)
{
    if (!is_scalar(v))
        return REFUSE(c, "const", "const must be a string, an integer, a boolean or null");
    n->const_value = scalar_copy(v);
    return n->const_value ? 0 : out_of_memory(c);
}

static int kw_any_of(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return REFUSE(c, "anyOf", "anyOf must be a non-empty array of schemas");
    size_t count = json_array_size(v);
    n->any = calloc(count, sizeof *n->any);
    if (!n->any)
        return out_of_memory(c);
    n->nany = count;
    for (size_t i = 0; i < count; i++) {
        sp_schema_push_index(&c->trail, i);
        int rc = compile_schema(c, json_array_get(v, i), depth + 1, &n->any[i]);
        if (rc)
            return rc;
        sp_schema_pop(&c->trail);
    }
    return 0;
}

static int kw_bound(ctx *c, sp_schema_node *n, keyword k, const json_t *v, int depth)
{
    const char *name = keyword_name(k);
    if (!json_is_integer(v))
        return REFUSE(c, name, "%s must be an integer", name);
    if (is_length_bound(k) && json_integer_value(v) < 0)
        return REFUSE(c, name, "%s must be a non-negative integer", name);
    sp_schema_bound b = (sp_schema_bound)(k - KW_MIN_LENGTH);
    n->bound[b] = (long long)json_integer_value(v);
    n->bounds |= 1u << b;
    return 0;
}

/* ---- finishing the trees: $ref sites resolved in dependency order ---- */

static size_t add_nodes(size_t a, size_t b)
{
    size_t sum = a + b;
    return sum > SP_SCHEMA_NODES_MAX ? SP_SCHEMA_NODES_MAX + 1 : sum;
}

static void measure_child(sp_schema_node *parent, sp_schema_node *child);

/* Height and inlined size of `n`; nodes of finished trees are measured
 * already, so the recursion stays inside one tree (depth <= 32). */
static void measure(sp_schema_node *n)
{
    if (n->measured)
        return;
    n->height = 1;
    n->nodes = 1;
    for (size_t i = 0; i < n->nprops; i++)
        measure_child(n, n->props[i].schema);
    if (n->items)
        measure_child(n, n->items);
    for (size_t i = 0; i < n->nany; i++)
        measure_child(n, n->any[i]);
    n->measured = true;
}

static void measure_child(sp_schema_node *parent, sp_schema_node *child)
{
    measure(child);
    if (child->height + 1 > parent->height)
        parent->height = child->height + 1;
    parent->nodes = add_nodes(parent->nodes, child->nodes);
}

/* The trail of tree t: "" for the root, /$defs/<name> for a definition. */
static void tree_trail(ctx *c, size_t t, sp_schema_trail *trail)
{
    trail->n = 0;
    if (t < c->ndefs) {
        sp_schema_push_name(trail, "$defs");
        sp_schema_push_key(trail, c->defs[t].key, c->defs[t].len);
    }
}

static int finish_tree(ctx *c, size_t t)
{
    for (size_t s = c->trees[t].sites; s != NO_SITE; s = c->sites[s].next_of_owner) {
        const ref_site *site = &c->sites[s];
        sp_schema_node *def = c->trees[site->target].root;
        if (site->depth - 1 + def->height > SP_SCHEMA_DEPTH_MAX)
            return sp_schema_fail_at(c->err, site->path, -1, "depth",
                                     "inlining this $ref nests schemas deeper than %d",
                                     SP_SCHEMA_DEPTH_MAX);
        *site->slot = def;
    }
    measure(c->trees[t].root);
    if (c->trees[t].root->nodes > SP_SCHEMA_NODES_MAX) {
        tree_trail(c, t, &c->trail);
        return REFUSE(c, "size", "this schema holds more than %d schemas once inlined",
                      SP_SCHEMA_NODES_MAX);
    }
    c->trees[t].finished = true;
    return 0;
}

/* The lists of sites by owner and by target, in document order. */
static void link_sites(ctx *c, size_t ntrees)
{
    for (size_t t = 0; t < ntrees; t++)
        c->trees[t].sites = c->trees[t].referrers = NO_SITE;
    for (size_t s = c->nsites; s-- > 0;) {
        ref_site *site = &c->sites[s];
        site->next_of_owner = c->trees[site->owner].sites;
        c->trees[site->owner].sites = s;
        site->next_of_target = c->trees[site->target].referrers;
        c->trees[site->target].referrers = s;
        c->trees[site->owner].pending++;
    }
}

/* The first site of tree t whose target is not finished (t has one). */
static const ref_site *unfinished_site(ctx *c, size_t t)
{
    size_t s = c->trees[t].sites;
    while (c->trees[c->sites[s].target].finished)
        s = c->sites[s].next_of_owner;
    return &c->sites[s];
}

/* Every unfinished tree refers to an unfinished one: following the first
 * such reference ntrees times from the first unfinished tree ends on a
 * cycle, and the reference taken from there is one of its edges. */
static int refuse_cycle(ctx *c, size_t ntrees)
{
    size_t t = 0;
    while (c->trees[t].finished)
        t++;
    for (size_t step = 0; step < ntrees; step++)
        t = unfinished_site(c, t)->target;
    return sp_schema_fail_at(c->err, unfinished_site(c, t)->path, -1, "$ref",
                             "this $ref is part of a reference cycle");
}

static int finish_trees(ctx *c)
{
    size_t ntrees = c->ndefs + 1, head = 0, tail = 0, done = 0;
    link_sites(c, ntrees);
    size_t *queue = malloc(ntrees * sizeof *queue);
    if (!queue)
        return out_of_memory(c);
    for (size_t t = 0; t < ntrees; t++)
        if (c->trees[t].pending == 0)
            queue[tail++] = t;
    int rc = 0;
    while (head < tail && rc == 0) {
        size_t t = queue[head++];
        rc = finish_tree(c, t);
        done++;
        for (size_t s = c->trees[t].referrers; s != NO_SITE && rc == 0;
             s = c->sites[s].next_of_target)
            if (--c->trees[c->sites[s].owner].pending == 0)
                queue[tail++] = c->sites[s].owner;
    }
    free(queue);
    if (rc == 0 && done < ntrees)
        rc = refuse_cycle(c, ntrees);
    return rc;
}

/* ---- the entry points ---- */

static int setup(ctx *c, const json_t *doc)
{
    c->schema = calloc(1, sizeof *c->schema);
    if (!c->schema)
        return out_of_memory(c);
    const json_t *defs = json_is_object(doc) ? json_object_get(doc, "$defs") : NULL;
    if (json_is_object(defs)) {
        bool oom = false;
        c->ndefs = json_object_size(defs);
        c->defs = sp_json_sorted_members(defs, &oom);
        if (oom)
            return out_of_memory(c);
    }
    c->current = c->ndefs;
    c->trees = calloc(c->ndefs + 1, sizeof *c->trees);
    return c->trees ? 0 : out_of_memory(c);
}

int sp_schema_compile(const json_t *doc, sp_schema **out, sp_schema_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    *out = NULL;
    ctx c = {.err = err};
    int rc = setup(&c, doc);
    if (rc == 0)
        rc = compile_schema(&c, doc, 1, &c.trees[c.ndefs].root);
    if (rc == 0)
        rc = finish_trees(&c);
    if (rc == 0) {
        c.schema->root = c.trees[c.ndefs].root;
        *out = c.schema;
    } else {
        sp_schema_free(c.schema);
    }
    free(c.defs);
    free(c.trees);
    free(c.sites);
    return rc;
}

void sp_schema_free(sp_schema *schema)
{
    if (!schema)
        return;
    for (sp_schema_node *n = schema->owned, *next; n; n = next) {
        next = n->owned_next;
        for (size_t i = 0; i < n->nprops; i++)
            free(n->props[i].name);
        free(n->props);
        free(n->required);
        free(n->any);
        json_decref(n->enum_values);
        json_decref(n->const_value);
        free(n);
    }
    free(schema);
}
