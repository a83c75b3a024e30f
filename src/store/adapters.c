/*
 * adapters.c - the store adapters this build contains, for `spore
 * capabilities`. Must list exactly what sp_store_open can open.
 */
#include "store/store.h"

const char *const *sp_store_adapters(void)
{
    static const char *const ADAPTERS[] = {"sqlite", "postgres", NULL};
    return ADAPTERS;
}
