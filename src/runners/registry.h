/*
 * registry.h - action kinds and the runners that serve them (engine.md §5).
 *
 * What it is for: mapping an action's `kind` to the runner that validates and
 * executes it. The built-in registry holds the kinds implemented so far.
 *
 * What it must never do: guess a runner for an unknown kind, or let an
 * action through validation that its runner would refuse at run time.
 */
#ifndef SPORE_RUNNERS_REGISTRY_H
#define SPORE_RUNNERS_REGISTRY_H

#include <jansson.h>

#include "base/error.h"

typedef struct sp_runner {
    const char *kind;
    /* Check an action of this kind; action.invalid with a message on error. */
    int (*validate)(const char *action_id, const json_t *action, sp_error *err);
} sp_runner;

/* The runner for `kind`, or NULL when this build has none. */
const sp_runner *sp_runner_find(const char *kind);

/* The kinds this build can run, NULL-terminated (for `capabilities`). */
const char *const *sp_runner_kinds(void);

#endif
