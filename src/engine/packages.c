/*
 * packages.c - the engine's cache of loaded packages, by package digest:
 * the workflow, and each of its actions resolved once to its runner and
 * prepared by it (actions.h). Packages are content-addressed, so an entry
 * never goes stale; evicted entries are kept until the engine is freed
 * (attempt and hook threads may hold pointers into them).
 *
 * Must never hand out a workflow whose bytes do not match their digest, or
 * name an action kind (the runners resolve and prepare their own).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/ledger.h"

/* One output schema of a node (format 0.2, kernel.md §5), compiled once. */
typedef struct output_schema {
    const char *node_id, *outcome; /* borrowed from wf->doc */
    sp_schema *schema;             /* owned */
} output_schema;

struct engine_package {
    sp_workflow *wf;         /* owned */
    engine_action *actions;  /* wf->nactions, in the order of wf->actions */
    output_schema *schemas;  /* every node's outputSchemas member */
    size_t nschemas;
};

static void package_free(engine_package *p)
{
    if (!p)
        return;
    for (size_t i = 0; p->actions && i < p->wf->nactions; i++) {
        sp_runner_release(p->actions[i].runner, &p->actions[i].prepared);
        sp_error_clear(&p->actions[i].prepare_error);
    }
    for (size_t i = 0; i < p->nschemas; i++)
        sp_schema_free(p->schemas[i].schema);
    free(p->schemas);
    free(p->actions);
    sp_workflow_free(p->wf);
    free(p);
}

/* Resolve and prepare one action: what the tick and the attempts ask later. */
static void resolve(engine_action *ea, const sp_action *a,
                    const struct sp_native_registry *natives)
{
    memset(ea, 0, sizeof *ea);
    ea->action = a;
    ea->prepared = (sp_runner_action){a->id, a->raw, NULL};
    ea->unservable = sp_action_unservable(a->raw, ea->why, sizeof ea->why);
    sp_error none = {0};
    ea->runner = sp_runner_of(a->id, a->raw, &none);
    sp_error_clear(&none);
    if (ea->runner &&
        sp_runner_prepare(ea->runner, a->id, a->raw, &ea->prepared, &ea->prepare_error) == 0) {
        ea->held = sp_runner_hold_terms(ea->runner, &ea->prepared, &ea->terms);
        ea->quick = ea->runner->quick && ea->runner->quick(&ea->prepared, natives);
    } else
        sp_runner_hold_terms(NULL, &ea->prepared, &ea->terms);
}

/* Compile every node's outputSchemas (the kernel's W13 already refused a
 * package whose schemas are outside the subset; one that still does not
 * compile here - out of memory - checks nothing rather than everything). */
static void compile_schemas(engine_package *p)
{
    const char *node_id, *outcome;
    json_t *node, *schema;
    size_t n = 0;
    json_object_foreach(json_object_get(p->wf->doc, "nodes"), node_id, node)
        n += json_object_size(json_object_get(node, "outputSchemas"));
    if (!n || !(p->schemas = calloc(n, sizeof *p->schemas)))
        return;
    json_object_foreach(json_object_get(p->wf->doc, "nodes"), node_id, node)
        json_object_foreach(json_object_get(node, "outputSchemas"), outcome, schema) {
            sp_schema_error se;
            output_schema *o = &p->schemas[p->nschemas];
            if (sp_schema_compile(schema, &o->schema, &se) == 0) {
                o->node_id = node_id;
                o->outcome = outcome;
                p->nschemas++;
            }
        }
}

static engine_package *package_new(sp_workflow *wf, const struct sp_native_registry *natives)
{
    engine_package *p = calloc(1, sizeof *p);
    engine_action *actions = calloc(wf->nactions ? wf->nactions : 1, sizeof *actions);
    if (!p || !actions) {
        free(p);
        free(actions);
        return NULL;
    }
    p->wf = wf;
    p->actions = actions;
    for (size_t i = 0; i < wf->nactions; i++)
        resolve(&actions[i], &wf->actions[i], natives);
    compile_schemas(p);
    return p;
}

static bool has_quick_action(const engine_package *p)
{
    for (size_t i = 0; i < p->wf->nactions; i++)
        if (p->actions[i].quick)
            return true;
    return false;
}

static engine_package *cached(sp_engine *e, const char *digest)
{
    for (int i = 0; i < PACKAGE_CACHE_SIZE; i++)
        if (e->packages[i].pkg && strcmp(e->packages[i].digest, digest) == 0) {
            e->packages[i].used = ++e->package_clock;
            return e->packages[i].pkg;
        }
    return NULL;
}

/* Keep `pkg`; when full, the least recently used entry moves to the evicted
 * list that is freed with the engine (pointers to it may still be in use). */
static void remember(sp_engine *e, const char *digest, engine_package *pkg)
{
    int slot = 0;
    for (int i = 0; i < PACKAGE_CACHE_SIZE; i++) {
        if (!e->packages[i].pkg) {
            slot = i;
            break;
        }
        if (e->packages[i].used < e->packages[slot].used)
            slot = i;
    }
    package_entry *p = &e->packages[slot];
    if (p->pkg) {
        package_overflow *o = malloc(sizeof *o);
        if (o) {
            o->pkg = p->pkg;
            o->next = e->evicted;
            e->evicted = o;
        } /* out of memory: the old entry leaks, which keeps pointers valid */
    }
    snprintf(p->digest, sizeof p->digest, "%s", digest);
    p->pkg = pkg;
    p->used = ++e->package_clock;
}

