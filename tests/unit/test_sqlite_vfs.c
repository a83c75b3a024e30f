/*
 * test_sqlite_vfs.c - the store's SQLite VFS `spore` (src/store/sqlite/vfs.c),
 * on real files: what one connection commits through it, another connection
 * on the default VFS reads back byte for byte, from the WAL (no checkpoint):
 *
 *   - many small commits (a step's shape);
 *   - one transaction of ~2 MiB, far past a gathered run's 120 KiB bound
 *     (the unix VFS writes at most 128 KiB - 1 per call: a run past it would
 *     fail the commit);
 *   - a transaction larger than the writer's page cache, so that the writer
 *     spills frames to the WAL and reads them back before it commits;
 *   - a rolled-back transaction leaves nothing, and a reader that opened
 *     before a commit sees it after;
 *   - a commit's sync left to the flusher: only the marked one, never the
 *     one after a new WAL header, never another file's.
 *
 * What it must never do: read through the VFS under test what it checks
 * (the reader is the default VFS), or pass without comparing every row.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "sqlite_exec.h"
#include "store/sqlite/sqlite.h"

#define SMALL_COMMITS 300
#define BIG_ROWS 512
#define BIG_ROW_BYTES 4000

static sqlite3 *open_db(const char *path, const char *vfs)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs);
    if (rc != SQLITE_OK) {
        check_fail(__FILE__, __LINE__, "open %s (%s): %s", path, vfs ? vfs : "default",
                   db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

/* Row `id`'s bytes: `len` bytes that depend on the id and the offset. */
static void fill(unsigned char *buf, size_t len, int id)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)((size_t)id * 131u + i * 7u + (i >> 8));
}

