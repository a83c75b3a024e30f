/*
 * parse.c - strict parsing into the canonical domain (kernel.md §7.2).
 *
 * jansson parses (JSON_REJECT_DUPLICATES, JSON_ALLOW_NUL for "\u0000"
 * escapes, JSON_DECODE_ANY for scalars). Before it, one pass of our own over
 * the bytes finds what jansson cannot tell us: raw NUL bytes (jansson takes
 * one for the end of the input), nesting deeper than 32, and the class of
 * every number token judged by its text (jansson turns "1.0" and "1e3" into
 * doubles and loses the difference; a malformed token is a syntax error).
 * When several problems exist, the one earliest in the document wins: a
 * problem found by our pass sits where its token starts, one found by
 * jansson just before the byte where jansson stopped.
 *
 * jansson also refuses object keys containing U+0000, which the canonical
 * domain allows; such a document is loaded a second time with those escapes
 * replaced by a marker character, which is turned back into U+0000 afterwards
 * (see "Keys containing U+0000" below).
 *
 * Must never accept a non-zero float token, an integer outside +-(2^53-1), a
 * duplicate key, or a lone surrogate, and must never recurse without bound.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"

enum num_class { NUM_OK, NUM_ZERO_FLOAT, NUM_NON_INTEGER, NUM_OUT_OF_RANGE, NUM_MALFORMED };

typedef struct scan_result {
    size_t nul_at, depth_at, number_at; /* SIZE_MAX when not found */
    enum num_class number_class;        /* class of the first bad number */
    bool saw_float_zero;                /* some token must be normalized to 0 */
} scan_result;

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* The k-th digit of the token's digits (integer part then fraction). */
typedef struct digit_seq {
    const char *int_part, *frac_part;
    size_t int_len, frac_len;
} digit_seq;

static char digit_at(const digit_seq *d, size_t k)
{
    return k < d->int_len ? d->int_part[k] : d->frac_part[k - d->int_len];
}

/* Compare the significant digits [lo, hi) followed by `zeros` zeros (16 digits
 * in all) with 2^53-1. */
static bool above_max_safe(const digit_seq *d, size_t lo, size_t hi)
{
    static const char max[] = "9007199254740991";
    for (size_t k = 0; k < 16; k++) {
        char c = lo + k < hi ? digit_at(d, lo + k) : '0';
        if (c != max[k])
            return c > max[k];
    }
    return false;
}

/* The end of the number token starting at s[i] (a '-' or a digit), read the
 * way jansson's lexer reads it: the longest prefix that follows the JSON
 * grammar. *malformed when that lexer calls it an invalid token: no digit
 * after '-', '.' or the exponent mark, or a leading 0 followed by a digit. */
static size_t number_end(const char *s, size_t len, size_t i, bool *malformed)
{
    *malformed = true;
    if (s[i] == '-')
        i++;
    if (i >= len || !is_digit(s[i]))
        return i;
    if (s[i] == '0') {
        if (++i < len && is_digit(s[i]))
            return i;
    } else {
        while (i < len && is_digit(s[i]))
            i++;
    }
    if (i < len && s[i] == '.') {
        if (++i >= len || !is_digit(s[i]))
            return i;
        while (i < len && is_digit(s[i]))
            i++;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= len || !is_digit(s[i]))
            return i;
        while (i < len && is_digit(s[i]))
            i++;
    }
    *malformed = false;
    return i;
}

/* Classify a well-formed number token by its text: value = D x 10^(exp -
 * fraction length). */
static enum num_class classify_number(const char *t, size_t n)
{
    size_t i = 0;
    if (i < n && t[i] == '-')
        i++;
    digit_seq d = {t + i, NULL, 0, 0};
    while (i < n && is_digit(t[i]))
        i++, d.int_len++;
    bool is_float = false;
    d.frac_part = t + i;
    if (i < n && t[i] == '.') {
        is_float = true;
        d.frac_part = t + ++i;
        while (i < n && is_digit(t[i]))
            i++, d.frac_len++;
    }
    long long exp = 0;
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        is_float = true;
        int sign = 1;
        if (++i < n && (t[i] == '+' || t[i] == '-'))
            sign = t[i++] == '-' ? -1 : 1;
        for (; i < n && is_digit(t[i]); i++)
            if (exp < 1000000000)
                exp = exp * 10 + (t[i] - '0');
        exp *= sign;
    }
    size_t total = d.int_len + d.frac_len, lo = 0, hi = total;
    while (lo < hi && digit_at(&d, lo) == '0')
        lo++;
    if (lo == hi)
        return is_float ? NUM_ZERO_FLOAT : NUM_OK; /* the value is zero */
    while (digit_at(&d, hi - 1) == '0')
        hi--;
    long long point = exp - (long long)d.frac_len + (long long)(total - hi);
    if (point < 0)
        return NUM_NON_INTEGER; /* a fractional part remains */
    long long magnitude_digits = (long long)(hi - lo) + point;
    bool out_of_range = magnitude_digits > 16 ||
                        (magnitude_digits == 16 && above_max_safe(&d, lo, hi));
    if (out_of_range)
        return NUM_OUT_OF_RANGE;
    return is_float ? NUM_NON_INTEGER : NUM_OK;
}

