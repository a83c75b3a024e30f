/*
 * validate.c - validate_workflow (see validate.h): every action through its
 * runner's validate and seal (runners/runner.h), then a dry run.started.
 * Never touches a store, and never names an action kind.
 */
#include "engine/validate.h"

#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "kernel/workflow.h"
#include "runners/runner.h"

#define VALIDATE_RUN_ID "run_00000000000000000000000000000000"

static int byte_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The IDs of the object members of `actions`, in ascending byte order
 * (*n = 0 when there are none: the kernel reports a malformed member). */
static const char **action_ids(const json_t *actions, size_t *n, sp_error *err)
{
    *n = json_is_object(actions) ? json_object_size(actions) : 0;
    if (*n == 0)
        return NULL;
    const char **ids = malloc(*n * sizeof *ids);
    if (!ids) {
        sp_oom(err);
        return NULL;
    }
    size_t i = 0;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)actions, key, v) ids[i++] = key;
    qsort(ids, *n, sizeof *ids, byte_cmp);
    return ids;
}

/* Every action's runner and its validate, in ascending byte order of IDs. */
static int check_actions(const json_t *doc, sp_error *err)
{
    const json_t *actions = json_object_get(doc, "actions");
    size_t n;
    const char **ids = action_ids(actions, &n, err);
    if (n && !ids)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const json_t *action = json_object_get(actions, ids[i]);
        if (!json_is_object(action))
            continue;
        const sp_runner *runner = sp_runner_of(ids[i], action, err);
        rc = runner ? runner->validate(ids[i], action, err) : -1;
    }
    free(ids);
    return rc;
}

/* Each runner's seal of its actions (changed in place), in the same order:
 * the bounds of the sealed files count over the whole package. */
static int seal_actions(json_t *doc, const sp_validate_opts *opts, sp_error *err)
{
    json_t *actions = json_object_get(doc, "actions");
    size_t n;
    const char **ids = action_ids(actions, &n, err);
    if (!ids)
        return n ? -1 : 0;
    sp_seal_ctx sc;
    int rc = sp_seal_begin(&sc, opts ? opts->workflow_dir : NULL, opts ? opts->blobs : NULL,
                           opts && opts->trial, err);
    for (size_t i = 0; i < n && rc == 0; i++) {
        json_t *action = json_object_get(actions, ids[i]);
        const sp_runner *runner = json_is_object(action) ? sp_runner_of(ids[i], action, err) : NULL;
        if (runner && runner->seal)
            rc = runner->seal(ids[i], action, &sc, err);
        else if (json_is_object(action) && !runner)
            rc = -1;
    }
    sp_seal_end(&sc);
    free(ids);
    return rc;
}

static int dry_run(const json_t *doc, const sp_validated *v, const sp_workflow *loaded,
                   const json_t *input, const char *run_id, sp_error *err)
{
    json_t *payload = json_pack("{s:s,s:s,s:O}", "tenant", "default", "runId",
                                run_id ? run_id : VALIDATE_RUN_ID, "input",
                                input ? input : json_null());
    size_t len;
    char *bytes = payload ? sp_json_encode_alloc(payload, &len, err) : NULL;
    json_decref(payload);
    if (!bytes)
        return payload ? -1 : sp_oom(err);
    /* the package's format chooses the semantics, as for its runs */
    const char *semantics = sp_workflow_semantics_of(doc) == SP_SEM_02 ? SP_SEMANTICS_VERSION_02
                                                                          : SP_SEMANTICS_VERSION;
    sp_kernel_request req = {
        .identity = {v->package_digest, "native:spore-kernel@" SP_SEMANTICS_VERSION, semantics,
                     SP_CODEC_VERSION},
        .graph = v->package,
        .graph_len = v->package_len,
        .loaded_graph = loaded,
        .event = {"start", 1, 0, "run.started", bytes, len, NULL},
        .limits = sp_kernel_default_limits(semantics),
    };
    sp_kernel_decision d;
    sp_kernel_failure f;
    int rc = sp_kernel_transition(&req, &d, &f);
    free(bytes);
    if (rc == SP_KERNEL_DECISION) {
        sp_kernel_decision_free(&d);
        return 0;
    }
    if (rc == SP_KERNEL_OOM)
        return sp_oom(err);
    return sp_fail(err, f.code, "%s (%s)", f.details, f.kind);
}

/* runners.md §6: every action's kind first (check_actions), then each
 * runner's grants, module and world, sealed into a copy of the document. */
static json_t *built(const json_t *doc, const sp_validate_opts *opts, sp_error *err)
{
    if (check_actions(doc, err))
        return NULL;
    json_t *copy = json_deep_copy(doc);
    if (!copy) {
        sp_oom(err);
        return NULL;
    }
    if (seal_actions(copy, opts, err)) {
        json_decref(copy);
        return NULL;
    }
    return copy;
}

int sp_validate_package(const json_t *doc, const sp_validate_opts *opts, sp_validated *out,
                        sp_error *err)
{
    memset(out, 0, sizeof *out);
    json_t *package = built(doc, opts, err);
    if (!package)
        return -1;
    out->package = sp_json_encode_alloc(package, &out->package_len, err);
    json_decref(package);
    if (!out->package)
        return -1;
    sp_digest_one("package", out->package, out->package_len, out->package_digest);
    out->nnodes = json_object_size(json_object_get(doc, "nodes"));
    out->nactions = json_object_size(json_object_get(doc, "actions"));
    return 0;
}

int sp_validate_start(const json_t *doc, const sp_validated *v, const sp_workflow *loaded,
                      const json_t *input, const char *run_id, sp_error *err)
{
    return dry_run(doc, v, loaded, input, run_id, err);
}

int sp_validate_workflow(const json_t *doc, const json_t *input, const char *run_id,
                         const sp_validate_opts *opts, sp_validated *out, sp_error *err)
{
    if (sp_validate_package(doc, opts, out, err))
        return -1;
    if (sp_validate_start(doc, out, NULL, input, run_id, err)) {
        sp_validated_free(out);
        return -1;
    }
    return 0;
}

void sp_validated_free(sp_validated *v)
{
    free(v->package);
    memset(v, 0, sizeof *v);
}
