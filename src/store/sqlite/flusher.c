/*
 * flusher.c - the thread that makes a connection's committed WAL durable
 * while the committing thread goes on (docs/step-path.md, "Commit, then
 * flush beside the next step").
 *
 * What it is for: a durable commit on this machine is ~0.1-0.2 ms of CPU
 * and 0.3-0.5 ms of waiting in fdatasync(2), and a sequential step used to
 * wait for it before its next step could begin. A commit the driver marks
 * (sq_commit_deferred in driver.c, through the VFS's one deferred sync) is
 * handed here as a ticket: this thread syncs the -wal file on a descriptor
 * of its own and then counts every commit written before that sync as
 * flushed. One sync answers every commit made while the one before it ran
 * (the flushes group themselves). The caller asks whether, or waits until,
 * its ticket is flushed before it lets anything of that commit out of the
 * process.
 *
 * Failpoints: store.flush.before-sync and .after-sync, in this thread, around
 * each sync (a crash of the process at either keeps every commit: they are
 * in the file; only a power loss before the sync could take them back).
 *
 * What it must never do: call into SQLite (only fdatasync on its own
 * descriptor: the connection belongs to the committing thread); count a
 * ticket flushed before a sync that began after its commit returned; let
 * more than SQ_UNFLUSHED_MAX commits wait unflushed; go on after a failed
 * sync (Linux may have dropped the pages it could not write: every later
 * wait answers the failure, and the process must start again from what is
 * on disk).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/failpoint.h"
#include "store/sqlite/sqlite.h"

struct sq_flusher {
    pthread_mutex_t mu;
    pthread_cond_t work; /* a ticket to flush, or stop */
    pthread_cond_t done; /* a sync returned */
    pthread_t thread;
    int fd;             /* the -wal file, read-only: fdatasync needs no more */
    sq_sync_fn sync;    /* fdatasync, or a test's */
    uint64_t committed; /* the last ticket handed out */
    uint64_t flushed;   /* every ticket up to this one is on disk */
    uint64_t syncs;     /* fdatasync calls that returned */
    int failed;         /* errno of a failed sync; sticky */
    bool stop;
};

static void *flush_loop(void *arg)
{
    sq_flusher *f = arg;
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (!f->stop && !f->failed && f->flushed == f->committed)
            pthread_cond_wait(&f->work, &f->mu);
        if (f->failed || f->flushed == f->committed) /* stopping with nothing left */
            break;
        uint64_t target = f->committed; /* every commit written before the sync begins */
        pthread_mutex_unlock(&f->mu);
        sp_failpoint("store.flush.before-sync"); /* committed, maybe not on disk */
        int rc = f->sync(f->fd);
        int error = rc ? errno : 0;
        sp_failpoint("store.flush.after-sync"); /* on disk, nothing told yet */
        pthread_mutex_lock(&f->mu);
        if (rc && error != EINTR)
            f->failed = error;
        else if (!rc)
            f->flushed = target;
        f->syncs += !rc;
        pthread_cond_broadcast(&f->done);
    }
    pthread_cond_broadcast(&f->done);
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

sq_flusher *sq_flusher_start(const char *wal_path, sq_sync_fn sync, sp_error *err)
{
    sq_flusher *f = calloc(1, sizeof *f);
    if (!f) {
        sp_oom(err);
        return NULL;
    }
    f->sync = sync ? sync : fdatasync;
    f->fd = open(wal_path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
        sp_fail(err, "store.io", "sqlite: cannot open %s to flush it: %s", wal_path,
                strerror(errno));
        free(f);
        return NULL;
    }
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->work, NULL);
    pthread_cond_init(&f->done, NULL);
    int rc = pthread_create(&f->thread, NULL, flush_loop, f);
    if (rc) {
        sp_fail(err, "store.io", "sqlite: cannot start the flusher thread: %s", strerror(rc));
        close(f->fd);
        pthread_cond_destroy(&f->done);
        pthread_cond_destroy(&f->work);
        pthread_mutex_destroy(&f->mu);
        free(f);
        return NULL;
    }
    return f;
}

/* Under f->mu. */
static sp_store_rc flush_failure(const sq_flusher *f, sp_error *err)
{
    sp_fail(err, "store.io",
            "sqlite: the write-ahead log could not be flushed to disk (%s); what was "
            "committed since the last flush may be lost: stop this process and start it "
            "again, it resumes from what is on disk",
            strerror(f->failed));
    return SP_STORE_CORRUPT;
}

sp_store_rc sq_flusher_failed(sq_flusher *f, sp_error *err)
{
    pthread_mutex_lock(&f->mu);
    sp_store_rc rc = f->failed ? flush_failure(f, err) : SP_STORE_OK;
    pthread_mutex_unlock(&f->mu);
    return rc;
}

uint64_t sq_flusher_committed(sq_flusher *f)
{
    pthread_mutex_lock(&f->mu);
    uint64_t ticket = ++f->committed;
    pthread_cond_signal(&f->work);
    while (!f->failed && f->committed - f->flushed > SQ_UNFLUSHED_MAX)
        pthread_cond_wait(&f->done, &f->mu);
    pthread_mutex_unlock(&f->mu);
    return ticket;
}

sp_store_rc sq_flusher_wait(sq_flusher *f, uint64_t ticket, sp_error *err)
{
    pthread_mutex_lock(&f->mu);
    while (!f->failed && f->flushed < ticket)
        pthread_cond_wait(&f->done, &f->mu);
    sp_store_rc rc = f->flushed >= ticket ? SP_STORE_OK : flush_failure(f, err);
    pthread_mutex_unlock(&f->mu);
    return rc;
}

void sq_flusher_counts(sq_flusher *f, uint64_t *syncs, uint64_t *unflushed)
{
    pthread_mutex_lock(&f->mu);
    *syncs = f->syncs;
    *unflushed = f->committed - f->flushed;
    pthread_mutex_unlock(&f->mu);
}

void sq_flusher_stop(sq_flusher *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    f->stop = true;
    pthread_cond_signal(&f->work);
    pthread_mutex_unlock(&f->mu);
    pthread_join(f->thread, NULL); /* it syncs what is still unflushed first */
    close(f->fd);
    pthread_cond_destroy(&f->done);
    pthread_cond_destroy(&f->work);
    pthread_mutex_destroy(&f->mu);
    free(f);
}
