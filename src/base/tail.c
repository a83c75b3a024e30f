/*
 * tail.c - the ring buffer of tail.h. Never holds more than its capacity.
 */
#include "base/tail.h"

#include <stdlib.h>
#include <string.h>

int sp_tail_init(sp_tail *t, size_t cap)
{
    memset(t, 0, sizeof *t);
    if (cap == 0)
        return 0;
    t->ring = malloc(cap);
    t->cap = t->ring ? cap : 0;
    return t->ring ? 0 : -1;
}

void sp_tail_free(sp_tail *t)
{
    free(t->ring);
    memset(t, 0, sizeof *t);
}

void sp_tail_put(sp_tail *t, const char *data, size_t len)
{
    const size_t cap = t->cap;
    if (!t->ring || cap == 0) {
        t->total += len;
        return;
    }
    if (len > cap) {
        t->total += len - cap;
        data += len - cap;
        len = cap;
    }
    size_t pos = (size_t)(t->total % cap);
    size_t first = len < cap - pos ? len : cap - pos;
    memcpy(t->ring + pos, data, first);
    memcpy(t->ring, data + first, len - first);
    t->total += len;
}

char *sp_tail_copy(const sp_tail *t, size_t *len)
{
    const size_t cap = t->cap;
    size_t n = t->ring ? (t->total < cap ? (size_t)t->total : cap) : 0;
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    size_t start = t->total < cap || n == 0 ? 0 : (size_t)(t->total % cap);
    if (n) {
        memcpy(out, t->ring + start, n - start);
        memcpy(out + (n - start), t->ring, start);
    }
    out[n] = '\0';
    if (len)
        *len = n;
    return out;
}
