/*
 * driver.c - the SQLite driver under the shared store logic (store.md §4).
 *
 * What it is for: one connection per store instance, serialized by a mutex
 * that is held from begin() to commit()/rollback(), so the public sp_store_*
 * functions may be called from several threads on one instance. WAL,
 * synchronous=FULL, foreign keys on, a checkpoint every 4000 WAL pages, 5 s
 * busy timeout (retried every 50 us to 1 ms, not SQLite's up-to-100 ms
 * sleeps), BEGIN IMMEDIATE for writes, statements prepared once per SQL text
 * (SQLITE_PREPARE_PERSISTENT) and every SQLite failure mapped to a store
 * failure kind with a stable code.
 *
 * Files: a new store file is created 0600 (its -wal and -shm follow); an
 * existing one that others may read is refused unless the caller allows it;
 * what a file holds is read before any pragma writes to it.
 *
 * What it must never do: retry on its own, run a statement outside a
 * transaction begun here, keep a statement un-reset between calls, or report
 * a commit as failed-and-absent when SQLite cannot know (an I/O error while
 * committing is unknown-commit).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store/sqlite/sqlite.h"

typedef struct sq_conn {
    sqlite3 *db;
    pthread_mutex_t mu;
    sp_clock clock;
    sp_db_cache statements; /* sqlite3_stmt by SQL text */
    int checkpoint_at;      /* WAL pages at which a commit next checkpoints */
    sqlite3_file *wal;      /* the -wal file while a deferred commit runs, else NULL */
    bool no_flusher;        /* the flusher could not start: every commit flushes itself */
    sq_checkpointer *checkpointer; /* started by the first checkpoint, NULL before */
    bool no_checkpointer;          /* ... it could not start: the hook checkpoints itself */
    /* started by the first deferred commit; read by other threads' counters */
    _Atomic(sp_flusher *) flusher;
} sq_conn;

/* ---- error mapping ---- */

sp_store_rc sp_sqlite_map(sqlite3 *db, int rc, const char *what, sp_error *err)
{
    const char *detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    const char *code = "store.io";
    sp_store_rc kind = SP_STORE_UNAVAILABLE;
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        code = "store.busy";
        break;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        code = "store.corrupt", kind = SP_STORE_CORRUPT;
        break;
    case SQLITE_CONSTRAINT:
        code = "store.constraint", kind = SP_STORE_CONFLICT;
        break;
    case SQLITE_NOMEM:
        code = "runtime.out-of-memory";
        break;
    case SQLITE_TOOBIG:
        code = "store.too-big", kind = SP_STORE_QUOTA;
        break;
    case SQLITE_ERROR:
    case SQLITE_MISUSE:
    case SQLITE_RANGE:
        code = "store.sql", kind = SP_STORE_INCOMPATIBLE;
        break;
    default:
        break;
    }
    sp_fail(err, code, "sqlite: %s: %s", what, detail);
    return kind;
}

/* ---- the statement cache (dbutil.c) ---- */

static void finalize_statement(void *stmt) { sqlite3_finalize(stmt); }

static int statement(sq_conn *c, const char *sql, sqlite3_stmt **out)
{
    size_t len = strlen(sql);
    if ((*out = sp_db_cache_get(&c->statements, sql, len)))
        return SQLITE_OK;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(st);
        return rc;
    }
    if (!sp_db_cache_put(&c->statements, sql, len, st)) {
        sqlite3_finalize(st);
        return SQLITE_NOMEM;
    }
    *out = st;
    return SQLITE_OK;
}

/* ---- statements ---- */

static int bind(sqlite3_stmt *st, const sp_db_val *params, size_t n)
{
    int rc = SQLITE_OK;
    for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
        const sp_db_val *p = &params[i];
        int at = (int)i + 1;
        switch (p->type) {
        case SP_DB_INT:
            rc = sqlite3_bind_int64(st, at, p->i);
            break;
        case SP_DB_TEXT:
            rc = sqlite3_bind_text64(st, at, p->s ? p->s : "", p->s ? p->len : 0, SQLITE_STATIC,
                                     SQLITE_UTF8);
            break;
        case SP_DB_BLOB:
            rc = p->len ? sqlite3_bind_blob64(st, at, p->s, p->len, SQLITE_STATIC)
                        : sqlite3_bind_zeroblob(st, at, 0);
            break;
        default:
            rc = sqlite3_bind_null(st, at);
            break;
        }
    }
    return rc;
}