static void scan(const char *s, size_t len, scan_result *r)
{
    r->nul_at = r->depth_at = r->number_at = SIZE_MAX;
    r->number_class = NUM_OK;
    r->saw_float_zero = false;
    int depth = 0;
    size_t i = 0;
    while (i < len) {
        char c = s[i];
        if (c == '\0') {
            r->nul_at = i;
            return;
        }
        if (c == '"') {
            for (i++; i < len && s[i] != '"'; i++) {
                if (s[i] == '\0') {
                    r->nul_at = i;
                    return;
                }
                if (s[i] == '\\' && i + 1 < len)
                    i++;
            }
            i++;
            continue;
        }
        if (c == '[' || c == '{') {
            if (++depth > SP_JSON_MAX_DEPTH && r->depth_at == SIZE_MAX)
                r->depth_at = i;
        } else if (c == ']' || c == '}') {
            depth--;
        } else if (c == '-' || is_digit(c)) {
            size_t start = i;
            bool malformed;
            i = number_end(s, len, i, &malformed);
            enum num_class k = malformed ? NUM_MALFORMED : classify_number(s + start, i - start);
            if (k == NUM_ZERO_FLOAT)
                r->saw_float_zero = true;
            else if (k != NUM_OK && r->number_at == SIZE_MAX) {
                r->number_at = start;
                r->number_class = k;
            }
            continue;
        }
        i++;
    }
}

/* Replace every real (only zero-valued ones survive the scan) by integer 0. */
static int normalize_zeros(json_t *v)
{
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *e = json_array_get(v, i);
            if (json_is_real(e)) {
                if (json_array_set_new(v, i, json_integer(0)))
                    return -1;
            } else if (normalize_zeros(e))
                return -1;
        }
    } else if (json_is_object(v)) {
        const char *key;
        size_t klen;
        json_t *e;
        json_object_keylen_foreach(v, key, klen, e)
        {
            if (json_is_real(e)) {
                if (json_object_setn_new_nocheck(v, key, klen, json_integer(0)))
                    return -1;
            } else if (normalize_zeros(e))
                return -1;
        }
    }
    return 0;
}

static int number_error(sp_error *err, enum num_class k, size_t at)
{
    if (k == NUM_MALFORMED)
        return sp_fail(err, "canonical.syntax", "malformed number at byte %zu", at);
    if (k == NUM_OUT_OF_RANGE)
        return sp_fail(err, "canonical.integer-out-of-range",
                       "number at byte %zu is outside +-(2^53-1)", at);
    return sp_fail(err, "canonical.non-integer",
                   "number at byte %zu is not an integer (fractions and exponents are "
                   "not allowed)", at);
}

/* ---- Keys containing U+0000 ----
 * jansson refuses an object key that contains U+0000 (json_error_null_byte_in_key).
 * Such a document is loaded again from a copy in which every "\u0000" escape
 * inside a key is replaced by the escape of a marker: a BMP character (not a
 * surrogate, not U+0000) that occurs nowhere in the document, neither raw nor
 * as a \u escape. The replacement has the same length, so error positions do
 * not move, and two keys of the copy are equal exactly when the original keys
 * are. Afterwards every marker in a key is turned back into U+0000. Only a
 * document that uses every one of the 63,487 candidate characters is left
 * without a marker; it is refused with canonical.syntax. */

