/*
 * strlist.c - a growing list of owned strings (see strlist.h).
 */
#include <stdlib.h>
#include <string.h>

#include "base/strlist.h"

bool sp_strlist_add(sp_strlist *l, const char *s)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **items = realloc(l->items, cap * sizeof *items);
        if (!items)
            return false;
        l->items = items;
        l->cap = cap;
    }
    char *copy = strdup(s);
    if (!copy)
        return false;
    l->items[l->n++] = copy;
    return true;
}

bool sp_strlist_has(const sp_strlist *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i], s) == 0)
            return true;
    return false;
}

void sp_strlist_clear(sp_strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    *l = (sp_strlist){0};
}
