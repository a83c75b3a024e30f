/*
 * vfs.c - the store's SQLite VFS, "spore": the platform's default VFS, with
 * the write-ahead log's consecutive writes gathered into one.
 *
 * What it is for: SQLite writes each WAL frame as two writes (its 24-byte
 * header, then the page), so a commit of 20 pages is 40 pwrite(2) calls
 * one after another at consecutive offsets, and on a virtual machine each
 * system call is dear. This VFS keeps such a run of consecutive writes in
 * memory and hands it to the real file as one write when anything else
 * happens to the file: the sync that makes a commit durable, a read, a
 * truncate, a size query, a lock or file control, a write elsewhere, the
 * run reaching its bound, close. Every other file (the database, its
 * shared-memory index, temporary files) is the default VFS's own, untouched.
 *
 * Why it keeps SQLite's guarantees: a commit's frames reach the file before
 * the sync SQLite makes at every commit (synchronous = FULL), and SQLite
 * makes frames visible to other connections (the wal-index in shared
 * memory) only after that sync; the writer reads its own uncommitted frames
 * back only through xRead, which writes the run first. A crash before the
 * sync loses what the crash would have lost anyway: a transaction that was
 * not committed. A failed gathered write is answered to the call that
 * caused it (an I/O error of the sync fails the commit, as SQLite expects).
 *
 * A sync left to the flusher (sp_sqlite_vfs_defer_sync, flusher.c): for a
 * commit the driver marks so, the commit's sync writes the run and returns
 * without the fdatasync; the flusher's thread syncs the file a moment later
 * while the caller goes on (the commit is then visible and survives a crash
 * of the process at once, and survives a power loss once the flusher's sync
 * returned). Only ever the one sync of a marked commit: the sync after
 * SQLite wrote the WAL's header (a WAL starting over must have its new
 * header on disk before any frame, or old frames could be replayed) and
 * every checkpoint's syncs stay real.
 *
 * What it must never do: hold a write across a sync, a read or a close;
 * reorder writes (a run is only ever extended at its end); gather anything
 * but the -wal file; grow the run past WAL_RUN_MAX; leave out a sync that
 * was not marked, or the sync that follows a write of the WAL's header.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite/sqlite.h"

/* The unix VFS writes at most 128 KiB - 1 in one call (seekAndWriteFd masks
 * the length with 0x1ffff): a run stays below that, 29 frames of 4 KiB. */
#define WAL_RUN_MAX (120 * 1024)

typedef struct wal_file {
    sqlite3_file base; /* methods: WAL_METHODS */
    sqlite3_file *real;
    unsigned char *run; /* consecutive writes not yet given to `real` */
    size_t len, cap;
    sqlite3_int64 start; /* the file offset of run[0] */
    bool defer_sync;     /* the next sync is left to the flusher (one sync only) */
    bool sync_deferred;  /* a sync was left to the flusher since defer_sync was set */
    bool header_written; /* the WAL's header was written: its sync stays real */
    unsigned long syncs; /* real syncs so far (tests) */
} wal_file;

static sqlite3_vfs SPORE_VFS;
static sqlite3_vfs *REAL_VFS; /* the default VFS this one wraps */
static sqlite3_io_methods WAL_METHODS;

static sqlite3_file *real_of(sqlite3_file *f) { return ((wal_file *)f)->real; }

/* Give the gathered run to the real file. */
static int flush_run(wal_file *w)
{
    if (!w->len)
        return SQLITE_OK;
    int rc = w->real->pMethods->xWrite(w->real, w->run, (int)w->len, w->start);
    w->len = 0;
    return rc;
}

static int wal_write(sqlite3_file *f, const void *data, int amt, sqlite3_int64 off)
{
    wal_file *w = (wal_file *)f;
    size_t n = (size_t)amt;
    if (off == 0)
        w->header_written = true;
    bool extends = w->len && off == w->start + (sqlite3_int64)w->len;
    if (!extends || w->len + n > WAL_RUN_MAX) {
        int rc = flush_run(w);
        if (rc != SQLITE_OK)
            return rc;
        if (n > WAL_RUN_MAX / 2)
            return w->real->pMethods->xWrite(w->real, data, amt, off);
        w->start = off;
    }
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 32 * 1024;
        while (cap < w->len + n)
            cap *= 2;
        unsigned char *grown = realloc(w->run, cap);
        if (!grown) { /* no memory for the run: write it and this one as they are */
            int rc = flush_run(w);
            return rc != SQLITE_OK ? rc : w->real->pMethods->xWrite(w->real, data, amt, off);
        }
        w->run = grown, w->cap = cap;
    }
    memcpy(w->run + w->len, data, n);
    w->len += n;
    return SQLITE_OK;
}

/* The methods that only need the run written first, then the real file. */
static int wal_read(sqlite3_file *f, void *data, int amt, sqlite3_int64 off)
{
    int rc = flush_run((wal_file *)f);
    return rc != SQLITE_OK ? rc : real_of(f)->pMethods->xRead(real_of(f), data, amt, off);
}

static int wal_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    int rc = flush_run((wal_file *)f);
    return rc != SQLITE_OK ? rc : real_of(f)->pMethods->xTruncate(real_of(f), size);
}

static int wal_sync(sqlite3_file *f, int flags)
{
    wal_file *w = (wal_file *)f;
    int rc = flush_run(w);
    if (rc != SQLITE_OK)
        return rc;
    if (w->defer_sync && !w->header_written) {
        w->defer_sync = false;
        w->sync_deferred = true;
        return SQLITE_OK;
    }
    w->header_written = false;
    w->syncs++;
    return w->real->pMethods->xSync(w->real, flags);
}

