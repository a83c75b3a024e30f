/*
 * jsontape.c - the strict, bounded JSON parser of the step protocol (see
 * jsontape.h). One pass, recursion bounded by SP_JT_MAX_DEPTH, every node
 * and scratch allocation bounded by the input length.
 *
 * Must never read outside the input, accept a value RFC 8259 rejects, or
 * report success with a rule set.
 */
#define _GNU_SOURCE
#include "agent/jsontape.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

typedef struct parser {
    sp_jt *t;
    const char *s;
    size_t len;
    size_t pos;
} parser;

/* Bytes that may appear raw in a string and need no further look:
 * printable ASCII except '"' and '\\'. */
static const unsigned char PLAIN[256] = {
#define R8(x) x, x, x, x, x, x, x, x
    R8(0), R8(0), R8(0), R8(0),                   /* 0x00-0x1f */
    1, 1, 0, 1, 1, 1, 1, 1, R8(1),                /* 0x20-0x2f: '"' */
    R8(1), R8(1),                                 /* 0x30-0x3f */
    R8(1), R8(1),                                 /* 0x40-0x4f */
    R8(1), 1, 1, 1, 1, 0, 1, 1, 1,                /* 0x50-0x5f: '\\' */
    R8(1), R8(1), R8(1), R8(1),                   /* 0x60-0x7f */
    R8(0), R8(0), R8(0), R8(0), R8(0), R8(0), R8(0), R8(0),
    R8(0), R8(0), R8(0), R8(0), R8(0), R8(0), R8(0), R8(0),
#undef R8
};

static bool fail(parser *p, const char *rule, size_t at)
{
    if (!p->t->rule) {
        p->t->rule = rule;
        p->t->err_offset = at;
    }
    return false;
}

static bool push(parser *p, uint8_t type, size_t start, size_t *index)
{
    sp_jt *t = p->t;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        if (cap > p->len / 2 + 2)
            cap = p->len / 2 + 2; /* a node takes two bytes at least, amortized */
        if (cap <= t->n)
            return fail(p, SP_JT_RULE_TOO_LARGE, start);
        sp_jt_node *nodes = realloc(t->nodes, cap * sizeof *nodes);
        if (!nodes)
            return fail(p, SP_JT_RULE_MEMORY, start);
        t->nodes = nodes;
        t->cap = cap;
    }
    *index = t->n++;
    t->nodes[*index] = (sp_jt_node){type, 0, (uint32_t)start, 0, 0};
    return true;
}

static bool skip_ws(parser *p)
{
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c == ' ' || c == '\t' || (c == '\n' && p->t->allow_lf) ||
            (c == '\r' && p->t->allow_cr))
            p->pos++;
        else if (c == '\r')
            return fail(p, SP_JT_RULE_CR, p->pos);
        else
            break;
    }
    return true;
}

