/*
 * parse.c - strict parsing into the canonical domain (kernel.md §7.2).
 *
 * jansson parses (JSON_REJECT_DUPLICATES, JSON_ALLOW_NUL for "\u0000"
 * escapes, JSON_DECODE_ANY for scalars). Before it, one pass of our own over
 * the bytes finds what jansson cannot tell us: raw NUL bytes, nesting deeper
 * than 32, and the class of every number token judged by its text (jansson
 * turns "1.0" and "1e3" into doubles and loses the difference). When several
 * problems exist, the one earliest in the document wins.
 *
 * Must never accept a non-zero float token, an integer outside +-(2^53-1), a
 * duplicate key, or a lone surrogate, and must never recurse without bound.
 */
#include <string.h>

#include "json/json.h"

enum num_class { NUM_OK, NUM_ZERO_FLOAT, NUM_NON_INTEGER, NUM_OUT_OF_RANGE };

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

/* Classify a number token by its text: value = D x 10^(exp - fraction length).
 * Malformed tokens are classified somehow; jansson rejects them anyway. */
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
            while (i < len && (is_digit(s[i]) || s[i] == '-' || s[i] == '+' || s[i] == '.' ||
                               s[i] == 'e' || s[i] == 'E'))
                i++;
            enum num_class k = classify_number(s + start, i - start);
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
    if (k == NUM_OUT_OF_RANGE)
        return sp_fail(err, "canonical.integer-out-of-range",
                       "number at byte %zu is outside +-(2^53-1)", at);
    return sp_fail(err, "canonical.non-integer",
                   "number at byte %zu is not an integer (fractions and exponents are "
                   "not allowed)", at);
}

json_t *sp_json_parse(const char *bytes, size_t len, sp_error *err)
{
    scan_result r;
    scan(bytes, len, &r);
    if (r.nul_at != SIZE_MAX) {
        sp_fail(err, "canonical.syntax", "raw NUL byte at byte %zu", r.nul_at);
        return NULL;
    }
    json_error_t jerr;
    json_t *v = json_loadb(bytes, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
                           &jerr);
    size_t jpos = v ? SIZE_MAX : (size_t)jerr.position;
    size_t first = r.depth_at < r.number_at ? r.depth_at : r.number_at;
    if (!v && json_error_code(&jerr) == json_error_numeric_overflow && r.number_at != SIZE_MAX)
        jpos = SIZE_MAX; /* the scan knows the class of that number */
    if (!v && jpos != SIZE_MAX && (jpos < first || first == SIZE_MAX)) {
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
        if (r.depth_at == first)
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