static bool read_cell(sqlite3_stmt *st, int col, sp_db_val *v)
{
    *v = (sp_db_val){SP_DB_NULL, 0, NULL, 0};
    int type = sqlite3_column_type(st, col);
    if (type == SQLITE_NULL)
        return true;
    if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) {
        v->type = SP_DB_INT;
        v->i = sqlite3_column_int64(st, col);
        return true;
    }
    const void *src = type == SQLITE_BLOB ? sqlite3_column_blob(st, col)
                                          : (const void *)sqlite3_column_text(st, col);
    size_t len = (size_t)sqlite3_column_bytes(st, col);
    char *copy = malloc(len + 1);
    if (!copy)
        return false;
    if (len)
        memcpy(copy, src, len);
    copy[len] = '\0';
    v->type = type == SQLITE_BLOB ? SP_DB_BLOB : SP_DB_TEXT;
    v->s = copy;
    v->len = len;
    return true;
}

static int read_row(sqlite3_stmt *st, sp_db_rows *out, size_t *cap)
{
    size_t ncols = (size_t)sqlite3_column_count(st);
    if (out->nrows == *cap) {
        size_t grow = *cap ? *cap * 2 : 8;
        sp_db_val *cells = realloc(out->cells, grow * ncols * sizeof *cells + 1);
        if (!cells)
            return SQLITE_NOMEM;
        out->cells = cells;
        *cap = grow;
    }
    out->ncols = ncols;
    sp_db_val *row = &out->cells[out->nrows * ncols];
    for (size_t i = 0; i < ncols; i++)
        if (!read_cell(st, (int)i, &row[i])) {
            for (size_t j = 0; j < i; j++)
                free((char *)row[j].s);
            return SQLITE_NOMEM;
        }
    out->nrows++;
    return SQLITE_OK;
}