static int hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Four hex digits at s[i..i+4) (the caller checked the length). */
static int hex4(const char *s, size_t i)
{
    int v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hex(s[i + (size_t)k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

/* A \uXXXX escape at p->pos (on the backslash); pairs high + low. */
static bool parse_u_escape(parser *p)
{
    size_t at = p->pos;
    if (p->len - p->pos < 6)
        return fail(p, SP_JT_RULE_SYNTAX, at);
    int u = hex4(p->s, p->pos + 2);
    if (u < 0)
        return fail(p, SP_JT_RULE_SYNTAX, at);
    p->pos += 6;
    if (u >= 0xDC00 && u <= 0xDFFF)
        return fail(p, SP_JT_RULE_SURROGATE, at);
    if (u < 0xD800 || u > 0xDBFF)
        return true;
    if (p->len - p->pos < 6 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
        return fail(p, SP_JT_RULE_SURROGATE, at);
    int lo = hex4(p->s, p->pos + 2);
    if (lo < 0)
        return fail(p, SP_JT_RULE_SYNTAX, p->pos);
    if (lo < 0xDC00 || lo > 0xDFFF)
        return fail(p, SP_JT_RULE_SURROGATE, at);
    p->pos += 6;
    return true;
}

/* A string at p->pos (on the quote); fills node `index`. */
static bool parse_string(parser *p, size_t index)
{
    const unsigned char *s = (const unsigned char *)p->s;
    size_t start = ++p->pos;
    uint8_t flags = 0;
    for (;;) {
        while (p->pos < p->len && PLAIN[s[p->pos]])
            p->pos++;
        if (p->pos >= p->len)
            return fail(p, SP_JT_RULE_SYNTAX, p->pos);
        unsigned char c = s[p->pos];
        if (c == '"')
            break;
        if (c == '\\') {
            flags |= SP_JT_ESCAPED;
            if (p->pos + 1 >= p->len)
                return fail(p, SP_JT_RULE_SYNTAX, p->pos);
            char e = p->s[p->pos + 1];
            if (e == 'u') {
                if (!parse_u_escape(p))
                    return false;
            } else if (strchr("\"\\/bfnrt", e) && e) {
                p->pos += 2;
            } else {
                return fail(p, SP_JT_RULE_SYNTAX, p->pos);
            }
        } else if (c >= 0x80) {
            size_t n = sp_utf8_char_len(p->s + p->pos, p->len - p->pos);
            if (!n)
                return fail(p, SP_JT_RULE_UTF8, p->pos);
            p->pos += n;
        } else {
            return fail(p, SP_JT_RULE_SYNTAX, p->pos); /* a raw control character */
        }
    }
    sp_jt_node *node = &p->t->nodes[index];
    node->flags = flags;
    node->len = (uint32_t)(p->pos - start);
    p->pos++;
    node->end = (uint32_t)p->t->n;
    return true;
}

/* Whether the number token s[0..n) overflows a double: only tokens whose
 * first significant digit sits at 10^308 or above can, and only those near
 * the edge need strtod. */
static bool number_overflows(const char *s, size_t n, long long exp10)
{
    if (exp10 < 308)
        return false;
    if (exp10 > 308)
        return true;
    char *copy = malloc(n + 1);
    if (!copy)
        return true; /* refuse rather than guess */
    memcpy(copy, s, n);
    copy[n] = '\0';
    errno = 0;
    double d = strtod(copy, NULL);
    free(copy);
    return isinf(d);
}

static size_t digits(parser *p)
{
    size_t from = p->pos;
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
        p->pos++;
    return p->pos - from;
}

static bool parse_number(parser *p, size_t index)
{
    size_t start = p->pos;
    uint8_t flags = SP_JT_INT;
    if (p->s[p->pos] == '-') {
        flags |= SP_JT_NEG;
        p->pos++;
    }
    size_t int_at = p->pos;
    size_t nint = digits(p);
    if (nint == 0 || (nint > 1 && p->s[int_at] == '0'))
        return fail(p, SP_JT_RULE_SYNTAX, start);
    /* the power of ten of the first significant digit, before the exponent */
    long long sig = 0;
    bool nonzero = false;
    for (size_t i = 0; i < nint && !nonzero; i++)
        if (p->s[int_at + i] != '0') {
            nonzero = true;
            sig = (long long)(nint - 1 - i);
        }
    if (p->pos < p->len && p->s[p->pos] == '.') {
        flags &= (uint8_t)~SP_JT_INT;
        p->pos++;
        size_t frac_at = p->pos;
        size_t nfrac = digits(p);
        if (nfrac == 0)
            return fail(p, SP_JT_RULE_SYNTAX, start);
        for (size_t i = 0; i < nfrac && !nonzero; i++)
            if (p->s[frac_at + i] != '0') {
                nonzero = true;
                sig = -(long long)i - 1;
            }
    }
    long long exp = 0;
    if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        flags &= (uint8_t)~SP_JT_INT;
        p->pos++;
        bool neg = false;
        if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
            neg = p->s[p->pos++] == '-';
        size_t exp_at = p->pos;
        size_t nexp = digits(p);
        if (nexp == 0)
            return fail(p, SP_JT_RULE_SYNTAX, start);
        for (size_t i = 0; i < nexp; i++) {
            exp = exp * 10 + (p->s[exp_at + i] - '0');
            if (exp > 100000000)
                exp = 100000000; /* saturate: far beyond any double either way */
        }
        if (neg)
            exp = -exp;
    }
    if (nonzero && number_overflows(p->s + start, p->pos - start, sig + exp))
        return fail(p, SP_JT_RULE_NUMBER, start);
    sp_jt_node *node = &p->t->nodes[index];
    node->flags = flags;
    node->len = (uint32_t)(p->pos - start);
    node->end = (uint32_t)p->t->n;
    return true;
}

static bool parse_literal(parser *p, size_t index, const char *word, uint8_t type)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
        return fail(p, SP_JT_RULE_SYNTAX, p->pos);
    p->pos += n;
    p->t->nodes[index].type = type;
    p->t->nodes[index].end = (uint32_t)p->t->n;
    return true;
}

/* ---- decoding strings ---- */

/* Decode one character of the raw string body s[*i..len) into out
 * (1..4 bytes); the body was validated by parse_string. */
static size_t decode_one(const char *s, size_t len, size_t *i, char out[4])
{
    unsigned char c = (unsigned char)s[*i];
    if (c != '\\') {
        size_t n = c < 0x80 ? 1 : sp_utf8_char_len(s + *i, len - *i);
        if (n == 0)
            n = 1;
        memcpy(out, s + *i, n);
        *i += n;
        return n;
    }
    char e = s[*i + 1];
    if (e != 'u') {
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        out[0] = to[strchr(from, e) - from];
        *i += 2;
        return 1;
    }
    unsigned long u = (unsigned long)hex4(s, *i + 2);
    *i += 6;
    if (u >= 0xD800 && u <= 0xDBFF) {
        unsigned long lo = (unsigned long)hex4(s, *i + 2);
        *i += 6;
        u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (u < 0x80) {
        out[0] = (char)u;
        return 1;
    }
    if (u < 0x800) {
        out[0] = (char)(0xC0 | (u >> 6));
        out[1] = (char)(0x80 | (u & 0x3F));
        return 2;
    }
    if (u < 0x10000) {
        out[0] = (char)(0xE0 | (u >> 12));
        out[1] = (char)(0x80 | ((u >> 6) & 0x3F));
        out[2] = (char)(0x80 | (u & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (u >> 18));
    out[1] = (char)(0x80 | ((u >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((u >> 6) & 0x3F));
    out[3] = (char)(0x80 | (u & 0x3F));
    return 4;
}

/* Decode the string node into dst (room for node->len bytes: decoding never
 * grows a string); returns the decoded length. */
static size_t decode_into(const sp_jt *t, const sp_jt_node *node, char *dst)
{
    const char *s = t->text + node->start;
    if (!(node->flags & SP_JT_ESCAPED)) {
        memcpy(dst, s, node->len);
        return node->len;
    }
    size_t i = 0, o = 0;
    while (i < node->len)
        o += decode_one(s, node->len, &i, dst + o);
    return o;
}

/* ---- duplicate keys ---- */

typedef struct key_ref {
    const char *p;
    uint32_t len;
    uint32_t node;
} key_ref;

static int key_cmp(const void *a, const void *b)
{
    const key_ref *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

/* Check the members of the object at `obj` (complete) for equal names. */
static bool check_duplicates(parser *p, size_t obj)
{
    sp_jt *t = p->t;
    size_t m = t->nodes[obj].len;
    if (m < 2)
        return true;
    size_t need = 0;
    bool escaped = false;
    for (size_t k = obj + 1; k < t->nodes[obj].end; k = t->nodes[k + 1].end) {
        need += t->nodes[k].len;
        escaped |= (t->nodes[k].flags & SP_JT_ESCAPED) != 0;
    }
    if (m * sizeof(key_ref) > t->keys_cap) {
        size_t cap = m * sizeof(key_ref);
        void *keys = realloc(t->keys, cap);
        if (!keys)
            return fail(p, SP_JT_RULE_MEMORY, t->nodes[obj].start);
        t->keys = keys;
        t->keys_cap = cap;
    }
    if (escaped && need > t->decoded_cap) {
        char *d = realloc(t->decoded, need);
        if (!d)
            return fail(p, SP_JT_RULE_MEMORY, t->nodes[obj].start);
        t->decoded = d;
        t->decoded_cap = need;
    }
    key_ref *refs = (key_ref *)t->keys;
    size_t at = 0, i = 0;
    for (size_t k = obj + 1; k < t->nodes[obj].end; k = t->nodes[k + 1].end, i++) {
        const sp_jt_node *key = &t->nodes[k];
        if (key->flags & SP_JT_ESCAPED) {
            size_t n = decode_into(t, key, t->decoded + at);
            refs[i] = (key_ref){t->decoded + at, (uint32_t)n, (uint32_t)k};
            at += n;
        } else {
            refs[i] = (key_ref){t->text + key->start, key->len, (uint32_t)k};
        }
    }
    if (m <= 16) {
        for (size_t a = 1; a < m; a++)
            for (size_t b = 0; b < a; b++)
                if (key_cmp(&refs[a], &refs[b]) == 0)
                    return fail(p, SP_JT_RULE_DUPLICATE, t->nodes[refs[a].node].start - 1);
        return true;
    }
    qsort(refs, m, sizeof *refs, key_cmp);
    for (size_t a = 1; a < m; a++)
        if (key_cmp(&refs[a], &refs[a - 1]) == 0) {
            uint32_t later = refs[a].node > refs[a - 1].node ? refs[a].node : refs[a - 1].node;
            return fail(p, SP_JT_RULE_DUPLICATE, t->nodes[later].start - 1);
        }
    return true;
}

/* ---- values ---- */

static bool parse_value(parser *p, int depth);

static bool parse_container(parser *p, int depth, bool object)
{
    size_t index;
    if (depth + 1 > SP_JT_MAX_DEPTH)
        return fail(p, SP_JT_RULE_DEPTH, p->pos);
    if (!push(p, object ? SP_JT_OBJECT : SP_JT_ARRAY, p->pos, &index))
        return false;
    char close = object ? '}' : ']';
    p->pos++;
    uint32_t count = 0;
    if (!skip_ws(p))
        return false;
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
    } else {
        for (;;) {
            if (object) {
                if (p->pos >= p->len || p->s[p->pos] != '"')
                    return fail(p, SP_JT_RULE_SYNTAX, p->pos);
                size_t key;
                if (!push(p, SP_JT_STRING, p->pos + 1, &key) || !parse_string(p, key) ||
                    !skip_ws(p))
                    return false;
                if (p->pos >= p->len || p->s[p->pos] != ':')
                    return fail(p, SP_JT_RULE_SYNTAX, p->pos);
                p->pos++;
            }
            if (!parse_value(p, depth + 1) || !skip_ws(p))
                return false;
            count++;
            if (p->pos >= p->len)
                return fail(p, SP_JT_RULE_SYNTAX, p->pos);
            char c = p->s[p->pos++];
            if (c == close)
                break;
            if (c != ',')
                return fail(p, SP_JT_RULE_SYNTAX, p->pos - 1);
            if (!skip_ws(p))
                return false;
        }
    }
    sp_jt_node *node = &p->t->nodes[index];
    node->len = count;
    node->end = (uint32_t)p->t->n;
    return !object || check_duplicates(p, index);
}

static bool parse_value(parser *p, int depth)
{
    if (!skip_ws(p))
        return false;
    if (p->pos >= p->len)
        return fail(p, SP_JT_RULE_SYNTAX, p->pos);
    char c = p->s[p->pos];
    size_t index;
    switch (c) {
    case '{':
        return parse_container(p, depth, true);
    case '[':
        return parse_container(p, depth, false);
    case '"':
        return push(p, SP_JT_STRING, p->pos + 1, &index) && parse_string(p, index);
    case 't':
        return push(p, SP_JT_TRUE, p->pos, &index) && parse_literal(p, index, "true", SP_JT_TRUE);
    case 'f':
        return push(p, SP_JT_FALSE, p->pos, &index) &&
               parse_literal(p, index, "false", SP_JT_FALSE);
    case 'n':
        return push(p, SP_JT_NULL, p->pos, &index) && parse_literal(p, index, "null", SP_JT_NULL);
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return push(p, SP_JT_NUMBER, p->pos, &index) && parse_number(p, index);
        if ((unsigned char)c >= 0x80 && !sp_utf8_char_len(p->s + p->pos, p->len - p->pos))
            return fail(p, SP_JT_RULE_UTF8, p->pos);
        return fail(p, SP_JT_RULE_SYNTAX, p->pos);
    }
}

bool sp_jt_parse(sp_jt *t, const char *text, size_t len)
{
    t->text = text;
    t->len = len;
    t->n = 0;
    t->rule = NULL;
    t->err_offset = 0;
    parser p = {t, text, len, 0};
    if (len > SP_JT_MAX_INPUT)
        return fail(&p, SP_JT_RULE_TOO_LARGE, 0);
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        return fail(&p, SP_JT_RULE_BOM, 0);
    if (!parse_value(&p, 0) || !skip_ws(&p))
        return false;
    if (p.pos != len)
        return fail(&p, SP_JT_RULE_SYNTAX, p.pos);
    return true;
}

void sp_jt_free(sp_jt *t)
{
    free(t->nodes);
    free(t->keys);
    free(t->decoded);
    memset(t, 0, sizeof *t);
}

/* ---- reading the tape ---- */

bool sp_jt_str_eq(const sp_jt *t, size_t i, const char *want)
{
    const sp_jt_node *node = &t->nodes[i];
    if (node->type != SP_JT_STRING)
        return false;
    const char *s = t->text + node->start;
    size_t wlen = strlen(want);
    if (!(node->flags & SP_JT_ESCAPED))
        return node->len == wlen && memcmp(s, want, wlen) == 0;
    size_t k = 0, w = 0;
    char ch[4];
    while (k < node->len) {
        size_t n = decode_one(s, node->len, &k, ch);
        if (w + n > wlen || memcmp(want + w, ch, n) != 0)
            return false;
        w += n;
    }
    return w == wlen;
}

size_t sp_jt_get(const sp_jt *t, size_t obj, const char *name)
{
    if (t->nodes[obj].type != SP_JT_OBJECT)
        return 0;
    for (size_t k = sp_jt_first(t, obj); k; k = sp_jt_next(t, obj, k))
        if (sp_jt_str_eq(t, k, name))
            return k + 1;
    return 0;
}

void sp_jt_str_decode(const sp_jt *t, size_t i, sp_buf *out)
{
    const sp_jt_node *node = &t->nodes[i];
    const char *s = t->text + node->start;
    if (!(node->flags & SP_JT_ESCAPED)) {
        sp_buf_append(out, s, node->len);
        return;
    }
    size_t k = 0;
    char ch[4];
    while (k < node->len) {
        size_t n = decode_one(s, node->len, &k, ch);
        sp_buf_append(out, ch, n);
    }
}

size_t sp_jt_str_chars(const sp_jt *t, size_t i)
{
    const sp_jt_node *node = &t->nodes[i];
    const char *s = t->text + node->start;
    size_t count = 0, k = 0;
    char ch[4];
    if (!(node->flags & SP_JT_ESCAPED)) {
        for (size_t b = 0; b < node->len; b++)
            count += ((unsigned char)s[b] & 0xC0) != 0x80;
        return count;
    }
    while (k < node->len) {
        decode_one(s, node->len, &k, ch);
        count++;
    }
    return count;
}

bool sp_jt_uint53(const sp_jt *t, size_t i, uint64_t *out)
{
    const sp_jt_node *node = &t->nodes[i];
    if (node->type != SP_JT_NUMBER || node->flags != SP_JT_INT || node->len > 16)
        return false;
    uint64_t v = 0;
    for (size_t k = 0; k < node->len; k++)
        v = v * 10 + (uint64_t)(t->text[node->start + k] - '0');
    if (v > SP_JT_SAFE_MAX)
        return false;
    *out = v;
    return true;
}

bool sp_jt_nonneg_number(const sp_jt *t, size_t i)
{
    const sp_jt_node *node = &t->nodes[i];
    return node->type == SP_JT_NUMBER && !(node->flags & SP_JT_NEG);
}

static json_t *number_json(const sp_jt *t, const sp_jt_node *node)
{
    const char *s = t->text + node->start;
    if ((node->flags & SP_JT_INT) && node->len <= 18) {
        long long v = 0;
        size_t k = (node->flags & SP_JT_NEG) ? 1 : 0;
        for (; k < node->len; k++)
            v = v * 10 + (s[k] - '0');
        return json_integer((node->flags & SP_JT_NEG) ? -v : v);
    }
    char *copy = malloc(node->len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, s, node->len);
    copy[node->len] = '\0';
    double d = strtod(copy, NULL);
    free(copy);
    return json_real(d);
}

json_t *sp_jt_to_json(const sp_jt *t, size_t i)
{
    const sp_jt_node *node = &t->nodes[i];
    switch ((sp_jt_type)node->type) {
    case SP_JT_NULL:
        return json_null();
    case SP_JT_TRUE:
        return json_true();
    case SP_JT_FALSE:
        return json_false();
    case SP_JT_NUMBER:
        return number_json(t, node);
    case SP_JT_STRING: {
        sp_buf b = SP_BUF_INIT;
        sp_jt_str_decode(t, i, &b);
        json_t *v = sp_buf_ok(&b) ? json_stringn_nocheck(b.data ? b.data : "", b.len) : NULL;
        sp_buf_free(&b);
        return v;
    }
    case SP_JT_ARRAY: {
        json_t *a = json_array();
        for (size_t k = i + 1; a && k < node->end; k = t->nodes[k].end)
            if (json_array_append_new(a, sp_jt_to_json(t, k))) {
                json_decref(a);
                a = NULL;
            }
        return a;
    }
    case SP_JT_OBJECT: {
        json_t *o = json_object();
        for (size_t k = sp_jt_first(t, i); o && k; k = sp_jt_next(t, i, k)) {
            sp_buf key = SP_BUF_INIT;
            sp_jt_str_decode(t, k, &key);
            json_t *v = sp_jt_to_json(t, k + 1);
            if (!sp_buf_ok(&key) || !v ||
                json_object_setn_new_nocheck(o, key.data ? key.data : "", key.len, v)) {
                json_decref(o);
                o = NULL;
            }
            sp_buf_free(&key);
        }
        return o;
    }
    }
    return NULL;
}

static void dump_string(const sp_jt *t, size_t i, sp_buf *out)
{
    sp_buf raw = SP_BUF_INIT;
    sp_jt_str_decode(t, i, &raw);
    sp_buf_append_char(out, '"');
    for (size_t k = 0; k < raw.len; k++) {
        unsigned char c = (unsigned char)raw.data[k];
        switch (c) {
        case '"': sp_buf_append_str(out, "\\\""); break;
        case '\\': sp_buf_append_str(out, "\\\\"); break;
        case '\b': sp_buf_append_str(out, "\\b"); break;
        case '\f': sp_buf_append_str(out, "\\f"); break;
        case '\n': sp_buf_append_str(out, "\\n"); break;
        case '\r': sp_buf_append_str(out, "\\r"); break;
        case '\t': sp_buf_append_str(out, "\\t"); break;
        default:
            if (c < 0x20)
                sp_buf_printf(out, "\\u%04x", c);
            else
                sp_buf_append_char(out, (char)c);
        }
    }
    sp_buf_append_char(out, '"');
    if (raw.oom)
        out->oom = true;
    sp_buf_free(&raw);
}

void sp_jt_dump(const sp_jt *t, size_t i, sp_buf *out, size_t max)
{
    const sp_jt_node *node = &t->nodes[i];
    if (out->len >= max)
        return;
    switch ((sp_jt_type)node->type) {
    case SP_JT_NULL: sp_buf_append_str(out, "null"); return;
    case SP_JT_TRUE: sp_buf_append_str(out, "true"); return;
    case SP_JT_FALSE: sp_buf_append_str(out, "false"); return;
    case SP_JT_NUMBER: sp_buf_append(out, t->text + node->start, node->len); return;
    case SP_JT_STRING: dump_string(t, i, out); return;
    case SP_JT_ARRAY:
        sp_buf_append_char(out, '[');
        for (size_t k = i + 1; k < node->end && out->len < max; k = t->nodes[k].end) {
            if (k != i + 1)
                sp_buf_append_char(out, ',');
            sp_jt_dump(t, k, out, max);
        }
        sp_buf_append_char(out, ']');
        return;
    case SP_JT_OBJECT:
        sp_buf_append_char(out, '{');
        for (size_t k = sp_jt_first(t, i); k && out->len < max; k = sp_jt_next(t, i, k)) {
            if (k != i + 1)
                sp_buf_append_char(out, ',');
            dump_string(t, k, out);
            sp_buf_append_char(out, ':');
            sp_jt_dump(t, k + 1, out, max);
        }
        sp_buf_append_char(out, '}');
        return;
    }
}
