/*
 * encode.c - the canonical encoder (kernel.md §7.2): no whitespace, object
 * members in UTF-16 key order, integers in plain decimal, strings with the
 * minimal escapes and every other byte copied as is.
 *
 * Must never emit a value outside the canonical domain (deeper than 32,
 * integers beyond +-(2^53-1), non-zero reals), and never depend on the order
 * in which object members were inserted.
 */
#include <stdlib.h>
#include <string.h>

#include "json/json.h"

static int member_cmp(const void *a, const void *b)
{
    const sp_json_member *x = a, *y = b;
    return sp_json_key_cmp(x->key, x->len, y->key, y->len);
}

/* The members of `obj` into `m` (json_object_size() entries), sorted. Small
 * objects by insertion, larger ones by qsort: the key order is total (keys
 * are unique), so both give the same order. */
static void collect_sorted(const json_t *obj, sp_json_member *m)
{
    size_t n = 0;
    const char *key;
    size_t klen;
    json_t *e;
    json_object_keylen_foreach((json_t *)obj, key, klen, e)
    {
        m[n].key = key;
        m[n].len = klen;
        m[n].value = e;
        n++;
    }
    if (n > 16) {
        qsort(m, n, sizeof *m, member_cmp);
        return;
    }
    for (size_t i = 1; i < n; i++) {
        sp_json_member x = m[i];
        size_t j = i;
        for (; j > 0 && sp_json_key_cmp(m[j - 1].key, m[j - 1].len, x.key, x.len) > 0; j--)
            m[j] = m[j - 1];
        m[j] = x;
    }
}

sp_json_member *sp_json_sorted_members(const json_t *obj, bool *oom)
{
    *oom = false;
    size_t n = json_object_size(obj);
    if (n == 0)
        return NULL;
    sp_json_member *m = malloc(n * sizeof *m);
    if (!m) {
        *oom = true;
        return NULL;
    }
    collect_sorted(obj, m);
    return m;
}

/* ---- appends: the common case (room left in `out`) inline ---- */

static inline bool room(const sp_buf *b, size_t n)
{
    return b->len + n < b->cap && (!b->limit || b->len + n <= b->limit) && !b->oom &&
           !b->over_limit;
}

static inline void put(sp_buf *b, const char *s, size_t n)
{
    if (!room(b, n)) {
        sp_buf_append(b, s, n);
        return;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static inline void put_char(sp_buf *b, char c)
{
    if (!room(b, 1)) {
        sp_buf_append_char(b, c);
        return;
    }
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
}

/* Plain decimal, as "%lld" writes it. */
static void put_integer(sp_buf *b, long long x)
{
    char tmp[24];
    char *p = tmp + sizeof tmp;
    unsigned long long u = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0)
        *--p = '-';
    put(b, p, (size_t)(tmp + sizeof tmp - p));
}

static void encode_string(const char *s, size_t n, sp_buf *out)
{
    static const char hex[] = "0123456789abcdef";
    put_char(out, '"');
    size_t run = 0; /* start of the current run of bytes copied as is */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(out, s + run, i - run);
        run = i + 1;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        size_t elen = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case 0x08: esc[1] = 'b'; break;
        case 0x09: esc[1] = 't'; break;
        case 0x0A: esc[1] = 'n'; break;
        case 0x0C: esc[1] = 'f'; break;
        case 0x0D: esc[1] = 'r'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            elen = 6;
        }
        put(out, esc, elen);
    }
    put(out, s + run, n - run);
    put_char(out, '"');
}

static int encode_value(const json_t *v, int depth, sp_buf *out, sp_error *err);

static int encode_object(const json_t *v, int depth, sp_buf *out, sp_error *err)
{
    sp_json_member small[16];
    size_t n = json_object_size(v);
    sp_json_member *m = n <= 16 ? small : malloc(n * sizeof *m);
    if (!m)
        return sp_oom(err);
    collect_sorted(v, m);
    int rc = 0;
    put_char(out, '{');
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (i)
            put_char(out, ',');
        encode_string(m[i].key, m[i].len, out);
        put_char(out, ':');
        rc = encode_value(m[i].value, depth + 1, out, err);
    }
    put_char(out, '}');
    if (m != small)
        free(m);
    return rc;
}

