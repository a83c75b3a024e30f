/*
 * pcache.c - SQLite's own page cache, with truncations that find nothing to
 * drop answered without a scan.
 *
 * What it is for: at the end of every transaction SQLite truncates the
 * connection's page cache at the database's size (pager_end_transaction:
 * sqlite3PcacheTruncate). The default cache (pcache1) drops the pages with
 * a larger number, and when its largest key is far above the limit it
 * scans every hash bucket and every page of the cache to find them. B-tree
 * balancing gives pages a temporary number far beyond the end of the file
 * (sqlite3PagerRekey in balance_nonroot; measured: the lock-byte page,
 * 262,145), and pcache1's largest key stays there until a truncation, so a
 * commit after a page split scanned the whole 16 MiB cache: 6 % of the
 * engine thread in a sequential 250-node run, about one commit in four.
 *
 * How: every method is the default cache's (SQLITE_CONFIG_GETPCACHE2),
 * called through a wrapper that remembers the keys at or above a watermark
 * - the limit of the last truncation - that the connection has created or
 * rekeyed to since. A truncation whose limit is at or above the watermark,
 * while no remembered key reaches it, has nothing to drop: it is not passed
 * on. Any other is (and the memory starts over from its limit).
 *
 * Why it is safe: a key at or above the watermark enters the cache only
 * through xFetch or xRekey, which the wrapper sees, so what it remembers is
 * a superset of the keys that can need dropping (pages the default cache
 * recycles or discards on its own are only remembered too long: a
 * truncation more, never one less). A limit below the watermark, or more
 * keys than the memory holds, always truncates.
 *
 * Installed when the program loads (a constructor, before anything can
 * initialize SQLite). The VFS's registration calls the installer too: a
 * no-op then, but the reference keeps this file in a static link.
 *
 * What it must never do: skip a truncation that could drop a page, or be
 * installed after SQLite initialized (SQLite refuses it then, and the
 * default cache stays).
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "store/sqlite/sqlite.h"

/* Keys remembered per cache; more and the next truncation is passed on. */
enum { HIGH_KEYS_MAX = 32 };

typedef struct wrapped_cache {
    sqlite3_pcache *inner;
    unsigned watermark; /* the limit of the last truncation passed on (0 at first:
                         * the cache started empty, every key is remembered) */
    unsigned nhigh;     /* keys >= watermark created or rekeyed to since */
    bool overflow;      /* more than HIGH_KEYS_MAX of them: unknown */
    unsigned high[HIGH_KEYS_MAX];
} wrapped_cache;

static sqlite3_pcache_methods2 INNER;
static atomic_ulong PASSED, SKIPPED; /* truncations, for sp_sqlite_pcache_counts */

static void remember(wrapped_cache *w, unsigned key)
{
    if (key < w->watermark || w->overflow)
        return;
    for (unsigned i = 0; i < w->nhigh; i++)
        if (w->high[i] == key)
            return;
    if (w->nhigh == HIGH_KEYS_MAX)
        w->overflow = true;
    else
        w->high[w->nhigh++] = key;
}

static void forget(wrapped_cache *w, unsigned key)
{
    for (unsigned i = 0; i < w->nhigh; i++)
        if (w->high[i] == key) {
            w->high[i] = w->high[--w->nhigh];
            return;
        }
}

/* True when a truncation at `limit` may have a page to drop. */
static bool may_drop(const wrapped_cache *w, unsigned limit)
{
    if (w->overflow || limit < w->watermark)
        return true;
    for (unsigned i = 0; i < w->nhigh; i++)
        if (w->high[i] >= limit)
            return true;
    return false;
}

static int wrap_init(void *arg)
{
    (void)arg;
    return INNER.xInit ? INNER.xInit(INNER.pArg) : SQLITE_OK;
}

static void wrap_shutdown(void *arg)
{
    (void)arg;
    if (INNER.xShutdown)
        INNER.xShutdown(INNER.pArg);
}

