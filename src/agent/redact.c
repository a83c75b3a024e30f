/*
 * redact.c - secret forms, the occurrence mask and the pattern rules (see
 * redact.h). Never copies a secret out of the redactor.
 */
#define _GNU_SOURCE
#include "agent/redact.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/fdio.h"
#include "base/buf.h"

#define B64_CORE_MIN 16 /* shorter base64 cores would redact ordinary text */

typedef struct needle {
    char *data;
    size_t len;
} needle;

struct sp_redactor {
    needle *needles; /* every form of every secret, longest first */
    size_t n, cap;
    size_t secrets;
    size_t longest;
};

sp_redactor *sp_redactor_new(void) { return calloc(1, sizeof(sp_redactor)); }

void sp_redactor_free(sp_redactor *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        explicit_bzero(r->needles[i].data, r->needles[i].len);
        free(r->needles[i].data);
    }
    free(r->needles);
    free(r);
}

size_t sp_redactor_count(const sp_redactor *r) { return r ? r->secrets : 0; }
size_t sp_redactor_longest(const sp_redactor *r) { return r ? r->longest : 0; }
size_t sp_redactor_longest_form(const sp_redactor *r)
{
    return r && r->n ? r->needles[0].len : 0; /* needles are kept longest first */
}

int sp_secret_file_read(const char *path, char *buf, size_t *len, sp_error *err)
{
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return sp_fail(err, "secret.unavailable", "cannot be read from %s%s%s", path,
                       fd < 0 ? ": " : "", fd < 0 ? strerror(e) : " (not a regular file)");
    }
    size_t n = (uint64_t)st.st_size <= SP_REDACT_SECRET_MAX
                   ? sp_read_upto(fd, buf, SP_REDACT_SECRET_MAX + 1)
                   : 0;
    close(fd);
    if ((uint64_t)st.st_size > SP_REDACT_SECRET_MAX || n > SP_REDACT_SECRET_MAX)
        return sp_fail(err, "secret.too-large",
                       "is longer than %u bytes: it could not be redacted reliably, so the step "
                       "is refused",
                       SP_REDACT_SECRET_MAX);
    *len = n;
    return 0;
}

/* Add one form (copied), skipping empty ones and exact repeats. */
static bool add_form(sp_redactor *r, const char *s, size_t len)
{
    if (len == 0)
        return true;
    for (size_t i = 0; i < r->n; i++)
        if (r->needles[i].len == len && memcmp(r->needles[i].data, s, len) == 0)
            return true;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 16;
        needle *v = realloc(r->needles, cap * sizeof *v);
        if (!v)
            return false;
        r->needles = v;
        r->cap = cap;
    }
    char *copy = malloc(len);
    if (!copy)
        return false;
    memcpy(copy, s, len);
    size_t at = r->n;
    while (at > 0 && r->needles[at - 1].len < len) { /* keep longest first */
        r->needles[at] = r->needles[at - 1];
        at--;
    }
    r->needles[at] = (needle){copy, len};
    r->n++;
    return true;
}

static bool add_buf(sp_redactor *r, sp_buf *b)
{
    bool ok = sp_buf_ok(b) && add_form(r, b->data ? b->data : "", b->len);
    if (b->data)
        explicit_bzero(b->data, b->len);
    sp_buf_free(b);
    return ok;
}