static void insert(sqlite3 *db, int id, size_t len)
{
    unsigned char *buf = malloc(len);
    sqlite3_stmt *st = NULL;
    fill(buf, len, id);
    int rc = sqlite3_prepare_v2(db, "INSERT INTO t (id, body) VALUES (?, ?)", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int(st, 1, id);
        sqlite3_bind_blob(st, 2, buf, (int)len, SQLITE_TRANSIENT);
        rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    if (rc != SQLITE_OK)
        check_fail(__FILE__, __LINE__, "insert %d: %s", id, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    free(buf);
}

/* Every row with first <= id < last is there with its bytes; count rows. */
static void expect_rows(sqlite3 *db, int first, int last, size_t len, const char *what)
{
    sqlite3_stmt *st = NULL;
    unsigned char *want = malloc(len);
    int seen = 0, wrong = 0;
    sqlite3_prepare_v2(db, "SELECT id, body FROM t WHERE id >= ? AND id < ? ORDER BY id", -1,
                       &st, NULL);
    sqlite3_bind_int(st, 1, first);
    sqlite3_bind_int(st, 2, last);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int id = sqlite3_column_int(st, 0);
        fill(want, len, id);
        const void *body = sqlite3_column_blob(st, 1);
        if (id != first + seen || (size_t)sqlite3_column_bytes(st, 1) != len ||
            memcmp(body, want, len) != 0)
            wrong++;
        seen++;
    }
    sqlite3_finalize(st);
    free(want);
    CHECK(seen == last - first && wrong == 0);
    if (seen != last - first || wrong)
        printf("%s: %d rows of %d, %d wrong\n", what, seen, last - first, wrong);
}

static int count_rows(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int n = -1;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* One marked commit's sync is left out (the flusher's, src/store/sqlite/
 * flusher.c), but never the sync after a new WAL header - here the first
 * commit after the TRUNCATE checkpoint - nor a sync of another file; what a
 * deferred commit wrote is read back by another connection at once. */
static void deferred_syncs(sqlite3 *w, sqlite3 *r)
{
    sqlite3_file *wal = NULL, *main_file = NULL;
    CHECK_INT(sqlite3_file_control(w, "main", SQLITE_FCNTL_JOURNAL_POINTER, &wal), SQLITE_OK);
    CHECK_INT(sqlite3_file_control(w, "main", SQLITE_FCNTL_FILE_POINTER, &main_file), SQLITE_OK);
    CHECK(!sp_sqlite_vfs_defer_sync(main_file, true)); /* not a -wal file: never deferred */
    unsigned long synced = sp_sqlite_vfs_real_syncs(wal);
    for (int i = 0; i < 3; i++) {
        CHECK(sp_sqlite_vfs_defer_sync(wal, true));
        exec_ok(w, "BEGIN IMMEDIATE");
        insert(w, 300000 + i, 300);
        exec_ok(w, "COMMIT");
        CHECK(sp_sqlite_vfs_sync_deferred(wal));
    }
    /* the WAL started over at the first: the sync after its new header was real */
    CHECK_INT(sp_sqlite_vfs_real_syncs(wal), synced + 1);
    sp_sqlite_vfs_defer_sync(wal, false);
    exec_ok(w, "BEGIN IMMEDIATE");
    insert(w, 300003, 300);
    exec_ok(w, "COMMIT"); /* not marked: synced */
    CHECK_INT(sp_sqlite_vfs_real_syncs(wal), synced + 2);
    expect_rows(r, 300000, 300004, 300, "deferred commits");
}

/* The rule itself, on a -wal file opened through the VFS: a marked sync
 * that follows a write at offset 0 (the header) is real; the next marked
 * one is left out; an unmarked one is real. */
static void header_sync_is_real(const char *dir)
{
    char db[160], path[170];
    snprintf(db, sizeof db, "%s/h.db", dir); /* the unix VFS takes a WAL's mode from it */
    snprintf(path, sizeof path, "%s-wal", db);
    FILE *touch = fopen(db, "w");
    CHECK(touch != NULL);
    if (touch)
        fclose(touch);
    sqlite3_vfs *vfs = sqlite3_vfs_find(SP_SQLITE_VFS);
    sqlite3_file *f = calloc(1, (size_t)vfs->szOsFile);
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_WAL, out = 0;
    CHECK(f != NULL);
    if (!f || vfs->xOpen(vfs, path, f, flags, &out) != SQLITE_OK) {
        check_fail(__FILE__, __LINE__, "cannot open %s through the VFS", path);
        free(f);
        return;
    }
    unsigned char bytes[64] = {1};
    CHECK(sp_sqlite_vfs_defer_sync(f, true));
    CHECK_INT(f->pMethods->xWrite(f, bytes, 32, 0), SQLITE_OK); /* a header */
    CHECK_INT(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK);
    CHECK_INT(sp_sqlite_vfs_real_syncs(f), 1);
    CHECK(!sp_sqlite_vfs_sync_deferred(f));
    CHECK(sp_sqlite_vfs_defer_sync(f, true));
    CHECK_INT(f->pMethods->xWrite(f, bytes, 64, 32), SQLITE_OK); /* a frame */
    CHECK_INT(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK);
    CHECK_INT(sp_sqlite_vfs_real_syncs(f), 1);
    CHECK(sp_sqlite_vfs_sync_deferred(f));
    CHECK_INT(f->pMethods->xSync(f, SQLITE_SYNC_NORMAL), SQLITE_OK); /* one sync only */
    CHECK_INT(sp_sqlite_vfs_real_syncs(f), 2);
    sqlite3_int64 size = 0;
    CHECK_INT(f->pMethods->xFileSize(f, &size), SQLITE_OK);
    CHECK_INT(size, 96); /* the deferred sync still wrote what was gathered */
    f->pMethods->xClose(f);
    free(f);
    unlink(path);
    unlink(db);
}

int main(void)
{
    char dir[] = "/tmp/spore-test-vfs-XXXXXX", path[128];
    CHECK(sp_sqlite_vfs_ready());
    CHECK(sqlite3_vfs_find(SP_SQLITE_VFS) != NULL);
    CHECK(sqlite3_vfs_find(NULL) != sqlite3_vfs_find(SP_SQLITE_VFS)); /* never the default */
    if (!mkdtemp(dir))
        return check_done("test_sqlite_vfs");
    snprintf(path, sizeof path, "%s/t.db", dir);
    sqlite3 *w = open_db(path, SP_SQLITE_VFS);
    if (!w)
        return check_done("test_sqlite_vfs");
    exec_ok(w, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
               " PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = 20;"
               " CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)");
    sqlite3 *r = open_db(path, NULL); /* the default VFS reads what `w` wrote */
    exec_ok(r, "PRAGMA wal_autocheckpoint = 0");
    CHECK_INT(count_rows(r), 0); /* the reader's view before any commit */

    /* many small commits */
    for (int i = 0; i < SMALL_COMMITS; i++) {
        exec_ok(w, "BEGIN IMMEDIATE");
        insert(w, i, 300);
        exec_ok(w, "COMMIT");
    }
    expect_rows(r, 0, SMALL_COMMITS, 300, "small commits");

    /* one large transaction: many runs of 120 KiB, and (cache_size 20) the
     * writer spills pages to the WAL and reads them back before COMMIT */
    exec_ok(w, "BEGIN IMMEDIATE");
    for (int i = 0; i < BIG_ROWS; i++)
        insert(w, 100000 + i, BIG_ROW_BYTES);
    expect_rows(w, 100000, 100000 + BIG_ROWS, BIG_ROW_BYTES, "the writer, before COMMIT");
    CHECK_INT(count_rows(r), SMALL_COMMITS); /* not visible yet */
    exec_ok(w, "COMMIT");
    expect_rows(r, 100000, 100000 + BIG_ROWS, BIG_ROW_BYTES, "large transaction");

    /* a rolled-back transaction leaves nothing */
    exec_ok(w, "BEGIN IMMEDIATE");
    for (int i = 0; i < 50; i++)
        insert(w, 200000 + i, BIG_ROW_BYTES);
    exec_ok(w, "ROLLBACK");
    CHECK_INT(count_rows(r), SMALL_COMMITS + BIG_ROWS);
    CHECK_INT(count_rows(w), SMALL_COMMITS + BIG_ROWS);

    /* a checkpoint moves it all into the database file; a fresh default
     * connection reads the same */
    exec_ok(w, "PRAGMA wal_checkpoint(TRUNCATE)");
    sqlite3_close(r);
    r = open_db(path, NULL);
    expect_rows(r, 0, SMALL_COMMITS, 300, "after the checkpoint");
    expect_rows(r, 100000, 100000 + BIG_ROWS, BIG_ROW_BYTES, "after the checkpoint");
    deferred_syncs(w, r);
    header_sync_is_real(dir);
    sqlite3_close(r);
    CHECK_INT(sqlite3_close(w), SQLITE_OK);

    static const char *const SUFFIXES[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/t.db%s", dir, SUFFIXES[i]);
        unlink(path);
    }
    rmdir(dir);
    return check_done("test_sqlite_vfs");
}
