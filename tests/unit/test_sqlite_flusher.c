/*
 * test_sqlite_flusher.c - the SQLite store's flusher (src/store/flusher.c over
 * the -wal file's sync in driver.c), on a real file, with a sync the test
 * holds and releases:
 *
 *   - grouping: the commits made while a sync runs are answered by the next
 *     sync, one for all of them (two syncs for SP_UNFLUSHED_MAX + 1 commits);
 *   - the bound: with SP_UNFLUSHED_MAX commits unflushed, the next one waits
 *     until a sync returns, and no more commits are unflushed than the bound;
 *   - stopping syncs what is still unflushed first;
 *   - a failed sync is final: the wait answers corrupt/store.io with the
 *     reason and the remedy, so does every later check, and a later commit
 *     no longer waits for a bound no sync will ever lower;
 *   - a sync that keeps answering "again" (EINTR here, an unreachable
 *     server for PostgreSQL's flush) is tried again, and stopping gives up
 *     on it after a bound (flusher.c: AGAIN_AT_STOP_MS) instead of holding
 *     the process forever; without the bound this test never ends and
 *     CTest's timeout fails it.
 *
 * What it must never do: assert on time. The one wait in it looks for a
 * thread that must stay blocked; a flusher without the bound lets it through
 * at once, and a correct one never does, so the check cannot fail by chance.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "store/sqlite/sqlite.h"

/* The test's sync: each call waits until the test releases it. */
static pthread_mutex_t MU = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t CV = PTHREAD_COND_INITIALIZER;
static int STARTED, RELEASED, FAIL_WITH;

static int held_sync(int fd)
{
    (void)fd;
    pthread_mutex_lock(&MU);
    int me = ++STARTED;
    pthread_cond_broadcast(&CV);
    while (RELEASED < me)
        pthread_cond_wait(&CV, &MU);
    int fail = FAIL_WITH;
    pthread_mutex_unlock(&MU);
    if (fail) {
        errno = fail;
        return -1;
    }
    return 0;
}

static void wait_started(int n)
{
    pthread_mutex_lock(&MU);
    while (STARTED < n)
        pthread_cond_wait(&CV, &MU);
    pthread_mutex_unlock(&MU);
}

static void release(int n, int fail)
{
    pthread_mutex_lock(&MU);
    RELEASED = n;
    FAIL_WITH = fail;
    pthread_cond_broadcast(&CV);
    pthread_mutex_unlock(&MU);
}

static void reset(void)
{
    pthread_mutex_lock(&MU);
    STARTED = RELEASED = FAIL_WITH = 0;
    pthread_mutex_unlock(&MU);
}

typedef struct committer {
    sp_flusher *f;
    uint64_t ticket;
    volatile int done;
} committer;

