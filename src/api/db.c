/*
 * db.c - the spore_db handle of the public API: open (store + engine with
 * the default configuration + native registry), close, interrupt, and the
 * small helpers every API file uses (errors, strings, version, park names).
 *
 * Must never configure the worker differently from engine.md §1 defaults
 * behind the embedder's back, or free a native binding while an attempt may
 * still call it (the engine is freed first).
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "json/json.h"

/* ---- errors and strings ---- */

static void copy_text(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

int api_error(spore_error *out, sp_error *in)
{
    if (out) {
        spore_error_clear(out);
        copy_text(out->code, sizeof out->code, in->code[0] ? in->code : "runtime");
        copy_text(out->message, sizeof out->message, in->message);
        if (in->details)
            out->details = sp_json_encode_alloc(in->details, NULL, NULL);
    }
    sp_error_clear(in);
    return -1;
}

int api_fail(spore_error *out, const char *code, const char *fmt, ...)
{
    if (!out)
        return -1;
    spore_error_clear(out);
    copy_text(out->code, sizeof out->code, code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof out->message, fmt, ap);
    va_end(ap);
    return -1;
}

int api_need_db(const spore_db *db, spore_error *err)
{
    return db ? 0 : api_fail(err, "usage", "no spore_db handle (NULL)");
}

void spore_error_clear(spore_error *err)
{
    if (!err)
        return;
    free(err->details);
    err->details = NULL;
    err->code[0] = '\0';
    err->message[0] = '\0';
}

void spore_free(void *p) { free(p); }

const char *spore_version(void) { return SPORE_VERSION; }

const char *spore_park_name(spore_park park)
{
    switch (park) {
    case SPORE_PARK_COMPLETED: return "completed";
    case SPORE_PARK_FAILED: return "failed";
    case SPORE_PARK_WAITING: return "waiting";
    case SPORE_PARK_INTERVENTION: return "needs-intervention";
    case SPORE_PARK_QUARANTINED: return "quarantined";
    case SPORE_PARK_ASYNC: return "async";
    case SPORE_PARK_INTERRUPTED: return "interrupted";
    case SPORE_PARK_CANCELLED: return "cancelled";
    case SPORE_PARK_TIMER: return "timer";
    }
    return "unknown";
}

/* ---- the handle ---- */

/* The worker lock directory: the same rule as the `spore` command
 * (sp_engine_lock_dir), so embedded and command-line workers on one host
 * take over each other's dead attempts. */
static int lock_dir_for(spore_db *db, sp_error *err)
{
    char dir[4200];
    if (sp_engine_lock_dir(db->store, dir, sizeof dir) != 0)
        return 0;
    db->lock_dir = strdup(dir);
    return db->lock_dir ? 0 : sp_oom(err);
}

spore_db *spore_open(const char *location, spore_error *err)
{
    return spore_open_with(location, NULL, err);
}

spore_db *spore_open_with(const char *location, const spore_open_options *options,
                          spore_error *err)
{
    const spore_open_options defaults = {0};
    const spore_open_options *o = options ? options : &defaults;
    if (!location || !*location) {
        api_fail(err, "usage", "spore_open needs a location (a SQLite file path)");
        return NULL;
    }
    sp_error e = {0};
    spore_db *db = calloc(1, sizeof *db);
    if (!db) {
        sp_oom(&e);
        api_error(err, &e);
        return NULL;
    }
    pthread_mutex_init(&db->bindings_mu, NULL);
    db->natives = sp_native_registry_new();
    if (!db->natives) {
        sp_oom(&e);
        goto fail;
    }
    sp_store_open_opts opts = {
        .mode = o->existing_only ? SP_STORE_OPEN_EXISTING : SP_STORE_OPEN_OR_CREATE,
        .allow_shared = o->allow_shared,
    };
    db->store = sp_store_open_with(location, &opts, &e);
    if (!db->store || lock_dir_for(db, &e))
        goto fail;
    sp_engine_config cfg = sp_engine_defaults();
    cfg.natives = db->natives;
    cfg.lock_dir = db->lock_dir;
    cfg.interrupt = &db->interrupted;
    db->engine = sp_engine_new(db->store, &cfg, &e);
    if (!db->engine)
        goto fail;
    return db;
fail:
    api_error(err, &e);
    spore_close(db);
    return NULL;
}

void spore_close(spore_db *db)
{
    if (!db)
        return;
    sp_engine_free(db->engine); /* stops and waits for attempt threads */
    sp_store_close(db->store);
    sp_native_registry_free(db->natives);
    for (api_binding *b = db->bindings, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    pthread_mutex_destroy(&db->bindings_mu);
    free(db->lock_dir);
    free(db);
}

void spore_interrupt(spore_db *db)
{
    if (db)
        atomic_store(&db->interrupted, 1);
}