/* JSON string body of s: minimal escapes; optionally "\/" and ASCII-only. */
static bool add_json_form(sp_redactor *r, const char *s, size_t len, bool slash, bool ascii)
{
    sp_buf b = SP_BUF_INIT;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = u[i];
        switch (c) {
        case '"': sp_buf_append_str(&b, "\\\""); continue;
        case '\\': sp_buf_append_str(&b, "\\\\"); continue;
        case '\b': sp_buf_append_str(&b, "\\b"); continue;
        case '\f': sp_buf_append_str(&b, "\\f"); continue;
        case '\n': sp_buf_append_str(&b, "\\n"); continue;
        case '\r': sp_buf_append_str(&b, "\\r"); continue;
        case '\t': sp_buf_append_str(&b, "\\t"); continue;
        default: break;
        }
        if (c == '/' && slash) {
            sp_buf_append_str(&b, "\\/");
        } else if (c < 0x20) {
            sp_buf_printf(&b, "\\u%04x", c);
        } else if (c >= 0x80 && ascii) {
            /* decode one UTF-8 character; ill-formed bytes stay raw */
            uint32_t cp = 0;
            size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
            if (n == 1 || i + n > len) {
                sp_buf_append_char(&b, (char)c);
                continue;
            }
            cp = c & (0xFF >> (n + 1));
            for (size_t k = 1; k < n; k++)
                cp = (cp << 6) | (u[i + k] & 0x3F);
            i += n - 1;
            if (cp >= 0x10000) {
                cp -= 0x10000;
                sp_buf_printf(&b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else {
                sp_buf_printf(&b, "\\u%04x", cp);
            }
        } else {
            sp_buf_append_char(&b, (char)c);
        }
    }
    return add_buf(r, &b);
}

static bool add_base64(sp_redactor *r, const unsigned char *s, size_t len, bool url, bool pad)
{
    size_t n = sp_base64_len(len, url);
    char *out = malloc(n + 1);
    if (!out)
        return false;
    sp_base64_encode(s, len, url, out);
    size_t keep = n;
    if (!url && !pad)
        while (keep > 0 && out[keep - 1] == '=')
            keep--;
    bool ok = add_form(r, out, keep);
    explicit_bzero(out, n);
    free(out);
    return ok;
}

/* The forms of one base value. */
static bool add_forms(sp_redactor *r, const char *s, size_t len)
{
    bool non_ascii = false;
    for (size_t i = 0; i < len; i++)
        non_ascii |= (unsigned char)s[i] >= 0x80;
    if (!add_form(r, s, len) || !add_json_form(r, s, len, false, false) ||
        (memchr(s, '/', len) && !add_json_form(r, s, len, true, false)) ||
        (non_ascii && !add_json_form(r, s, len, false, true)))
        return false;
    const unsigned char *u = (const unsigned char *)s;
    if (!add_base64(r, u, len, false, true) || !add_base64(r, u, len, false, false) ||
        !add_base64(r, u, len, true, false))
        return false;
    /* cores: the secret at any byte alignment inside a longer base64 blob */
    for (size_t j = 0; j < 3 && j < len; j++) {
        size_t m = (len - j) / 3 * 3;
        if (m / 3 * 4 < B64_CORE_MIN)
            continue;
        if (!add_base64(r, u + j, m, false, true) || !add_base64(r, u + j, m, true, false))
            return false;
    }
    return true;
}

static bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int sp_redactor_add(sp_redactor *r, const char *secret, size_t len, sp_error *err)
{
    if (len == 0)
        return 0;
    if (len > SP_REDACT_SECRET_MAX)
        return sp_fail(err, "agent.secret-too-large",
                       "a secret is longer than %u bytes: it could not be redacted reliably",
                       SP_REDACT_SECRET_MAX);
    if (r->secrets == SP_REDACT_SECRETS_MAX)
        return sp_fail(err, "agent.too-many-secrets", "more than %d secrets",
                       SP_REDACT_SECRETS_MAX);
    if (!add_forms(r, secret, len))
        return sp_oom(err);
    size_t a = 0, b = len;
    while (a < b && space(secret[a]))
        a++;
    while (b > a && space(secret[b - 1]))
        b--;
    if ((a > 0 || b < len) && b > a && !add_forms(r, secret + a, b - a))
        return sp_oom(err);
    r->secrets++;
    if (len > r->longest)
        r->longest = len;
    return 0;
}

/* ---- the mask ---- */

static void mark(unsigned char *mask, size_t from, size_t to)
{
    memset(mask + from, 1, to - from);
}

static void mark_exact(const sp_redactor *r, const char *text, size_t len, unsigned char *mask)
{
    for (size_t i = 0; r && i < r->n; i++) {
        const needle *nd = &r->needles[i];
        const char *p = text, *end = text + len;
        while ((size_t)(end - p) >= nd->len) {
            const char *hit = memmem(p, (size_t)(end - p), nd->data, nd->len);
            if (!hit)
                break;
            size_t at = (size_t)(hit - text);
            mark(mask, at, at + nd->len);
            p = hit + 1; /* overlapping occurrences too */
        }
    }
}

static bool word_char(unsigned char c) { return isalnum(c) || c == '_' || c == '-'; }

static bool starts_ci(const char *s, size_t len, const char *word)
{
    size_t n = strlen(word);
    return len >= n && strncasecmp(s, word, n) == 0;
}

/* -----BEGIN ... PRIVATE KEY----- up to the matching END line (or the end). */
static void mark_private_keys(const char *text, size_t len, unsigned char *mask)
{
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *b = memmem(p, (size_t)(end - p), "-----BEGIN ", 11);
        if (!b)
            return;
        const char *eol = memchr(b, '\n', (size_t)(end - b));
        const char *line_end = eol ? eol : end;
        const char *tag = memmem(b, (size_t)(line_end - b), "PRIVATE KEY-----", 16);
        if (!tag) {
            p = b + 11;
            continue;
        }
        const char *e = memmem(tag, (size_t)(end - tag), "-----END ", 9);
        const char *stop = end;
        if (e) {
            const char *close = memmem(e, (size_t)(end - e), "PRIVATE KEY-----", 16);
            stop = close ? close + 16 : end;
        }
        mark(mask, (size_t)(b - text), (size_t)(stop - text));
        p = stop;
    }
}