static int step_all(sqlite3_stmt *st, sp_db_rows *out)
{
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (out && (rc = read_row(st, out, &cap)) != SQLITE_OK)
            return rc;
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static sp_store_rc sq_query(void *conn, const char *sql, const sp_db_val *params, size_t nparams,
                            sp_db_rows *out, int64_t *changes, sp_error *err)
{
    sq_conn *c = conn;
    sqlite3_stmt *st = NULL;
    if (out)
        *out = (sp_db_rows){0};
    int rc = statement(c, sql, &st);
    if (rc == SQLITE_OK)
        rc = bind(st, params, nparams);
    if (rc == SQLITE_OK)
        rc = step_all(st, out);
    if (st) {
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    if (rc != SQLITE_OK) {
        sp_db_rows_free(out);
        return sp_sqlite_map(c->db, rc, "query", err);
    }
    if (changes)
        *changes = sqlite3_changes64(c->db);
    return SP_STORE_OK;
}

static int exec_cached(sq_conn *c, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int rc = statement(c, sql, &st);
    if (rc == SQLITE_OK)
        rc = step_all(st, NULL);
    if (st)
        sqlite3_reset(st);
    return rc;
}

/* SQLite's own busy handler sleeps 1, 2, 5, ... up to 100 ms between
 * tries: with several workers on one file each would lose most of a batch's
 * time asleep after the lock was free again. This one tries again after
 * 50 us, doubling to at most 1 ms, for SP_SQLITE_BUSY_TIMEOUT_MS in all
 * (then store.busy), or for the milliseconds `ctx` points to. */
static int busy_wait(void *ctx, int tries)
{
    const unsigned budget_ms = ctx ? *(const unsigned *)ctx : SP_SQLITE_BUSY_TIMEOUT_MS;
    /* steps of 50, 100, 200, 400, 800 us, then 1 ms: slept so far, and now */
    enum { DOUBLINGS = 5, FIRST_US = 50, MAX_US = 1000 };
    uint64_t n = tries < 0 ? 0 : (uint64_t)tries;
    uint64_t slept = n <= DOUBLINGS ? FIRST_US * ((UINT64_C(1) << n) - 1)
                                    : FIRST_US * ((1u << DOUBLINGS) - 1) + MAX_US * (n - DOUBLINGS);
    uint64_t step = n < DOUBLINGS ? FIRST_US << n : MAX_US;
    if (slept >= (uint64_t)budget_ms * 1000u)
        return 0;
    struct timespec ts = {0, (long)step * 1000L};
    nanosleep(&ts, NULL);
    return 1;
}

/* ---- transactions ---- */

static sp_store_rc sq_begin(void *conn, sp_db_tx mode, sp_error *err)
{
    sq_conn *c = conn;
    bool write = mode == SP_DB_WRITE; /* a scan is a plain read: SQLite has no row locks */
    pthread_mutex_lock(&c->mu);
    if (mode == SP_DB_ONE) /* one statement: SQLite's autocommit read */
        return SP_STORE_OK;
    int rc = exec_cached(c, write ? "BEGIN IMMEDIATE" : "BEGIN");
    if (rc == SQLITE_OK)
        return SP_STORE_OK;
    sp_store_rc kind = sp_sqlite_map(c->db, rc, write ? "begin write" : "begin read", err);
    pthread_mutex_unlock(&c->mu);
    return kind;
}

static void end_tx(sq_conn *c)
{
    if (!sqlite3_get_autocommit(c->db))
        exec_cached(c, "ROLLBACK");
    pthread_mutex_unlock(&c->mu);
}

/* COMMIT; the transaction stays the caller's (end_tx). */
static sp_store_rc commit_statement(sq_conn *c, sp_error *err)
{
    int rc = exec_cached(c, "COMMIT");
    sp_store_rc kind = SP_STORE_OK;
    if (rc != SQLITE_OK) {
        kind = sp_sqlite_map(c->db, rc, "commit", err);
        if ((rc & 0xff) == SQLITE_IOERR || (rc & 0xff) == SQLITE_FULL) {
            sp_fail(err, "store.unknown-commit", "sqlite: commit: %s", sqlite3_errmsg(c->db));
            kind = SP_STORE_UNKNOWN_COMMIT;
        }
    }
    return kind;
}

static sp_store_rc sq_commit(void *conn, sp_error *err)
{
    sp_store_rc kind = commit_statement(conn, err);
    end_tx(conn);
    return kind;
}

static void sq_rollback(void *conn) { end_tx(conn); }

/* The connection's -wal file, or NULL. */
static sqlite3_file *conn_wal(sq_conn *c)
{
    sqlite3_file *wal = NULL;
    if (sqlite3_file_control(c->db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal) != SQLITE_OK)
        return NULL;
    return wal;
}

/* ---- the flusher of the -wal file (src/store/flusher.h) ---- */

typedef struct wal_sync {
    int fd;          /* the -wal file, read-only: fdatasync needs no more */
    sq_sync_fn sync; /* fdatasync, or a test's */
} wal_sync;

static sp_flush_result wal_flush(void *ctx, char *why, size_t cap)
{
    wal_sync *w = ctx;
    if (w->sync(w->fd) == 0)
        return SP_FLUSH_DONE;
    if (errno == EINTR)
        return SP_FLUSH_AGAIN;
    snprintf(why, cap, "sqlite: the write-ahead log could not be flushed to disk (%s)",
             strerror(errno));
    return SP_FLUSH_FAILED;
}

static void wal_release(void *ctx)
{
    wal_sync *w = ctx;
    close(w->fd);
    free(w);
}

sp_flusher *sq_flusher_start(const char *wal_path, sq_sync_fn sync, sp_error *err)
{
    wal_sync *w = malloc(sizeof *w);
    if (!w) {
        sp_oom(err);
        return NULL;
    }
    w->sync = sync ? sync : fdatasync;
    w->fd = open(wal_path, O_RDONLY | O_CLOEXEC);
    if (w->fd < 0) {
        sp_fail(err, "store.io", "sqlite: cannot open %s to flush it: %s", wal_path,
                strerror(errno));
        free(w);
        return NULL;
    }
    sp_flusher *f = sp_flusher_start(wal_flush, wal_release, w, err);
    if (!f)
        wal_release(w);
    return f;
}

/* The flusher, started on first use; NULL when it cannot be (every commit
 * then flushes itself: not tried again). */
static sp_flusher *flusher_of(sq_conn *c)
{
    sp_flusher *f = atomic_load(&c->flusher);
    if (f || c->no_flusher)
        return f;
    const char *wal = sqlite3_filename_wal(sqlite3_db_filename(c->db, "main"));
    sp_error ignored = {0};
    f = wal ? sq_flusher_start(wal, NULL, &ignored) : NULL;
    sp_error_clear(&ignored);
    c->no_flusher = f == NULL;
    atomic_store(&c->flusher, f);
    return f;
}

/* COMMIT with its WAL sync left to the flusher; when it could not be left
 * (not this VFS's file, no flusher, the sync after a new WAL header) the
 * commit flushed itself and the ticket is 0. After a failed flush nothing
 * more is committed. */
static sp_store_rc sq_commit_deferred(void *conn, uint64_t *ticket, sp_error *err)
{
    sq_conn *c = conn;
    *ticket = 0;
    sp_flusher *started = atomic_load(&c->flusher);
    if (started && sp_flusher_failed(started, err) != SP_STORE_OK) {
        end_tx(c);
        return SP_STORE_CORRUPT;
    }
    sp_flusher *f = flusher_of(c);
    sqlite3_file *wal = f ? conn_wal(c) : NULL;
    c->wal = wal && sp_sqlite_vfs_defer_sync(wal, true) ? wal : NULL; /* this VFS's file */
    bool deferred = false;
    sp_store_rc rc = commit_statement(c, err);
    if (c->wal) {
        deferred = sp_sqlite_vfs_sync_deferred(c->wal);
        sp_sqlite_vfs_defer_sync(c->wal, false);
        c->wal = NULL;
    }
    end_tx(c);
    if (deferred) /* even for a failed COMMIT: what it wrote is synced like the rest */
        *ticket = sp_flusher_committed(f);
    return rc;
}

static void sq_flush_counts(void *conn, uint64_t *flushes, uint64_t *unflushed)
{
    sq_conn *c = conn;
    *flushes = *unflushed = 0;
    sp_flusher *f = atomic_load(&c->flusher);
    if (f)
        sp_flusher_counts(f, flushes, unflushed);
}

static sp_store_rc sq_wait_flushed(void *conn, uint64_t ticket, sp_error *err)
{
    sq_conn *c = conn;
    sp_flusher *f = atomic_load(&c->flusher);
    return ticket && f ? sp_flusher_wait(f, ticket, err) : SP_STORE_OK;
}

static uint64_t sq_now(void *conn)
{
    sq_conn *c = conn;
    return c->clock.now_ms(c->clock.ctx);
}

static void sq_close(void *conn)
{
    sq_conn *c = conn;
    if (!c)
        return;
    sp_flusher_stop(atomic_load(&c->flusher)); /* committed is on disk before the close */
    sq_checkpointer_stop(c->checkpointer);
    sp_db_cache_clear(&c->statements);
    sqlite3_close_v2(c->db);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static const sp_db_driver SQLITE_DRIVER = {
    .name = "sqlite",
    .dialect = {.for_update = "",
                .skip_locked = "",
                .unindexed = "+",
                .run_ready = SP_DB_RUN_READY},
    .one_writer = true,
    .begin = sq_begin,
    .commit = sq_commit,
    .commit_deferred = sq_commit_deferred,
    .wait_flushed = sq_wait_flushed,
    .flush_counts = sq_flush_counts,
    .rollback = sq_rollback,
    .query = sq_query,
    .now_ms = sq_now,
    .close = sq_close,
};

/* ---- opening ---- */

enum { WAL_SWITCH_TRIES = 100, WAL_SWITCH_SLEEP_MS = 50 };

/* journal_mode answers the mode it got; anything but WAL is refused (several
 * processes share the file, and readers must not block the writer). */
static sp_store_rc wal(sqlite3 *db, sp_error *err)
{
    int rc = SQLITE_BUSY;
    /* Changing the journal mode needs the file alone; a process creating
     * the same store at this moment answers busy at once, without the busy
     * handler: a bounded wait (opening only, never a store operation). */
    for (int try_ = 0; (rc & 0xff) == SQLITE_BUSY && try_ < WAL_SWITCH_TRIES; try_++) {
        if (try_)
            sqlite3_sleep(WAL_SWITCH_SLEEP_MS);
        sqlite3_stmt *st = NULL;
        rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st, NULL);
        if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *mode = (const char *)sqlite3_column_text(st, 0);
            rc = mode && strcmp(mode, "wal") == 0 ? SQLITE_OK : -1;
        }
        sqlite3_finalize(st);
    }
    if (rc == -1) {
        sp_fail(err, "store.io", "sqlite: the store cannot use WAL journaling here");
        return SP_STORE_UNAVAILABLE;
    }
    return rc == SQLITE_OK ? SP_STORE_OK : sp_sqlite_map(db, rc, "journal_mode", err);
}

/* The checkpointer, started on first use; NULL when it cannot be (not tried
 * again). */
static sq_checkpointer *checkpointer_of(sq_conn *c)
{
    if (!c->checkpointer && !c->no_checkpointer) {
        c->checkpointer = sq_checkpointer_start(sqlite3_db_filename(c->db, "main"));
        c->no_checkpointer = c->checkpointer == NULL;
    }
    return c->checkpointer;
}

/* A WAL this many times the mark is checkpointed by the writer, whatever
 * the checkpointer does: the WAL's bound when it cannot keep up. */
#define CHECKPOINT_WRITER_FACTOR 4

/* The checkpoint the WAL needs is the checkpointer's (asked now, or still
 * running): the writer leaves it. Once a pass ended, the writer's own
 * checkpoint copies what was appended since (few pages) and can reach the
 * WAL's end, which a background pass rarely does while the writer appends;
 * reaching it is what lets the next write start the WAL over. */
static bool handed_over(sq_conn *c, int pages)
{
    if (pages >= SP_SQLITE_CHECKPOINT_PAGES * CHECKPOINT_WRITER_FACTOR)
        return false;
    sq_checkpointer *k = checkpointer_of(c);
    return k && sq_checkpointer_turn(k) == SQ_CHECKPOINT_BACKGROUND;
}

/* The connection's WAL hook, in place of SQLite's automatic checkpoint
 * (the hook SQLite installs otherwise): after a commit that left the WAL at
 * SP_SQLITE_CHECKPOINT_PAGES or more, copy it back (PASSIVE: never waits for
 * a reader). When a reader in another worker process still used the WAL's
 * frames, that checkpoint stops at the reader's snapshot and the WAL cannot
 * start over; SQLite's own hook then checkpointed after every commit, and
 * each time wrote the pages that commit changed into the database file again
 * (two workers on one file wrote 2.4 times the database pages of one). Here
 * the next try waits for SP_SQLITE_CHECKPOINT_RETRY_PAGES more pages. The
 * bulk of each checkpoint is the checkpointer's (handed_over); the hook's
 * own is the short rest. Runs after the commit is written and its lock
 * released; its failure changes nothing committed, so it is not reported (a
 * later commit tries again).
 *
 * Workers in several processes take turns at the write lock: each begins
 * its transaction as soon as the other's commit released the lock, before
 * that commit's checkpoint, so when a writer begins the WAL is never copied
 * to its end and no writer can start it over - it grew past 140,000 pages
 * (580 MB) in a run of two worker processes. Past CHECKPOINT_WRITER_FACTOR
 * x the mark the hook's checkpoint is therefore RESTART: it takes the write
 * lock, copies the rest, waits until no reader uses the WAL (at most
 * SP_SQLITE_RESTART_WAIT_MS), and the next commit starts the WAL over.
 * A worker alone never gets there (its own checkpoints restart the WAL). */
static int checkpoint_hook(void *ctx, sqlite3 *db, const char *schema, int pages)
{
    sq_conn *c = ctx;
    if (c->wal) /* inside a deferred commit: a checkpoint's syncs are never deferred */
        sp_sqlite_vfs_defer_sync(c->wal, false);
    if (pages < SP_SQLITE_CHECKPOINT_PAGES) { /* the WAL started over */
        c->checkpoint_at = SP_SQLITE_CHECKPOINT_PAGES;
        if (c->checkpointer)
            sq_checkpointer_forget(c->checkpointer);
    }
    if (pages < c->checkpoint_at || handed_over(c, pages))
        return SQLITE_OK;
    bool bound = pages >= SP_SQLITE_CHECKPOINT_PAGES * CHECKPOINT_WRITER_FACTOR;
    static const unsigned restart_wait_ms = SP_SQLITE_RESTART_WAIT_MS;
    if (bound)
        sqlite3_busy_handler(db, busy_wait, (void *)&restart_wait_ms);
    int in_wal = -1, copied = -1;
    int rc = sqlite3_wal_checkpoint_v2(
        db, schema, bound ? SQLITE_CHECKPOINT_RESTART : SQLITE_CHECKPOINT_PASSIVE, &in_wal,
        &copied);
    if (bound)
        sqlite3_busy_handler(db, busy_wait, NULL);
    bool complete = rc == SQLITE_OK && copied >= in_wal;
    int retry = bound ? SP_SQLITE_CHECKPOINT_RETRY_PAGES / 4 : SP_SQLITE_CHECKPOINT_RETRY_PAGES;
    c->checkpoint_at = complete ? SP_SQLITE_CHECKPOINT_PAGES : pages + retry;
    return SQLITE_OK;
}

#define SQ_STR(x) #x
#define SQ_CACHE(kib) "PRAGMA cache_size = -" SQ_STR(kib) /* negative: KiB, not pages */

static sp_store_rc pragmas(sq_conn *c, sp_error *err)
{
    /* temp_store: a batch's savepoints keep their sub-journals in memory,
     * not in a file of /var/tmp written for every page a request changes. */
    static const char *const sql[] = {"PRAGMA synchronous = FULL", "PRAGMA foreign_keys = ON",
                                      "PRAGMA temp_store = MEMORY",
                                      SQ_CACHE(SP_SQLITE_CACHE_KIB), NULL};
    sp_store_rc kind = wal(c->db, err);
    for (const char *const *q = sql; *q && kind == SP_STORE_OK; q++) {
        int rc = sqlite3_exec(c->db, *q, NULL, NULL, NULL);
        if (rc != SQLITE_OK)
            kind = sp_sqlite_map(c->db, rc, *q, err);
    }
    c->checkpoint_at = SP_SQLITE_CHECKPOINT_PAGES;
    sqlite3_wal_hook(c->db, checkpoint_hook, c);
    return kind;
}

/* ---- the file: created private, never created by EXISTING mode ---- */

static sp_store_rc io_fail(sp_error *err, const char *fmt, const char *path)
{
    sp_fail(err, "store.io", fmt, path, strerror(errno));
    return SP_STORE_UNAVAILABLE;
}

/* Make sure there is a file to open: a missing one is created 0600 (SQLite
 * gives its -wal and -shm files the database file's mode), or store.not-found
 * in EXISTING mode, which also refuses an empty file. */
static sp_store_rc prepare_file(const char *path, sp_store_open_mode mode, sp_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            sp_fail(err, "store.io", "%s is a directory, not a store file", path);
            return SP_STORE_UNAVAILABLE;
        }
        if (st.st_size == 0 && mode == SP_STORE_OPEN_EXISTING) {
            sp_fail(err, "store.not-found", "%s is empty: no spore store there yet", path);
            return SP_STORE_UNAVAILABLE;
        }
        return SP_STORE_OK;
    }
    if (errno != ENOENT)
        return io_fail(err, "cannot read %s: %s", path);
    if (mode == SP_STORE_OPEN_EXISTING) {
        sp_fail(err, "store.not-found",
                "no spore store at %s (spore run or spore start creates one; --db or "
                "$SPORE_DB names another)",
                path);
        return SP_STORE_UNAVAILABLE;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) /* EEXIST: another process created it just now */
        return io_fail(err, "cannot create %s: %s", path);
    if (fd >= 0)
        close(fd);
    return SP_STORE_OK;
}

