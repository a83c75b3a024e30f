/*
 * flusher.h - a thread that makes a connection's commits durable while the
 * committing thread goes on (docs/step-path.md, "Commit, then flush beside
 * the next step"), shared by the SQLite driver (an fdatasync of the -wal
 * file) and the PostgreSQL driver (a transaction whose synchronous COMMIT
 * flushes the server's WAL up to its own record, after every commit made
 * with synchronous_commit off).
 *
 * Tickets: each commit left unflushed gets the next one; one flush answers
 * every ticket handed out before it began, so flushes group themselves, and
 * a flush nobody waits for yet gathers for a moment first (flusher.c). At
 * most SP_UNFLUSHED_MAX tickets wait; the next commit waits for a flush.
 * A flush that failed for good is final: every later wait answers it.
 *
 * What it must never do: call the committing thread's connection (the
 * driver's flush function owns whatever it uses), count a ticket flushed
 * before a flush that began after its commit returned, or go on after a
 * failure the driver called final.
 */
#ifndef SPORE_STORE_FLUSHER_H
#define SPORE_STORE_FLUSHER_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* Commits that may wait for their flush at once; the next one waits. */
#define SP_UNFLUSHED_MAX 64u

/* What a flush answered. */
typedef enum sp_flush_result {
    SP_FLUSH_DONE,  /* every commit made before the call is durable */
    SP_FLUSH_AGAIN, /* nothing is known: call again */
    SP_FLUSH_FAILED /* final: `why` says what may be lost */
} sp_flush_result;

/* The driver's flush, on the flusher's thread; `why` (cap bytes) on failure. */
typedef sp_flush_result (*sp_flush_fn)(void *ctx, char *why, size_t cap);

typedef struct sp_flusher sp_flusher;

/* Start the thread; `release` (may be NULL) frees ctx at stop. */
sp_flusher *sp_flusher_start(sp_flush_fn flush, void (*release)(void *ctx), void *ctx,
                             sp_error *err);
/* A commit whose flush was left to the flusher: its ticket. Waits while too
 * many commits are unflushed. */
uint64_t sp_flusher_committed(sp_flusher *f);
/* Wait until every commit up to `ticket` is durable; after a final failure
 * corrupt/store.io, now and for every later call. */
sp_store_rc sp_flusher_wait(sp_flusher *f, uint64_t ticket, sp_error *err);
/* corrupt/store.io once a flush failed, else OK (no wait). */
sp_store_rc sp_flusher_failed(sp_flusher *f, sp_error *err);
/* The flushes made so far and the tickets not yet durable. */
void sp_flusher_counts(sp_flusher *f, uint64_t *flushes, uint64_t *unflushed);
/* The driver proved by other means that every ticket handed out so far is
 * durable (sp_flusher_confirm) or that some may be lost (sp_flusher_fail:
 * final, `why` as a flush's). */
void sp_flusher_confirm(sp_flusher *f);
void sp_flusher_fail(sp_flusher *f, const char *why);
/* Flush what is unflushed, then stop the thread and free it (NULL: nothing). */
void sp_flusher_stop(sp_flusher *f);

#endif
