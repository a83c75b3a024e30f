/*
 * runstate.c - the decoded state of the runs this engine drives, kept in
 * memory between their turns (step-path.md §5): the kernel then skips
 * decoding the snapshot, whose cost grows with the nodes a run visited. An
 * entry is keyed by run and by the digest of the snapshot it decodes; any
 * mismatch (another worker moved the run on, a lost commit) drops it and the
 * stored bytes decide, so the cache can be wrong only in being empty.
 *
 * Must never hand out a state whose digest differs from the stored
 * snapshot's, grow past RUNSTATE_MAX entries, or be used by two threads at
 * once (the thread that ticks owns it).
 */
#include <string.h>

#include "engine/internal.h"

static runstate_entry *find(sp_engine *e, const sp_run_key *key)
{
    for (size_t i = 0; i < RUNSTATE_MAX; i++)
        if (e->runstate[i].state && engine_same_key(&e->runstate[i].key, key))
            return &e->runstate[i];
    return NULL;
}

sp_kernel_state *engine_runstate_take(sp_engine *e, const sp_run_key *key,
                                      const char *snapshot_digest)
{
    runstate_entry *r = find(e, key);
    if (!r)
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
    runstate_entry *r = find(e, key);
    return r && strcmp(sp_kernel_state_digest(r->state), snapshot_digest) == 0;
}

void engine_runstate_keep(sp_engine *e, const sp_run_key *key, sp_kernel_state *state)
{
    if (!state)
        return;
    runstate_entry *slot = find(e, key);
    for (size_t i = 0; !slot && i < RUNSTATE_MAX; i++)
        if (!e->runstate[i].state)
            slot = &e->runstate[i];
    for (size_t i = 0; !slot && i < RUNSTATE_MAX; i++) /* full: the least recently used */
        if (!slot || e->runstate[i].used < slot->used)
            slot = &e->runstate[i];
    if (!slot)
        slot = &e->runstate[0];
    sp_kernel_state_free(slot->state);
    slot->key = *key;
    slot->state = state;
    slot->used = ++e->runstate_clock;
}

void engine_runstate_free(sp_engine *e)
{
    for (size_t i = 0; i < RUNSTATE_MAX; i++) {
        sp_kernel_state_free(e->runstate[i].state);
        e->runstate[i].state = NULL;
    }
}
