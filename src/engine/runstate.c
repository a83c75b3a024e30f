/*
 * runstate.c - the decoded state of the runs this engine drives, kept in
 * memory between their turns (step-path.md §5): the kernel then skips
 * decoding the snapshot, whose cost grows with the nodes a run visited. An
 * entry is keyed by run and by the digest of the snapshot it decodes; any
 * mismatch (another worker moved the run on, a lost commit) drops it and the
 * stored bytes decide, so the cache can be wrong only in being empty.
 *
 * Runs are found by a hash of their key (1024 runs, more than a pass
 * serves: with 256 entries and 1,000 runs stepping in turn, every turn
 * missed and decoded, 6.5 % of a step's CPU). Must never hand out a state
 * whose digest differs from the stored snapshot's, grow past RUNSTATE_MAX
 * entries, or be used by two threads at once (the thread that ticks owns
 * it).
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
    if (!e->runstate && (e->runstate = calloc(1, sizeof *e->runstate)))
        for (size_t i = 0; i < RUNSTATE_BUCKETS; i++)
            e->runstate->buckets[i] = -1;
    return e->runstate;
}

static void unlink_entry(runstate_table *t, runstate_entry *r)
{
    int32_t at = (int32_t)(r - t->entries);
    for (int32_t *p = bucket_of(t, &r->key); *p >= 0; p = &t->entries[*p].next)
        if (*p == at) {
            *p = r->next;
            return;
        }
}

/* An entry for a run that has none: a never-used one, else the least
 * recently used (its state freed), moved to `key`'s bucket. */
static runstate_entry *claim_entry(runstate_table *t, const sp_run_key *key)
{
    runstate_entry *r = NULL;
    if (t->used_entries < RUNSTATE_MAX) {
        r = &t->entries[t->used_entries++];
    } else {
        r = &t->entries[0];
        for (size_t i = 1; i < RUNSTATE_MAX && r->state; i++)
            if (!t->entries[i].state || t->entries[i].used < r->used)
                r = &t->entries[i];
        unlink_entry(t, r);
        sp_kernel_state_free(r->state);
        r->state = NULL;
    }
    r->key = *key;
    int32_t *head = bucket_of(t, key);
    r->next = *head;
    *head = (int32_t)(r - t->entries);
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

void engine_runstate_keep(sp_engine *e, const sp_run_key *key, sp_kernel_state *state)
{
    if (!state)
        return;
    runstate_table *t = table_of(e);
    if (!t) { /* out of memory: nothing kept, the stored bytes decide */
        sp_kernel_state_free(state);
        return;
    }
    runstate_entry *r = find(t, key);
    if (!r)
        r = claim_entry(t, key);
    sp_kernel_state_free(r->state);
    r->state = state;
    r->used = ++t->clock;
}

void engine_runstate_free(sp_engine *e)
{
    runstate_table *t = e->runstate;
    for (size_t i = 0; t && i < t->used_entries; i++)
        sp_kernel_state_free(t->entries[i].state);
    free(t);
    e->runstate = NULL;
}
