/*
 * dbutil.c - what the SQL drivers share (see db.h): the per-connection cache
 * of prepared statements and the schema version rule.
 *
 * What it is for: the SQLite driver caches sqlite3_stmt objects, the
 * PostgreSQL driver the names of server-side prepared statements; both look
 * them up by SQL text here, and both refuse a schema newer than
 * SP_DB_SCHEMA_VERSION with the same failure.
 *
 * What it must never do: know which driver it serves, or talk to a database.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"

struct sp_db_cache_entry {
    char *key;
    size_t key_len;
    void *stmt;
    sp_db_cache_entry *next;
};

static size_t bucket_of(const char *key, size_t len)
{
    uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * UINT64_C(1099511628211);
    return (size_t)(h % SP_DB_CACHE_BUCKETS);
}

static bool same_key(const sp_db_cache_entry *e, const char *key, size_t key_len)
{
    return e->key_len == key_len && memcmp(e->key, key, key_len) == 0;
}

static size_t recent_slot(const char *key)
{
    return (size_t)(((uintptr_t)key >> 3) % SP_DB_CACHE_RECENT);
}

void *sp_db_cache_get(sp_db_cache *c, const char *key, size_t key_len)
{
    size_t slot = recent_slot(key);
    sp_db_cache_entry *r = c->recent[slot].entry;
    if (r && c->recent[slot].key == key && same_key(r, key, key_len))
        return r->stmt; /* the text is compared all the same: an address is reused */
    for (sp_db_cache_entry *e = c->buckets[bucket_of(key, key_len)]; e; e = e->next)
        if (same_key(e, key, key_len)) {
            c->recent[slot].key = key, c->recent[slot].entry = e;
            return e->stmt;
        }
    return NULL;
}

bool sp_db_cache_put(sp_db_cache *c, const char *key, size_t key_len, void *stmt)
{
    sp_db_cache_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->key = malloc(key_len + 1))) {
        free(e);
        return false;
    }
    memcpy(e->key, key, key_len);
    e->key[key_len] = '\0';
    e->key_len = key_len;
    e->stmt = stmt;
    size_t b = bucket_of(key, key_len);
    e->next = c->buckets[b];
    c->buckets[b] = e;
    return true;
}

void sp_db_cache_clear(sp_db_cache *c)
{
    for (size_t b = 0; b < SP_DB_CACHE_BUCKETS; b++)
        while (c->buckets[b]) {
            sp_db_cache_entry *e = c->buckets[b];
            c->buckets[b] = e->next;
            if (c->release)
                c->release(e->stmt);
            free(e->key);
            free(e);
        }
    memset(c->recent, 0, sizeof c->recent);
}

sp_store_rc sp_db_check_schema_version(long long version, sp_error *err)
{
    if (version > SP_DB_SCHEMA_VERSION) {
        sp_fail(err, "schema.too-new",
                "the store has schema version %lld; this spore understands up to %d", version,
                SP_DB_SCHEMA_VERSION);
        return SP_STORE_INCOMPATIBLE;
    }
    if (version < 0) {
        sp_fail(err, "schema.unknown", "the store has schema version %lld", version);
        return SP_STORE_INCOMPATIBLE;
    }
    return SP_STORE_OK;
}
