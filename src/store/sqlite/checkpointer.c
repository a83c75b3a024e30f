/*
 * checkpointer.c - the bulk of a WAL checkpoint, on a thread and an SQLite
 * connection of its own (docs/step-path.md, "Checkpoints").
 *
 * What it is for: the commit that takes the WAL past the mark
 * (SP_SQLITE_CHECKPOINT_PAGES) hands the checkpoint here (driver.c's
 * checkpoint_hook) instead of copying ~16 MiB of pages into the database
 * file on the engine's thread (5-8 % of a step's CPU). The writer goes on
 * committing meanwhile; once a pass is done, the writer's hook runs a last,
 * short checkpoint of the frames appended since, itself: only a checkpoint
 * that reaches the WAL's end lets the next write start the WAL over, and a
 * background one rarely does while the writer appends.
 *
 * What it must never do: checkpoint in any mode but PASSIVE (it never waits
 * for a reader or a writer), report a failure (a checkpoint changes nothing
 * committed; the writer's hook checkpoints itself after a failed pass), or
 * use its connection after sq_checkpointer_stop.
 */
#include <pthread.h>
#include <stdlib.h>

#include "store/sqlite/sqlite.h"

typedef enum ckpt_state {
    CKPT_IDLE,    /* nothing asked */
    CKPT_ASKED,   /* a pass is asked, not begun */
    CKPT_RUNNING, /* a pass runs */
    CKPT_DONE,    /* a pass ended since the last ask (complete or not) */
} ckpt_state;

struct sq_checkpointer {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    sqlite3 *db; /* its own connection: used by its thread only */
    ckpt_state state;
    bool stop;
};

static void *checkpoint_loop(void *arg)
{
    sq_checkpointer *k = arg;
    pthread_mutex_lock(&k->mu);
    for (;;) {
        while (!k->stop && k->state != CKPT_ASKED)
            pthread_cond_wait(&k->wake, &k->mu);
        if (k->stop)
            break;
        k->state = CKPT_RUNNING;
        pthread_mutex_unlock(&k->mu);
        /* its failure (a busy checkpoint lock, an I/O error) leaves the
         * WAL as it was: the writer's hook checkpoints it itself */
        sqlite3_wal_checkpoint_v2(k->db, "main", SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        pthread_mutex_lock(&k->mu);
        k->state = CKPT_DONE; /* nothing else moves a running pass */
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

/* The checkpointer's connection: the store's file through the store's VFS,
 * syncing as the store does, never checkpointing on its own (no writes, no
 * checkpoint at close). */
static sqlite3 *open_connection(const char *path)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                             sp_sqlite_vfs_ready() ? SP_SQLITE_VFS : NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_close_v2(db);
        return NULL;
    }
    return db;
}

sq_checkpointer *sq_checkpointer_start(const char *path)
{
    sq_checkpointer *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    if (!(k->db = open_connection(path))) {
        free(k);
        return NULL;
    }
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->wake, NULL);
    if (pthread_create(&k->thread, NULL, checkpoint_loop, k) != 0) {
        pthread_cond_destroy(&k->wake);
        pthread_mutex_destroy(&k->mu);
        sqlite3_close_v2(k->db);
        free(k);
        return NULL;
    }
    return k;
}

sq_checkpoint_turn sq_checkpointer_turn(sq_checkpointer *k)
{
    pthread_mutex_lock(&k->mu);
    sq_checkpoint_turn turn = SQ_CHECKPOINT_BACKGROUND;
    if (k->state == CKPT_IDLE) {
        k->state = CKPT_ASKED;
        pthread_cond_signal(&k->wake);
    } else if (k->state == CKPT_DONE) {
        k->state = CKPT_IDLE;
        turn = SQ_CHECKPOINT_WRITER;
    }
    pthread_mutex_unlock(&k->mu);
    return turn;
}

void sq_checkpointer_forget(sq_checkpointer *k)
{
    pthread_mutex_lock(&k->mu);
    if (k->state == CKPT_DONE)
        k->state = CKPT_IDLE;
    pthread_mutex_unlock(&k->mu);
}

void sq_checkpointer_stop(sq_checkpointer *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    k->stop = true;
    pthread_cond_signal(&k->wake);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->thread, NULL);
    pthread_cond_destroy(&k->wake);
    pthread_mutex_destroy(&k->mu);
    sqlite3_close_v2(k->db);
    free(k);
}
