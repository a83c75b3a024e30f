/*
 * checkpoint.c - the WAL checkpoint off the commit path (docs/step-path.md).
 *
 * What it is for: SQLite's auto-checkpoint runs inside the COMMIT that
 * grows the WAL past 1000 pages: that commit copies every changed page into
 * the database file and syncs it, a latency spike every few dozen steps
 * that the step pays on its own thread. Here a writer's WAL hook wakes a
 * thread with a connection of its own instead, which checkpoints PASSIVE
 * (never blocking a writer or a reader) while the writer goes on; the
 * writer restarts the WAL once everything in it was copied. The thread is
 * made the first time the WAL reaches CHECKPOINT_PAGES, so a short-lived
 * writer (a CLI command) never has one. The writer's hook still
 * checkpoints itself past BACKSTOP_PAGES, should the thread fall behind.
 *
 * What it must never do: use the writer's connection from its thread,
 * checkpoint in a mode that waits for writers or readers, or keep the
 * store from closing (close stops and joins it).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/sqlite.h"

enum {
    CHECKPOINT_PAGES = 1000, /* SQLite's own auto-checkpoint size */
    BACKSTOP_PAGES = 16000,  /* the writer checkpoints itself past this (64 MiB) */
};

struct sq_checkpointer {
    char *path;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool started, failed, wanted, stop;
    int checked; /* WAL pages the last checkpoint went through (0 after a restart) */
};

sq_checkpointer *sq_checkpointer_new(const char *path)
{
    sq_checkpointer *k = calloc(1, sizeof *k);
    if (k && !(k->path = strdup(path))) {
        free(k);
        return NULL;
    }
    if (k) {
        pthread_mutex_init(&k->mu, NULL);
        pthread_cond_init(&k->cv, NULL);
    }
    return k;
}

static sqlite3 *open_own(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        sqlite3_close_v2(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 100);
    sqlite3_exec(db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
    return db;
}

/* Wait until a checkpoint is wanted; false when the thread is to stop. */
static bool next_round(sq_checkpointer *k)
{
    pthread_mutex_lock(&k->mu);
    while (!k->wanted && !k->stop)
        pthread_cond_wait(&k->cv, &k->mu);
    bool go = !k->stop;
    k->wanted = false;
    pthread_mutex_unlock(&k->mu);
    return go;
}

static void *run(void *arg)
{
    sq_checkpointer *k = arg;
    sqlite3 *db = open_own(k->path);
    while (db && next_round(k)) {
        int log = 0, copied = 0; /* busy (another checkpoint runs): the next round */
        if (sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_PASSIVE, &log, &copied) ==
            SQLITE_OK) {
            pthread_mutex_lock(&k->mu);
            k->checked = log;
            pthread_mutex_unlock(&k->mu);
        }
    }
    if (!db) { /* no connection of its own: the writer checkpoints itself */
        pthread_mutex_lock(&k->mu);
        k->failed = true;
        pthread_mutex_unlock(&k->mu);
    }
    sqlite3_close_v2(db);
    return NULL;
}

/* Under k->mu: wake the thread (made now if it was not); false when there
 * is none to wake. */
static bool wake(sq_checkpointer *k)
{
    if (!k->started && !k->failed) {
        k->started = pthread_create(&k->thread, NULL, run, k) == 0;
        k->failed = !k->started;
    }
    if (k->failed)
        return false;
    k->wanted = true;
    pthread_cond_signal(&k->cv);
    return true;
}

/* Under k->mu: the WAL grew by CHECKPOINT_PAGES since the last checkpoint
 * went through it (it restarted when it is smaller than that). */
static bool due(sq_checkpointer *k, int pages)
{
    if (pages < k->checked)
        k->checked = 0;
    return pages - k->checked >= CHECKPOINT_PAGES;
}

int sq_checkpointer_hook(void *arg, sqlite3 *db, const char *schema, int pages)
{
    sq_checkpointer *k = arg;
    pthread_mutex_lock(&k->mu);
    bool woken = !due(k, pages) || wake(k);
    pthread_mutex_unlock(&k->mu);
    if (!woken || pages >= BACKSTOP_PAGES) /* what auto-checkpoint would have done */
        sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    return SQLITE_OK;
}

void sq_checkpointer_free(sq_checkpointer *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    k->stop = true;
    pthread_cond_signal(&k->cv);
    bool started = k->started;
    pthread_mutex_unlock(&k->mu);
    if (started)
        pthread_join(k->thread, NULL);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    free(k->path);
    free(k);
}
