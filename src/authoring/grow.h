/*
 * grow.h - room for one more element of a growing array (the DOT graph's
 * nodes and edges, a chain's IDs, the assets, the sealed files).
 *
 * What it is for: one doubling rule instead of one per list.
 *
 * What it must never do: lose the old array when memory runs out (the
 * caller still owns and frees it), or overflow the size it asks for.
 */
#ifndef SPORE_AUTHORING_GROW_H
#define SPORE_AUTHORING_GROW_H

#include <stdint.h>
#include <stdlib.h>

/* `items` (n used of *cap, `elem` bytes each) with room for n + 1: the
 * same pointer, a larger copy (*cap doubled, from 16), or NULL when out
 * of memory (then `items` is untouched and still the caller's). */
static inline void *sp_grow(void *items, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return items;
    size_t more = *cap ? 2 * *cap : 16;
    if (more > SIZE_MAX / elem)
        return NULL;
    void *grown = realloc(items, more * elem);
    if (grown)
        *cap = more;
    return grown;
}

#endif