static bool token_char(unsigned char c)
{
    return isalnum(c) || strchr("._~+/=-", c) != NULL;
}

/* "Authorization:" values up to the end of the line; "Bearer <token>". */
static void mark_auth(const char *text, size_t len, unsigned char *mask)
{
    for (size_t i = 0; i < len; i++) {
        const char *s = text + i;
        if ((text[i] | 0x20) == 'a' && starts_ci(s, len - i, "authorization")) {
            size_t k = i + 13;
            if (k < len && text[k] == '"')
                k++;
            while (k < len && (text[k] == ' ' || text[k] == '\t'))
                k++;
            if (k < len && (text[k] == ':' || text[k] == '=')) {
                k++;
                if (k < len && text[k] == ' ')
                    k++;
                if (k < len && text[k] == '"')
                    k++;
                size_t from = k;
                while (k < len && text[k] != '\n' && text[k] != '\r' && text[k] != '"')
                    k++;
                if (k > from)
                    mark(mask, from, k);
            }
        }
        if ((text[i] | 0x20) == 'b' && starts_ci(s, len - i, "bearer") && i + 6 < len &&
            (text[i + 6] == ' ' || text[i + 6] == '\t')) {
            size_t k = i + 7, from = k;
            while (k < len && token_char((unsigned char)text[k]))
                k++;
            if (k - from >= 8)
                mark(mask, from, k);
        }
    }
}

typedef struct key_shape {
    const char *prefix;
    size_t min, max; /* length of what follows the prefix (max 0 = unbounded) */
    bool alnum_only;
} key_shape;

static const key_shape SHAPES[] = {
    {"sk-", 20, 0, false},         {"ghp_", 30, 0, true},   {"gho_", 30, 0, true},
    {"ghu_", 30, 0, true},         {"ghs_", 30, 0, true},   {"ghr_", 30, 0, true},
    {"github_pat_", 22, 0, false}, {"xoxb-", 10, 0, false}, {"xoxp-", 10, 0, false},
    {"xoxa-", 10, 0, false},       {"xoxr-", 10, 0, false}, {"xoxs-", 10, 0, false},
    {"AKIA", 16, 16, true},        {"ASIA", 16, 16, true},  {"AIza", 30, 0, false},
    {"glpat-", 20, 0, false},      {"hf_", 30, 0, true},    {"npm_", 36, 0, true},
};

