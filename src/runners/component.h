/*
 * component.h - the `component` runner (runners.md): start, probe and stop
 * of a held step through a sealed WebAssembly runner, each call in a fresh
 * instance in the jail (wasm/jail.h), its host imports served by
 * component_host.c, its outcome mapped by the table of runners.md §4.
 *
 * A component action is always async: start answers {"handle"} (the
 * attempt is held), a finished result, or an error. Probe and stop are the
 * runner's own exports unless the action's async object gives a command
 * hook for that operation; a command action may name a runner for a hook
 * ({"component": {"module", "grants", ...}}), which calls the same exports.
 *
 * What it must never do: read the module from anywhere but the store by its
 * sealed digest, report Success for an undeclared outcome, let an ungranted
 * import become anything but component.not-granted, or turn an unclear
 * probe into a decision.
 */
#ifndef SPORE_RUNNERS_COMPONENT_H
#define SPORE_RUNNERS_COMPONENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "runners/component_spec.h"
#include "runners/runner.h"

#define SP_COMPONENT_HANDLE_MAX 4096

/* The runner table is sp_component_runner (registry.h): validate, seal,
 * prepare, run (spore_start), hold terms, probe, watch, stop. */

/* How a runner's spore_start response maps (runners.md §3-4): held with the
 * handle, the activity's result, or component.bad-response /
 * component.undeclared-outcome. `doc` is the parsed response. */
void sp_component_start_response(const char *action_id, const json_t *action, const json_t *doc,
                                 sp_activity_output *out);

/* The same for spore_probe: a holder state, or *finished with the result. */
sp_holder_state sp_component_probe_response(const char *action_id, const json_t *action,
                                            const json_t *doc, sp_activity_output *out,
                                            bool *finished);

/* Probe a held attempt of `action` through `runner` (the component
 * action's parsed runner, or a hook's: `hook`). *finished set with `out`
 * filled when the runner reported a result (or a failure of the step:
 * not-granted, artifact). Serves component-form hooks of command actions
 * too. */
sp_holder_state sp_component_probe(const sp_runner_ctx *ctx, const char *action_id,
                                   const json_t *action, const sp_component_spec *runner,
                                   bool hook, const json_t *handle, sp_activity_output *out,
                                   bool *finished);

/* Stop through `runner`: true when the runner answered {"stopped": true}. */
bool sp_component_stop(const sp_runner_ctx *ctx, const char *action_id,
                       const sp_component_spec *runner, bool hook, const json_t *handle);

struct sp_world_module;

/* Load `module` in the jail and describe its imports and exports
 * (validation never parses a module in the worker): component.invalid-module
 * when it does not load, component.jail when no jail could be started. */
int sp_component_describe(const char *where, const char *module_name, const void *module,
                          size_t len, struct sp_world_module *out, sp_error *err);

/* Instantiate `module` once in the jail with no call (runners.md §6 step
 * 5): component.instantiate naming `where` when it cannot be. */
int sp_component_trial(const char *where, const void *module, size_t len, uint64_t timeout_ms,
                       sp_error *err);

#endif
