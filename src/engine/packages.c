/*
 * packages.c - the engine's cache of loaded workflows, by package digest.
 * Packages are content-addressed, so an entry never goes stale; evicted
 * entries are kept until the engine is freed (attempt threads may hold
 * pointers into them).
 * Must never hand out a workflow whose bytes do not match their digest.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

static const sp_workflow *cached(sp_engine *e, const char *digest)
{
    for (int i = 0; i < PACKAGE_CACHE_SIZE; i++)
        if (e->packages[i].wf && strcmp(e->packages[i].digest, digest) == 0) {
            e->packages[i].used = ++e->package_clock;
            return e->packages[i].wf;
        }
    return NULL;
}

/* Keep `wf`; when full, the least recently used entry moves to the evicted
 * list that is freed with the engine (pointers to it may still be in use). */
static void remember(sp_engine *e, const char *digest, sp_workflow *wf)
{
    int slot = 0;
    for (int i = 0; i < PACKAGE_CACHE_SIZE; i++) {
        if (!e->packages[i].wf) {
            slot = i;
            break;
        }
        if (e->packages[i].used < e->packages[slot].used)
            slot = i;
    }
    package_entry *p = &e->packages[slot];
    if (p->wf) {
        package_overflow *o = malloc(sizeof *o);
        if (o) {
            o->wf = p->wf;
            o->next = e->evicted;
            e->evicted = o;
        } /* out of memory: the old entry leaks, which keeps pointers valid */
    }
    snprintf(p->digest, sizeof p->digest, "%s", digest);
    p->wf = wf;
    p->used = ++e->package_clock;
}

const sp_workflow *engine_workflow(sp_engine *e, const char *digest, sp_error *err)
{
    pthread_mutex_lock(&e->packages_mu);
    const sp_workflow *wf = cached(e, digest);
    pthread_mutex_unlock(&e->packages_mu);
    if (wf)
        return wf;
    char *bytes = NULL;
    size_t len = 0;
    bool found = false;
    sp_store_rc rc = sp_store_get_package(e->store, digest, &bytes, &len, &found, err);
    if (rc != SP_STORE_OK)
        return NULL;
    if (!found) {
        sp_fail(err, "package.missing", "package %s is not in the store", digest);
        return NULL;
    }
    char actual[SP_DIGEST_TEXT_LEN + 1];
    sp_digest_one("package", bytes, len, actual);
    if (strcmp(actual, digest) != 0) {
        free(bytes);
        sp_fail(err, "package.corrupt", "package %s does not match its digest", digest);
        return NULL;
    }
    sp_kernel_failure f;
    bool oom = false;
    sp_workflow *loaded = sp_workflow_load(bytes, len, &f, &oom);
    free(bytes);
    if (!loaded) {
        if (oom)
            sp_oom(err);
        else
            sp_fail(err, f.code, "stored package %s: %s", digest, f.details);
        return NULL;
    }
    pthread_mutex_lock(&e->packages_mu);
    wf = cached(e, digest);
    if (wf)
        sp_workflow_free(loaded);
    else
        remember(e, digest, loaded), wf = loaded;
    pthread_mutex_unlock(&e->packages_mu);
    return wf;
}

void engine_packages_free(sp_engine *e)
{
    for (int i = 0; i < PACKAGE_CACHE_SIZE; i++) {
        sp_workflow_free(e->packages[i].wf);
        e->packages[i].wf = NULL;
    }
    while (e->evicted) {
        package_overflow *o = e->evicted;
        e->evicted = o->next;
        sp_workflow_free(o->wf);
        free(o);
    }
}

const char *sp_engine_workflow_name(sp_engine *e, const char *package_digest, sp_error *err)
{
    const sp_workflow *wf = engine_workflow(e, package_digest, err);
    return wf ? (wf->name ? wf->name : "") : NULL;
}
