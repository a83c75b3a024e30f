/*
 * async_spec.h - the `async` member of command and external actions
 * (engine.md §9): the hard deadline, the optional holder lease, and the
 * probe / watch / stop hooks in command form ({"command": {...}}) or
 * component form ({"component": {...}}, runners.md).
 *
 * Component actions (runners.md §1) have an `async` object too: timeoutMs,
 * probeEveryMs (default 10 s) and command-form hooks that replace the
 * runner's own export for that operation. A {"component": ...} hook names a
 * runner whose probe / stop export serves the hook (a watch cannot be a
 * component: runners have no watch export).
 *
 * What it must never do: accept a hook form this build cannot run, or a
 * lease that is not shorter than the deadline.
 */
#ifndef SPORE_RUNNERS_ASYNC_SPEC_H
#define SPORE_RUNNERS_ASYNC_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "runners/command_spec.h"
#include "runners/component_spec.h"
#include "runners/runner.h"

#define SP_ASYNC_TIMEOUT_DEFAULT_MS UINT64_C(3600000) /* 1 h */
#define SP_ASYNC_PROBE_EVERY_DEFAULT_MS UINT64_C(30000)
#define SP_HOOK_TIMEOUT_DEFAULT_MS UINT64_C(10000)   /* probe and stop */

typedef enum sp_hook_form { SP_HOOK_NONE, SP_HOOK_COMMAND, SP_HOOK_COMPONENT } sp_hook_form;

typedef struct sp_hook {
    sp_hook_form form;
    sp_command_spec command;        /* SP_HOOK_COMMAND */
    sp_component_spec *component;   /* SP_HOOK_COMPONENT (owned; borrows the action) */
} sp_hook;

/* Whose `async` member it is: each owner has its own members. */
typedef enum sp_async_owner { SP_ASYNC_COMMAND, SP_ASYNC_EXTERNAL, SP_ASYNC_COMPONENT } sp_async_owner;

typedef struct sp_async_spec {
    uint64_t timeout_ms; /* hard deadline, from the moment the step is held */
    bool has_lease;
    uint64_t lease_ms;       /* the holder renews within this (step renew) */
    uint64_t probe_every_ms; /* how often a worker probes a held attempt */
    sp_hook probe, watch, stop;
} sp_async_spec;

/* Parse action.async (absent -> the defaults, no hooks). External actions
 * accept only timeoutMs and leaseMs. action.invalid /
 * action.capability-missing on error. */
int sp_async_spec_parse(const char *action_id, const json_t *action, sp_async_owner owner,
                        sp_async_spec *out, sp_error *err);
void sp_async_spec_free(sp_async_spec *spec);

/* The hold terms of runner.h from a parsed spec. */
void sp_async_hold_terms(const sp_async_spec *spec, sp_hold_terms *out);

#endif
