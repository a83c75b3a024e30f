/*
 * tail.h - the last bytes of a stream: a ring buffer of a fixed capacity
 * and a count of every byte that came.
 *
 * What it is for: keeping what a child process wrote last (a command's
 * stdout and stderr, an agent step CLI's stderr) without ever holding more
 * than the capacity, however much it writes.
 *
 * What it must never do: grow past its capacity, or lose count of the bytes
 * (a ring that could not be allocated still counts them).
 */
#ifndef SPORE_BASE_TAIL_H
#define SPORE_BASE_TAIL_H

#include <stddef.h>
#include <stdint.h>

typedef struct sp_tail {
    char *ring;     /* cap bytes; NULL: nothing is kept, bytes are only counted */
    size_t cap;
    uint64_t total; /* every byte put */
} sp_tail;

/* An empty tail of `cap` bytes (cap 0: count only). 0, or -1 when out of
 * memory (the tail then counts only). */
int sp_tail_init(sp_tail *t, size_t cap);
void sp_tail_free(sp_tail *t);
void sp_tail_put(sp_tail *t, const char *data, size_t len);

/* The kept bytes in order as a new NUL-terminated buffer of *len bytes
 * (at most cap); NULL when out of memory. */
char *sp_tail_copy(const sp_tail *t, size_t *len);

/* The bytes that came and are not kept. */
static inline uint64_t sp_tail_dropped(const sp_tail *t)
{
    uint64_t kept = t->ring ? (t->total < t->cap ? t->total : t->cap) : 0;
    return t->total - kept;
}

#endif