static void mark_key_shapes(const char *text, size_t len, unsigned char *mask)
{
    const unsigned char *u = (const unsigned char *)text;
    for (size_t i = 0; i < len; i++) {
        if (i > 0 && word_char(u[i - 1]))
            continue;
        for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
            const key_shape *k = &SHAPES[s];
            size_t plen = strlen(k->prefix);
            if (len - i < plen || memcmp(text + i, k->prefix, plen) != 0)
                continue;
            size_t j = i + plen;
            while (j < len && (k->alnum_only ? isalnum(u[j]) : word_char(u[j])))
                j++;
            size_t n = j - i - plen;
            if (n >= k->min && (k->max == 0 || n == k->max)) {
                mark(mask, i, j);
                i = j - 1;
                break;
            }
        }
    }
}

char *sp_redact(const sp_redactor *r, const char *text, size_t len, int flags, size_t *out_len)
{
    unsigned char *mask = calloc(len ? len : 1, 1);
    if (!mask)
        return NULL;
    mark_exact(r, text, len, mask);
    if (flags & SP_REDACT_PATTERNS) {
        mark_private_keys(text, len, mask);
        mark_auth(text, len, mask);
        mark_key_shapes(text, len, mask);
    }
    sp_buf b = SP_BUF_INIT;
    for (size_t i = 0; i < len;) {
        if (!mask[i]) {
            size_t j = i;
            while (j < len && !mask[j])
                j++;
            sp_buf_append(&b, text + i, j - i);
            i = j;
        } else {
            while (i < len && mask[i])
                i++;
            sp_buf_append_str(&b, SP_REDACTED);
        }
    }
    free(mask);
    if (!sp_buf_ok(&b)) {
        sp_buf_free(&b);
        return NULL;
    }
    size_t n;
    char *out = sp_buf_take(&b, &n);
    if (!out)
        out = strdup("");
    if (out_len)
        *out_len = out ? n : 0;
    return out;
}

bool sp_redact_contains(const sp_redactor *r, const char *text, size_t len)
{
    for (size_t i = 0; r && i < r->n; i++)
        if (memmem(text, len, r->needles[i].data, r->needles[i].len))
            return true;
    return false;
}

static json_t *redact_string(const sp_redactor *r, const char *s, size_t len)
{
    if (!sp_redact_contains(r, s, len))
        return json_stringn_nocheck(s, len);
    size_t n;
    char *red = sp_redact(r, s, len, SP_REDACT_EXACT, &n);
    json_t *v = red ? json_stringn_nocheck(red, n) : NULL;
    free(red);
    return v;
}

json_t *sp_redact_json(const sp_redactor *r, const json_t *v, bool *collision)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return redact_string(r, json_string_value(v), json_string_length(v));
    case JSON_ARRAY: {
        json_t *a = json_array();
        size_t i;
        const json_t *item;
        json_array_foreach(v, i, item)
        {
            if (!a || json_array_append_new(a, sp_redact_json(r, item, collision))) {
                json_decref(a);
                return NULL;
            }
        }
        return a;
    }
    case JSON_OBJECT: {
        json_t *o = json_object();
        const char *key;
        size_t klen;
        json_t *item;
        void *iter = json_object_iter((json_t *)v);
        while (o && iter) {
            key = json_object_iter_key(iter);
            klen = json_object_iter_key_len(iter);
            item = json_object_iter_value(iter);
            json_t *value = sp_redact_json(r, item, collision);
            size_t kl = klen;
            char *k = NULL;
            bool ok = value != NULL;
            if (ok && sp_redact_contains(r, key, klen))
                ok = (k = sp_redact(r, key, klen, SP_REDACT_EXACT, &kl)) != NULL;
            const char *use = k ? k : key;
            if (ok && json_object_getn(o, use, kl)) {
                *collision = true;
                ok = false;
            }
            if (!ok || json_object_setn_new_nocheck(o, use, kl, value)) {
                if (!ok)
                    json_decref(value);
                json_decref(o);
                o = NULL;
            }
            free(k);
            iter = json_object_iter_next((json_t *)v, iter);
        }
        return o;
    }
    default:
        return json_incref((json_t *)v);
    }
}