static int wal_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
    int rc = flush_run((wal_file *)f);
    return rc != SQLITE_OK ? rc : real_of(f)->pMethods->xFileSize(real_of(f), size);
}

static int wal_lock(sqlite3_file *f, int level)
{
    int rc = flush_run((wal_file *)f);
    return rc != SQLITE_OK ? rc : real_of(f)->pMethods->xLock(real_of(f), level);
}

static int wal_unlock(sqlite3_file *f, int level)
{
    int rc = flush_run((wal_file *)f);
    return rc != SQLITE_OK ? rc : real_of(f)->pMethods->xUnlock(real_of(f), level);
}

static int wal_file_control(sqlite3_file *f, int op, void *arg)
{
    int rc = flush_run((wal_file *)f);
    return rc != SQLITE_OK ? rc : real_of(f)->pMethods->xFileControl(real_of(f), op, arg);
}

static int wal_close(sqlite3_file *f)
{
    wal_file *w = (wal_file *)f;
    int rc = flush_run(w);
    int close_rc = w->real->pMethods->xClose(w->real);
    free(w->run);
    w->run = NULL;
    return rc != SQLITE_OK ? rc : close_rc;
}

/* Pure pass-through. */
static int wal_check_reserved_lock(sqlite3_file *f, int *out)
{
    return real_of(f)->pMethods->xCheckReservedLock(real_of(f), out);
}

static int wal_sector_size(sqlite3_file *f)
{
    return real_of(f)->pMethods->xSectorSize(real_of(f));
}

static int wal_device_characteristics(sqlite3_file *f)
{
    return real_of(f)->pMethods->xDeviceCharacteristics(real_of(f));
}

static sqlite3_io_methods WAL_METHODS = {
    .iVersion = 1, /* a WAL file has no shared memory and is never memory-mapped */
    .xClose = wal_close,
    .xRead = wal_read,
    .xWrite = wal_write,
    .xTruncate = wal_truncate,
    .xSync = wal_sync,
    .xFileSize = wal_file_size,
    .xLock = wal_lock,
    .xUnlock = wal_unlock,
    .xCheckReservedLock = wal_check_reserved_lock,
    .xFileControl = wal_file_control,
    .xSectorSize = wal_sector_size,
    .xDeviceCharacteristics = wal_device_characteristics,
};

/* The real file lives after the wrapper, aligned for any type. */
static size_t wrapper_size(void)
{
    size_t align = sizeof(max_align_t);
    return (sizeof(wal_file) + align - 1) / align * align;
}

static int spore_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *out)
{
    (void)vfs;
    sqlite3_vfs *real_vfs = REAL_VFS;
    if (!(flags & SQLITE_OPEN_WAL)) /* the default VFS's file, in place */
        return real_vfs->xOpen(real_vfs, name, f, flags, out);
    wal_file *w = (wal_file *)f;
    memset(w, 0, sizeof *w);
    w->real = (sqlite3_file *)((char *)f + wrapper_size());
    int rc = real_vfs->xOpen(real_vfs, name, w->real, flags, out);
    /* SQLite calls xClose only when pMethods is set: set it only for a file
     * the real VFS opened (it may set its own methods even on failure) */
    if (rc == SQLITE_OK)
        w->base.pMethods = &WAL_METHODS;
    else if (w->real->pMethods)
        w->real->pMethods->xClose(w->real);
    return rc;
}

static wal_file *ours(sqlite3_file *f)
{
    return f && f->pMethods == &WAL_METHODS ? (wal_file *)f : NULL;
}

bool sp_sqlite_vfs_defer_sync(sqlite3_file *wal, bool on)
{
    wal_file *w = ours(wal);
    if (!w)
        return false;
    w->defer_sync = on;
    if (on)
        w->sync_deferred = false;
    return true;
}

bool sp_sqlite_vfs_sync_deferred(sqlite3_file *wal)
{
    wal_file *w = ours(wal);
    return w && w->sync_deferred;
}

unsigned long sp_sqlite_vfs_real_syncs(sqlite3_file *wal)
{
    wal_file *w = ours(wal);
    return w ? w->syncs : 0;
}

static pthread_once_t REGISTERED = PTHREAD_ONCE_INIT;
static int register_rc = SQLITE_ERROR;

static void register_vfs(void)
{
    /* installed at load already (pcache.c); the call keeps it in a static link */
    (void)sp_sqlite_pcache_install();
    sqlite3_vfs *real = sqlite3_vfs_find(NULL);
    if (!real)
        return;
    /* everything but xOpen and the file size is the default VFS's, with its
     * own app data (the unix VFS keeps its locking style there) */
    REAL_VFS = real;
    SPORE_VFS = *real;
    SPORE_VFS.zName = SP_SQLITE_VFS;
    SPORE_VFS.pNext = NULL;
    size_t wrapped = wrapper_size() + (size_t)real->szOsFile;
    SPORE_VFS.szOsFile = (int)wrapped;
    SPORE_VFS.xOpen = spore_open;
    register_rc = sqlite3_vfs_register(&SPORE_VFS, 0);
}

bool sp_sqlite_vfs_ready(void)
{
    pthread_once(&REGISTERED, register_vfs);
    return register_rc == SQLITE_OK;
}
