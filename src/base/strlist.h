/*
 * strlist.h - a growing list of owned strings (failpoint names a batch
 * fires later, in the store and in the engine).
 *
 * Must never lose a string silently except on out-of-memory (then add
 * returns false and the list is unchanged).
 */
#ifndef SPORE_BASE_STRLIST_H
#define SPORE_BASE_STRLIST_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sp_strlist {
    char **items;
    size_t n, cap;
} sp_strlist;

/* Append a copy of s; false on out-of-memory. */
bool sp_strlist_add(sp_strlist *l, const char *s);
/* The list holds a string equal to s. */
bool sp_strlist_has(const sp_strlist *l, const char *s);
/* Free every string and the list's memory (the list is empty after). */
void sp_strlist_clear(sp_strlist *l);

#endif