static void *commit_main(void *arg)
{
    committer *c = arg;
    c->ticket = sp_flusher_committed(c->f);
    __atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static uint64_t syncs_of(sp_flusher *f, uint64_t *unflushed)
{
    uint64_t syncs = 0;
    sp_flusher_counts(f, &syncs, unflushed);
    return syncs;
}

/* A flusher on `path` whose syncs wait for release(), none started yet. */
static sp_flusher *held_flusher(const char *path)
{
    reset();
    sp_error err = {0};
    sp_flusher *f = sq_flusher_start(path, held_sync, &err);
    if (!f)
        check_fail(__FILE__, __LINE__, "sq_flusher_start: %s: %s", err.code, err.message);
    sp_error_clear(&err);
    return f;
}

static void grouping_and_bound(const char *path)
{
    sp_error err = {0};
    sp_flusher *f = held_flusher(path);
    if (!f)
        return;
    CHECK_INT(sp_flusher_committed(f), 1);
    wait_started(1); /* the first sync runs (held) for ticket 1 */
    for (uint64_t t = 2; t <= SP_UNFLUSHED_MAX; t++)
        CHECK_INT(sp_flusher_committed(f), t); /* up to the bound: no wait */
    uint64_t unflushed = 0;
    syncs_of(f, &unflushed);
    CHECK_INT(unflushed, SP_UNFLUSHED_MAX);
    /* one more is committed, and waits until a sync lowers the count */
    committer c = {.f = f};
    pthread_t thread;
    pthread_create(&thread, NULL, commit_main, &c);
    usleep(100 * 1000);
    CHECK_INT(__atomic_load_n(&c.done, __ATOMIC_SEQ_CST), 0);
    release(1, 0); /* ticket 1 on disk; the next sync takes 2 .. the bound + 1 */
    pthread_join(thread, NULL);
    CHECK_INT(c.ticket, SP_UNFLUSHED_MAX + 1);
    wait_started(2);
    syncs_of(f, &unflushed);
    CHECK_INT(unflushed, SP_UNFLUSHED_MAX); /* never more than the bound */
    release(2, 0);
    CHECK_INT(sp_flusher_wait(f, SP_UNFLUSHED_MAX + 1, &err), SP_STORE_OK);
    CHECK_INT(syncs_of(f, &unflushed), 2); /* 65 commits, 2 syncs */
    CHECK_INT(unflushed, 0);
    /* stopping syncs what is unflushed first */
    CHECK_INT(sp_flusher_committed(f), SP_UNFLUSHED_MAX + 2);
    release(3, 0);
    sp_flusher_stop(f);
    pthread_mutex_lock(&MU);
    CHECK_INT(STARTED, 3);
    pthread_mutex_unlock(&MU);
    sp_error_clear(&err);
}

static void failure_is_final(const char *path)
{
    sp_error err = {0};
    sp_flusher *f = held_flusher(path);
    if (!f)
        return;
    CHECK_INT(sp_flusher_failed(f, &err), SP_STORE_OK);
    uint64_t ticket = sp_flusher_committed(f);
    release(1, EIO);
    CHECK_INT(sp_flusher_wait(f, ticket, &err), SP_STORE_CORRUPT);
    CHECK_STR(err.code, "store.io");
    CHECK(strstr(err.message, "could not be flushed to disk") != NULL);
    CHECK(strstr(err.message, strerror(EIO)) != NULL);
    CHECK(strstr(err.message, "start it again") != NULL);
    sp_error_clear(&err);
    CHECK_INT(sp_flusher_failed(f, &err), SP_STORE_CORRUPT);
    CHECK_STR(err.code, "store.io");
    sp_error_clear(&err);
    /* past the bound: no sync will come, so nothing waits for one */
    for (unsigned i = 0; i <= SP_UNFLUSHED_MAX; i++)
        sp_flusher_committed(f);
    CHECK_INT(sp_flusher_wait(f, ticket + 1, &err), SP_STORE_CORRUPT);
    sp_error_clear(&err);
    pthread_mutex_lock(&MU);
    CHECK_INT(STARTED, 1); /* the failed flusher syncs nothing more */
    pthread_mutex_unlock(&MU);
    sp_flusher_stop(f);
}

/* A sync that never gets through: every call is interrupted. */
static atomic_int INTERRUPTED_CALLS;

static int interrupted_sync(int fd)
{
    (void)fd;
    atomic_fetch_add(&INTERRUPTED_CALLS, 1);
    usleep(1000);
    errno = EINTR;
    return -1;
}

static void again_at_stop(const char *path)
{
    sp_error err = {0};
    sp_flusher *f = sq_flusher_start(path, interrupted_sync, &err);
    CHECK(f != NULL);
    if (!f)
        return;
    sp_flusher_committed(f);
    sp_flusher_stop(f); /* returns: it gave up on the ticket it could not flush */
    CHECK(atomic_load(&INTERRUPTED_CALLS) > 1); /* "again" was tried again */
    sp_error_clear(&err);
}

int main(void)
{
    char path[] = "/tmp/spore-test-flusher-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return check_done("test_sqlite_flusher");
    close(fd);
    grouping_and_bound(path);
    failure_is_final(path);
    again_at_stop(path);
    unlink(path);
    return check_done("test_sqlite_flusher");
}
