/*
 * breaker.c - per-provider circuit breakers in a fixed table (see
 * breaker.h). Never blocks beyond its own mutex.
 */
#include "agent/breaker.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"

typedef struct entry {
    char name[SP_BREAKER_NAME_MAX + 1];
    bool used;
    unsigned failures;      /* consecutive +F */
    uint64_t last_failure;  /* ms */
    uint64_t touched;       /* LRU stamp */
} entry;

struct sp_breaker_table {
    pthread_mutex_t mu;
    entry entries[SP_BREAKER_PROVIDERS];
    uint64_t clock;
};

static sp_breaker_table GLOBAL = {.mu = PTHREAD_MUTEX_INITIALIZER};

sp_breaker_table *sp_breaker_global(void) { return &GLOBAL; }

sp_breaker_table *sp_breaker_table_new(void)
{
    sp_breaker_table *t = calloc(1, sizeof *t);
    if (t)
        pthread_mutex_init(&t->mu, NULL);
    return t;
}

void sp_breaker_table_free(sp_breaker_table *t)
{
    if (!t || t == &GLOBAL)
        return;
    pthread_mutex_destroy(&t->mu);
    free(t);
}

const char *sp_breaker_effect_name(sp_breaker_effect e)
{
    return e == SP_BREAKER_FAILURE ? "failure" : e == SP_BREAKER_SUCCESS ? "success" : "none";
}

static bool open_at(const entry *e, uint64_t now)
{
    return e->failures >= SP_BREAKER_THRESHOLD && now < e->last_failure + SP_BREAKER_COOLDOWN_MS;
}

/* The entry of `name`, or NULL; with `create`, a fresh one (evicting the
 * least recently used entry that is not open). */
static entry *find(sp_breaker_table *t, const char *name, bool create, uint64_t now)
{
    entry *free_slot = NULL, *lru = NULL;
    for (int i = 0; i < SP_BREAKER_PROVIDERS; i++) {
        entry *e = &t->entries[i];
        if (e->used && strcmp(e->name, name) == 0) {
            e->touched = ++t->clock;
            return e;
        }
        if (!e->used) {
            if (!free_slot)
                free_slot = e;
        } else if (!open_at(e, now) && (!lru || e->touched < lru->touched)) {
            lru = e;
        }
    }
    entry *victim = free_slot ? free_slot : lru;
    if (!create || !victim)
        return NULL;
    memset(victim, 0, sizeof *victim);
    victim->used = true;
    strncpy(victim->name, name, SP_BREAKER_NAME_MAX);
    victim->touched = ++t->clock;
    return victim;
}

bool sp_breaker_is_open(sp_breaker_table *t, const char *provider, uint64_t now_ms)
{
    pthread_mutex_lock(&t->mu);
    entry *e = find(t, provider, false, now_ms);
    bool open = e && open_at(e, now_ms);
    pthread_mutex_unlock(&t->mu);
    return open;
}

void sp_breaker_record(sp_breaker_table *t, const char *provider, sp_breaker_effect effect,
                       uint64_t now_ms)
{
    if (effect == SP_BREAKER_NONE)
        return;
    pthread_mutex_lock(&t->mu);
    entry *e = find(t, provider, effect == SP_BREAKER_FAILURE, now_ms);
    if (e && effect == SP_BREAKER_SUCCESS)
        e->failures = 0;
    if (e && effect == SP_BREAKER_FAILURE) {
        if (e->failures < 1000000)
            e->failures++;
        e->last_failure = now_ms;
    }
    pthread_mutex_unlock(&t->mu);
}
