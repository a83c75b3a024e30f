/*
 * order.c - UTF-16 code unit ordering of UTF-8 keys (RFC 8785 §3.2.3).
 *
 * UTF-8 byte order equals code point order; UTF-16 order differs only where a
 * supplementary character (encoded as a surrogate pair D800..DBFF) meets a
 * BMP character at or above U+E000. So: find the first differing byte, decode
 * the code point each key has there, and compare their first UTF-16 units.
 * Must never read outside the given lengths, even on invalid UTF-8.
 */
#include "json/json.h"

static uint32_t decode_at(const unsigned char *s, size_t len, size_t i)
{
    unsigned c = s[i];
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    uint32_t cp = extra == 3 ? (c & 0x07) : extra == 2 ? (c & 0x0F) : extra == 1 ? (c & 0x1F) : c;
    for (int k = 1; k <= extra; k++) {
        if (i + (size_t)k >= len || (s[i + k] & 0xC0) != 0x80)
            return c; /* invalid sequence: order by the lead byte */
        cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    return cp;
}

static uint32_t first_unit(uint32_t cp)
{
    return cp >= 0x10000 ? 0xD800 + ((cp - 0x10000) >> 10) : cp;
}

int sp_json_key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    size_t n = alen < blen ? alen : blen, i = 0;
    while (i < n && x[i] == y[i])
        i++;
    if (i == n)
        return alen < blen ? -1 : alen > blen ? 1 : 0;
    while (i > 0 && (x[i] & 0xC0) == 0x80) /* back to the start of the code point */
        i--;
    uint32_t ca = decode_at(x, alen, i), cb = decode_at(y, blen, i);
    uint32_t ua = first_unit(ca), ub = first_unit(cb);
    if (ua != ub)
        return ua < ub ? -1 : 1;
    return ca < cb ? -1 : ca > cb ? 1 : 0;
}
