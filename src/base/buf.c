/*
 * buf.c - growable byte buffer (see buf.h). Never grows past its limit,
 * never leaves data unterminated.
 */
#include "base/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(sp_buf *b, size_t extra)
{
    if (b->oom || b->over_limit)
        return false;
    if (b->limit && (extra > b->limit || b->len > b->limit - extra)) {
        b->over_limit = true;
        return false;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > ((size_t)-1) / 2) {
            b->oom = true;
            return false;
        }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void sp_buf_append(sp_buf *b, const void *data, size_t len)
{
    if (!reserve(b, len))
        return;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

bool sp_buf_reserve(sp_buf *b, size_t extra) { return reserve(b, extra); }

char *sp_buf_extend(sp_buf *b, size_t len)
{
    if (!reserve(b, len))
        return NULL;
    char *p = b->data + b->len;
    b->len += len;
    b->data[b->len] = '\0';
    return p;
}

void sp_buf_append_str(sp_buf *b, const char *s) { sp_buf_append(b, s, strlen(s)); }

void sp_buf_append_char(sp_buf *b, char c) { sp_buf_append(b, &c, 1); }

void sp_buf_printf(sp_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        sp_buf_append(b, small, (size_t)n);
        return;
    }
    if (!reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sp_buf_reset(sp_buf *b)
{
    b->len = 0;
    b->oom = false;
    b->over_limit = false;
    if (b->data)
        b->data[0] = '\0';
}

void sp_buf_free(sp_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->oom = b->over_limit = false;
}

char *sp_buf_take(sp_buf *b, size_t *len)
{
    char *p = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}
