/*
 * base64.c - base64 and base64url (see base64.h). Never accepts characters
 * outside the chosen alphabet or a truncated quantum.
 */
#include "base/base64.h"

static const char STD[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t sp_base64_len(size_t n, bool url)
{
    return url ? (n / 3) * 4 + (n % 3 ? n % 3 + 1 : 0) : ((n + 2) / 3) * 4;
}

void sp_base64_encode(const void *data, size_t n, bool url, char *out)
{
    const unsigned char *p = data;
    const char *abc = url ? URL : STD;
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        out[o++] = abc[v >> 18 & 63];
        out[o++] = abc[v >> 12 & 63];
        out[o++] = abc[v >> 6 & 63];
        out[o++] = abc[v & 63];
    }
    if (n - i == 1) {
        unsigned v = (unsigned)p[i] << 16;
        out[o++] = abc[v >> 18 & 63];
        out[o++] = abc[v >> 12 & 63];
        if (!url) {
            out[o++] = '=';
            out[o++] = '=';
        }
    } else if (n - i == 2) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
        out[o++] = abc[v >> 18 & 63];
        out[o++] = abc[v >> 12 & 63];
        out[o++] = abc[v >> 6 & 63];
        if (!url)
            out[o++] = '=';
    }
    out[o] = '\0';
}

static int value_of(char c, bool url)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == (url ? '-' : '+'))
        return 62;
    if (c == (url ? '_' : '/'))
        return 63;
    return -1;
}

bool sp_base64_decode(const char *text, size_t len, bool url, unsigned char *out, size_t *out_len)
{
    if (!url) {
        if (len % 4)
            return false;
        while (len && text[len - 1] == '=' && len % 4 != 1)
            len--;
    }
    if (len % 4 == 1)
        return false;
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = value_of(text[i], url);
        if (v < 0)
            return false;
        acc = acc << 6 | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits & 0xFF);
        }
    }
    if (bits && (acc & ((1u << bits) - 1)))
        return false; /* non-zero leftover bits: not a canonical encoding */
    *out_len = o;
    return true;
}