#define SHARED_BITS (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH)

/* An empty file about to become a store is made private first. */
static sp_store_rc make_private(const char *path, sp_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return io_fail(err, "cannot read %s: %s", path);
    if (st.st_uid != geteuid()) /* never touch another user's file: check_private refuses it */
        return SP_STORE_OK;
    if ((st.st_mode & SHARED_BITS) && chmod(path, st.st_mode & 07700) != 0)
        return io_fail(err, "cannot make %s private (chmod 600): %s", path);
    return SP_STORE_OK;
}

static sp_store_rc not_private(sp_error *err, const char *file, const char *why,
                               const char *fix, const char *path)
{
    sp_fail(err, "store.not-private",
            "%s %s, and the store holds the secret that signs step tokens: %s %s*, or pass "
            "--allow-shared-store if sharing it is intended",
            file, why, fix, path);
    return SP_STORE_INCOMPATIBLE;
}

/* The store and its -wal/-shm files must be this user's alone: the store
 * holds the secret that signs step tokens. */
static sp_store_rc check_private(const char *path, sp_error *err)
{
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        char file[PATH_MAX], why[64];
        struct stat st;
        if (snprintf(file, sizeof file, "%s%s", path, suffixes[i]) >= (int)sizeof file ||
            stat(file, &st) != 0)
            continue;
        if (st.st_uid != geteuid()) {
            snprintf(why, sizeof why, "belongs to another user (uid %u)", (unsigned)st.st_uid);
            return not_private(err, file, why, "use a store of your own, or chown", path);
        }
        if (st.st_mode & SHARED_BITS) {
            snprintf(why, sizeof why, "can be read or written by other users (mode %03o)",
                     (unsigned)(st.st_mode & 0777));
            return not_private(err, file, why, "chmod 600", path);
        }
    }
    return SP_STORE_OK;
}

