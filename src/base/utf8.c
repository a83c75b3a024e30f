/*
 * utf8.c - UTF-8 validation and lossy repair (see utf8.h). Never emits an
 * ill-formed sequence and never reads past the given length.
 */
#include "base/utf8.h"

#include <stdlib.h>
#include <string.h>

static const char REPLACEMENT[] = "\xEF\xBF\xBD"; /* U+FFFD */

/* The allowed range of the second byte after lead byte `b` (RFC 3629 §4),
 * and the sequence length; 0 for a byte that cannot start a sequence. */
static size_t lead_info(unsigned char b, unsigned char *lo, unsigned char *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (b < 0x80)
        return 1;
    if (b >= 0xC2 && b <= 0xDF)
        return 2;
    if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0)
            *lo = 0xA0; /* no overlongs */
        if (b == 0xED)
            *hi = 0x9F; /* no surrogates */
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0)
            *lo = 0x90;
        if (b == 0xF4)
            *hi = 0x8F; /* nothing above U+10FFFF */
        return 4;
    }
    return 0;
}

/* Bytes taken by the sequence at s: the whole character when well-formed
 * (*ok true), else its maximal subpart, at least one byte (*ok false). */
static size_t next_char(const unsigned char *s, size_t len, bool *ok)
{
    unsigned char lo, hi;
    size_t need = lead_info(s[0], &lo, &hi);
    *ok = false;
    if (need == 0)
        return 1;
    size_t i = 1;
    for (; i < need; i++) {
        if (i >= len || s[i] < lo || s[i] > hi)
            return i;
        lo = 0x80;
        hi = 0xBF;
    }
    *ok = true;
    return need;
}

size_t sp_utf8_char_len(const char *s, size_t len)
{
    bool ok;
    size_t n = next_char((const unsigned char *)s, len, &ok);
    return ok ? n : 0;
}

bool sp_utf8_valid(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        bool ok;
        i += next_char(u + i, len - i, &ok);
        if (!ok)
            return false;
    }
    return true;
}

size_t sp_utf8_cut(const char *s, size_t len, size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        bool ok;
        size_t n = next_char(u + i, len - i, &ok);
        if (i + n > max)
            break;
        i += n;
    }
    return i;
}

size_t sp_utf8_skip_partial(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && i < 3 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i++;
    return i;
}

size_t sp_utf8_tail_start(const char *s, size_t len, size_t max)
{
    size_t from = len > max ? len - max : 0;
    while (from < len && ((unsigned char)s[from] & 0xC0) == 0x80)
        from++;
    return from;
}

char *sp_utf8_lossy(const char *s, size_t len, size_t *out_len)
{
    /* Each bad byte grows to at most 3 bytes. */
    if (len > ((size_t)-1 - 1) / 3)
        return NULL;
    char *out = malloc(3 * len + 1);
    if (!out)
        return NULL;
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        bool ok;
        size_t n = next_char(u + i, len - i, &ok);
        if (ok)
            memcpy(out + o, s + i, n);
        else
            memcpy(out + o, REPLACEMENT, 3);
        o += ok ? n : 3;
        i += n;
    }
    out[o] = '\0';
    if (out_len)
        *out_len = o;
    return out;
}

json_t *sp_utf8_lossy_json(const char *s, size_t len)
{
    size_t n;
    char *text = sp_utf8_lossy(s, len, &n);
    if (!text)
        return NULL;
    json_t *v = json_stringn_nocheck(text, n);
    free(text);
    return v;
}

size_t sp_utf8_clean(char *dst, size_t cap, const char *src)
{
    /* Every input byte yields at least one output byte: a bounded look suffices. */
    size_t n;
    char *text = sp_utf8_lossy(src, strnlen(src, cap + 3), &n);
    if (!text) {
        dst[0] = '\0';
        return 0;
    }
    size_t keep = sp_utf8_cut(text, n, cap - 1);
    memcpy(dst, text, keep);
    dst[keep] = '\0';
    free(text);
    return keep;
}
