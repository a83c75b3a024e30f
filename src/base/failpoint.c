/*
 * failpoint.c - SPORE_FAILPOINTS parsing and hit counting (see failpoint.h).
 * Parsed once per process; hit counters are atomic so attempt threads and
 * the coordinator can share them.
 */
#include "base/failpoint.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ARMED 32

static const char *const NAMES[] = {
    "host.turn.after-reduce",
    "host.turn.after-commit",
    "host.attempt.after-claim",
    "host.attempt.after-effect",
    "host.attempt.after-finish",
    "host.batch.before-commit",
    "host.batch.after-commit",
    "store.flush.before-sync",
    "store.flush.after-sync",
    "store.create-run.before-commit",
    "store.create-run.after-commit",
    "store.append-event.before-commit",
    "store.append-event.after-commit",
    "store.commit-turn.before-commit",
    "store.commit-turn.after-commit",
    "store.claim-attempt.before-commit",
    "store.claim-attempt.after-commit",
    "store.heartbeat.before-commit",
    "store.heartbeat.after-commit",
    "store.finish-attempt.before-commit",
    "store.finish-attempt.after-commit",
    "store.settle-attempt.before-commit",
    "store.settle-attempt.after-commit",
    "store.expire-attempt.before-commit",
    "store.expire-attempt.after-commit",
    "store.hold-attempt.before-commit",
    "store.hold-attempt.after-commit",
    "host.component.after-spawn",
    "host.component.after-start",
    "host.agent.after-exec",
    "host.agent.after-result",
    NULL,
};

typedef struct armed {
    char name[64];
    unsigned long at;   /* abort on this hit */
    atomic_ulong hits;
} armed;

static armed ARMED[MAX_ARMED];
static int NARMED;
static pthread_once_t ONCE = PTHREAD_ONCE_INIT;

static void parse_one(const char *item, size_t len)
{
    if (len == 0 || NARMED == MAX_ARMED)
        return;
    armed *a = &ARMED[NARMED];
    const char *colon = memchr(item, ':', len);
    size_t nlen = colon ? (size_t)(colon - item) : len;
    if (nlen >= sizeof a->name)
        return;
    memcpy(a->name, item, nlen);
    a->name[nlen] = '\0';
    a->at = 1;
    if (colon) {
        char num[24];
        size_t dlen = len - nlen - 1;
        if (dlen == 0 || dlen >= sizeof num)
            return;
        memcpy(num, colon + 1, dlen);
        num[dlen] = '\0';
        char *end;
        unsigned long n = strtoul(num, &end, 10);
        if (*end || n == 0)
            return;
        a->at = n;
    }
    if (!sp_failpoint_known(a->name))
        fprintf(stderr, "spore: warning: SPORE_FAILPOINTS names unknown failpoint %s\n", a->name);
    atomic_init(&a->hits, 0);
    NARMED++;
}

static void parse(void)
{
    const char *spec = getenv("SPORE_FAILPOINTS");
    if (!spec)
        return;
    while (*spec) {
        const char *comma = strchr(spec, ',');
        size_t len = comma ? (size_t)(comma - spec) : strlen(spec);
        parse_one(spec, len);
        spec += len + (comma ? 1 : 0);
    }
}

void sp_failpoint(const char *name)
{
    pthread_once(&ONCE, parse);
    for (int i = 0; i < NARMED; i++) {
        if (strcmp(ARMED[i].name, name) != 0)
            continue;
        unsigned long hit = atomic_fetch_add(&ARMED[i].hits, 1) + 1;
        if (hit == ARMED[i].at) {
            static const char msg[] = "spore: failpoint reached, aborting\n";
            if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
                /* nothing to do: we are about to die anyway */
            }
            signal(SIGABRT, SIG_DFL);
            abort();
        }
    }
}

const char *const *sp_failpoint_names(void) { return NAMES; }

bool sp_failpoint_known(const char *name)
{
    for (const char *const *n = NAMES; *n; n++)
        if (strcmp(*n, name) == 0)
            return true;
    return false;
}