/* ---- opening ---- */

/* What is in the file, read before anything is written to it; then the
 * privacy rule, the pragmas (WAL switches the file format) and, for an empty
 * file, the schema. */
static sp_store_rc open_store_file(sq_conn *c, const char *path, const sp_store_open_opts *o,
                                   sp_error *err)
{
    /* SQLite opens a file it may not write read-only without a word; a
     * worker would then retry its first write forever */
    if (!o->reads_only && sqlite3_db_readonly(c->db, "main") == 1) {
        sp_fail(err, "store.io", "%s is read-only here: spore cannot record steps in it", path);
        return SP_STORE_UNAVAILABLE;
    }
    bool empty = false;
    sp_store_rc kind = sp_sqlite_schema_check(c->db, &empty, err);
    if (kind == SP_STORE_OK && empty && o->mode == SP_STORE_OPEN_EXISTING) {
        sp_fail(err, "store.not-found", "%s holds no spore store yet", path);
        kind = SP_STORE_UNAVAILABLE;
    }
    if (kind == SP_STORE_OK && empty && !o->allow_shared)
        kind = make_private(path, err);
    if (kind == SP_STORE_OK && !o->allow_shared)
        kind = check_private(path, err);
    if (kind == SP_STORE_OK)
        kind = pragmas(c, err);
    if (kind == SP_STORE_OK && empty)
        kind = sp_sqlite_schema_ensure(c->db, err);
    else if (kind == SP_STORE_OK && !o->reads_only)
        kind = sp_sqlite_schema_add(c->db, err);
    return kind;
}

