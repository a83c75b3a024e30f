/*
 * registry.h - inside the runners folder: the built-in runner tables and
 * the helpers the runners share (engine.md §5). The engine never includes
 * it: runner.h is the face (sp_runner_find, sp_runner_of).
 *
 * What it is for: each runner file defines its sp_runner table; registry.c
 * lists them. What it must never do: hold a kind no runner file defines.
 */
#ifndef SPORE_RUNNERS_REGISTRY_H
#define SPORE_RUNNERS_REGISTRY_H

#include <jansson.h>

#include "base/error.h"
#include "runners/runner.h"

/* The built-in runners (command.c, native.c, external.c, agent.c,
 * component.c). */
extern const sp_runner sp_command_runner;
extern const sp_runner sp_native_runner;
extern const sp_runner sp_external_runner;
extern const sp_runner sp_agent_runner;
extern const sp_runner sp_component_runner;

/* action.invalid naming the first member of `obj` not in `known` (NULL-
 * terminated); `what` says what obj is ("a command action"). */
int sp_action_check_members(const char *id, const json_t *obj, const char *const *known,
                            const char *what, sp_error *err);

#endif