static int hex_value(char c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* A BMP character used nowhere in s, as UTF-8 (mark, *mlen bytes) and as the
 * four hex digits of its escape; false when every candidate is used. Marking
 * every "\uXXXX" and every raw 1-3 byte sequence, in strings or not, is a
 * superset of the characters the document's strings can contain. */
static bool find_marker(const char *s, size_t len, char mark[3], size_t *mlen, char hex[5])
{
    unsigned char used[0x10000 / 8] = {0};
    const unsigned char *u = (const unsigned char *)s;
#define SP_MARK_USED(cp) (used[(cp) >> 3] |= (unsigned char)(1u << ((cp) & 7)))
    for (size_t i = 0; i < len; i++) {
        if (u[i] < 0x80) {
            SP_MARK_USED(u[i]);
        } else if (u[i] >= 0xC0 && u[i] < 0xE0 && i + 1 < len && (u[i + 1] & 0xC0) == 0x80) {
            SP_MARK_USED(((u[i] & 0x1Fu) << 6) | (u[i + 1] & 0x3Fu));
        } else if (u[i] >= 0xE0 && u[i] < 0xF0 && i + 2 < len && (u[i + 1] & 0xC0) == 0x80 &&
                   (u[i + 2] & 0xC0) == 0x80) {
            SP_MARK_USED(((u[i] & 0x0Fu) << 12) | ((u[i + 1] & 0x3Fu) << 6) | (u[i + 2] & 0x3Fu));
        }
        if (u[i] == '\\' && i + 5 < len && s[i + 1] == 'u') {
            int a = hex_value(s[i + 2]), b = hex_value(s[i + 3]), c = hex_value(s[i + 4]),
                d = hex_value(s[i + 5]);
            if (a >= 0 && b >= 0 && c >= 0 && d >= 0)
                SP_MARK_USED((unsigned)(a << 12 | b << 8 | c << 4 | d));
        }
    }
#undef SP_MARK_USED
    for (uint32_t k = 0; k < 0xFFFF; k++) {
        uint32_t cp = 0xE000 + k <= 0xFFFF ? 0xE000 + k : k - 0x1FFF; /* PUA first */
        if (cp >= 0xD800 && cp <= 0xDFFF)
            continue;
        if (used[cp >> 3] & (1u << (cp & 7)))
            continue;
        if (cp < 0x80) {
            mark[0] = (char)cp;
            *mlen = 1;
        } else if (cp < 0x800) {
            mark[0] = (char)(0xC0 | cp >> 6);
            mark[1] = (char)(0x80 | (cp & 0x3F));
            *mlen = 2;
        } else {
            mark[0] = (char)(0xE0 | cp >> 12);
            mark[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
            mark[2] = (char)(0x80 | (cp & 0x3F));
            *mlen = 3;
        }
        snprintf(hex, 5, "%04x", (unsigned)cp);
        return true;
    }
    return false;
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* A copy of s where each "\u0000" escape inside a key (a string followed by
 * ':') reads "\u<hex>" instead. NULL on out-of-memory. */
static char *mark_nul_keys(const char *s, size_t len, const char hex[5])
{
    char *t = malloc(len ? len : 1);
    if (!t)
        return NULL;
    memcpy(t, s, len);
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '"')
            continue;
        size_t open = i;
        for (i++; i < len && s[i] != '"'; i++)
            if (s[i] == '\\' && i + 1 < len)
                i++;
        size_t j = i + 1;
        while (j < len && is_ws(s[j]))
            j++;
        if (j >= len || s[j] != ':')
            continue;
        for (size_t k = open + 1; k < i; k++) {
            if (s[k] != '\\')
                continue;
            if (k + 5 < i && memcmp(s + k + 1, "u0000", 5) == 0)
                memcpy(t + k + 2, hex, 4);
            k++; /* skip the escaped character */
        }
    }
    return t;
}

/* Turn every marker in every key of v back into U+0000 (v is at most 32 deep). */
static int restore_nul_keys(json_t *v, const char *mark, size_t mlen)
{
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (restore_nul_keys(json_array_get(v, i), mark, mlen))
                return -1;
        return 0;
    }
    if (!json_is_object(v))
        return 0;
    size_t n = json_object_size(v), moved = 0;
    sp_json_member *renamed = n ? calloc(n, sizeof *renamed) : NULL;
    if (n && !renamed)
        return -1;
    int rc = 0;
    const char *key;
    size_t klen;
    json_t *e;
    void *tmp;
    json_object_keylen_foreach_safe(v, tmp, key, klen, e)
    {
        if (rc == 0 && restore_nul_keys(e, mark, mlen))
            rc = -1;
        bool has_mark = false;
        for (size_t i = 0; i + mlen <= klen && !has_mark; i++)
            has_mark = memcmp(key + i, mark, mlen) == 0;
        if (rc || !has_mark)
            continue;
        char *nk = malloc(klen);
        if (!nk) {
            rc = -1;
            continue;
        }
        size_t nlen = 0;
        for (size_t i = 0; i < klen;) {
            if (i + mlen <= klen && memcmp(key + i, mark, mlen) == 0) {
                nk[nlen++] = '\0';
                i += mlen;
            } else {
                nk[nlen++] = key[i++];
            }
        }
        renamed[moved++] = (sp_json_member){nk, nlen, json_incref(e)};
        json_object_deln(v, key, klen);
    }
    for (size_t i = 0; i < moved; i++) {
        if (rc == 0 && json_object_setn_new_nocheck(v, renamed[i].key, renamed[i].len,
                                                    renamed[i].value))
            rc = -1;
        else if (rc)
            json_decref(renamed[i].value);
        free((char *)renamed[i].key);
    }
    free(renamed);
    return rc;
}

