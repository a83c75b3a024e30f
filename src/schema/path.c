/*
 * path.c - the JSON Pointers and the errors of src/schema/ (see internal.h).
 *
 * What it is for: compile and check both name where something went wrong
 * as an RFC 6901 pointer (`/properties/a~1b/items`, `/items/3/name`) built
 * from a trail of segments, rendered into the fixed-size sp_schema_error
 * only when an error is reported.
 *
 * What it must never do: allocate, write past SP_SCHEMA_PATH_MAX, cut a
 * UTF-8 character in half, or put in an error anything its caller did not
 * pass as a segment, rule or message (the checked value never reaches here
 * except as array indexes and the schema's own property names).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/utf8.h"
#include "schema/internal.h"

static void push(sp_schema_trail *t, sp_schema_seg seg)
{
    if (t->n >= 0 && t->n < SP_SCHEMA_TRAIL_MAX)
        t->seg[t->n] = seg;
    t->n++;
}

void sp_schema_push_key(sp_schema_trail *t, const char *key, size_t len)
{
    push(t, (sp_schema_seg){.key = key, .len = len});
}

void sp_schema_push_name(sp_schema_trail *t, const char *name)
{
    sp_schema_push_key(t, name, strlen(name));
}

void sp_schema_push_index(sp_schema_trail *t, size_t index)
{
    push(t, (sp_schema_seg){.key = NULL, .index = index});
}

void sp_schema_pop(sp_schema_trail *t)
{
    if (t->n > 0)
        t->n--;
}

/* ---- rendering into a fixed buffer ---- */

typedef struct out_buf {
    char *data; /* SP_SCHEMA_PATH_MAX bytes */
    size_t len;
    bool cut; /* something did not fit */
} out_buf;

/* Append bytes that are valid UTF-8 on their own; keep what fits, whole
 * characters only. */
static void put(out_buf *o, const char *s, size_t n)
{
    size_t room = SP_SCHEMA_PATH_MAX - 1 - o->len;
    if (n > room) {
        o->cut = true;
        n = sp_utf8_cut(s, n, room);
    }
    memcpy(o->data + o->len, s, n);
    o->len += n;
}

/* One key, with "~" -> "~0", "/" -> "~1" and U+0000 -> U+FFFD; the runs
 * between those bytes are whole characters of the (valid UTF-8) key. */
static void put_key(out_buf *o, const char *key, size_t len)
{
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        const char *escape = key[i] == '~' ? "~0" : key[i] == '/' ? "~1"
                           : key[i] == '\0' ? "\xEF\xBF\xBD" : NULL;
        if (!escape)
            continue;
        put(o, key + run, i - run);
        put(o, escape, strlen(escape));
        run = i + 1;
    }
    put(o, key + run, len - run);
}

void sp_schema_render(const sp_schema_trail *t, char *out)
{
    out_buf o = {.data = out};
    int kept = t->n < SP_SCHEMA_TRAIL_MAX ? t->n : SP_SCHEMA_TRAIL_MAX;
    for (int i = 0; i < kept; i++) {
        const sp_schema_seg *s = &t->seg[i];
        put(&o, "/", 1);
        if (s->key) {
            put_key(&o, s->key, s->len);
        } else {
            char digits[24];
            int n = snprintf(digits, sizeof digits, "%zu", s->index);
            put(&o, digits, (size_t)n);
        }
    }
    if (kept < t->n)
        o.cut = true;
    if (o.cut) {
        o.len = sp_utf8_cut(o.data, o.len, SP_SCHEMA_PATH_MAX - 4);
        memcpy(o.data + o.len, "...", 3);
        o.len += 3;
    }
    o.data[o.len] = '\0';
}

static int vfail(sp_schema_error *err, const char *path, int rc, const char *rule,
                 const char *fmt, va_list ap)
{
    snprintf(err->path, sizeof err->path, "%s", path);
    snprintf(err->rule, sizeof err->rule, "%s", rule);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    return rc;
}

int sp_schema_fail(sp_schema_error *err, const sp_schema_trail *t, int rc, const char *rule,
                   const char *fmt, ...)
{
    if (!err)
        return rc;
    char path[SP_SCHEMA_PATH_MAX];
    sp_schema_render(t, path);
    va_list ap;
    va_start(ap, fmt);
    vfail(err, path, rc, rule, fmt, ap);
    va_end(ap);
    return rc;
}

int sp_schema_fail_at(sp_schema_error *err, const char *path, int rc, const char *rule,
                      const char *fmt, ...)
{
    if (!err)
        return rc;
    va_list ap;
    va_start(ap, fmt);
    vfail(err, path, rc, rule, fmt, ap);
    va_end(ap);
    return rc;
}

const char *sp_schema_type_name(sp_schema_type type)
{
    switch (type) {
    case SP_T_OBJECT:
        return "object";
    case SP_T_ARRAY:
        return "array";
    case SP_T_STRING:
        return "string";
    case SP_T_INTEGER:
        return "integer";
    case SP_T_BOOLEAN:
        return "boolean";
    case SP_T_NULL:
        return "null";
    case SP_T_ANY:
        break;
    }
    return "any";
}

const char *sp_schema_bound_name(sp_schema_bound bound)
{
    static const char *const names[SP_B_COUNT] = {
        [SP_B_MIN_LENGTH] = "minLength", [SP_B_MAX_LENGTH] = "maxLength",
        [SP_B_MIN_ITEMS] = "minItems",   [SP_B_MAX_ITEMS] = "maxItems",
        [SP_B_MINIMUM] = "minimum",      [SP_B_MAXIMUM] = "maximum",
    };
    return bound < SP_B_COUNT ? names[bound] : "bound";
}