static sqlite3_pcache *wrap_create(int page_size, int extra_size, int purgeable)
{
    wrapped_cache *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->inner = INNER.xCreate(page_size, extra_size, purgeable);
    if (!w->inner) {
        free(w);
        return NULL;
    }
    return (sqlite3_pcache *)w;
}

static void wrap_cachesize(sqlite3_pcache *p, int pages)
{
    INNER.xCachesize(((wrapped_cache *)p)->inner, pages);
}

static int wrap_pagecount(sqlite3_pcache *p)
{
    return INNER.xPagecount(((wrapped_cache *)p)->inner);
}

static sqlite3_pcache_page *wrap_fetch(sqlite3_pcache *p, unsigned key, int create)
{
    wrapped_cache *w = (wrapped_cache *)p;
    sqlite3_pcache_page *page = INNER.xFetch(w->inner, key, create);
    if (page)
        remember(w, key);
    return page;
}

static void wrap_unpin(sqlite3_pcache *p, sqlite3_pcache_page *page, int discard)
{
    INNER.xUnpin(((wrapped_cache *)p)->inner, page, discard);
}

static void wrap_rekey(sqlite3_pcache *p, sqlite3_pcache_page *page, unsigned old_key,
                       unsigned new_key)
{
    wrapped_cache *w = (wrapped_cache *)p;
    INNER.xRekey(w->inner, page, old_key, new_key);
    forget(w, old_key);
    remember(w, new_key);
}

static void wrap_truncate(sqlite3_pcache *p, unsigned limit)
{
    wrapped_cache *w = (wrapped_cache *)p;
    if (!may_drop(w, limit)) {
        atomic_fetch_add_explicit(&SKIPPED, 1, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(&PASSED, 1, memory_order_relaxed);
    INNER.xTruncate(w->inner, limit);
    w->watermark = limit;
    w->nhigh = 0;
    w->overflow = false;
}

static void wrap_destroy(sqlite3_pcache *p)
{
    wrapped_cache *w = (wrapped_cache *)p;
    INNER.xDestroy(w->inner);
    free(w);
}

static void wrap_shrink(sqlite3_pcache *p)
{
    INNER.xShrink(((wrapped_cache *)p)->inner);
}

static pthread_once_t INSTALLED = PTHREAD_ONCE_INIT;
static bool installed;

static void install(void)
{
    if (sqlite3_config(SQLITE_CONFIG_GETPCACHE2, &INNER) != SQLITE_OK || !INNER.xCreate ||
        !INNER.xFetch || !INNER.xTruncate)
        return;
    static const sqlite3_pcache_methods2 WRAPPED = {
        .iVersion = 1,
        .pArg = NULL,
        .xInit = wrap_init,
        .xShutdown = wrap_shutdown,
        .xCreate = wrap_create,
        .xCachesize = wrap_cachesize,
        .xPagecount = wrap_pagecount,
        .xFetch = wrap_fetch,
        .xUnpin = wrap_unpin,
        .xRekey = wrap_rekey,
        .xTruncate = wrap_truncate,
        .xDestroy = wrap_destroy,
        .xShrink = wrap_shrink,
    };
    installed = sqlite3_config(SQLITE_CONFIG_PCACHE2, &WRAPPED) == SQLITE_OK;
}

bool sp_sqlite_pcache_install(void)
{
    pthread_once(&INSTALLED, install);
    return installed;
}

void sp_sqlite_pcache_counts(unsigned long *passed, unsigned long *skipped)
{
    *passed = atomic_load_explicit(&PASSED, memory_order_relaxed);
    *skipped = atomic_load_explicit(&SKIPPED, memory_order_relaxed);
}

/* At load, before the program can have initialized SQLite; a program that
 * configures its own page cache later replaces this one (SQLite allows that
 * until it initializes). */
__attribute__((constructor)) static void install_at_load(void) { sp_sqlite_pcache_install(); }
