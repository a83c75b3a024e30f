/*
 * internal.h - what the files of the public C API (include/spore/spore.h)
 * share: the spore_db handle and the conversion of internal error values to
 * public ones.
 *
 * What it is for: spore_db bundles one store, one engine bound to it and
 * that engine's native registry, so an embedder holds a single handle.
 *
 * What it must never do: leak into the public header, or duplicate what the
 * engine does (every operation here is a thin call into engine/store).
 */
#ifndef SPORE_API_INTERNAL_H
#define SPORE_API_INTERNAL_H

#include <pthread.h>
#include <signal.h>

#include "base/error.h"
#include "engine/engine.h"
#include "runners/native.h"
#include "spore/spore.h"
#include "store/store.h"

/* One registered function: the public signature behind the internal one. */
typedef struct api_binding {
    spore_native_fn fn;
    void *user;
    struct api_binding *next;
} api_binding;

struct spore_db {
    sp_store *store;
    sp_engine *engine;
    sp_native_registry *natives;
    char *lock_dir; /* <location>.workers; borrowed by the engine's config */
    atomic_int interrupted; /* spore_interrupt: any thread or a signal handler */
    pthread_mutex_t bindings_mu;
    api_binding *bindings; /* freed at close, after the engine stopped */
};

/* Move `in` into the public `out` (which may be NULL) and return -1. */
int api_error(spore_error *out, sp_error *in);

/* Fill `out` with `code` and a printf message; return -1. */
int api_fail(spore_error *out, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* `usage` unless `db` is non-NULL. */
int api_need_db(const spore_db *db, spore_error *err);

#endif