static json_t *load(const char *bytes, size_t len, json_error_t *jerr)
{
    return json_loadb(bytes, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, jerr);
}

json_t *sp_json_parse(const char *bytes, size_t len, sp_error *err)
{
    scan_result r;
    scan(bytes, len, &r);
    size_t first = r.nul_at;
    if (r.depth_at < first)
        first = r.depth_at;
    if (r.number_at < first)
        first = r.number_at;

    json_error_t jerr;
    json_t *v = load(bytes, len, &jerr);
    char mark[3], hex[5];
    size_t mlen = 0; /* > 0 when the keys carry a marker for U+0000 */
    if (!v && json_error_code(&jerr) == json_error_null_byte_in_key &&
        (size_t)jerr.position <= first) {
        if (!find_marker(bytes, len, mark, &mlen, hex)) {
            sp_fail(err, "canonical.syntax",
                    "an object key contains U+0000 in a document that uses every other "
                    "BMP character; not supported");
            return NULL;
        }
        char *copy = mark_nul_keys(bytes, len, hex);
        if (!copy) {
            sp_oom(err);
            return NULL;
        }
        v = load(copy, len, &jerr);
        free(copy);
    }

    /* jansson's position is the number of bytes it consumed: its problem lies
     * before a finding of the scan that starts at or after that position. */
    size_t jpos = v ? SIZE_MAX : (size_t)jerr.position;
    if (!v && json_error_code(&jerr) == json_error_numeric_overflow && r.number_at != SIZE_MAX)
        jpos = SIZE_MAX; /* the scan knows the class of that number */
    if (!v && jpos != SIZE_MAX && jpos <= first) {
        if (json_error_code(&jerr) == json_error_duplicate_key)
            sp_fail(err, "canonical.duplicate-key", "%s", jerr.text);
        else if (json_error_code(&jerr) == json_error_out_of_memory)
            sp_oom(err);
        else
            sp_fail(err, "canonical.syntax", "%s (byte %zu)", jerr.text, jpos);
        return NULL;
    }
    if (first != SIZE_MAX) {
        json_decref(v);
        if (r.nul_at == first)
            sp_fail(err, "canonical.syntax", "raw NUL byte at byte %zu", first);
        else if (r.depth_at == first)
            sp_fail(err, "canonical.too-deep", "nesting deeper than %d at byte %zu",
                    SP_JSON_MAX_DEPTH, first);
        else
            number_error(err, r.number_class, first);
        return NULL;
    }
    if (!v) { /* numeric overflow without a scan verdict cannot happen; be safe */
        sp_fail(err, "canonical.syntax", "%s", jerr.text);
        return NULL;
    }
    if (mlen && restore_nul_keys(v, mark, mlen)) {
        json_decref(v);
        sp_oom(err);
        return NULL;
    }
    if (r.saw_float_zero) {
        if (json_is_real(v)) {
            json_decref(v);
            v = json_integer(0);
            if (!v)
                sp_oom(err);
        } else if (normalize_zeros(v)) {
            json_decref(v);
            sp_oom(err);
            return NULL;
        }
    }
    return v;
}

json_t *sp_json_parse_canonical(const char *bytes, size_t len, sp_error *err)
{
    json_t *v = sp_json_parse(bytes, len, err);
    if (!v)
        return NULL;
    sp_buf b = SP_BUF_INIT;
    if (sp_json_encode(v, &b, err)) {
        sp_buf_free(&b);
        json_decref(v);
        return NULL;
    }
    bool same = b.len == len && memcmp(b.data, bytes, len) == 0;
    sp_buf_free(&b);
    if (!same) {
        json_decref(v);
        sp_fail(err, "canonical.not-canonical",
                "valid JSON but not in canonical form (whitespace, key order, escapes or "
                "number form)");
        return NULL;
    }
    return v;
}