static int encode_value(const json_t *v, int depth, sp_buf *out, sp_error *err)
{
    switch (json_typeof(v)) {
    case JSON_NULL: put(out, "null", 4); return 0;
    case JSON_TRUE: put(out, "true", 4); return 0;
    case JSON_FALSE: put(out, "false", 5); return 0;
    case JSON_INTEGER: {
        json_int_t x = json_integer_value(v);
        if (x > SP_JSON_MAX_SAFE || x < -SP_JSON_MAX_SAFE)
            return sp_fail(err, "canonical.integer-out-of-range",
                           "integer %lld is outside +-(2^53-1)", (long long)x);
        put_integer(out, (long long)x);
        return 0;
    }
    case JSON_REAL:
        if (json_real_value(v) == 0.0) {
            put_char(out, '0');
            return 0;
        }
        return sp_fail(err, "canonical.non-integer", "a non-integer number cannot be encoded");
    case JSON_STRING:
        encode_string(json_string_value(v), json_string_length(v), out);
        return 0;
    case JSON_ARRAY:
        if (depth >= SP_JSON_MAX_DEPTH)
            return sp_fail(err, "canonical.too-deep", "nesting deeper than %d", SP_JSON_MAX_DEPTH);
        put_char(out, '[');
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                put_char(out, ',');
            if (encode_value(json_array_get(v, i), depth + 1, out, err))
                return -1;
        }
        put_char(out, ']');
        return 0;
    case JSON_OBJECT:
        if (depth >= SP_JSON_MAX_DEPTH)
            return sp_fail(err, "canonical.too-deep", "nesting deeper than %d", SP_JSON_MAX_DEPTH);
        return encode_object(v, depth, out, err);
    }
    return sp_fail(err, "canonical.shape", "unknown JSON value type");
}

/* What the buffer's own failures mean, after an encoding. */
static int encoded(const sp_buf *out, sp_error *err)
{
    if (out->oom)
        return sp_oom(err);
    if (out->over_limit)
        return sp_fail(err, "canonical.too-large", "encoding exceeds %zu bytes", out->limit);
    return 0;
}

int sp_json_encode(const json_t *v, sp_buf *out, sp_error *err)
{
    if (!v)
        return sp_fail(err, "canonical.shape", "no value to encode");
    if (encode_value(v, 0, out, err))
        return -1;
    return encoded(out, err);
}

int sp_json_encode_member(const char *key, size_t klen, const json_t *value, int depth,
                          sp_buf *out, sp_error *err)
{
    if (!value)
        return sp_fail(err, "canonical.shape", "no value to encode");
    encode_string(key, klen, out);
    put_char(out, ':');
    if (encode_value(value, depth + 1, out, err))
        return -1;
    return encoded(out, err);
}

char *sp_json_encode_alloc(const json_t *v, size_t *len, sp_error *err)
{
    sp_buf b = SP_BUF_INIT;
    if (sp_json_encode(v, &b, err)) {
        sp_buf_free(&b);
        return NULL;
    }
    if (!b.data) /* cannot happen: every value encodes to at least one byte */
        sp_buf_append(&b, "", 0);
    return sp_buf_take(&b, len);
}

static int depth_of(const json_t *v)
{
    int best = 0;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            int d = depth_of(json_array_get(v, i));
            if (d > best)
                best = d;
        }
        return best + 1;
    }
    if (json_is_object(v)) {
        const char *key;
        json_t *e;
        json_object_foreach((json_t *)v, key, e)
        {
            int d = depth_of(e);
            if (d > best)
                best = d;
        }
        return best + 1;
    }
    return 0;
}

int sp_json_depth(const json_t *v) { return depth_of(v); }

bool sp_json_same(const json_t *a, const json_t *b)
{
    sp_buf x = SP_BUF_INIT, y = SP_BUF_INIT;
    bool same = sp_json_encode(a, &x, NULL) == 0 && sp_json_encode(b, &y, NULL) == 0 &&
                x.len == y.len && memcmp(x.data, y.data, x.len) == 0;
    sp_buf_free(&x);
    sp_buf_free(&y);
    return same;
}