static sq_conn *open_conn(const char *path, const sp_store_open_opts *o, sp_error *err)
{
    if (prepare_file(path, o->mode, err) != SP_STORE_OK)
        return NULL;
    sq_conn *c = calloc(1, sizeof *c);
    if (!c) {
        sp_oom(err);
        return NULL;
    }
    c->clock = o->clock ? *o->clock : sp_clock_system();
    c->statements.release = finalize_statement;
    pthread_mutex_init(&c->mu, NULL);
    int rc = sqlite3_open_v2(path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                             sp_sqlite_vfs_ready() ? SP_SQLITE_VFS : NULL);
    sp_store_rc kind = rc == SQLITE_OK ? SP_STORE_OK : sp_sqlite_map(c->db, rc, "open", err);
    if (kind == SP_STORE_OK) { /* before the first read: another process may be creating it */
        sqlite3_extended_result_codes(c->db, 1);
        sqlite3_busy_handler(c->db, busy_wait, NULL);
    }
    if (kind == SP_STORE_OK)
        kind = open_store_file(c, path, o, err);
    if (kind != SP_STORE_OK) {
        sq_close(c);
        return NULL;
    }
    return c;
}

sp_store *sp_sqlite_open(const char *path, const sp_store_open_opts *opts, sp_error *err)
{
    sq_conn *c = open_conn(path, opts, err);
    if (!c)
        return NULL;
    sp_store *s = calloc(1, sizeof *s);
    if (!s || !(s->location = strdup(path))) {
        free(s);
        sq_close(c);
        sp_oom(err);
        return NULL;
    }
    s->driver = &SQLITE_DRIVER;
    s->conn = c;
    s->clock = c->clock;
    s->has_clock = opts->clock != NULL;
    return s;
}