static engine_package *load(sp_engine *e, const char *digest, sp_error *err)
{
    pthread_mutex_lock(&e->packages_mu);
    engine_package *pkg = cached(e, digest);
    pthread_mutex_unlock(&e->packages_mu);
    if (pkg)
        return pkg;
    char *bytes = NULL;
    size_t len = 0;
    bool found = false;
    sp_store_rc rc = ledger_get_package(e, digest, &bytes, &len, &found, err);
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
    sp_workflow *wf = sp_workflow_load(bytes, len, &f, &oom);
    free(bytes);
    if (!wf) {
        if (oom)
            sp_oom(err);
        else
            sp_fail(err, f.code, "stored package %s: %s", digest, f.details);
        return NULL;
    }
    engine_package *loaded = package_new(wf, e->cfg.natives);
    if (!loaded) {
        sp_workflow_free(wf);
        sp_oom(err);
        return NULL;
    }
    pthread_mutex_lock(&e->packages_mu);
    pkg = cached(e, digest);
    if (pkg)
        package_free(loaded);
    else
        remember(e, digest, loaded), pkg = loaded;
    e->serves_inline = e->serves_inline || has_quick_action(pkg);
    pthread_mutex_unlock(&e->packages_mu);
    return pkg;
}

const sp_workflow *engine_workflow(sp_engine *e, const char *digest, sp_error *err)
{
    engine_package *pkg = load(e, digest, err);
    return pkg ? pkg->wf : NULL;
}

int engine_action_find(sp_engine *e, const char *digest, const char *action_id,
                       const engine_action **out, sp_error *err)
{
    *out = NULL;
    engine_package *pkg = load(e, digest, err);
    if (!pkg)
        return -1;
    const sp_action *a = sp_workflow_action(pkg->wf, action_id);
    if (a)
        *out = &pkg->actions[a - pkg->wf->actions];
    return 0;
}

const sp_schema *engine_output_schema(sp_engine *e, const char *digest, const char *node_id,
                                      const char *outcome)
{
    sp_error err = {0};
    engine_package *pkg = load(e, digest, &err);
    sp_error_clear(&err);
    for (size_t i = 0; pkg && node_id && outcome && i < pkg->nschemas; i++)
        if (strcmp(pkg->schemas[i].node_id, node_id) == 0 &&
            strcmp(pkg->schemas[i].outcome, outcome) == 0)
            return pkg->schemas[i].schema;
    return NULL;
}

const engine_action *engine_action_get(sp_engine *e, const char *digest, const char *action_id,
                                       sp_error *err)
{
    const engine_action *ea;
    if (engine_action_find(e, digest, action_id, &ea, err))
        return NULL;
    if (!ea)
        sp_fail(err, "host.action-missing", "action %s is not in the run's package", action_id);
    return ea;
}

bool engine_action_observable(const engine_action *ea)
{
    return ea && !ea->unservable && ea->runner && ea->runner->observable && ea->held;
}

bool engine_action_can(const engine_action *ea, sp_hook_op op, const json_t *handle)
{
    return engine_action_observable(ea) && ea->runner->can(&ea->prepared, op, handle);
}

int engine_action_terms(const engine_action *ea, sp_hold_terms *out, sp_error *err)
{
    *out = ea->terms;
    if (!ea->prepare_error.code[0])
        return 0;
    return sp_fail(err, ea->prepare_error.code, "%s", ea->prepare_error.message);
}

engine_step_state engine_step_state_of(const sp_invocation_view *v)
{
    if (strcmp(v->status, "pending") == 0)
        return ENGINE_STEP_PENDING;
    if (strcmp(v->status, "running") == 0)
        return ENGINE_STEP_RUNNING;
    if (strcmp(v->status, "settled") == 0)
        return ENGINE_STEP_SETTLED;
    return ENGINE_STEP_OTHER;
}

engine_attempt_state engine_attempt_state_of(const sp_invocation_view *v)
{
    if (!v->has_attempt)
        return ENGINE_ATTEMPT_NONE;
    if (strcmp(v->attempt_status, "running") == 0)
        return ENGINE_ATTEMPT_RUNNING;
    if (strcmp(v->attempt_status, "finished") == 0)
        return ENGINE_ATTEMPT_FINISHED;
    if (strcmp(v->attempt_status, "expired") == 0)
        return ENGINE_ATTEMPT_EXPIRED;
    return ENGINE_ATTEMPT_OTHER;
}

void engine_packages_free(sp_engine *e)
{
    for (int i = 0; i < PACKAGE_CACHE_SIZE; i++) {
        package_free(e->packages[i].pkg);
        e->packages[i].pkg = NULL;
    }
    while (e->evicted) {
        package_overflow *o = e->evicted;
        e->evicted = o->next;
        package_free(o->pkg);
        free(o);
    }
}

const char *sp_engine_workflow_name(sp_engine *e, const char *package_digest, sp_error *err)
{
    const sp_workflow *wf = engine_workflow(e, package_digest, err);
    return wf ? (wf->name ? wf->name : "") : NULL;
}
