/*
 * hooks.h - the hooks of a held async step (engine.md §9): probe, watch and
 * stop, in command form, with the reference handle's built-in probe and stop
 * when no hook is given and the handle has the reference shape.
 *
 * Contracts: every hook gets the handle on stdin.
 * - probe: exit 0 with {"holder": "alive" | "dead" | "unknown"}; anything
 *   else, a timeout (default 10 s) or other output means unknown.
 * - watch: blocks until the job ends; exit 0 with {"outcome","output"} or
 *   {"error":{"code","message"},"retryable":bool} is the step's result (an
 *   undeclared outcome becomes command.undeclared-outcome); anything else
 *   means the watch lost sight of the job, and the attempt stays held.
 * - stop: exit 0 means stopped; default timeout 10 s.
 *
 * Component runners (runners.md): a probe or stop hook in component form,
 * or - for a component action - no command hook at all, calls the runner's
 * spore_probe / spore_stop export (runners/component.h). Such a probe may
 * also answer a finished result, which ends the attempt.
 *
 * What it must never do: turn an unclear probe into `dead` (only an explicit
 * dead frees a step early), or report a watch result that is not one of the
 * two result shapes.
 */
#ifndef SPORE_RUNNERS_HOOKS_H
#define SPORE_RUNNERS_HOOKS_H

#include <jansson.h>
#include <stdbool.h>

#include "runners/async_spec.h"
#include "runners/pid_handle.h"
#include "runners/runner.h"

/* What a worker can do for a held attempt of this action and handle. */
bool sp_hook_can_probe(const sp_async_spec *spec, const json_t *handle);
bool sp_hook_can_watch(const sp_async_spec *spec);
bool sp_hook_can_stop(const sp_async_spec *spec, const json_t *handle);

sp_holder_state sp_hook_probe(const sp_runner_ctx *ctx, const sp_async_spec *spec,
                              const json_t *handle);

/* The same, and a component runner's finished result: *finished set with
 * `out` filled (the step's result, or its failure). */
sp_holder_state sp_hook_probe_result(const sp_runner_ctx *ctx, const sp_async_spec *spec,
                                     const char *action_id, const json_t *action,
                                     const json_t *handle, sp_activity_output *out,
                                     bool *finished);

/* True with `out` filled when the watch delivered a result; false when it
 * lost sight of the job (or was stopped). */
bool sp_hook_watch(const sp_runner_ctx *ctx, const sp_async_spec *spec, const char *action_id,
                   const json_t *action, const json_t *handle, sp_activity_output *out);

/* True when the job was stopped (or is gone). */
bool sp_hook_stop(const sp_runner_ctx *ctx, const sp_async_spec *spec, const json_t *handle);

#endif
