/*
 * sqlite.h - private interface of the SQLite adapter (store.md §4): the
 * driver (driver.c), its schema (schema.c) and its VFS (vfs.c).
 *
 * What it is for: sp_store_open() hands a path here and gets a store whose
 * driver runs the shared logic on one SQLite connection.
 *
 * What it must never do: be included outside src/store/.
 */
#ifndef SPORE_STORE_SQLITE_SQLITE_H
#define SPORE_STORE_SQLITE_SQLITE_H

#include <sqlite3.h>

#include "store/flusher.h"

#include "store/db.h"

#define SP_SQLITE_BUSY_TIMEOUT_MS 5000

/* The WAL is copied back into the database (a checkpoint, handed by the
 * connection whose commit passed the mark to its checkpointer; driver.c's
 * checkpoint_hook) once
 * it holds this many pages, not SQLite's default 1000: a sequential step
 * writes ~21 pages and 200 runs stepping at once ~18 per step, so at 1000 a
 * checkpoint came every ~50 steps and copied pages that the next steps
 * changed again. At 4000 pages (16 MiB of 4 KiB pages) the pages changed
 * between two checkpoints are copied once, and the WAL's index stays in its
 * first 32 KiB segment (4096 frames), which every page read searches. */
#define SP_SQLITE_CHECKPOINT_PAGES 4000
/* A checkpoint that a reader's snapshot stopped short is tried again once
 * the WAL has grown by this many pages, not after every commit. */
#define SP_SQLITE_CHECKPOINT_RETRY_PAGES 1000
/* Past 4 x SP_SQLITE_CHECKPOINT_PAGES the writer's checkpoint is RESTART
 * (driver.c, checkpoint_hook): it waits this long at most for the other
 * workers' write and snapshots to end, and is tried again every quarter
 * of SP_SQLITE_CHECKPOINT_RETRY_PAGES while it does not succeed. */
#define SP_SQLITE_RESTART_WAIT_MS 100
/* The page cache of a connection, in KiB (SQLite's default is 2000). A
 * batch that settles a pass's worth of steps (256 runs) changes ~1,500
 * pages; past the cache, SQLite spills changed pages into the WAL in the
 * middle of the transaction and reads them back, which cost 200 x 10 a
 * quarter of its throughput (docs/step-path.md). Memory is taken as pages
 * are used, not up front. */
#define SP_SQLITE_CACHE_KIB 16384

/* Open the store at `path` (sp_store_open_with, store.h). */
sp_store *sp_sqlite_open(const char *path, const sp_store_open_opts *opts, sp_error *err);

/* Map an SQLite result code to a store failure kind with a stable code:
 * BUSY/LOCKED -> unavailable/store.busy, CORRUPT/NOTADB -> corrupt/store.corrupt,
 * CONSTRAINT -> conflict/store.constraint, NOMEM -> unavailable/
 * runtime.out-of-memory, TOOBIG -> quota/store.too-big, ERROR/MISUSE/RANGE
 * (SQL the database cannot run) -> incompatible/store.sql, anything else
 * (I/O, CANTOPEN, FULL, ...) -> unavailable/store.io. */
sp_store_rc sp_sqlite_map(sqlite3 *db, int rc, const char *what, sp_error *err);

/* Check or create the schema (PRAGMA user_version): 0 on an empty database
 * -> create version 1; a newer version -> incompatible/schema.too-new; 0
 * with foreign tables -> incompatible/schema.unknown. */
sp_store_rc sp_sqlite_schema_ensure(sqlite3 *db, sp_error *err);

/* Read, never write: *empty when the database has no tables and version 0
 * (a new store); a spore store of a version this code reads -> OK; anything
 * else -> store.corrupt (not a database), schema.unknown, schema.too-new. */
sp_store_rc sp_sqlite_schema_check(sqlite3 *db, bool *empty, sp_error *err);

/* Add to an existing version-1 store what later spores added to it without
 * a version change (the timers table of format 0.2, the attempt_logs table
 * of step logs); a no-op when present.
 * Only for a connection that may write. */
sp_store_rc sp_sqlite_schema_add(sqlite3 *db, sp_error *err);

/* The checkpointer (checkpointer.c): the bulk of each checkpoint on a thread
 * and connection of its own. NULL when it cannot start (the writer's hook
 * then checkpoints itself, as before). */
typedef struct sq_checkpointer sq_checkpointer;
sq_checkpointer *sq_checkpointer_start(const char *path);
/* Whose turn the checkpoint the WAL needs is, asked by the writer's hook: a
 * pass in the background was asked now or still runs (BACKGROUND), or one
 * ended since the last ask and the writer checkpoints the rest (WRITER). */
typedef enum sq_checkpoint_turn {
    SQ_CHECKPOINT_BACKGROUND,
    SQ_CHECKPOINT_WRITER,
} sq_checkpoint_turn;
sq_checkpoint_turn sq_checkpointer_turn(sq_checkpointer *k);
/* The WAL started over: a pass that ended is no one's turn any more. */
void sq_checkpointer_forget(sq_checkpointer *k);
/* Waits for a running pass, then ends the thread and closes its connection. */
void sq_checkpointer_stop(sq_checkpointer *k);

/* The default page cache, wrapped so that a truncation with nothing to
 * drop costs no scan (pcache.c). Installed when the program loads, before
 * SQLite can have initialized; true when it is installed (false: SQLite
 * refused it, and the default cache stays). */
bool sp_sqlite_pcache_install(void);
/* The truncations this process's caches passed on to the default cache and
 * answered without it (tests). */
void sp_sqlite_pcache_counts(unsigned long *passed, unsigned long *skipped);

/* The store's VFS (vfs.c): the default one, with the -wal file's
 * consecutive writes handed to it as one write at its next sync, read,
 * truncate or close. Registered (not as the default) on the first call;
 * false when it could not be, and the default VFS is used. */
#define SP_SQLITE_VFS "spore"
bool sp_sqlite_vfs_ready(void);

/* The next sync of `wal` (the connection's -wal file, SQLITE_FCNTL_JOURNAL_
 * POINTER) is left to the flusher (on), or no sync is (off); false when
 * `wal` is not this VFS's file (then every sync stays real). One sync only,
 * and never the one after SQLite wrote the WAL's header. */
bool sp_sqlite_vfs_defer_sync(sqlite3_file *wal, bool on);
/* A sync of `wal` was left to the flusher since defer_sync(on). */
bool sp_sqlite_vfs_sync_deferred(sqlite3_file *wal);
/* The syncs of `wal` that reached the file (for tests). */
unsigned long sp_sqlite_vfs_real_syncs(sqlite3_file *wal);

/* The flusher of a -wal file (driver.c over src/store/flusher.h): a thread
 * that syncs the file on a descriptor of its own for the commits whose sync
 * the VFS left to it. How it syncs a descriptor: 0, or -1 with errno (EINTR:
 * again); `sync` NULL: fdatasync (a test passes its own). */
typedef int (*sq_sync_fn)(int fd);
sp_flusher *sq_flusher_start(const char *wal_path, sq_sync_fn sync, sp_error *err);

#endif
