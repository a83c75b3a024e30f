/*
 * runstate.c - the decoded state of the runs this engine drives, kept in
 * memory between their turns (step-path.md §5): the kernel then skips
 * decoding the snapshot, whose cost grows with the nodes a run visited. An
 * entry is keyed by run and by the digest of the snapshot it decodes; any
 * mismatch (another worker moved the run on, a lost commit) drops it and the
 * stored bytes decide, so the cache can be wrong only in being empty.
 *
 * Runs are found by a hash of their key, and the entries with a key are
 * linked in the order they were kept: keeping moves an entry to the new
 * end, and room is made at the old end, in constant time. It holds 8,192
 * runs (with 1,024 and 5,000 runs stepping in turn, every turn missed - and
 * on PostgreSQL read the snapshot again -: a quarter more of a worker's CPU
 * a step) and at most RUNSTATE_BYTES
 * of their snapshots' bytes (a decoded state weighs a few times its
 * snapshot; without a byte bound, 8,192 runs of large snapshots would be
 * gigabytes).
 *
 * Must never hand out a state whose digest differs from the stored
 * snapshot's, grow past RUNSTATE_MAX entries or RUNSTATE_BYTES, or be used
 * by two threads at once (the thread that ticks owns it).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

static uint32_t key_hash(const sp_run_key *key)
{
    uint32_t h = 2166136261u; /* FNV-1a over tenant, a separator, run ID */
    for (const char *p = key->tenant; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    h = (h ^ 0xffu) * 16777619u;
    for (const char *p = key->run_id; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return h;
}

static int32_t *bucket_of(runstate_table *t, const sp_run_key *key)
{
    return &t->buckets[key_hash(key) & (RUNSTATE_BUCKETS - 1)];
}

static int32_t index_of(const runstate_table *t, const runstate_entry *r)
{
    return (int32_t)(r - t->entries);
}

/* The entry last given to `key` (its state may be NULL), or NULL. */
static runstate_entry *find(runstate_table *t, const sp_run_key *key)
{
    if (!t)
        return NULL;
    for (int32_t i = *bucket_of(t, key); i >= 0; i = t->entries[i].next)
        if (engine_same_key(&t->entries[i].key, key))
            return &t->entries[i];
    return NULL;
}

static runstate_table *table_of(sp_engine *e)
{
    runstate_table *t = e->runstate;
    if (!t && (t = e->runstate = calloc(1, sizeof *t))) {
        for (size_t i = 0; i < RUNSTATE_BUCKETS; i++)
            t->buckets[i] = -1;
        t->oldest = t->newest = t->free_list = -1;
    }
    return t;
}

/* ---- the order kept ---- */

static void order_unlink(runstate_table *t, runstate_entry *r)
{
    if (r->older >= 0)
        t->entries[r->older].newer = r->newer;
    else
        t->oldest = r->newer;
    if (r->newer >= 0)
        t->entries[r->newer].older = r->older;
    else
        t->newest = r->older;
    r->older = r->newer = -1;
}

static void order_append(runstate_table *t, runstate_entry *r)
{
    int32_t at = index_of(t, r);
    r->older = t->newest;
    r->newer = -1;
    if (t->newest >= 0)
        t->entries[t->newest].newer = at;
    else
        t->oldest = at;
    t->newest = at;
}

/* ---- entries ---- */

static void forget_state(runstate_table *t, runstate_entry *r)
{
    sp_kernel_state_free(r->state);
    r->state = NULL;
    t->bytes -= r->bytes;
    r->bytes = 0;
}

static void bucket_unlink(runstate_table *t, runstate_entry *r)
{
    int32_t at = index_of(t, r);
    for (int32_t *p = bucket_of(t, &r->key); *p >= 0; p = &t->entries[*p].next)
        if (*p == at) {
            *p = r->next;
            return;
        }
}

/* The entry leaves the table: no key, no state, on the free list. */
static void drop(runstate_table *t, runstate_entry *r)
{
    forget_state(t, r);
    bucket_unlink(t, r);
    order_unlink(t, r);
    r->next = t->free_list;
    t->free_list = index_of(t, r);
}

/* An entry for a run that has none: a dropped one, a never-used one, else
 * the least recently kept, given to `key`. */
static runstate_entry *claim_entry(runstate_table *t, const sp_run_key *key)
{
    if (t->free_list < 0 && t->handed_out == RUNSTATE_MAX)
        drop(t, &t->entries[t->oldest]);
    runstate_entry *r;
    if (t->free_list >= 0) {
        r = &t->entries[t->free_list];
        t->free_list = r->next;
    } else {
        r = &t->entries[t->handed_out++];
    }
    r->key = *key;
    int32_t *head = bucket_of(t, key);
    r->next = *head;
    *head = index_of(t, r);
    r->older = r->newer = -1;
    order_append(t, r);
    return r;
}

sp_kernel_state *engine_runstate_take(sp_engine *e, const sp_run_key *key,
                                      const char *snapshot_digest)
{
    runstate_entry *r = find(e->runstate, key);
    if (!r || !r->state)
        return NULL;
    sp_kernel_state *s = r->state;
    r->state = NULL;
    e->runstate->bytes -= r->bytes;
    r->bytes = 0;
    if (strcmp(sp_kernel_state_digest(s), snapshot_digest) == 0)
        return s;
    sp_kernel_state_free(s); /* the stored bytes decide */
    return NULL;
}

bool engine_runstate_has(sp_engine *e, const sp_run_key *key, const char *snapshot_digest)
{
    runstate_entry *r = find(e->runstate, key);
    return r && r->state && strcmp(sp_kernel_state_digest(r->state), snapshot_digest) == 0;
}

void engine_runstate_keep(sp_engine *e, const sp_run_key *key, sp_kernel_state *state,
                          size_t snapshot_len)
{
    if (!state)
        return;
    runstate_table *t = table_of(e);
    if (!t || snapshot_len > RUNSTATE_BYTES) { /* nothing kept: the stored bytes decide */
        sp_kernel_state_free(state);
        return;
    }
    runstate_entry *r = find(t, key);
    if (r) {
        forget_state(t, r);
        order_unlink(t, r);
        order_append(t, r);
    } else {
        r = claim_entry(t, key);
    }
    r->state = state;
    r->bytes = snapshot_len;
    t->bytes += snapshot_len;
    while (t->bytes > RUNSTATE_BYTES) /* never `r`: it alone fits */
        drop(t, &t->entries[t->oldest]);
}

void engine_runstate_free(sp_engine *e)
{
    runstate_table *t = e->runstate;
    for (size_t i = 0; t && i < t->handed_out; i++)
        sp_kernel_state_free(t->entries[i].state);
    free(t);
    e->runstate = NULL;
}
