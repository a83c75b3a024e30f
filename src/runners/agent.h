/*
 * agent.h - the `agent` runner (agent-step.md): one agentic step run through
 * a step CLI in a sandbox, read through the strict protocol reader, and
 * turned into an activity result.
 *
 * What it is for: sp_agent_execute() is the whole attempt (checks, request,
 * sandbox, exec with streaming reads, classification, breaker, taint) with
 * explicit inputs, so tests can drive it directly; the runner's run
 * (sp_agent_runner in registry.h) maps the engine's runner context onto it
 * and its outcome onto an sp_activity_output.
 *
 * Resolution of stepCli[0] on this machine (local transport): a path with a
 * '/' is taken as is (relative to the engine's base directory); the name
 * `spore-step` is the reference step CLI installed beside the running
 * binary (the directory of /proc/self/exe; in a build tree that is where
 * `spore` and `spore-step` are both built), else PATH; any other bare name
 * is looked up in PATH. A program outside /usr is bound read-only into the
 * sandbox at /spore/bin/<name>.
 *
 * What it must never do: start a step without a sandbox (local), send a
 * secret in argv or the environment, run when the provider's breaker is
 * open, or report a success that did not come from one valid result record.
 */
#ifndef SPORE_RUNNERS_AGENT_H
#define SPORE_RUNNERS_AGENT_H

#include <jansson.h>
#include <stdint.h>

#include "agent/outcome.h"
#include "runners/runner.h"

typedef void (*sp_agent_progress_fn)(void *ctx, const char *event_json, size_t len);

typedef struct sp_agent_exec_in {
    const char *action_id;
    const json_t *action;
    const json_t *input;
    const char *run_id;
    const char *node_id;
    uint32_t attempt;
    const char *base_dir;    /* relative paths of the action; NULL = cwd */
    const char *traceparent; /* may be NULL */
    sp_stop_signal *stop;    /* may be NULL */
    sp_agent_progress_fn progress; /* kept events (NULL json = an event not kept) */
    void *progress_ctx;
    const char *step_id; /* tests only: replay a captured exchange under its stepId */
} sp_agent_exec_in;

/* Run one attempt; always fills `o` (release with sp_agent_outcome_free). */
void sp_agent_execute(const sp_agent_exec_in *in, sp_agent_outcome *o);

/* The same, and *logs set to what the attempt keeps for `spore logs`: the
 * step CLI's stderr, redacted (its stdout is the protocol); left NULL when
 * the step was refused before its exec. Release with sp_attempt_logs_free. */
void sp_agent_execute_logged(const sp_agent_exec_in *in, sp_agent_outcome *o,
                             sp_attempt_logs **logs);

/* The outcome as an activity output (success "ok" / failure / unknown). */
void sp_agent_outcome_to_output(const sp_agent_outcome *o, sp_activity_output *out);

/* The runner table is sp_agent_runner (registry.h). */

#endif
