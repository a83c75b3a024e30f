/*
 * actions.h - the engine's view of a package's actions (packages.c): when a
 * package's workflow is loaded, each action is resolved once to its runner
 * and prepared by it (runners/runner.h), so the tick, the attempts, the held
 * steps and the views ask `ea->runner` instead of parsing the action again
 * or comparing kind names. Also the invocation and attempt states of the
 * store's views as enums (the one place their spellings are read).
 *
 * What it must never do: name an action kind, hand out an entry whose
 * package bytes did not match their digest, or free an entry before the
 * engine is freed (attempt and hook threads keep pointers to it).
 */
#ifndef SPORE_ENGINE_ACTIONS_H
#define SPORE_ENGINE_ACTIONS_H

#include <stdbool.h>

#include "base/error.h"
#include "kernel/workflow.h"
#include "runners/runner.h"
#include "schema/schema.h"
#include "store/store.h"

struct sp_engine;

/* One action of a loaded package. */
typedef struct engine_action {
    const sp_action *action;   /* the kernel's view (id, raw, outcomes) */
    const sp_runner *runner;   /* NULL: this host has no runner for its kind */
    sp_runner_action prepared; /* {id, raw, spec}: spec NULL when prepare failed */
    sp_error prepare_error;    /* why it failed (code "" when it did not) */
    bool held;                 /* its async start holds the attempt (terms apply) */
    bool quick;                /* its runner runs it on the tick thread (runner.h) */
    sp_hold_terms terms;       /* lease, deadline and probe interval of a hold */
    const char *unservable;    /* NULL, or why this host cannot serve it */
    char why[256];
} engine_action;

/* The action `action_id` of package `digest`: 0 with *out (NULL when the
 * package has no such action), -1 with err when the package cannot be read
 * (package.missing, package.corrupt, a kernel failure, the store's error).
 * The entry stays valid until sp_engine_free. */
int engine_action_find(struct sp_engine *e, const char *digest, const char *action_id,
                       const engine_action **out, sp_error *err);

/* The same, NULL with host.action-missing when the package lacks it. */
const engine_action *engine_action_get(struct sp_engine *e, const char *digest,
                                       const char *action_id, sp_error *err);

/* The output schema of `outcome` at node `node_id` of package `digest`
 * (format 0.2 outputSchemas, compiled once with the package), or NULL when
 * the node declares none for it. */
const sp_schema *engine_output_schema(struct sp_engine *e, const char *digest,
                                      const char *node_id, const char *outcome);

/* A worker can look after a held attempt of this action (watch, probe, stop
 * through its runner): this host serves it, its runner is observable, and
 * the action is held asynchronously. */
bool engine_action_observable(const engine_action *ea);

/* Observable, and its runner can run `op` for `handle` (NULL: whatever the
 * handle). */
bool engine_action_can(const engine_action *ea, sp_hook_op op, const json_t *handle);

/* The hold terms (the defaults for an action that is never held); -1 with
 * the prepare error when the action could not be prepared. */
int engine_action_terms(const engine_action *ea, sp_hold_terms *out, sp_error *err);

/* ---- states of the store's invocation views ---- */

typedef enum engine_step_state {
    ENGINE_STEP_PENDING,
    ENGINE_STEP_RUNNING,
    ENGINE_STEP_SETTLED,
    ENGINE_STEP_OTHER, /* a spelling this engine does not know */
} engine_step_state;

typedef enum engine_attempt_state {
    ENGINE_ATTEMPT_NONE, /* the invocation has no attempt */
    ENGINE_ATTEMPT_RUNNING,
    ENGINE_ATTEMPT_FINISHED,
    ENGINE_ATTEMPT_EXPIRED,
    ENGINE_ATTEMPT_OTHER,
} engine_attempt_state;

engine_step_state engine_step_state_of(const sp_invocation_view *v);
engine_attempt_state engine_attempt_state_of(const sp_invocation_view *v);

#endif
