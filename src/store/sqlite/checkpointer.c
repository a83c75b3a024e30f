/*
 * checkpointer.c - the thread that copies a store's write-ahead log back
 * into its database file (a checkpoint) on a connection of its own, while
 * the connection that committed goes on (docs/step-path.md, "Checkpoints").
 *
 * What it is for: a checkpoint reads the WAL's frames, writes their pages
 * into the database file and syncs both files. Run in the committing
 * connection's WAL hook, it stopped the engine's thread for all of that
 * every 4000 WAL pages: a fifth of that thread's time serving 200 runs.
 * The hook now asks this thread (sq_checkpointer_request) and returns.
 *
 * How it catches up: the committing connection goes on writing frames while
 * a checkpoint copies, and the WAL starts over (is reused from its
 * beginning) only when a transaction begins with every frame copied - but
 * an engine that serves many runs is inside a write transaction almost all
 * the time, and a PASSIVE checkpoint that copied the whole WAL finds it
 * grown again by then. So a request runs a PASSIVE checkpoint first, which
 * copies the bulk of the WAL beside the writer, then a FULL one, which
 * takes the write lock between two of the writer's transactions (trying
 * again every BUSY_STEP_US, for BUSY_MAX_MS at most) and copies the frames
 * written meanwhile: the next transaction then finds every frame copied
 * and starts the WAL over. The writer waits for that remainder
 * only (its own busy handler). Requests made while one runs are answered
 * by it. Should the WAL
 * still grow past SP_SQLITE_CHECKPOINT_INLINE_PAGES (the write lock was
 * never free, or a reader in another process held the frames), the
 * committing connection checkpoints in its own hook as before (driver.c).
 *
 * What it must never do: touch the committing connection (SQLite
 * connections belong to one thread at a time; this one has its own), hold
 * the write lock longer than the copy of what the PASSIVE checkpoint left,
 * wait for a lock past BUSY_MAX_MS, report a failed checkpoint (nothing
 * committed depends on it: a later request tries again), or outlive the
 * store's connection (driver.c stops it first, so that the last connection
 * to close still checkpoints and removes the WAL).
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "store/sqlite/sqlite.h"

#define BUSY_STEP_US 100
#define BUSY_MAX_MS 100

struct sq_checkpointer {
    pthread_mutex_t mu;
    pthread_cond_t work; /* a request, or stop */
    pthread_t thread;
    sqlite3 *db;          /* this thread's own connection */
    bool wanted, stop;
    uint64_t checkpoints; /* checkpoints run, of either mode (counters) */
};

/* The FULL checkpoint's busy handler: the write lock is free between
 * two of the writer's transactions, so try often, and not for long. */
static int busy_step(void *ctx, int tries)
{
    (void)ctx;
    if ((long)tries * BUSY_STEP_US >= BUSY_MAX_MS * 1000L)
        return 0;
    struct timespec ts = {0, BUSY_STEP_US * 1000L};
    nanosleep(&ts, NULL);
    return 1;
}

/* One request: the bulk beside the writer, then the rest with its lock,
 * so that the next transaction starts the WAL over. The checkpoints run. */
static uint64_t catch_up(sqlite3 *db)
{
    if (sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_PASSIVE, NULL, NULL) != SQLITE_OK)
        return 1; /* busy: another process checkpoints */
    sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_FULL, NULL, NULL);
    return 2;
}

static void *checkpoint_loop(void *arg)
{
    sq_checkpointer *k = arg;
    pthread_mutex_lock(&k->mu);
    for (;;) {
        while (!k->stop && !k->wanted)
            pthread_cond_wait(&k->work, &k->mu);
        if (k->stop)
            break;
        k->wanted = false;
        pthread_mutex_unlock(&k->mu);
        uint64_t runs = catch_up(k->db);
        pthread_mutex_lock(&k->mu);
        k->checkpoints += runs;
        k->wanted = false; /* what was asked meanwhile, it copied */
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

/* The connection, with its WAL open: a connection opens the WAL at its
 * first read, and a checkpoint before it would do nothing. */
static sqlite3 *open_own(const char *path, sp_error *err)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                             sp_sqlite_vfs_ready() ? SP_SQLITE_VFS : NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_busy_handler(db, busy_step, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        sp_sqlite_map(db, rc, "opening the checkpointer's connection", err);
        sqlite3_close_v2(db);
        return NULL;
    }
    return db;
}

sq_checkpointer *sq_checkpointer_start(const char *path, sp_error *err)
{
    sq_checkpointer *k = calloc(1, sizeof *k);
    if (!k) {
        sp_oom(err);
        return NULL;
    }
    if (!(k->db = open_own(path, err))) {
        free(k);
        return NULL;
    }
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->work, NULL);
    int rc = pthread_create(&k->thread, NULL, checkpoint_loop, k);
    if (rc) {
        sp_fail(err, "store.io", "sqlite: cannot start the checkpointer thread");
        pthread_cond_destroy(&k->work);
        pthread_mutex_destroy(&k->mu);
        sqlite3_close_v2(k->db);
        free(k);
        return NULL;
    }
    return k;
}

void sq_checkpointer_request(sq_checkpointer *k)
{
    pthread_mutex_lock(&k->mu);
    k->wanted = true;
    pthread_cond_signal(&k->work);
    pthread_mutex_unlock(&k->mu);
}

uint64_t sq_checkpointer_count(sq_checkpointer *k)
{
    pthread_mutex_lock(&k->mu);
    uint64_t n = k->checkpoints;
    pthread_mutex_unlock(&k->mu);
    return n;
}

void sq_checkpointer_stop(sq_checkpointer *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    k->stop = true;
    pthread_cond_signal(&k->work);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->thread, NULL); /* a checkpoint it runs ends first */
    sqlite3_close_v2(k->db);
    pthread_cond_destroy(&k->work);
    pthread_mutex_destroy(&k->mu);
    free(k);
}
