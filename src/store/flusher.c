/*
 * flusher.c - the thread that makes a connection's commits durable while
 * the committing thread goes on (flusher.h; docs/step-path.md, "Commit,
 * then flush beside the next step").
 *
 * What it is for: a durable commit is mostly waiting (an fdatasync of
 * SQLite's -wal file; the server's WAL flush at a PostgreSQL COMMIT), and a
 * sequential step used to wait for it before its next step could begin. A
 * commit the driver left unflushed is handed here as a ticket: this thread
 * calls the driver's flush and then counts every commit made before that
 * call began as durable. One flush answers every commit made while the one
 * before it ran (the flushes group themselves). The caller asks whether, or
 * waits until, its ticket is durable before it lets anything of that commit
 * out of the process.
 *
 * Failpoints: store.flush.before-sync and .after-sync, in this thread, around
 * each flush (a crash of the process at either keeps every commit: SQLite's
 * are in the file, PostgreSQL's on the server; only a power loss, or the
 * server's own crash, before the flush could take them back).
 *
 * What it must never do: count a ticket durable before a flush that began
 * after its commit returned; let more than SP_UNFLUSHED_MAX commits wait
 * unflushed; go on after a failure the driver called final (every later
 * wait answers it, and the process must start again from what is durable).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/failpoint.h"
#include "store/flusher.h"

struct sp_flusher {
    pthread_mutex_t mu;
    pthread_cond_t work; /* a ticket to flush, or stop */
    pthread_cond_t done; /* a flush returned */
    pthread_t thread;
    sp_flush_fn flush;
    void (*release)(void *ctx);
    void *ctx;
    uint64_t committed; /* the last ticket handed out */
    uint64_t flushed;   /* every ticket up to this one is durable */
    uint64_t flushes;   /* flushes that returned done */
    uint64_t oldest_ms; /* monotonic: when the oldest unflushed ticket was handed out */
    unsigned waiters;   /* threads waiting in sp_flusher_wait */
    bool gathering;     /* the thread waits (timed) for more commits before it flushes */
    bool failed;        /* a flush failed for good; sticky */
    char why[512];      /* what it said */
    bool stop;
};

/* Under f->mu: a final failure (the first one stays). */
static void set_failed(sp_flusher *f, const char *why)
{
    if (!f->failed)
        snprintf(f->why, sizeof f->why, "%s", why && *why ? why : "a flush failed");
    f->failed = true;
}

/* How long flushes may answer "again" while stopping before the flusher
 * gives up (a server that stays unreachable must not hold the process at its
 * close; what it holds is committed, only not proved durable). */
#define AGAIN_AT_STOP_MS 10000

/* A flush nobody waits for yet waits this long for more commits to answer
 * (unless FLUSH_EAGER tickets are unflushed): a sequential run of inline
 * steps then costs one flush for several steps, not one a step. Anything
 * that must not leave the process before its flush waits for it, and a
 * waiter is flushed for at once. */
#define FLUSH_GATHER_MS 2
#define FLUSH_EAGER (SP_UNFLUSHED_MAX / 4)

/* Under f->mu: whether the flush should begin now. */
static bool flush_now(const sp_flusher *f, uint64_t now)
{
    return f->stop || f->waiters || f->committed - f->flushed >= FLUSH_EAGER ||
           now - f->oldest_ms >= FLUSH_GATHER_MS;
}

/* Under f->mu: wait on `work` until `deadline_ms` (monotonic) at most. */
static void wait_until(sp_flusher *f, uint64_t deadline_ms)
{
    struct timespec ts = {(time_t)(deadline_ms / 1000), (long)(deadline_ms % 1000) * 1000000L};
    pthread_cond_timedwait(&f->work, &f->mu, &ts);
}

static void *flush_loop(void *arg)
{
    sp_flusher *f = arg;
    uint64_t again_since = 0; /* monotonic ms: the first "again" while stopping */
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (!f->stop && !f->failed && f->flushed == f->committed)
            pthread_cond_wait(&f->work, &f->mu);
        if (f->failed || f->flushed == f->committed) /* stopping with nothing left */
            break;
        if (!flush_now(f, sp_mono_ms())) {
            f->gathering = true;
            wait_until(f, f->oldest_ms + FLUSH_GATHER_MS + 1);
            f->gathering = false;
            continue;
        }
        uint64_t target = f->committed; /* every commit made before the flush begins */
        pthread_mutex_unlock(&f->mu);
        char why[512] = "";
        sp_failpoint("store.flush.before-sync"); /* committed, maybe not durable */
        sp_flush_result r = f->flush(f->ctx, why, sizeof why);
        sp_failpoint("store.flush.after-sync"); /* durable, nothing told yet */
        pthread_mutex_lock(&f->mu);
        if (r == SP_FLUSH_AGAIN && f->stop && !again_since)
            again_since = sp_mono_ms();
        if (r == SP_FLUSH_AGAIN && again_since && sp_mono_ms() - again_since >= AGAIN_AT_STOP_MS)
            set_failed(f, "the store closed before its last commits could be flushed");
        if (r == SP_FLUSH_FAILED)
            set_failed(f, why);
        else if (r == SP_FLUSH_DONE && target > f->flushed)
            f->flushed = target, f->oldest_ms = sp_mono_ms(); /* the rest came during the flush */
        f->flushes += r == SP_FLUSH_DONE;
        pthread_cond_broadcast(&f->done);
    }
    pthread_cond_broadcast(&f->done);
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

sp_flusher *sp_flusher_start(sp_flush_fn flush, void (*release)(void *ctx), void *ctx,
                             sp_error *err)
{
    sp_flusher *f = calloc(1, sizeof *f);
    if (!f) {
        sp_oom(err);
        return NULL;
    }
    f->flush = flush;
    f->release = release;
    f->ctx = ctx;
    pthread_mutex_init(&f->mu, NULL);
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&f->work, &monotonic);
    pthread_condattr_destroy(&monotonic);
    pthread_cond_init(&f->done, NULL);
    int rc = pthread_create(&f->thread, NULL, flush_loop, f);
    if (rc) {
        sp_fail(err, "store.io", "cannot start the flusher thread: %s", strerror(rc));
        pthread_cond_destroy(&f->done);
        pthread_cond_destroy(&f->work);
        pthread_mutex_destroy(&f->mu);
        free(f);
        return NULL;
    }
    return f;
}

/* Under f->mu. */
static sp_store_rc flush_failure(const sp_flusher *f, sp_error *err)
{
    sp_fail(err, "store.io",
            "%s; what was committed since the last flush may be lost: stop this process and "
            "start it again, it resumes from what is on disk",
            f->why);
    return SP_STORE_CORRUPT;
}

sp_store_rc sp_flusher_failed(sp_flusher *f, sp_error *err)
{
    pthread_mutex_lock(&f->mu);
    sp_store_rc rc = f->failed ? flush_failure(f, err) : SP_STORE_OK;
    pthread_mutex_unlock(&f->mu);
    return rc;
}

uint64_t sp_flusher_committed(sp_flusher *f)
{
    pthread_mutex_lock(&f->mu);
    if (f->committed == f->flushed)
        f->oldest_ms = sp_mono_ms();
    uint64_t ticket = ++f->committed;
    /* a thread gathering wakes on its own timer; past FLUSH_EAGER it
     * flushes at once (a wake-up per commit cost two context switches) */
    if (!f->gathering || f->committed - f->flushed >= FLUSH_EAGER)
        pthread_cond_signal(&f->work);
    while (!f->failed && f->committed - f->flushed > SP_UNFLUSHED_MAX)
        pthread_cond_wait(&f->done, &f->mu);
    pthread_mutex_unlock(&f->mu);
    return ticket;
}

sp_store_rc sp_flusher_wait(sp_flusher *f, uint64_t ticket, sp_error *err)
{
    pthread_mutex_lock(&f->mu);
    bool waiting = !f->failed && f->flushed < ticket;
    f->waiters += waiting;
    if (waiting)
        pthread_cond_signal(&f->work); /* a waiter is flushed for at once */
    while (!f->failed && f->flushed < ticket)
        pthread_cond_wait(&f->done, &f->mu);
    f->waiters -= waiting;
    sp_store_rc rc = f->flushed >= ticket ? SP_STORE_OK : flush_failure(f, err);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

void sp_flusher_counts(sp_flusher *f, uint64_t *flushes, uint64_t *unflushed)
{
    pthread_mutex_lock(&f->mu);
    *flushes = f->flushes;
    *unflushed = f->committed - f->flushed;
    pthread_mutex_unlock(&f->mu);
}

void sp_flusher_confirm(sp_flusher *f)
{
    pthread_mutex_lock(&f->mu);
    if (!f->failed)
        f->flushed = f->committed;
    pthread_cond_broadcast(&f->done);
    pthread_mutex_unlock(&f->mu);
}

void sp_flusher_fail(sp_flusher *f, const char *why)
{
    pthread_mutex_lock(&f->mu);
    set_failed(f, why);
    pthread_cond_broadcast(&f->done);
    pthread_cond_signal(&f->work);
    pthread_mutex_unlock(&f->mu);
}

void sp_flusher_stop(sp_flusher *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->stop = true;
    pthread_cond_signal(&f->work);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->thread, NULL); /* it flushes what is still unflushed first */
    if (f->release)
        f->release(f->ctx);
    pthread_cond_destroy(&f->done);
    pthread_cond_destroy(&f->work);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
